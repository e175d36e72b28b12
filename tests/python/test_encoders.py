"""json, msgpack and yaml encoders and decoders from Lua compared with Tarantool 2.6
line for line: integers (to 64 bits), floats, inf and nan (yaml writes a NaN's sign,
as printf does), strings with escapes, empty, sparse and nested tables, cdata
integers; JSON and msgpack decoding.

Left out, known to differ: json.decode's error texts. box.NULL has a test of its
own (test_box_null.py).
"""
from conftest import LUA_PRINT_ROW, same_output_on_both

SCRIPT = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local json, msgpack, yaml = require('json'), require('msgpack'), require('yaml')
local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end
local vals = {
  {'int', 1}, {'neg', -1}, {'big', 2^53}, {'float', 1.5}, {'nan', 0/0}, {'inf', 1/0}, {'ninf', -1/0},
  {'str', 'héllo\n"q"'}, {'empty_t', {}}, {'arr', {1, 2, 3}}, {'map', {a = 1}}, {'sparse', {[1] = 1, [3] = 3}},
  {'nested', {1, {2, {3}}}}, {'bool', true}, {'ll', 123456789012345678LL}, {'ull', 18446744073709551615ULL},
  {'negll', -9007199254740993LL}, {'small_float', 1e-300}, {'int_float', 3.0}, {'neg_zero', -0.0},
}
for _, v in ipairs(vals) do
  local name, x = v[1], v[2]
  local okj, j = pcall(json.encode, x)
  local okm, m = pcall(msgpack.encode, x)
  local oky, y = pcall(yaml.encode, x)
  print(name, okj and j or ('E:' .. tostring(j)), okm and hex(m) or ('E:' .. tostring(m)), oky and y:gsub('\n', '\\n') or ('E:' .. tostring(y)))
end
for _, s in ipairs({'[1,2]', '{"a":[1,{"b":null}]}', '1e400', '"\\u00e9"', '12345678901234567890', '-0', '0.1'}) do
  local ok, r = pcall(json.decode, s)
  print('jdec', s, ok, ok and json.encode(r) or tostring(r))
end
for _, h in ipairs({'93010203', 'cf0000000000000001', 'd3ffffffffffffffff', 'cb3ff8000000000000', 'ca3fc00000', 'a3616263', 'c403616263', '81a16101'}) do
  local bin = h:gsub('..', function(b) return string.char(tonumber(b, 16)) end)
  local ok, r = pcall(msgpack.decode, bin)
  print('mdec', h, ok, ok and (type(r) == 'table' and json.encode(r) or tostring(r)) or tostring(r))
end
local pos_nan = msgpack.decode('\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00')
print('nan', (yaml.encode(0/0):gsub('\n', ' ')), (yaml.encode(-(0/0)):gsub('\n', ' ')), (yaml.encode(pos_nan):gsub('\n', ' ')))
os.exit(0)
"""


def test_encoders_match_tarantool(tmp_path):
    tarantool = same_output_on_both(tmp_path, "encoders.lua", SCRIPT, 36)
    assert "nan\t--- -nan ... \t--- nan ... \t--- -nan ... " in tarantool


# msgpack before box.cfg{} (scripts encode their settings first), its argument
# checks and error texts, positions, decode_unchecked and the decoded tables' metatables.
MSGPACK_SCRIPT = r"""
local msgpack = require('msgpack')
""" + LUA_PRINT_ROW + r"""
local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end
p('encode', hex(msgpack.encode({1, {a = 2}, 'x'})))
local v, pos = msgpack.decode(msgpack.encode({1, {a = 2}, 'x'}))
p('decode', v[1], v[2].a, v[3], pos)
p('second', msgpack.decode(msgpack.encode(1) .. msgpack.encode(2), 2))
p('unchecked', msgpack.decode_unchecked(msgpack.encode(5)))
p('hints', getmetatable(msgpack.decode('\x90')) == msgpack.array_mt, getmetatable(msgpack.decode('\x80')) == msgpack.map_mt,
  msgpack.array_mt.__serialize, msgpack.map_mt.__serialize,
  msgpack.encode(setmetatable({}, msgpack.map_mt)) == '\x80', msgpack.encode(setmetatable({}, msgpack.array_mt)) == '\x90')
for _, args in ipairs({{'\x92\x01'}, {'\x92\x01', nil, n = 2}, {1}, {msgpack.encode(1), 5}, {'abc', 0}, {'\x01\x02', 3}, {''}, {'\x91', 1}}) do
  p('bad decode', pcall(msgpack.decode, unpack(args, 1, args.n or #args)))
end
p('bad encode', pcall(msgpack.encode, print))
p('no argument', pcall(msgpack.encode))
p('ibuf argument', pcall(msgpack.encode, 1, 2))
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
p('after cfg', hex(msgpack.encode({1, 2})), msgpack.decode('\x93\x01\x02\x03')[3])
os.exit(0)
"""


def test_msgpack_works_before_box_cfg_as_in_tarantool(tmp_path):
    same_output_on_both(tmp_path, "msgpack.lua", MSGPACK_SCRIPT, 17)
