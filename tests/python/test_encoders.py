"""json, msgpack and yaml encoders and decoders from Lua compared with Tarantool 2.6
line for line: integers (to 64 bits), floats, inf and nan (yaml writes a NaN's sign,
as printf does), strings with escapes, empty, sparse and nested tables, cdata
integers; JSON and msgpack decoding, json.decode token by token with its errors.
box.NULL has a test of its own (test_box_null.py).
"""
import subprocess

from conftest import LUA_PRINT_ROW, ONCEBOX, run_script_on_both, same_output_on_both

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


JSON_DECODE_SCRIPT = r"""
local json = require('json')
local function show(ok, r)
  if not ok then return 'err', tostring(r) end
  return 'ok', type(r), type(r) == 'table' and json.encode(r) or tostring(r)
end
local cases = {
  '1e', '', ' ', '{', '[1,', '{"a":1,}', '[1 2]', 'nul', 'tru', '"abc', '"\\x"', '1.5.2', '{"a" 1}', '{1:2}',
  '[1]x', 'abc', '-', '01', '0x10', '1e400', '-0', '"\\u00e9"', '"\\ud83d\\ude00"', '[[[[]]]]',
  '{"a":[1,{"b":null}]}', '  5  ', 'NaN', 'inf', '[1,2,]', '"a\tb"', '1E2', '.5', '5.', '"\\u12"',
  '[1 18446744073709551615]', '[1 1.5]', '[1 "a"]', '[1 true]', '[1 null]', '[1 :]', '[1 {]', '[1 [',
  '{"a":1 "b"}', '{"a":1 ]', '[1,\n 2 3]', '[1,\r\n  2\n 3]', '{"a"}', '{"a":}', '[1 ,]', '[1 -2]',
  '"\\u0041\\u00"', '"\\ud83d"', '"\\ude00"', '"\\ud83dx"', '"\\ud83d\\u0041"', '"\\u0000"', '"a\0b"', '[1]\0',
  '\0', '-inf', '-nan', 'nan', 'Infinity', '+1', '1e5', '1E+2', '12345678901234567890', '-9223372036854775809',
  '100000000000000', '-100000000000000', '99999999999999', '9223372036854775807', '1.0', '3.14159', '0.1',
  '1e-5', '123e-2', '1.e2', '[1e2]', '"\\/"', '{"a":1,"a":2}', '[]', '{}', '[[],{}]', 'true false', '"\1"',
  '"\\uD83D\\uDE00"', '"\\u20AC"', '{"n":[true,false,null]}', '\f1', '1 \n\n x',
}
for i, s in ipairs(cases) do
  print(i, (s:gsub('\n', '\\n'):gsub('%z', '\\0')), show(pcall(json.decode, s)))
end
for _, v in ipairs({5, 1.5, true, box.NULL}) do print(type(v), show(pcall(json.decode, v))) end
print('none', show(pcall(json.decode)))
print('nil', show(pcall(json.decode, nil)))
print('three', show(pcall(json.decode, '[1]', {}, 3)))
for _, d in ipairs({0, 1, 2}) do
  for _, s in ipairs({'[1]', '[[1]]', '{"a":{"b":1}}', '5', '[\n[1]]'}) do
    print('depth', d, s, show(pcall(json.decode, s, {decode_max_depth = d})))
  end
end
print('deep', show(pcall(json.decode, string.rep('[', 130) .. string.rep(']', 130))))
print('deep128', show(pcall(json.decode, string.rep('[', 128) .. string.rep(']', 128))))
print('opt', show(pcall(json.decode, 'inf', {decode_invalid_numbers = false})))
print('opt', show(pcall(json.decode, '1e400', {decode_invalid_numbers = false})))
print('opt', show(pcall(json.decode, '[1]', {bogus = 1})))
print('opt', show(pcall(json.decode, '[1]', 5)))
local t = json.decode('{"a":[1,2]}')
print(type(getmetatable(t)), type(getmetatable(t.a)), json.decode('[1]')[1] == 1, type(json.decode('[1.5]')[1]))
os.exit(0)
"""


def test_json_decode_matches_tarantool_token_by_token(tmp_path):
    """lua-cjson's decoder as 2.6 has it: numbers as strtod and strtoll read them (no
    leading zeros, '1e' stops before the 'e', inf and nan), surrogate pairs, a NUL
    ending the text, the nesting limit, options, and every error's text and place."""
    tarantool = same_output_on_both(tmp_path, "json_decode.lua", JSON_DECODE_SCRIPT, 125)
    assert any("Expected comma or array end but found T_INT on line 2" in line for line in tarantool)


SHARED_MT_SCRIPT = r"""
local json, yaml, msgpack = require('json'), require('yaml'), require('msgpack')
print(json.array_mt == msgpack.array_mt, json.map_mt == msgpack.map_mt, yaml.array_mt == msgpack.array_mt, yaml.map_mt == msgpack.map_mt)
print(json.array_mt.__serialize, json.map_mt.__serialize, json.null == json.NULL, json.null == nil, json.NULL == msgpack.NULL)
print(getmetatable(json.decode('[1]')) == json.array_mt, getmetatable(json.decode('{"a":1}')) == json.map_mt)
print(getmetatable(json.decode('[1]', {decode_save_metatables = false})))
print(getmetatable(yaml.decode('[1]')) == yaml.array_mt, getmetatable(yaml.decode('{a: 1}')) == yaml.map_mt)
print(getmetatable(msgpack.decode(msgpack.encode({1}))) == msgpack.array_mt)
print(json.encode(setmetatable({}, json.array_mt)), json.encode(setmetatable({}, json.map_mt)))
print(json.encode(setmetatable({1, 2}, msgpack.map_mt)))
print(yaml.encode(setmetatable({}, json.array_mt)))
os.exit(0)
"""


def test_serializers_share_array_mt_and_map_mt_like_tarantool(tmp_path):
    """json, yaml and msgpack hand out one array_mt and one map_mt, which their
    decoders set on what they decode; json.null is json.NULL."""
    same_output_on_both(tmp_path, "shared_mt.lua", SHARED_MT_SCRIPT, 11)


SERIALIZER_CFG_SCRIPT = r"""
local json = require('json')
local function show(...) print(pcall(...)) end
local keys = {} for k, v in pairs(json.cfg) do table.insert(keys, k .. '=' .. tostring(v)) end table.sort(keys) print(table.concat(keys, ' '))
print(json.encode(1/3), json.encode({1/3}, {encode_number_precision = 3}))
print(json.encode(0/0), json.encode(math.huge), json.encode(-math.huge))
show(json.encode, 0/0, {encode_invalid_numbers = false})
show(json.encode, {math.huge}, {encode_invalid_numbers = false, encode_invalid_as_nil = true})
show(json.encode, function() end)
show(json.encode, {f = function() end}, {encode_invalid_as_nil = true})
local p = newproxy(true)
getmetatable(p).__tostring = function() return 'proxy' end
show(json.encode, p, {encode_use_tostring = true})
show(json.encode, {p}, {encode_use_tostring = true, encode_invalid_as_nil = true})
show(json.encode, {[20] = 1})
show(json.encode, {[20] = 1}, {encode_sparse_convert = false})
show(json.encode, {[20] = 1}, {encode_sparse_safe = 30})
show(json.encode, {[5] = 1}, {encode_sparse_safe = 2})
show(json.encode, {[5] = 1}, {encode_sparse_safe = 2, encode_sparse_ratio = 0})
show(json.encode, {[3] = 1, [4] = 2}, {encode_sparse_safe = 2, encode_sparse_ratio = 3})
show(json.encode, setmetatable({1, 2}, {__serialize = 'map'}), {encode_load_metatables = false})
show(json.encode, setmetatable({1, 2}, {__serialize = 'map'}))
local function nest(n) local t = 1 for i = 1, n do t = {t} end return t end
for _, n in ipairs({127, 128, 129}) do local ok, r = pcall(json.encode, nest(n)) print(n, ok, ok and #r or r) end
show(json.encode, nest(4), {encode_max_depth = 2, encode_deep_as_nil = true})
show(json.encode, nest(4), {encode_max_depth = 2})
show(json.encode, {a = {b = {c = 1}}}, {encode_max_depth = 2, encode_deep_as_nil = true})
json.cfg{encode_number_precision = 5}
print(json.cfg.encode_number_precision, json.encode(1/3))
local j2 = json.new()
print(j2.cfg.encode_number_precision, j2.encode(1/3), j2.new ~= nil, j2.array_mt == json.array_mt, j2.NULL == json.NULL)
j2.cfg{encode_invalid_as_nil = true, no_such_option = 1}
print(j2.encode({function() end}), j2.cfg.no_such_option, json.cfg.encode_invalid_as_nil)
json.cfg{encode_number_precision = 14}
json.cfg{decode_max_depth = 2}
show(function() return json.encode(json.decode('[[[1]]]')) end)
json.cfg{decode_max_depth = 128}
show(function() return json.encode(json.decode('[[[1]]]')) end)
json.cfg{decode_save_metatables = false}
print(getmetatable(json.decode('[1]')))
json.cfg{decode_save_metatables = true}
print(select('#', json.cfg{}))
show(json.cfg, 5)
show(json.encode)
show(json.encode, 1, 2, 3)
show(json.encode, 1, 5)
show(json.encode, 1, {})
print(pcall(function() return json.decode('[') end))
print(pcall(function() return json.decode() end))
print(pcall(function() return json.decode(1, 2) end))
print(pcall(function() return json.encode(function() end) end))
print(pcall(function() return json.encode() end))
print(pcall(function() return json.encode(1, 2) end))
print(pcall(function() return json.encode(0/0, {encode_invalid_numbers = false}) end))
print(pcall(function() local t = 1 for i = 1, 200 do t = {t} end return json.encode(t) end))
print(pcall(function() return json.encode({[20] = 1}, {encode_sparse_convert = false}) end))
print(pcall(function() return json.cfg(5) end))
local function opts(cfg) local keys = {} for k, v in pairs(cfg) do table.insert(keys, k .. '=' .. tostring(v)) end table.sort(keys) return table.concat(keys, ' ') end
local msgpack, yaml = require('msgpack'), require('yaml')
print(opts(msgpack.cfg) == opts(json.cfg), opts(yaml.cfg) == opts(json.cfg))
local m2, y2 = msgpack.new(), yaml.new()
print(m2.cfg ~= msgpack.cfg, y2.cfg ~= yaml.cfg, opts(m2.cfg) == opts(json.cfg), type(m2.encode), type(y2.decode))
print(m2.decode(m2.encode({1, 'a'}))[2], y2.decode(y2.encode({1, 'a'}))[2])
msgpack.cfg{encode_max_depth = 128}
yaml.cfg{encode_use_tostring = false}
print(msgpack.cfg.encode_max_depth, yaml.cfg.encode_use_tostring)
for _, k in ipairs({1, -5, 1e15, -2^63, 1.5, -0.25, 10LL, 18446744073709551615ULL, true}) do
    print('key', tostring(k), pcall(json.encode, {[k] = 1}))
end
os.exit(0)
"""


def test_serializer_options_and_instances_match_tarantool(tmp_path):
    """json.cfg and json.encode/decode's option tables (sparse arrays, depth, number
    precision, invalid numbers, unsupported values), json.new() instances with
    options of their own, 2.6's error texts; msgpack and yaml show the same options
    and make instances; map keys: integers in full, a fractional number refused."""
    same_output_on_both(tmp_path, "serializer_cfg.lua", SERIALIZER_CFG_SCRIPT, 58)


# msgpack's and yaml's options (the module's cfg and instances' own), __serialize
# hooks on tables and objects, 2.6's depth limit and error texts and kinds.
MSGPACK_YAML_OPTIONS = LUA_PRINT_ROW + r"""
local msgpack, yaml, ffi = require('msgpack'), require('yaml'), require('ffi')
local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end
-- An outcome as text: the error's kind (a box error or a string) and message.
local function try(f, ...)
    local ok, r = pcall(f, ...)
    if ok then return type(r) == 'string' and hex(r) or tostring(r) end
    return (type(r) == 'string' and 'string: ' or 'box error: ') .. tostring(r)
end
local function yaml_try(f, ...)
    local ok, r = pcall(f, ...)
    if ok then return (tostring(r):gsub('\n', '|')) end
    return (type(r) == 'string' and 'string: ' or 'box error: ') .. tostring(r)
end
local function nest(n) local t = nil for i = 1, n do t = {t} end return t end
local serialize_fn = setmetatable({1}, {__serialize = function(t) return 'via ' .. #t end})
local failing_fn = setmetatable({}, {__serialize = function() error('no way', 0) end})
ffi.cdef('struct options_probe { int a; }')
local probe_t = ffi.metatype('struct options_probe', {__index = {__serialize = function(o) return {o.a} end},
                                                      __tostring = function() return 'probe' end})
local probe = probe_t(7)
-- The module's own options, at their defaults.
p('fn hook', try(msgpack.encode, serialize_fn), yaml_try(yaml.encode, serialize_fn))
p('failing hook', try(msgpack.encode, failing_fn), yaml_try(yaml.encode, failing_fn))
p('bad hook', try(msgpack.encode, setmetatable({}, {__serialize = 5})), yaml_try(yaml.encode, setmetatable({}, {__serialize = 'x'})))
p('cdata hook', try(msgpack.encode, probe), yaml_try(yaml.encode, probe))
p('ctype', try(msgpack.encode, probe_t), yaml_try(yaml.encode, probe_t))
p('function', try(msgpack.encode, print), yaml_try(yaml.encode, print))
for _, n in ipairs({127, 128, 129, 140}) do p('depth', n, try(msgpack.encode, nest(n))) end
p('nan', try(msgpack.encode, 0/0), try(msgpack.encode, ffi.new('float', 1/0)), yaml_try(yaml.encode, -1/0))
p('sparse', try(msgpack.encode, {[1] = 1, [20] = 2}), yaml_try(yaml.encode, {[1] = 1, [11] = 2}))
-- Instances: options of their own, the module's untouched.
local m, y = msgpack.new(), yaml.new()
m.cfg{encode_invalid_numbers = false}
y.cfg{encode_invalid_numbers = false}
p('no nan', try(m.encode, 0/0), try(m.encode, ffi.new('double', 0/0)), yaml_try(y.encode, 0/0), try(msgpack.encode, 0/0))
m.cfg{encode_invalid_as_nil = true}
y.cfg{encode_invalid_as_nil = true}
p('as nil', try(m.encode, {0/0, print, 1}), yaml_try(y.encode, {0/0, print, 1}))
m.cfg{encode_invalid_as_nil = false, encode_use_tostring = true}
y.cfg{encode_invalid_as_nil = false, encode_use_tostring = true}
p('tostring', try(m.encode, probe_t), yaml_try(y.encode, probe_t), try(m.encode, probe))
m.cfg{encode_load_metatables = false}
y.cfg{encode_load_metatables = false}
p('no metatables', try(m.encode, serialize_fn), yaml_try(y.encode, serialize_fn), try(m.encode, probe),
  try(m.encode, setmetatable({1, 2}, {__serialize = 'map'})), yaml_try(y.encode, setmetatable({}, {__serialize = 'x'})))
m = msgpack.new()
y = yaml.new()
m.cfg{encode_max_depth = 3}
p('max depth', try(m.encode, nest(3)), try(m.encode, nest(4)), m.cfg.encode_max_depth, msgpack.cfg.encode_max_depth)
m.cfg{encode_deep_as_nil = true}
p('deep as nil', try(m.encode, nest(5)), try(m.encode, {a = {b = {c = {d = 1}}}}))
m.cfg{encode_sparse_convert = false}
y.cfg{encode_sparse_convert = false}
p('sparse off', try(m.encode, {[1] = 1, [20] = 2}), yaml_try(y.encode, {[1] = 1, [20] = 2}), try(m.encode, {[1] = 1, [3] = 3}))
m.cfg{encode_sparse_convert = true, encode_sparse_ratio = 0}
p('ratio 0', try(m.encode, {[1] = 1, [20] = 2}))
m.cfg{encode_sparse_ratio = 2, encode_sparse_safe = 30}
p('safe 30', try(m.encode, {[1] = 1, [20] = 2}), try(m.encode, {[1] = 1, [31] = 2}))
y.cfg{encode_number_precision = 3}
p('precision', yaml_try(y.encode, 1/3), yaml_try(yaml.encode, 1/3))
m.cfg{decode_invalid_numbers = false, decode_save_metatables = false}
y.cfg{decode_invalid_numbers = false, decode_save_metatables = false}
p('decode', try(m.decode, msgpack.encode(0/0)), yaml_try(y.decode, '--- [1, nan]'), getmetatable(m.decode('\x91\x01')),
  getmetatable(y.decode('--- [1]')), getmetatable(msgpack.decode('\x91\x01')) == msgpack.array_mt,
  getmetatable(yaml.decode('--- {a: 1}')) == yaml.map_mt)
p('instance functions', try(m.decode_unchecked, '\x05'), m.decode_array_header ~= nil, m.ibuf_decode ~= nil, y.new ~= nil, m.NULL == msgpack.NULL)
p('option values', try(m.cfg, {encode_use_tostring = 'yes'}), m.cfg.encode_use_tostring, m.decode(m.encode(function() end)):sub(1, 9))
-- The module's options are the default encoder's.
msgpack.cfg{encode_use_tostring = true}
p('module tostring', try(msgpack.encode, probe_t))
msgpack.cfg{encode_use_tostring = false, encode_max_depth = 2}
p('module depth', try(msgpack.encode, nest(3)), try(box.tuple.new, {{{1}}}))
p('tuple errors', try(box.tuple.new, {print}), try(box.tuple.new, {setmetatable({}, {__serialize = 5})}))
msgpack.cfg{encode_max_depth = 128}
p('null ibuf', try(msgpack.ibuf_decode, require('buffer').ibuf().rpos))
p('header size', try(msgpack.decode_array_header, ffi.cast('char *', '\x91'), nil),
  try(msgpack.decode_array_header, ffi.cast('char *', '\x91'), 'x'))
os.exit(0)
"""


def test_msgpack_and_yaml_options_match_tarantool(tmp_path):
    """msgpack.cfg and yaml.cfg and their instances' (new()) options act as 2.6's:
    invalid numbers, values with no encoding (tostring, nil), metatables and
    __serialize hooks, depth (2.6's 'Too high nest level'), sparse arrays, number
    precision, decoding NaN and metatables; errors of the same kind and text."""
    same_output_on_both(tmp_path, "msgpack_yaml_options.lua", MSGPACK_YAML_OPTIONS, 30)


MSGPACK_FROM_MEMORY = LUA_PRINT_ROW + r"""
local msgpack = require('msgpack')
local ffi = require('ffi')
-- A copy of `s` in C memory, as an ibuf's rpos gives it (`keep` holds it alive).
local function buf(s)
    local keep = ffi.new('char[?]', #s + 1)
    ffi.copy(keep, s, #s)
    return ffi.cast('char *', keep), keep
end
for _, v in ipairs({{1, 2, 3}, {}, setmetatable({}, {__serialize = 'map'}), {a = 1}, 5, 'x'}) do
    local s = msgpack.encode(v)
    local ptr, keep = buf(s)
    local ok, n, np = pcall(msgpack.decode_array_header, ptr, #s)
    p('array header', ok, n, ok and (np - ptr) or nil)
    ok, n, np = pcall(msgpack.decode_map_header, ptr, #s)
    p('map header', ok, n, ok and (np - ptr) or nil)
    local uv, unp = msgpack.decode_unchecked(ptr)
    p('unchecked', type(uv), unp - ptr, ffi.typeof(unp))
    local inp, iv = msgpack.ibuf_decode(ptr)
    p('ibuf_decode', type(iv), inp - ptr, msgpack.encode(iv) == s)
end
local big = {} for i = 1, 20 do big[i] = i end
local s = msgpack.encode(big)
local ptr, keep = buf(s)
local n, np = msgpack.decode_array_header(ptr, #s)
p('array16', n, np - ptr, ffi.typeof(np))
p('const', select(2, msgpack.decode_array_header(ffi.cast('const char *', ptr), #s)) - ptr,
  ffi.typeof((select(2, msgpack.decode_array_header(ffi.cast('const char *', ptr), #s)))))
p('short', pcall(msgpack.decode_array_header, ptr, 2))
p('zero size', pcall(msgpack.decode_array_header, ptr, 0))
p('string', pcall(msgpack.decode_array_header, s, #s))
p('no size', pcall(msgpack.decode_array_header, ptr))
p('number', pcall(msgpack.decode_array_header, 5, 1))
p('unsigned char *', pcall(msgpack.decode_array_header, ffi.cast('unsigned char *', ptr), #s))
local m = {} for i = 1, 20 do m['k' .. i] = i end
s = msgpack.encode(m)
ptr, keep = buf(s)
n, np = msgpack.decode_map_header(ptr, #s)
p('map16', n, np - ptr)
p('map short', pcall(msgpack.decode_map_header, ptr, 1))
p('ibuf_decode nothing', pcall(msgpack.ibuf_decode))
p('ibuf_decode string', pcall(msgpack.ibuf_decode, 'abc'))
-- decode and decode_unchecked from memory
s = msgpack.encode({1, 'a', {x = 2.5}}) .. msgpack.encode(7)
ptr, keep = buf(s)
local v, vp = msgpack.decode(ptr, #s)
p('decode', msgpack.encode(v) == s:sub(1, #s - 1), vp - ptr, ffi.typeof(vp))
p('the next one', (msgpack.decode(vp, #s - (vp - ptr))))
p('no size', pcall(msgpack.decode, ptr))
p('short size', pcall(msgpack.decode, ptr, 3))
p('zero size', pcall(msgpack.decode, ptr, 0))
p('negative size', pcall(msgpack.decode, ptr, -1))
p('const', select(2, msgpack.decode(ffi.cast('const char *', ptr), #s)) - ptr)
p('unsigned char *', pcall(msgpack.decode, ffi.cast('unsigned char *', ptr), #s))
p('void *', pcall(msgpack.decode, ffi.cast('void *', ptr), #s))
p('unchecked twice', select(2, msgpack.decode_unchecked(ptr)) - ptr, (msgpack.decode_unchecked(vp)))
p('unchecked unsigned char *', pcall(msgpack.decode_unchecked, ffi.cast('unsigned char *', ptr)))
-- every kind of value, read without bounds
local all = msgpack.encode({string.rep('x', 300), -5, -200, -70000, -5000000000, 2^40, true, false, box.NULL,
                            1.5, {[1] = 1, [3] = 3}, 255, 65535, 70000, 5000000000, string.rep('y', 70000),
                            require('uuid').fromstr('6a7f7d1e-30a6-4e4c-9c4b-1c2e3a4b5c6d'),
                            {k = {1, {2, {3}}}}})
local aptr, akeep = buf(all)
local av, anp = msgpack.decode_unchecked(aptr)
p('every kind', anp - aptr == #all, msgpack.encode(av) == all)
os.exit(0)
"""


def test_msgpack_reads_from_memory_as_in_tarantool(tmp_path):
    """decode, decode_unchecked, decode_array_header, decode_map_header and
    ibuf_decode given a `char *` (an ibuf's rpos), and their errors."""
    same_output_on_both(tmp_path, "msgpack_memory.lua", MSGPACK_FROM_MEMORY, 48)


IBUF = LUA_PRINT_ROW + r"""
local buffer = require('buffer')
local msgpack = require('msgpack')
local ffi = require('ffi')
local b = buffer.ibuf()
p('new', b:size(), b:capacity(), b:unused(), b.rpos == b.wpos, type(b), ffi.typeof(b.rpos), b.buf == nil)
local n = msgpack.encode({1, 2, 3}, b)
p('encode into', n, b:size(), b:capacity() >= n, b:unused() == b:capacity() - b:size())
p('encode again', msgpack.encode('abc', b), b:size())
local v, np = msgpack.decode(b.rpos, b:size())
p('decode from rpos', v[3], np - b.rpos)
local r = b:read(np - b.rpos)
p('read', b:size(), r ~= nil, ffi.typeof(r))
p('the next value', (msgpack.decode(b.rpos, b:size())))
local ok, err = pcall(b.read, b, 100)
p('read too much', ok, err:match('Attempt to read out of range bytes: needed=100 size=4$') ~= nil)
p('alloc', ffi.typeof(b:alloc(10)), b:size())
local w = b:reserve(100)
p('reserve', b:size(), b:unused() >= 100, w == b.wpos)
p('checksize', b:checksize(5) == b.rpos, b:size())
b:recycle()
p('recycle', b:size(), b:capacity(), b.buf == nil)
b:alloc(5)
b:reset()
p('reset', b:size(), b:capacity() > 0, b.rpos == b.buf)
local big = b:alloc(100000)
p('grows', b:size(), b:capacity() >= 100000)
local s = buffer.IBUF_SHARED
p('shared', ffi.typeof(s), s:size())
s:reset()
p('shared encode', msgpack.encode({k = 'v'}, s), msgpack.decode(s.rpos, s:size()).k)
s:recycle()
p('not an ibuf', pcall(msgpack.encode, 1, 'x'))
-- unread bytes are kept when room is made
local c = buffer.ibuf(64)
ffi.copy(c:alloc(40), string.rep('a', 30) .. '0123456789', 40)
c:read(30)
local q = c:reserve(100000)
p('kept', c:size(), ffi.string(c.rpos, c:size()), q == c.wpos, c:unused() >= 100000, c:pos() >= 0)
os.exit(0)
"""


def test_ibuf_as_in_tarantool(tmp_path):
    """buffer.ibuf and IBUF_SHARED: size, reserve, alloc, read, recycle, reset, and
    msgpack.encode into an ibuf and decode from its rpos."""
    same_output_on_both(tmp_path, "ibuf.lua", IBUF, 17)


ENCODE_USE_TOSTRING = r"""
box.cfg{listen = os.getenv('LISTEN'), log_level = 1}
local msgpack = require('msgpack')
box.schema.user.grant('guest', 'read,write,execute', 'universe')
rawset(_G, 'ret_fn', function() return print, {f = type} end)
print(pcall(msgpack.encode, print))
local c = require('net.box').connect(box.cfg.listen)
print(pcall(c.call, c, 'ret_fn'))
msgpack.cfg{encode_use_tostring = true}
print(msgpack.cfg.encode_use_tostring)
local s = msgpack.decode(msgpack.encode({print, 1}))
print(type(s[1]), s[1]:match('^function') and 'function', s[2])
local r = {pcall(c.call, c, 'ret_fn')}
print(r[1], type(r[2]), r[2] and r[2]:match('^function') and 'function', type(r[3].f))
print(pcall(msgpack.cfg, {encode_use_tostring = false}))
print(pcall(msgpack.encode, print))
c:close()
os.exit(0)
"""


def test_msgpack_encode_use_tostring_covers_call_replies(tmp_path):
    """msgpack.cfg{encode_use_tostring = true} makes the default encoder (msgpack's and
    CALL replies') write a function as its tostring, as 2.6 does; off again, refused."""
    tarantool, oncebox = run_script_on_both(tmp_path, "use_tostring.lua", ENCODE_USE_TOSTRING)
    assert oncebox == tarantool
    assert tarantool[4] == "true\tstring\tfunction\tstring", tarantool


SCALAR_CDATA = """
local ffi, msgpack, json, yaml = require('ffi'), require('msgpack'), require('json'), require('yaml')
local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end
for _, c in ipairs({ffi.new('char', 65), ffi.new('unsigned short', 128), ffi.new('unsigned int', 128),
                    ffi.new('short', -5), ffi.new('int', -7), ffi.new('long', 9), ffi.new('int8_t', -1),
                    ffi.new('uint8_t', 200), ffi.new('float', 1.5), ffi.new('double', 2.5), ffi.new('bool', true),
                    ffi.new('bool', false), ffi.new('int64_t', 5), ffi.new('uint64_t', 6)}) do
    local m = msgpack.encode(c)
    print((tostring(c):gsub(': 0x%x+', '')), hex(m), json.encode(c), (yaml.encode(c):gsub('\\n', ' ')),
          type(msgpack.decode(m)), json.encode({c}), hex(msgpack.encode({a = c})))
end
os.exit(0)
"""


def test_scalar_cdata_encode_as_2_6(tmp_path):
    """Numeric and bool cdata (char, short, int and unsigned, float, double, bool)
    are the numbers and booleans they hold to msgpack, json and yaml, a float a
    msgpack float32, as in 2.6 (they were refused: 'unsupported Lua type')."""
    lines = same_output_on_both(tmp_path, "scalar_cdata.lua", SCALAR_CDATA, 14)
    assert lines[8].startswith("cdata<float>\tca3fc00000\t1.5")


JSON_CDATA_HOOKS = """
local ffi, json = require('ffi'), require('json')
ffi.cdef[[struct hooked {}]]
local ctype = ffi.typeof('struct hooked')
ffi.metatype(ctype, {__index = {__serialize = function() return 'unpack' end},
                     __tostring = function() return 'tostring' end})
local cdata = ffi.new(ctype)
local j = json.new()
j.cfg{encode_load_metatables = false, encode_use_tostring = false, encode_invalid_as_nil = false}
print(pcall(j.encode, cdata))
j.cfg{encode_invalid_as_nil = true}
print(j.encode(cdata), j.encode({cdata}))
j.cfg{encode_load_metatables = true, encode_use_tostring = false}
print(j.encode(cdata))
j.cfg{encode_load_metatables = false, encode_use_tostring = true}
print(j.encode(cdata))
j.cfg{encode_load_metatables = true, encode_use_tostring = true}
print(j.encode(cdata), j.encode(ctype))
os.exit(0)
"""


def test_json_cdata_hooks_follow_the_options_as_2_6(tmp_path):
    """A cdata's __serialize counts only under encode_load_metatables, else
    encode_use_tostring or encode_invalid_as_nil decide, or it is refused; a
    ctype's __serialize never counts (2.6's app-tap json ucdata checks)."""
    lines = same_output_on_both(tmp_path, "json_cdata_hooks.lua", JSON_CDATA_HOOKS, 5)
    assert lines[-1] == '"unpack"\t"ctype<struct hooked>"'


# yaml: strings that are not printable UTF-8 as !!binary (encoded and decoded),
# libyaml's escapes, integers past 10^14 as 64-bit cdata, nulls in block sequences.
YAML_TEXT_AND_BINARY = LUA_PRINT_ROW + r"""
local yaml = require('yaml')
local function line(s) return (s:gsub('\n', '|')) end
for _, s in ipairs({'\xff\xfe', '\xc2\x80', '\xc2\xa0nbsp', '\xc2\x85nel', '\xef\xbb\xbfbom', '\xef\xbf\xbe',
                    '\xed\xa0\x80', '\xe0\x80\x80', '\xf4\x90\x80\x80', '\xc3', 'caf\xc3\xa9', string.rep('\xff', 70),
                    '\0\7\8\11\12\27\127x', 'tab\there'}) do
    local text = yaml.encode(s)
    p(line(text), yaml.decode(text) == s)
end
p(line(yaml.encode({'\xff', 'a'})), line(yaml.encode({k = '\xc2\x80'})), line(yaml.encode({['\xfe'] = 1})))
p(line(yaml.encode(setmetatable({'\xff', 'a'}, {__serialize = 'seq'}))), line(yaml.encode(box.tuple.new({'\xff', 1}))))
p(yaml.decode('--- !!binary\n  aGVsbG8g\n  d29ybGQ=\n...\n'), yaml.decode('--- [!!binary aGk=, 2]\n...\n')[1],
  yaml.decode('--- {a: !!binary aGk=}\n...\n').a, yaml.decode('---\n- !!binary aGk=\n- b: !!binary\n    aGk=\n')[2].b)
for _, s in ipairs({'99999999999999', '100000000000000', '-100000000000000', '9223372036854775806',
                    '9223372036854775807', '18446744073709551615', '99999999999999999999', '-9223372036854775808',
                    '-99999999999999999999', '+100000000000000', '000100000000000000', '-0', '1e3', '0x10'}) do
    local v = yaml.decode('--- ' .. s .. '\n...\n')
    p(s, type(v), v)
end
local t = yaml.decode('- null\n- ~\n-\n- 1\n')
p(t[1], t[2], type(t[1]), type(t[2]), string.format('%q', t[3]), t[4])
-- Characters past the BMP are escaped, as 2.6's libyaml does.
for _, s in ipairs({'\xF0\x9F\x86\x98', 'a\xF0\x9F\x88\xB2b'}) do
    local text = yaml.encode(s)
    p(line(text), yaml.decode(text) == s, line(yaml.encode({s})))
end
-- %TAG directives: yaml.encode's tag_handle and tag_prefix, yaml.decode's tag_only.
local prefix = 'tag:tarantool.io/push,2018'
p(line(yaml.encode(300, {tag_handle = '!push!', tag_prefix = prefix})), line(yaml.encode({1}, {tag_handle = '!p!', tag_prefix = prefix})))
for _, handle in ipairs({'!push', 'push!', '', '!a b!', '!!'}) do p(yaml.encode(1, {tag_handle = handle, tag_prefix = prefix})) end
p(yaml.encode(1, {tag_handle = '!p!', tag_prefix = ''}))
for _, args in ipairs({{}, {1, 2}, {1, {tag_handle = '!p!'}}, {1, {tag_prefix = 'x'}}, {1, {tag_handle = true, tag_prefix = 'x'}}}) do
    p(pcall(yaml.encode, unpack(args, 1, table.maxn(args))))
end
p(line(yaml.encode(1, nil)), line(yaml.encode(nil)))
p(yaml.decode(yaml.encode(5, {tag_handle = '!push!', tag_prefix = prefix}), {tag_only = true}))
p(yaml.decode('%TAG !a! tag:a\n%TAG !b! tag:b\n--- 1\n', {tag_only = true}))
p(yaml.decode('--- 1\n', {tag_only = true}))
p(yaml.decode('\n%TAG !t1! tag:1\n--- 1\n...\n\n%TAG !t2! tag:2\n--- 2\n...\n', {tag_only = true}))
p(yaml.decode('%TAG !push! tag:x\n--- 7\n...\n'), yaml.decode('--- 1', {tag_only = false}), yaml.decode('--- 1', nil))
for _, args in ipairs({{}, {true}, {'', 1}}) do p(pcall(yaml.decode, unpack(args, 1, table.maxn(args)))) end
os.exit(0)
"""


def test_yaml_binary_escapes_and_big_integers_as_2_6(tmp_path):
    """yaml writes a string that is not printable UTF-8 as !!binary and reads
    !!binary back (plain, flow, block, over several lines); control bytes and
    characters past the BMP get libyaml's escapes; integers from 10^14 decode to
    int64/uint64 cdata as 2.6's strtoll/strtoull rules give; a null item of a
    block sequence is box.NULL; %TAG directives (encode's tag_handle/tag_prefix
    with libyaml's checks, decode's tag_only) and the usage errors are 2.6's."""
    same_output_on_both(tmp_path, "yaml_binary.lua", YAML_TEXT_AND_BINARY, 58)


def test_runaway_serialize_hooks_and_deep_tables_are_errors_not_crashes(tmp_path):
    """A __serialize hook that gives back its own object (2.6 overflows its stack
    and dies) is refused by msgpack, yaml, json and box.tuple.new; tables nested
    as deep as a raised encode_max_depth allows encode (the TX stack holds them),
    deeper ones are refused."""
    script = tmp_path / "runaway.lua"
    script.write_text(r"""
local msgpack, yaml, json = require('msgpack'), require('yaml'), require('json')
local self_ref = setmetatable({}, {__serialize = function(t) return t end})
local ffi = require('ffi')
ffi.cdef('struct runaway { int a; }')
local object = ffi.metatype('struct runaway', {__index = {__serialize = function(o) return o end}})(1)
for _, v in ipairs({self_ref, object}) do
    for _, f in ipairs({msgpack.encode, yaml.encode, json.encode, box.tuple.new}) do
        local ok, err = pcall(f, {v})
        print(ok, tostring(err))
    end
end
local m = msgpack.new()
m.cfg{encode_max_depth = 100000}
local function nest(n) local t = nil for i = 1, n do t = {t} end return t end
local ok, r = pcall(m.encode, nest(4000))
print(ok, #r)
print(pcall(m.encode, nest(5000)))
print(#msgpack.decode(string.rep('\x91', 1000) .. '\x01'))
os.exit(0)
""")
    r = subprocess.run([ONCEBOX, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:8] == ["false\ttoo many nested __serialize hooks"] * 8, lines
    assert lines[8:] == ["true\t4000", "false\tToo high nest level - 4097", "1"], lines


UNKNOWN_EXTENSIONS = r"""
local msgpack = require('msgpack')
for _, bytes in ipairs({'\xd4\x0f\x00', '\xc7\x01\x10\x00', '\xd4\xff\x00', '\x91\xd4\x0f\x00', '\xd5\x02\x00\x00'}) do
    print(pcall(msgpack.decode, bytes))
    print(pcall(msgpack.decode_unchecked, bytes))
end
os.exit(0)
"""


def test_msgpack_decode_refuses_extensions_it_does_not_know(tmp_path):
    """An extension type other than decimal, uuid and error is an error for
    msgpack.decode, in 2.6's words (its spelling too)."""
    lines = same_output_on_both(tmp_path, "msgpack_ext.lua", UNKNOWN_EXTENSIONS, 10)
    assert lines[0] == "false\tUnsuported MsgPack extension type: 15"


FIBER_AS_USERDATA = r"""
local fiber = require('fiber')
local f = fiber.self()
print(type(f), type(fiber.new(function() end)))
for _, name in ipairs({'msgpack', 'json', 'yaml'}) do
    local ss = require(name).new()
    ss.cfg{encode_load_metatables = false, encode_use_tostring = false, encode_invalid_as_nil = false}
    local ok, err = pcall(ss.encode, f)
    print(name, ok, tostring(err))
    ss.cfg{encode_invalid_as_nil = true}
    print(name, ss.decode(ss.encode(f)) == nil)
    ss.cfg{encode_invalid_as_nil = false, encode_use_tostring = true}
    print(name, type(ss.decode(ss.encode(f))))
    ss.cfg{encode_load_metatables = true}
    local t = ss.decode(ss.encode(f))
    print(name, type(t), t.name, t.status, t.id == f:id())
end
os.exit(0)
"""


def test_fiber_objects_are_written_as_userdata(tmp_path):
    """2.6's fiber objects are userdata: type() says so, and the serializers write
    one only through its __serialize, its tostring, or as nil, else refuse it."""
    lines = same_output_on_both(tmp_path, "fiber_userdata.lua", FIBER_AS_USERDATA, 13)
    assert "userdata\tuserdata" in lines


FLOW_VALUES_IN_MAPS = r"""
local yaml, msgpack = require('yaml'), require('msgpack')
-- msgpack.decode's tables carry the flow hint: as a map's value they stay on
-- the key's line, as 2.6 writes them (and the console shows them).
local function decoded(v) return msgpack.decode(msgpack.encode(v)) end
for _, v in ipairs({{BODY = {operations = decoded({{'+', 1, 1}})}}, {a = decoded({1, 2})}, {a = decoded({x = 1})},
                    {a = {b = decoded({{x = 1}})}}, {decoded({1})}, {a = setmetatable({1}, {__serialize = 'seq'})},
                    {a = setmetatable({1}, {__serialize = 'sequence'})}}) do
    io.write(yaml.encode(v))
end
print(require('console').eval('{a = require("msgpack").decode(require("msgpack").encode({1, {2}}))}'))
os.exit(0)
"""


def test_flow_hinted_tables_as_map_values_stay_on_the_keys_line(tmp_path):
    lines = same_output_on_both(tmp_path, "flow_in_maps.lua", FLOW_VALUES_IN_MAPS, 29)
    assert "  operations: [['+', 1, 1]]" in lines and "- a: [1, [2]]" in lines


LINE_BREAKS_IN_STRINGS = r"""
local yaml = require('yaml')
-- U+2028 and U+2029 are line breaks to libyaml (quoted, the next line indented;
-- with a space beside them, double-quoted as \L and \P); runs of '\n' in quotes;
-- an empty line with a trailing space (double quotes); a long double-quoted
-- string folded at the line width; and each read back as it was.
local L, P = '\226\128\168', '\226\128\169'
local cases = {'a' .. L .. 'b', L, 'a' .. L .. L .. 'b', 'a' .. L .. P .. 'b', 'a ' .. L .. ' b', 'a' .. L .. '\nb',
               {a = {b = 'x' .. L .. 'y'}}, {{'x' .. L .. 'y'}}, {k = {'x' .. L .. 'y'}}, 'x' .. L .. "'y", L .. L,
               "it's" .. L, 'a\n\nb ', 'a\nb', 'a\n\n\nb c ', '\na', 'a\n', 'x\n\ny\n', "it's\nok", 'a\nb ',
               string.rep('word ', 30) .. '\nend', string.rep('w ', 45) .. ' \tx', {k = 'a\nb'}, {{'a\nb '}},
               {x = {y = 'p\n\nq '}}, 'tab\there\n', 'x \n'}
local same = {}
for i, v in ipairs(cases) do
    io.write(yaml.encode(v))
    if type(v) == 'string' then same[#same + 1] = tostring(yaml.decode(yaml.encode(v)) == v) end
end
print(table.concat(same, ' '))
os.exit(0)
"""


def test_line_breaks_in_strings_as_2_6(tmp_path):
    # (Python splits the lines at U+2028 and U+2029 as well: 98 of them.)
    lines = same_output_on_both(tmp_path, "line_breaks.lua", LINE_BREAKS_IN_STRINGS, 98)
    assert lines[-1] == " ".join(["true"] * 21)


CTYPES = r"""
local ffi = require('ffi')
local y = require('yaml').new()
y.cfg{encode_use_tostring = true}
print(pcall(require('yaml').encode, {ffi.typeof('int'), 1}))
print(pcall(require('yaml').encode, {ffi.new('int', 5), ffi.new('unsigned int', 6), 5ULL, ffi.new('double', 1.5)}))
print(pcall(y.encode, {ffi.typeof('int'), ffi.new('int', 5), ffi.new('bool', true), ffi.typeof('int *')}))
os.exit(0)
"""


def test_a_ctype_is_no_number_to_yaml_as_2_6(tmp_path):
    """ffi.typeof('int') was written as its ctype id (9): it has no YAML form
    (with encode_use_tostring, its tostring()), while a cdata int is a number."""
    tarantool = same_output_on_both(tmp_path, "ctypes.lua", CTYPES, 15)
    assert tarantool[0] == "false\tunsupported Lua type 'cdata'" and "- ctype<int>" in tarantool


UNENCODABLE = """
box.cfg{listen = os.getenv('LISTEN'), work_dir = os.getenv('WORK'), log_level = 1}
box.schema.user.grant('guest', 'super', nil, nil, {if_not_exists = true})
local s = box.schema.space.create('test')
s:create_index('pk')
s:insert{1, 2}
local function p(...)
    local r = {pcall(...)}
    for i = 1, #r do r[i] = tostring(r[i]) end
    print((table.concat(r, ' | '):gsub('0x%x+', '0x')))
end
local deep, cur = {}, nil
cur = deep
for _ = 1, 200 do cur[1] = {} cur = cur[1] end
p(s.get, s, print)
p(s.select, s, {print})
p(s.index.pk.min, s.index.pk, {print})
p(s.count, s, {print})
p(s.update, s, 1, {{'=', 2, print}})
p(s.upsert, s, {5, print}, {})
p(s.replace, s, {1, deep})
p(s.delete, s, {print})
p(box.tuple.new, {print})
require('msgpack').cfg{encode_invalid_numbers = false}
p(s.replace, s, {3, 0/0})
require('msgpack').cfg{encode_invalid_numbers = true}
local fiber = require('fiber')
local f = fiber.create(function()
    local c = require('net.box').connect(box.info.listen)
    p(c.call, c, 'x', {print})
    p(c.eval, c, 'return 1', {print})
    p(c.space.test.insert, c.space.test, {print})
    p(c.space.test.select, c.space.test, {print})
    p(c.space.test.index.pk.count, c.space.test.index.pk, {1}, {on_push = print})
    -- the connection stays up
    p(c.ping, c)
    c:close()
end)
f:set_joinable(true)
f:join()
os.exit(0)
"""


def test_unencodable_values_are_refused_as_2_6(tmp_path):
    """A function (or a table nested too deep, or NaN where the options forbid it)
    in a key, a tuple or a net.box request is the encoder's plain error: memtx
    reads say it as 2.6's msgpackffi does, net.box from where it encodes, and
    the connection stays up (it was reported as a lost connection)."""
    tarantool = same_output_on_both(tmp_path, "unencodable.lua", UNENCODABLE, 16)
    assert tarantool[0] == "false | builtin/msgpackffi.lua:292: can not encode Lua type: 'function'"
    assert tarantool[10] == "false | builtin/box/net_box.lua:549: unsupported Lua type 'function'"
    assert tarantool[15] == "true | true"


USAGE_ERRORS = r"""
-- As 2.6's C functions raise them: at the calling Lua line (none when pcall calls
-- the function itself), a bad argument named as the caller named the function.
local json, yaml, msgpack = require('json'), require('yaml'), require('msgpack')
local function show(f, ...) print(pcall(f, ...)) end
show(yaml.encode)
show(json.encode)
show(json.decode, {})
show(function() local r = yaml.encode() return r end)
show(function() local r = yaml.encode(1, 2) return r end)
show(function() local r = yaml.decode() return r end)
show(function() local r = yaml.decode('x', 5) return r end)
show(function() local r = json.encode() return r end)
show(function() local r = json.decode() return r end)
show(function() local r = json.decode({}) return r end)
show(function() local enc = json.encode local r = enc(1, 2, 3) return r end)
show(function() local r = msgpack.encode() return r end)
os.exit(0)
"""


def test_usage_errors_say_where_as_2_6(tmp_path):
    same_output_on_both(tmp_path, "usage.lua", USAGE_ERRORS, 12)
