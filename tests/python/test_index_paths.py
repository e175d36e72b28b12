"""Index parts with JSON paths (`{'data.k', 'unsigned'}`, `{field = 2, path = 'name'}`),
compared with Tarantool 2.6.

The same Lua script runs on both: it creates indexes on places inside fields
(TREE and HASH, unique or not, nullable, paths through maps and arrays), inserts,
updates, upserts, replaces and deletes tuples, and prints every result, error, index
read, `index.parts` and `_index` row; then a second script restarts on the same
data and reads through the indexes again. Maps are printed with sorted keys (Lua
table order differs between the two servers' LuaJIT builds).
"""
from conftest import scripts_in_turn_on_both

SHOW = r"""
local function show(v)
    if box.tuple.is(v) then v = v:totable() end
    if type(v) == 'string' then return string.format('%q', v) end
    if type(v) ~= 'table' then return tostring(v) end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    local out = {}
    for _, k in ipairs(keys) do out[#out + 1] = tostring(k) .. '=' .. show(v[k]) end
    return '{' .. table.concat(out, ', ') .. '}'
end
local function try(name, f, ...)
    local r = {pcall(f, ...)}
    if r[1] then
        local out = {}
        for i = 2, table.maxn(r) do out[#out + 1] = show(r[i]) end
        print(name, 'ok', table.concat(out, ' '))
    else
        print(name, 'error', tostring(r[2]))
    end
end
"""

FIRST = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
""" + SHOW + r"""
local s = box.schema.space.create('t', {format = {{'id', 'unsigned'}, {'data', 'map'},
    {'arr', 'array', is_nullable = true}, {'any', is_nullable = true}, {'n', 'unsigned', is_nullable = true}}})
s:create_index('pk')
try('create sk', function() return s:create_index('sk', {parts = {{'data.k', 'unsigned'}}}).parts end)
try('create by field and path', function()
    return s:create_index('sk2', {parts = {{field = 2, type = 'string', path = 'name', is_nullable = true}},
                                  unique = false}).parts
end)
try('create array path', function()
    return s:create_index('sk3', {parts = {{'[3][2]', 'integer'}}, unique = false}).parts
end)
try('create deep', function()
    return s:create_index('sk4', {parts = {{'data.deep.x', 'string', is_nullable = true}}, unique = false}).parts
end)
try('create hash', function() return s:create_index('h', {type = 'hash', parts = {{'data.k', 'unsigned'}}}).parts end)
try('create on any', function()
    return s:create_index('sk5', {parts = {{'[4].z', 'unsigned', is_nullable = true}}, unique = false}).parts
end)
try('create two parts', function()
    return s:create_index('two', {parts = {{'data.name', 'string', is_nullable = true}, {'id', 'unsigned'}},
                                  unique = false}).parts
end)
try('create quoted', function()
    return s:create_index('q', {parts = {{'data["q r"]', 'string', is_nullable = true}}, unique = false}).parts
end)
try('create collated', function()
    return s:create_index('ci', {parts = {{'data.name', 'string', collation = 'unicode_ci', is_nullable = true}},
                                 unique = false}).parts
end)
-- Refused definitions.
try('invalid path', function() return s:create_index('bad1', {parts = {{'data..k', 'unsigned'}}}) end)
try('invalid path in part 2', function()
    return s:create_index('bad1b', {parts = {{'id', 'unsigned'}, {'data..k', 'unsigned'}}})
end)
try('path into unsigned', function() return s:create_index('bad2', {parts = {{'id.k', 'unsigned'}}}) end)
try('unknown field', function() return s:create_index('bad3', {parts = {{'nofield.k', 'unsigned'}}}) end)
try('unknown plain field', function() return s:create_index('bad3b', {parts = {{'nofield', 'unsigned'}}}) end)
try('map taken as array', function()
    return s:create_index('bad4', {parts = {{field = 2, type = 'unsigned', path = '[1]'}}})
end)
try('leaf taken as map', function() return s:create_index('bad5', {parts = {{'data.k.z', 'unsigned'}}}) end)
try('leaf of another type', function() return s:create_index('bad6', {parts = {{'data.k', 'string'}}}) end)
try('leaf narrowed', function()
    return s:create_index('ok7', {parts = {{'data.k', 'integer'}}, unique = false}).parts
end)
try('format against index', function() return s:create_index('bad8', {parts = {{'n', 'string'}}}) end)
try('plain against path', function() return s:create_index('bad9', {parts = {{2, 'unsigned'}}}) end)
try('same part twice', function()
    return s:create_index('bad10', {parts = {{'data.k', 'unsigned'}, {'data.k', 'unsigned'}}})
end)
try('collation on a number', function()
    return s:create_index('bad11', {parts = {{'data.k', 'unsigned', collation = 'unicode'}}})
end)
try('path mismatch', function()
    return s:create_index('bad12', {parts = {{field = 'data.k', type = 'unsigned', path = '.z'}}})
end)
for _, row in ipairs(box.space._index:select{s.id}) do print('row', show(row)) end
-- Writes: what each index accepts and refuses, in 2.6's order and words.
try('i1', function() return s:insert{1, {k = 5, name = 'a', ['q r'] = 'x'}, {1, 2}} end)
try('i2', function() return s:insert{2, {k = 3, name = 'B', deep = {x = 'q'}}, {1, -2}} end)
try('duplicate', function() return s:insert{3, {k = 5}, {0, 0}} end)
try('missing', function() return s:insert{4, {name = 'z'}, {0, 0}} end)
try('leaf type', function() return s:insert{5, {k = 'x'}, {0, 0}} end)
try('array leaf type', function() return s:insert{6, {k = 6}, {0, 'x'}} end)
try('array short', function() return s:insert{7, {k = 7}, {0}} end)
try('array absent', function() return s:insert{8, {k = 8}} end)
try('not a map inside', function() return s:insert{9, {k = 9, deep = 5}, {0, 0}} end)
try('deep leaf type', function() return s:insert{10, {k = 10, deep = {x = 1}}, {0, 0}} end)
try('any not a map', function() return s:insert{11, {k = 11}, {0, 0}, 5} end)
try('any a map', function() return s:insert{12, {k = 12}, {0, 0}, {z = 4}} end)
try('any leaf type', function() return s:insert{13, {k = 13}, {0, 0}, {z = 'x'}} end)
try('not an array', function() return s:insert{14, {k = 14}, 5} end)
try('nil map', function() return s:insert{15, nil, {0, 0}} end)
try('replace', function() return s:replace{7, {k = 70, name = 'c'}, {0, 9}} end)
try('update path value', function() return s:update(1, {{'=', 'data.k', 33}}) end)
try('update to a duplicate', function() return s:update(1, {{'=', 'data.k', 3}}) end)
try('update to a wrong type', function() return s:update(1, {{'=', 'data.k', 'str'}}) end)
try('update deleting the key', function() return s:update(1, {{'#', 'data.k', 1}}) end)
try('update whole field', function() return s:update(2, {{'=', 2, {k = 4, name = 'b'}}}) end)
try('update other field', function() return s:update(2, {{'=', 3, {5, 6}}}) end)
try('upsert existing', function() return s:upsert({8, {k = 1}}, {{'+', 'data.k', 100}}) end)
try('upsert new', function() return s:upsert({20, {k = 20, name = 'u'}, {2, 3}}, {{'+', 'data.k', 1}}) end)
try('delete', function() return s:delete(12) end)
-- Reads through every index (not the HASH one whole: its order is each server's own).
for _, name in ipairs({'sk', 'sk2', 'sk3', 'sk4', 'sk5', 'two', 'q', 'ci', 'ok7'}) do
    local ix = s.index[name]
    if ix then try('select ' .. name, function() return ix:select() end) end
end
try('get', function() return s.index.sk:get{70} end)
try('by key', function() return s.index.sk2:select('b') end)
try('collated', function() return s.index.ci:select('b') end)
try('range', function() return s.index.sk:select(10, {iterator = 'GE'}) end)
try('reverse', function() return s.index.sk3:select(nil, {iterator = 'LT'}) end)
try('hash get', function() return s.index.h:get(4) end)
try('count min max', function() return s.index.sk:count(), s.index.sk:min(), s.index.sk:max() end)
try('parts', function() return s.index.sk.parts, s.index.sk3.parts, s.index.ci.parts end)
try('alter', function()
    s.index.sk2:alter({parts = {{'data.name', 'string', is_nullable = true}, {'[3][1]', 'integer', is_nullable = true}}})
    return s.index.sk2.parts, s.index.sk2:select()
end)
try('alter refused', function() s.index.sk3:alter({parts = {{'data.k.q', 'unsigned'}}}) end)
os.exit(0)
"""

SECOND = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
""" + SHOW + r"""
local s = box.space.t
for _, name in ipairs({'sk', 'sk2', 'sk3'}) do
    try('after restart ' .. name, function() return s.index[name]:select() end)
end
try('after restart hash', function() return s.index.h:get(70), s.index.h:len() end)
try('after restart parts', function() return s.index.sk2.parts end)
try('after restart insert', function() return s:insert{30, {k = 30}, {0, 'x'}} end)
try('after restart duplicate', function() return s:insert{31, {k = 30}, {0, 0}} end)
os.exit(0)
"""


def test_indexes_on_paths_match_tarantool(tmp_path):
    tarantool, oncebox = scripts_in_turn_on_both(tmp_path, [("first.lua", FIRST), ("second.lua", SECOND)])
    mismatches = [(t, o) for t, o in zip(tarantool, oncebox) if t != o]
    assert not mismatches, mismatches[:5]
    assert len(tarantool) == len(oncebox)
    text = "\n".join(tarantool)
    # Both kinds of answer are there: reads through path indexes and 2.6's refusals.
    assert 'select sk\tok\t{1={1=2, 2={k=4, name="b"}' in text
    assert 'Tuple field [2]["k"] required by space format is missing' in text
    assert "in one index, but type" in text and "invalid path" in text
    assert any(line.startswith("after restart sk\tok\t{1={") for line in tarantool)
