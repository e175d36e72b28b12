"""box.NULL compared with Tarantool 2.6 line for line: it is a `void *` NULL cdata
(`box.NULL == nil`, yet truthy and a place in a table); msgpack, JSON and YAML
decode nil to it wherever it stands (top level, arrays, map values, CALL and EVAL
arguments, net.box results); a tuple's nil field is box.NULL by number, plain nil by
name or JSON path; and every encoder writes it as nil/null.
"""
from conftest import LUA_PRINT_ROW, same_output_on_both

SCRIPT = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1, listen = os.getenv('LISTEN')}
local msgpack, json, yaml = require('msgpack'), require('json'), require('yaml')
""" + LUA_PRINT_ROW + r"""
p('null', type(box.NULL), box.NULL == nil, tostring(box.NULL), box.NULL and 'truthy' or 'falsy')
p('aliases', type(json.NULL), type(yaml.NULL), type(msgpack.NULL), json.NULL == nil)
p('compare', box.NULL == {}, box.NULL == 'abc', box.NULL == 0, box.NULL == false, #{box.NULL, box.NULL})
local keyed = {}
keyed[box.NULL] = 1
p('as key', keyed[box.NULL])
p('encode', json.encode(box.NULL), json.encode({1, box.NULL, 3}), json.encode({a = box.NULL}),
  (yaml.encode({box.NULL}):gsub('\n', ' ')), msgpack.encode(box.NULL) == msgpack.encode(nil))
local top = msgpack.decode(msgpack.encode(nil))
p('msgpack top', type(top), top == nil, select('#', msgpack.decode(msgpack.encode(nil))))
local m = msgpack.decode(msgpack.encode({a = box.NULL}))
p('msgpack map', type(m.a), m.a == nil)
local a = msgpack.decode(msgpack.encode({1, box.NULL, 3}))
p('msgpack array', type(a[2]), a[2] == nil, #a)
p('msgpack sparse', type(msgpack.decode(msgpack.encode({[1] = 1, [3] = 3}))[2]))
local j, jm = json.decode('[1,null,3]'), json.decode('{"a":null}')
p('json', type(j[2]), #j, type(jm.a), jm.a == nil)
local y, ym = yaml.decode('[1, null, 3]'), yaml.decode('a: ~')
p('yaml', type(y[2]), type(ym.a), ym.a == nil, type(yaml.decode('a:').a))
local t = box.tuple.new({1, box.NULL, {a = box.NULL}})
p('tuple', type(t[2]), t[2] == nil, #t, type(t:totable()[2]), type(t['[2]']), type(t[3].a), type(t['[3].a']))
local u = {t:unpack()}
p('unpack', type(u[2]), t:find(box.NULL), t:find(nil), json.encode(t), tostring(box.tuple.new({nil, 2})))
for i, v in t:ipairs() do p('ipairs', i, type(v)) end
p('update', box.tuple.new({1}):update({{'=', 2, box.NULL}}))
box.schema.user.grant('guest', 'super')
local s = box.schema.space.create('s', {format = {{'id', 'unsigned'}, {'v', 'any', is_nullable = true}}})
s:create_index('pk')
s:insert({1, box.NULL})
s:insert({2, nil, 5})
p('stored', type(s:get(1)[2]), type(s:get(1).v), s:get(1).v == nil, type(s:get(2)[2]))
local map = s:get(1):tomap()
p('tomap', type(map[2]), type(map.v))
p('bad key', pcall(function() return s:insert({box.NULL}) end))
function arg_types(...)
  local r = {}
  for i = 1, select('#', ...) do r[i] = type(select(i, ...)) end
  return table.concat(r, ','), select('#', ...)
end
function field_types(x) return {type(x), type(x and x.x), type(x and x[2])} end
function nulls() return box.NULL, nil, {box.NULL} end
local c = require('net.box').connect(box.info.listen)
p('call args', c:call('arg_types', {box.NULL, 1, nil, 3}))
p('call map', unpack(c:call('field_types', {{x = box.NULL}})))
p('call array', unpack(c:call('field_types', {{1, box.NULL}})))
local r1, r2, r3 = c:call('nulls')
p('call results', type(r1), type(r2), type(r3), type(r3[1]))
p('eval', c:eval('return type(...)', {box.NULL}))
local row = c.space.s:get(1)
p('net.box row', type(row[2]), type(row.v), type(c.space.s:select()[1][2]))
c:close()
os.exit(0)
"""


def test_box_null_behaves_as_in_tarantool(tmp_path):
    same_output_on_both(tmp_path, "box_null.lua", SCRIPT, 26)
