"""Tarantool's string and table additions (string.split, ljust, rjust, center,
startswith, endswith, hex, fromhex, strip, lstrip, rstrip; table.copy, deepcopy,
new), compared with real Tarantool 2.6 line for line: results, and the argument
errors with 2.6's messages, quirks included (endswith names the string's type
whichever argument is wrong, and takes lengths before it checks types).
"""
from conftest import same_output_on_both

SCRIPT = r"""
local function show(v)
  if type(v) ~= 'table' then return type(v) .. ':' .. tostring(v) end
  local parts = {}
  for i, x in ipairs(v) do parts[i] = string.format('%q', x) end
  return '{' .. table.concat(parts, ',') .. '}#' .. #v
end
local function try(f, ...)
  local r = {pcall(f, ...)}
  if r[1] then return show(r[2]) end
  return 'ERR ' .. tostring(r[2])
end
for _, name in ipairs{'split', 'ljust', 'rjust', 'center', 'startswith', 'endswith', 'hex', 'fromhex',
                      'strip', 'lstrip', 'rstrip', 'trim', 'contains'} do
  print('string.' .. name, type(string[name]))
end
for _, name in ipairs{'copy', 'deepcopy', 'equals', 'new', 'clear', 'maxn', 'foreach'} do
  print('table.' .. name, type(table[name]))
end
local S = string
print(try(S.split, 'a,b,,c', ','))
print(try(S.split, 'a,b,,c', ',', 1))
print(try(S.split, ',a,', ','))
print(try(S.split, '', ','))
print(try(S.split, 'abc', 'abc'))
print(try(S.split, 'aXYbXYc', 'XY', 0))
print(try(S.split, '  a  b \t c\n'))
print(try(S.split, '  a  b  c  ', nil, 1))
print(try(S.split, ''))
print(try(S.split, '   '))
print(try(S.split, 'a b', nil, 0))
print(try(S.split, 'a.b', '.'))
print(try(S.split, 'a%b', '%'))
print(try(S.split, 'a,b', ',', 1.5))
print(try(S.split, 1))
print(try(S.split, 'a', 1))
print(try(S.split, 'a', ',', 'x'))
print(try(S.split, 'a', ',', -1))
print(try(S.split, 'a', ''))
print(try(function() return ('a'):split('') end))
print(try(function() return ('a'):split(1) end))
print(try(S.ljust, 'ab', 5), try(S.ljust, 'ab', 5, '*'), try(S.ljust, 'abcdef', 3))
print(try(S.rjust, 'ab', 5), try(S.rjust, 'ab', 5, '*'), try(S.rjust, 'abcdef', 3))
print(try(S.center, 'ab', 7, '-'), try(S.center, 'ab', 6), try(S.center, 'abc', 2), try(S.center, 'ab', 2.5))
print(try(S.ljust, 'a', -1))
print(try(S.ljust, 'a', 'x'))
print(try(S.ljust, 'a', 3, 'xy'))
print(try(S.rjust, 1, 2))
print(try(S.center, 'a', 3, 5))
print(try(S.startswith, 'hello', 'he'), try(S.startswith, 'hello', ''), try(S.startswith, 'hello', 'lo', 4))
print(try(S.startswith, 'hello', 'el', -4), try(S.startswith, 'hello', 'hello', 1, 4), try(S.startswith, 'hi', 'hij'))
print(try(S.startswith, 'hello', 'h', 0), try(S.startswith, 'hello', 'o', 5, 5), try(S.startswith, 'hello', 'l', 3, 2))
print(try(S.endswith, 'hello', 'lo'), try(S.endswith, 'hello', 'll', 1, 4), try(S.endswith, 'hello', 'he', -10, 2))
print(try(S.endswith, 'hello', 'o', 6), try(S.endswith, 'hello', ''), try(S.endswith, 'hello', 'h', 1, -5))
print(try(S.endswith, 'hello', 'hello', -100, 100), try(S.startswith, '', ''), try(S.endswith, '', 'a'))
print(try(S.startswith, 'a', 1))
print(try(S.startswith, 1, 'a'))
print(try(S.startswith, 'a', 'a', 'x'))
print(try(S.startswith, 'a', 'a', 1, {}))
print(try(S.endswith, 'a', 1))
print(try(S.endswith, 1, 'a'))
print(try(S.endswith, 'a', 'a', 1, 'x'))
print(try(S.hex, '\0\1\255abc'), try(S.hex, ''), try(S.hex, 1))
local function bytes(s) return table.concat({s:byte(1, -1)}, ',') end
print(bytes(S.fromhex('00ff41')), bytes(S.fromhex('00FF')), bytes(S.fromhex('')), bytes(S.fromhex(S.hex('\0\1\255'))))
print(try(S.fromhex, 'abc'))
print(try(S.fromhex, 'zz'))
print(try(S.fromhex, 12))
print(try(S.strip, '  a b  '), try(S.strip, '\t\na\r\n\v\f'), try(S.strip, 'xxaxx', 'x'))
print(try(S.lstrip, 'xyaxy', 'xy'), try(S.rstrip, 'xyaxy', 'yx'), try(S.strip, ''), try(S.strip, 'abc', ''))
print(try(S.strip, '   '), try(S.lstrip, '  a  '), try(S.rstrip, '  a  '), try(S.strip, 'a%a', '%'))
print(try(S.strip, 'a', 1))
print(try(S.lstrip, 1))
print(try(S.rstrip, 'a', {}))
print(('  x,y '):strip():split(',')[2], ('ab'):hex():upper(), ('abc'):startswith('a'))
-- table.copy and table.deepcopy
local shared = {1}
local mt = {__index = function() return 'mt' end}
local orig = setmetatable({a = {b = {c = 1}}, s1 = shared, s2 = shared, [shared] = 'key'}, mt)
orig.self = orig
local d = table.deepcopy(orig)
print(d ~= orig, d.a ~= orig.a, d.a.b.c, d.s1 == d.s2, d.s1 ~= shared, d.self == d, getmetatable(d) == mt, d.missing)
local key_copied = 0
for k, v in pairs(d) do if type(k) == 'table' then key_copied = key_copied + 1; print(k ~= shared, k == d.s1, v) end end
print(key_copied)
local c = table.copy(orig)
print(c ~= orig, c.a == orig.a, c.self == orig, getmetatable(c) == mt, c[shared])
local custom = setmetatable({x = 1}, {__copy = function(t) return 'copied ' .. t.x end})
print(table.copy(custom), table.deepcopy(custom), table.deepcopy({inner = custom}).inner)
print(table.copy(5), table.deepcopy('s'), table.deepcopy(nil), table.copy())
local arr = table.deepcopy({1, 2, {3, 4}})
print(#arr, arr[3][2])
for _, args in ipairs{{'a', {}}, {{}, 'a'}, {'a', 'a', {}}, {'a', nil}, {nil, 'a'}, {'a', true}, {'ab', 'b', 'x'}} do
  print(pcall(S.endswith, unpack(args, 1, 4)))
end
print(pcall(S.startswith, 'a', 'a', 1, 'x'))
print(pcall(S.ljust, 'a', 3, 5))
print(pcall(S.ljust, 'a', 3, ''))
print(pcall(S.split, 'a b', nil, -1))
print(pcall(S.split, 'a b', nil, '2'))
print(pcall(S.hex, nil))
local t = table.new(4, 2)
t[1], t.x = 1, 2
print(type(t), #t, t.x, #S.split('a  b', ' '))
-- Errors raised inside a Lua function name the caller's line.
local ok, err = pcall(function()
  local s = ('x'):split(',', -2)
  return s
end)
print(ok, err)
ok, err = pcall(function()
  local s = S.ljust('x', 'wide')
  return s
end)
print(ok, err)
os.exit(0)
"""


def test_string_and_table_additions_match_tarantool(tmp_path):
    lines = same_output_on_both(tmp_path, "string_table.lua", SCRIPT, 97)
    assert "string.split\tfunction" in lines
    assert "table.deepcopy\tfunction" in lines
