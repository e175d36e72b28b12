-- Values for the serializers' parity scripts (json_encode_cases.lua and
-- yaml_encode_cases.lua, which the tests run after this): `gen(0)` makes nested
-- tables, sparse arrays, numbers with ties, 64-bit and other cdata, strings with
-- control and multi-byte characters; `optsets` are encoder options to go with them.
-- The same seed on both servers gives the same values in the same order.
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
