-- The key_def module, compared line for line with Tarantool 2.6 (see
-- test_key_def.py).
local key_def = require('key_def')
local function p(...)
    local t = {}
    for i = 1, select('#', ...) do t[i] = tostring((select(i, ...))) end
    print(select('#', ...) .. ': ' .. table.concat(t, ' | '))
end
local function try(label, fn, ...)
    local r = {pcall(fn, ...)}
    if not r[1] and type(r[2]) ~= 'string' then r[2] = tostring(r[2].code) .. ' ' .. tostring(r[2].message) end
    p(label, unpack(r, 1, table.maxn(r)))
end
local function parts(kd)
    local out = {}
    for _, part in ipairs(kd:totable()) do
        out[#out + 1] = string.format('%s:%s:%s:%s:%s', part.fieldno, part.type, tostring(part.is_nullable),
                                      tostring(part.collation), tostring(part.path))
    end
    return table.concat(out, ' ')
end
-- No collation exists before box.cfg{}.
try('collation_id before cfg', key_def.new, {{fieldno = 1, type = 'string', collation_id = 2}})
try('collation before cfg', key_def.new, {{fieldno = 1, type = 'string', collation = 'unicode_ci'}})
box.cfg{}
try('both collations', key_def.new, {{fieldno = 1, type = 'string', collation_id = 2, collation = 'unicode_ci'}})
try('unknown collation_id', key_def.new, {{fieldno = 2, type = 'string', collation_id = 999}})
p(parts(key_def.new({{fieldno = 1, type = 'string', collation_id = 2}, {fieldno = 2, type = 'string', collation_id = 3}})))
try('field and fieldno', key_def.new, {{field = 1, fieldno = 1, type = 'unsigned'}})
try('two arguments', key_def.new, {{fieldno = 1, type = 'unsigned'}}, {})
p(type(key_def.new), tostring(key_def.new({{fieldno = 1, type = 'unsigned'}})))
local kd = key_def.new({{fieldno = 2, type = 'unsigned'}, {fieldno = 1, type = 'string', collation = 'unicode_ci'}})
p(parts(kd))
p(kd:extract_key(box.tuple.new{'a', 1, 'x'}))
p(kd:extract_key({'a', 1, 'x'}))
try('extract missing', kd.extract_key, kd, {'a'})
try('extract wrong type', kd.extract_key, kd, {'a', 'b'})
try('extract wrong second', kd.extract_key, kd, {1, 1})
p(kd:compare({'a', 1}, {'A', 1}), kd:compare({'a', 1}, {'b', 1}), kd:compare({'a', 2}, {'b', 1}))
p(kd:compare(box.tuple.new{'z', 0}, {'a', 1}))
try('compare bad', kd.compare, kd, {'a', 1}, {'a', -1})
p(kd:compare_with_key({'a', 1}, {1, 'A'}), kd:compare_with_key({'a', 1}, {1}), kd:compare_with_key({'a', 1}, {}))
-- 2.6 may return any number of the right sign here.
local function sign(x) return x < 0 and -1 or (x > 0 and 1 or 0) end
p(kd:compare_with_key({'a', 1}, {2}), kd:compare_with_key({'b', 1}, {1, 'a'}), sign(kd:compare_with_key({'a', 5}, {3, 'z'})))
try('cwk bad', kd.compare_with_key, kd, {'a', 1}, {'x'})
local kd2 = key_def.new({{fieldno = 3, type = 'string', is_nullable = true}, {fieldno = 2, type = 'unsigned'}})
local m = kd:merge(kd2)
p(parts(m))
p(parts(kd2:merge(kd)))
p(m:extract_key({'a', 1, 'z'}), m:extract_key({'a', 1}))
p(kd2:compare({'a', 1}, {'a', 1, 'b'}), kd2:compare({'a', 1, box.NULL}, {'a', 1}))
try('new no parts', key_def.new)
try('new empty', key_def.new, {})
try('new no fieldno', key_def.new, {{type = 'unsigned'}})
try('new bad type', key_def.new, {{fieldno = 1, type = 'bogus'}})
try('new no type', key_def.new, {{fieldno = 1}})
try('new bad coll', key_def.new, {{fieldno = 1, type = 'string', collation = 'nope'}})
try('new not table', key_def.new, 5)
p(parts(key_def.new({{field = 3, type = 'integer'}})))
local s = box.schema.space.create('t')
s:create_index('pk', {parts = {{2, 'unsigned'}, {1, 'string'}}})
local ikd = key_def.new(s.index.pk.parts)
p(parts(ikd))
p(ikd:compare({'b', 1}, {'a', 2}), ikd:compare({'b', 2}, {'a', 2}))
local nkd = key_def.new({{fieldno = 1, type = 'number'}})
p(nkd:compare({1}, {1.5}), nkd:compare({-1}, {2^64}), nkd:compare({3}, {3}), nkd:compare({3}, {3.0}))
local ikd2 = key_def.new({{fieldno = 1, type = 'integer'}})
p(ikd2:compare({-5}, {3}), ikd2:compare({-5}, {-6}))
try('integer float', ikd2.compare, ikd2, {1.5}, {1})
local skd = key_def.new({{fieldno = 1, type = 'scalar'}})
p(skd:compare({true}, {1}), skd:compare({1}, {'a'}), skd:compare({'b'}, {'a'}), skd:compare({false}, {true}))
try('scalar nil', skd.compare, skd, {box.NULL}, {1})
local nullable = key_def.new({{fieldno = 1, type = 'unsigned', is_nullable = true}})
p(nullable:compare({box.NULL}, {0}), nullable:compare({box.NULL}, {box.NULL}), nullable:compare({}, {1}))
-- Parts on JSON paths inside fields.
local t = box.tuple.new{1, {k = 5, a = {7, 8}}, 'x'}
local pkd = key_def.new({{fieldno = 2, type = 'unsigned', path = 'k'}})
p(parts(pkd), pkd:extract_key(t), pkd:compare(t, {2, {k = 6}}), pkd:compare_with_key(t, {5}))
local pkd2 = key_def.new({{fieldno = 2, type = 'unsigned', path = '.a[2]'}, {fieldno = 1, type = 'unsigned'}})
p(pkd2:extract_key(t), pkd2:compare(t, box.tuple.new{1, {a = {1, 9}}}))
try('path missing', pkd.extract_key, key_def.new({{fieldno = 2, type = 'unsigned', path = '.zz'}}), t)
try('path below a number', pkd.extract_key, key_def.new({{fieldno = 2, type = 'unsigned', path = '.k.z'}}), t)
try('path wrong type', pkd.extract_key, key_def.new({{fieldno = 2, type = 'string', path = 'k'}}), t)
p(key_def.new({{fieldno = 2, type = 'unsigned', path = '.zz', is_nullable = true}}):extract_key(t))
try('path invalid', key_def.new, {{fieldno = 2, type = 'unsigned', path = '..k'}})
try('path multikey', key_def.new, {{fieldno = 2, type = 'unsigned', path = '[*]'}})
try('path not a string', key_def.new, {{fieldno = 2, type = 'unsigned', path = 5}})
p(parts(pkd:merge(key_def.new({{fieldno = 2, type = 'unsigned', path = '.a[1]'}, {fieldno = 2, type = 'unsigned', path = 'k'}}))))
-- Sorting with a key_def, as merge-style code does.
local rows = {{'b', 2}, {'a', 2}, {'c', 1}, {'B', 1}}
-- Tuples must be tuples or tables; keys are refused later.
local kd1 = key_def.new({{fieldno = 1, type = 'unsigned'}})
try('extract_key number', kd1.extract_key, kd1, 1)
try('extract_key string', kd1.extract_key, kd1, 'x')
try('compare number', kd1.compare, kd1, 1, {1})
try('compare nil', kd1.compare, kd1, {1}, nil)
try('compare_with_key number', kd1.compare_with_key, kd1, 1, {1})
try('compare_with_key key number', kd1.compare_with_key, kd1, {1}, 1)
table.sort(rows, function(a, b) return kd:compare(a, b) < 0 end)
local out = {}
for _, r in ipairs(rows) do out[#out + 1] = r[1] .. r[2] end
p(table.concat(out, ' '))
-- A key_def object is `struct key_def &` cdata to type() and the ffi.
local ffi = require('ffi')
p(type(kd), ffi.istype('struct key_def', kd), ffi.istype('struct key_def &', kd), tostring(ffi.typeof(kd)))
p(ffi.istype('struct key_def', {}), type(key_def))
os.exit(0)
