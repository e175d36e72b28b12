-- json.encode over generated values (nested tables, sparse arrays, numbers with
-- ties, 64-bit cdata, strings with control and multi-byte characters) under
-- several options: each result or error. Run on Tarantool 2.6 and on oncebox; the
-- lines must match.
local json = require('json')
local ffi = require('ffi')
math.randomseed(3)
local strings = {'', 'a', 'abc', 'a"b', 'a\\b', 'a/b', '\b\f\n\r\t', '\0', '\1\31', '\127', 'é', '\xff\xfe', 'key', 'κλειδί', '€', '\226\128\168'}
local numbers = {0, -0, 1, -1, 0.5, 1.5, -2.5, 1/3, 2/3, 1e14, 1e15, 1e16, 123456789012345, 2^53, 2^53 + 1, 2^63, 2^64, -2^63, -2^63 - 4096, 1e300, 1e-300, 3.14159265358979, 0.1, 100, 1e100, 2^-1074, 1.7976931348623157e308, 12345.678, -0.000001}
local specials = {box.NULL, true, false, 1ULL, -1LL, 18446744073709551615ULL, -9223372036854775807LL - 1, 123456789012345678LL, ffi.new('int', 5), ffi.new('double', 2.5), ffi.new('float', 0.1), ffi.new('bool', true), ffi.new('unsigned char', 200)}
local function atom()
  local r = math.random(4)
  if r == 1 then return strings[math.random(#strings)] end
  if r == 2 then return numbers[math.random(#numbers)] end
  if r == 3 then return specials[math.random(#specials)] end
  return math.random(-1000, 1000)
end
local function gen(d)
  local r = math.random()
  if d > 3 or r < 0.45 then return atom() end
  local t = {}
  if r < 0.65 then
    for i = 1, math.random(0, 6) do t[i] = gen(d + 1) end
  elseif r < 0.75 then
    for _ = 1, math.random(1, 4) do t[math.random(1, 30)] = gen(d + 1) end
  elseif r < 0.8 then
    t = setmetatable({gen(d + 1)}, {__serialize = 'map'})
  elseif r < 0.85 then
    t = setmetatable({x = 1, [3] = gen(d + 1)}, {__serialize = 'seq'})
  else
    for _ = 1, math.random(0, 5) do
      local k = math.random() < 0.8 and strings[math.random(#strings)] or numbers[math.random(#numbers)]
      t[k] = gen(d + 1)
    end
  end
  return t
end
local optsets = {nil, {encode_number_precision = 17}, {encode_number_precision = 3}, {encode_sparse_convert = false}, {encode_max_depth = 2}, {encode_max_depth = 2, encode_deep_as_nil = true}, {encode_invalid_numbers = false}, {encode_invalid_numbers = false, encode_invalid_as_nil = true}, {encode_sparse_safe = 1}}
for i = 1, 3000 do
  local v = gen(0)
  local o = optsets[i % #optsets + 1]
  local ok, r = pcall(function() local s = json.encode(v, o) return s end)
  -- (Bytes past ASCII as \NNN: the output stays valid text.)
  print(i, ok, (tostring(r):gsub('^[^:]*:%d+: ', 'at: '):gsub('[\128-\255]', function(c) return '\\' .. c:byte() end)))
end
for _, v in ipairs({0/0, -(0/0), math.huge, -math.huge}) do
  print(pcall(json.encode, v), pcall(json.encode, {v}), pcall(json.encode, v, {encode_invalid_numbers = false}))
end
print(pcall(json.encode, {[1.5] = 1}), pcall(json.encode, {[true] = 1}), pcall(json.encode, print), pcall(json.encode, print, {encode_use_tostring = true}) ~= nil)
-- Tuples as their fields, errors as their messages, hooks followed.
local t = box.tuple.new({1, 'a', {x = 1}, {1, 2}, box.NULL, 1.5, 123456789012345678, {}})
print(json.encode(t), json.encode({t, {t}}), json.encode({e = box.error.new({code = 1, reason = 'boom'})}))
local hooked = setmetatable({}, {__serialize = function() return {1, 2, setmetatable({}, {__serialize = 'map'})} end})
print(json.encode(hooked), json.encode({hooked}, {encode_load_metatables = false}), pcall(json.encode, ffi.cast('char *', 0)))
print(json.encode({ffi.cast('void *', 0), ffi.new('int64_t', -5), ffi.new('uint64_t', 5), require('decimal').new('1.50')}))

os.exit(0)
