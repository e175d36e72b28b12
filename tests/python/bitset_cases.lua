-- BITSET indexes compared with Tarantool 2.6 (test_index_reads.py): definitions
-- and their errors, each search (EQ, BITS_ALL_SET, BITS_ANY_SET,
-- BITS_ALL_NOT_SET, ALL) and its count, the errors of what a BITSET cannot do,
-- and the scan order (an entry's id: a freed id is given out next).
box.cfg{work_dir = os.getenv('WORK') or '.', log_level = 1}
local function try(...)
    local ok, e = pcall(...)
    print(ok, ok and '' or (tostring(e) .. ' ' .. tostring(type(e) == 'cdata' and e.code)))
end
local function ids(list)
    local r = {}
    for _, x in ipairs(list) do r[#r + 1] = x[1] end
    return table.concat(r, ',')
end

-- Definitions: 2.6's defaults by type (field 2, unsigned, not unique for 'bitset';
-- named 'BITSET' it takes a TREE's and is refused as unique) and its checks.
local f = box.schema.space.create('f', {format = {{'id', 'string'}, {'x', 'string'}}})
try(f.create_index, f, 'pk')
print(f.index.pk.parts[1].type, f.index.pk.unique)
try(f.create_index, f, 'h', {type = 'hash', unique = false, parts = {{2, 'string', is_nullable = true}}})
try(f.create_index, f, 'b5', {type = 'bitset', unique = true, parts = {{2, 'string', is_nullable = true}, {3, 'integer'}}})
try(f.create_index, f, 'b6', {type = 'bitset', unique = true, parts = {{2, 'string'}, {3, 'integer'}}})
try(f.create_index, f, 'b7', {type = 'bitset', unique = true, parts = {{3, 'integer'}}})
try(f.create_index, f, 'b8', {type = 'BITSET'})
try(f.create_index, f, 'b9', {type = 'bitset', parts = {3, 'integer'}})
try(f.create_index, f, 'b10', {type = 'bitset'})
print(f.index.b10.type, f.index.b10.parts[1].type, f.index.b10.parts[1].fieldno, f.index.b10.unique)
local t = box.schema.space.create('t')
try(t.create_index, t, 'pk', {type = 'bitset'})

-- Searches over unsigned bits.
local s = box.schema.space.create('s')
s:create_index('pk', {type = 'hash'})
s:create_index('b', {type = 'bitset'})
s:create_index('bs', {type = 'bitset', parts = {3, 'string'}})
for i = 1, 20 do s:replace{i, i % 7, string.char(i % 7)} end
for _, it in ipairs({'EQ', 'BITS_ALL_SET', 'BITS_ANY_SET', 'BITS_ALL_NOT_SET', 'ALL', 'GT', 'LT'}) do
    local ok, r = pcall(s.index.b.select, s.index.b, {5}, {iterator = it})
    print(it, ok, ok and ids(r) or tostring(r))
    print(it .. ' count', pcall(s.index.b.count, s.index.b, {5}, {iterator = it}))
end
print('zero key', #s.index.b:select({0}, {iterator = 'BITS_ALL_SET'}), #s.index.b:select({0}, {iterator = 'BITS_ANY_SET'}),
      #s.index.b:select({0}, {iterator = 'BITS_ALL_NOT_SET'}), ids(s.index.b:select({0}, {iterator = 'EQ'})))
print('len', s.index.b:len(), #s.index.b:select(), s.index.b:count())
-- What a BITSET cannot do.
try(s.index.b.get, s.index.b, {5})
try(s.index.b.min, s.index.b)
try(s.index.b.max, s.index.b)
try(s.index.b.random, s.index.b, 1)
try(s.index.pk.min, s.index.pk)
for _, it in ipairs({'GT', 'EQ', 'BITS_ALL_SET'}) do try(s.index.b.select, s.index.b, {}, {iterator = it}) end
print('all with a key', ids(s.index.b:select({1}, {iterator = 'ALL', limit = 3})))
-- Ids: deletes free them, a replace keeps its own, new tuples take the last freed.
s:delete{3}
s:delete{10}
s:replace{25, 1, 'x'}
s:replace{5, 2, 'y'}
s:insert{26, 3, 'z'}
s:update(7, {{'=', 2, 6}, {'=', 3, 'w'}})
print('order', ids(s.index.b:select()), ids(s.index.bs:select()))
-- Strings: bytes as bits; EQ looks at the search key's length only.
print('str any', ids(s.index.bs:select({'\3'}, {iterator = 'BITS_ANY_SET'})))
print('str eq', ids(s.index.bs:select({'\3'}, {iterator = 'EQ'})))
s:replace{30, 0, 'ab'}
s:replace{31, 0, 'abc'}
print('str prefix', ids(s.index.bs:select({'ab'}, {iterator = 'EQ'})), ids(s.index.bs:select({'abc'}, {iterator = 'EQ'})))
-- Built over tuples already there (in primary key order).
local late = box.schema.space.create('late')
late:create_index('pk')
for i = 1, 10 do late:replace{i, i * 3} end
late:create_index('b', {type = 'bitset'})
print('built', ids(late.index.b:select({2}, {iterator = 'BITS_ANY_SET'})))
os.exit(0)
