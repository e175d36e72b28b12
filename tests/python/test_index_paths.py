"""Index parts with JSON paths (`{'data.k', 'unsigned'}`, `{field = 2, path = 'name'}`),
and multikey indexes (`{'tags[*]', 'string'}`: an entry per array element), compared
with Tarantool 2.6.

The same Lua script runs on both: it creates indexes on places inside fields
(TREE and HASH, unique or not, nullable, paths through maps and arrays), inserts,
updates, upserts, replaces and deletes tuples, and prints every result, error, index
read, `index.parts` and `_index` row; then a second script restarts on the same
data and reads through the indexes again. Maps are printed with sorted keys
(test_table_order.py checks the order itself).
"""
from conftest import LUA_SHOW_SORTED, LUA_TRY, same_output_on_both, scripts_in_turn_on_both

SHOW = LUA_SHOW_SORTED + LUA_TRY

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
-- Multikey indexes: an entry per element of the array a [*] step runs over.
local m = box.schema.space.create('m', {format = {{'id', 'unsigned'}, {'tags', 'array'}, {'items', 'array'},
                                                  {'opt', 'array', is_nullable = true}}})
m:create_index('pk')
try('mk tags', function() return m:create_index('tags', {parts = {{'tags[*]', 'string'}}, unique = false}).parts end)
try('mk unique', function() return m:create_index('sku', {parts = {{'items[*].sku', 'unsigned'}}}).parts end)
try('mk two parts', function()
    return m:create_index('two', {parts = {{'items[*].sku', 'unsigned'}, {'items[*].n', 'string', is_nullable = true}},
                                  unique = false}).parts
end)
try('mk with plain part', function()
    return m:create_index('mix', {parts = {{'tags[*]', 'string'}, {'id', 'unsigned'}}, unique = false}).parts
end)
try('mk nested', function()
    return m:create_index('nested', {parts = {{'items[*].sub[1]', 'string', is_nullable = true}}, unique = false}).parts
end)
try('mk incompatible', function()
    return m:create_index('bad', {parts = {{'items[*].sku', 'unsigned'}, {'tags[*]', 'string'}}, unique = false})
end)
try('mk two placeholders', function() return m:create_index('bad2', {parts = {{'items[*][*]', 'unsigned'}}}) end)
try('mk hash', function() return m:create_index('bad3', {type = 'hash', parts = {{'tags[*]', 'string'}}}) end)
try('mk nullable root', function() return m:create_index('bad4', {parts = {{'opt[*]', 'string'}}, unique = false}) end)
try('mk primary', function()
    local p = box.schema.space.create('p', {format = {{'tags', 'array'}}})
    return p:create_index('pk', {parts = {{'tags[*]', 'string'}}})
end)
try('m1', function() return m:insert{1, {'a', 'b', 'a'}, {{sku = 10, n = 'x', sub = {'s'}}, {sku = 11}}} end)
try('m2', function() return m:insert{2, {'b', 'c'}, {{sku = 12}}} end)
try('m3 empty', function() return m:insert{3, {}, {}} end)
try('m4 duplicate element', function() return m:insert{4, {}, {{sku = 10}}} end)
try('m5 same element twice', function() return m:insert{5, {}, {{sku = 20}, {sku = 20}}} end)
try('m6 element type', function() return m:insert{6, {'a', 5}, {}} end)
try('m7 element missing', function() return m:insert{7, {}, {{n = 'q'}}} end)
try('m8 not an array', function() return m:insert{8, 'x', {}} end)
try('m9 element not a map', function() return m:insert{9, {}, {5}} end)
for _, name in ipairs({'tags', 'sku', 'two', 'mix', 'nested'}) do
    try('mk select ' .. name, function() return m.index[name]:select() end)
end
try('mk by key', function() return m.index.tags:select('b'), m.index.tags:count('b') end)
try('mk counts', function() return m.index.tags:count(), m.index.tags:len(), m.index.sku:len(), m:len() end)
try('mk get', function() return m.index.sku:get(11) end)
try('mk range', function() return m.index.tags:select('a', {iterator = 'GT'}) end)
try('mk update', function() return m:update(1, {{'=', 2, {'z', 'b'}}}) end)
try('mk after update', function() return m.index.tags:select() end)
try('mk update to a taken element', function() return m:update(2, {{'=', 3, {{sku = 11}}}}) end)
try('mk replace keeps an element', function() return m:replace{1, {'b'}, {{sku = 11}}} end)
try('mk delete', function() return m:delete(2) end)
try('mk after delete', function() return m.index.tags:select(), m.index.sku:select() end)
try('mk min max', function() return m.index.tags:min(), m.index.tags:max() end)
-- A new format is checked against the indexes' types, as a new index is.
local fmt = box.space.t:format()
try('format: a path field made unsigned', function()
    local f = table.deepcopy(fmt) f[2].type = 'unsigned' box.space.t:format(f)
end)
try('format: a path field made an array', function()
    local f = table.deepcopy(fmt) f[2].type = 'array' box.space.t:format(f)
end)
try('format: the key a string', function() local f = table.deepcopy(fmt) f[1].type = 'string' box.space.t:format(f) end)
try('format: a path field any', function()
    local f = table.deepcopy(fmt) f[2].type = 'any' box.space.t:format(f) return #box.space.t:format()
end)
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
try('after restart multikey', function() return box.space.m.index.tags:select(), box.space.m.index.sku:select() end)
try('after restart multikey count', function() return box.space.m.index.tags:count() end)
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
    assert "mk counts\tok\t4 4 4 4" in text, [line for line in tarantool if "mk counts" in line]


REQUIRED_THROUGH_PATHS = r"""
box.cfg{log_level = 1}
-- As 2.6: a field an index reaches inside by a path is required only through those
-- places (its format's is_nullable = false notwithstanding): a nullable place lets
-- the whole field be absent, a missing required one is named by its path.
local function show(s, t) print(pcall(s.insert, s, t)) end
local s = box.schema.space.create('t', {format = {{'id', 'unsigned'}, {'m', 'any'}, {'n', 'string', is_nullable = true}}})
s:create_index('pk')
s:create_index('path', {parts = {{2, 'unsigned', path = 'a.b'}}, unique = false})
show(s, {1})
show(s, {2, {a = {c = 1}}})
show(s, {3, {}})
local s2 = box.schema.space.create('t2', {format = {{'id', 'unsigned'}, {'m', 'map'}}})
s2:create_index('pk')
s2:create_index('path', {parts = {{2, 'unsigned', path = 'a', is_nullable = true}}, unique = false})
show(s2, {1})
show(s2, {2, {}})
show(s2, {3, box.NULL})
local s3 = box.schema.space.create('t3', {format = {{'id', 'unsigned'}, {'m', 'any'}, {'k', 'unsigned'}}})
s3:create_index('pk')
s3:create_index('path', {parts = {{2, 'unsigned', path = 'a', is_nullable = true}}, unique = false})
show(s3, {1})
show(s3, {1, box.NULL, 5})
show(s3, {2, {b = 1}, 5})
os.exit(0)
"""


def test_a_field_with_paths_inside_is_required_through_them(tmp_path):
    same_output_on_both(tmp_path, "required.lua", REQUIRED_THROUGH_PATHS, 9)
