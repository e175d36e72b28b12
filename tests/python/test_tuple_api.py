"""The box.tuple API from Lua compared with Tarantool 2.6 line for line: fields by
number, name and JSON path; find, findall, unpack and totable with ranges,
transform, update and upsert (by field number and by format name), new, equality,
pairs, tomap, and the format's checks on insert and get.

Printed as values, so that representations that differ by design (a tuple is
cdata in Tarantool and userdata here; box.NULL likewise) do not count.
"""
from conftest import same_output_on_both

SCRIPT = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local json = require('json')
local function p(...)
  local out = {}
  for i = 1, select('#', ...) do
    local v = select(i, ...)
    if box.tuple.is(v) then v = v:totable() end
    if (type(v) == 'cdata' or type(v) == 'userdata') and tostring(v):find('NULL') then v = 'box.NULL' end
    if type(v) == 'table' then
      local ok, e = pcall(json.encode, v)
      v = ok and e or ('table:' .. tostring(e))
    end
    table.insert(out, tostring(v))
  end
  print(table.concat(out, ' | '))
end
local function try(label, f, ...)
  local r = {pcall(f, ...)}
  if r[1] then p(label, unpack(r, 2, table.maxn(r))) else p(label, 'error', tostring(r[2])) end
end
local t = box.tuple.new({1, 'two', 3.5, {4, 5}, {a = 6}, box.NULL, 'two'})
try('len', function() return #t end)
try('bsize', function() return t:bsize() end)
try('index', function() return t[1], t[2], t[7], t[8], t[0], t[-1] end)
try('find', function() return t:find('two'), t:find(2, 'two'), t:find('zz'), t:find(3.5) end)
try('findall', function() return t:findall('two') end)
try('unpack', function() return t:unpack() end)
try('unpack2', function() return t:unpack(2, 3) end)
try('unpack3', function() return t:unpack(6) end)
try('totable', function() return t:totable() end)
try('totable2', function() return t:totable(2, 3) end)
try('transform1', function() return t:transform(2, 1) end)
try('transform2', function() return t:transform(2, 0, 'x', 'y') end)
try('transform3', function() return t:transform(-1, 1) end)
try('transform4', function() return t:transform(9, 1) end)
try('transform5', function() return t:transform(0, 1) end)
try('update', function() return t:update({{'=', 2, 'TWO'}, {'+', 1, 10}}) end)
try('update_err', function() return t:update({{'+', 2, 1}}) end)
try('upsert', function() return t:upsert({{'+', 2, 1}, {'+', 1, 1}}) end)
try('tostring', function() return tostring(box.tuple.new({1, 'a'})) end)
try('is', function() return box.tuple.is(t), box.tuple.is({}), box.tuple.is(nil) end)
try('new_scalar', function() return box.tuple.new(1, 2, 'x') end)
try('new_empty', function() return box.tuple.new() end)
try('new_nested', function() return box.tuple.new({{1}, {}}) end)
try('eq', function() return t == t, box.tuple.new({1}) == box.tuple.new({1}) end)
try('pairs', function() local n = 0 for k, v in t:pairs() do n = n + k end return n end)
try('ipairs', function() local n = 0 for k, v in t:ipairs() do n = n + k end return n end)
local s = box.schema.space.create('f', {format = {{'id', 'unsigned'}, {'name', 'string'}, {name = 'x', type = 'any', is_nullable = true}}})
s:create_index('pk')
local ft = s:insert{1, 'n', {y = 1}}
try('field_by_name', function() return ft.id, ft.name, ft.x, tostring(ft.nope), tostring(ft['[2]']) end)
try('paths', function()
  return tostring(t['[4][1]']), tostring(t['[4][2]']), tostring(t['[5].a']), tostring(t['[5]["a"]']),
         tostring(t['[9]']), tostring(t['[4][3]']), tostring(ft['x.y']), tostring(ft['[3].y']),
         tostring(ft['name']), tostring(t['[1]']), tostring(t['[2]'])
end)
try('tomap', function() local m = ft:tomap() return m.id, m.name, m[1], m[3] ~= nil end)
try('tomap_names_only', function() local m = ft:tomap({names_only = true}) return m.id, m[1] end)
try('update_name', function() return ft:update({{'=', 'name', 'm'}}) end)
try('update_bad_name', function() return ft:update({{'=', 'nope', 'm'}}) end)
try('format_insert_bad', function() return s:insert{2, 3} end)
try('format_insert_short', function() return s:insert{2} end)
try('format_get_str', function() return s:get('x') end)
-- A field named as a method hides it (box.tuple.<method> still reaches it); a
-- tuple has no len method.
local ms = box.schema.space.create('m', {format = {{'id', 'unsigned'}, {'bsize', 'string'}, {'update', 'unsigned'}}})
ms:create_index('pk')
local mt = ms:replace{1, 'b', 7}
try('shadowed', function() return mt.bsize, mt.update, type(mt.totable), box.tuple.bsize(mt), #mt, tostring(mt.len) end)
try('methods', function() return t:bsize(), type(t.bsize), tostring(t.len), tostring(t.nosuch) end)
os.exit(0)
"""


def test_tuple_api_matches_tarantool(tmp_path):
    tarantool = same_output_on_both(tmp_path, "tuple_api.lua", SCRIPT, 37)
    assert "paths | 4 | 5 | 6 | 6 | nil | nil | 1 | 1 | n | 1 | two" in tarantool


TYPE_SCRIPT = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local s = box.schema.space.create('t')
s:create_index('pk')
local t = s:insert{1, 'a', {2, 3}}
print('type', type(t), type(box.tuple.new({})), type(s:get(1)), type(io.stdout), type(1ULL), type({}))
-- What luatest's comparator does before comparing: a cdata with :totable() is a table.
local function cast(v)
    if type(v) == 'cdata' then
        local ok, as_table = pcall(function() return v:totable() end)
        if ok then return as_table end
    end
    return v
end
local c = cast(s:get(1))
print('cast', type(c), c[1], c[2], c[3][2])
print('cast number', cast(5ULL) == 5ULL)
-- Tuples still work everywhere as tuples.
print('is', box.tuple.is(t), #t, t[2], require('json').encode(t), require('msgpack').decode(require('msgpack').encode(t))[2])
print('replace', s:replace(t)[2], s:update(1, {{'=', 2, 'b'}})[2], require('yaml').encode(t):gsub('\n', ' '))
print('pairs', table.concat(require('fun').iter({t:unpack(1, 2)}):map(tostring):totable(), ','))
os.exit(0)
"""


def test_tuples_are_cdata_to_type(tmp_path):
    """type(tuple) is 'cdata', as in 2.6 (luatest's assert_equals turns a cdata into
    a table with :totable() before comparing); tuples go on working as tuples."""
    tarantool = same_output_on_both(tmp_path, "tuple_type.lua", TYPE_SCRIPT, 6)
    assert tarantool[0] == "type\tcdata\tcdata\tcdata\tuserdata\tcdata\ttable"
