-- json.encode over generated values (nested tables, sparse arrays, numbers with
-- ties, 64-bit cdata, strings with control and multi-byte characters) under
-- several options: each result or error. Run on Tarantool 2.6 and on oncebox; the
-- lines must match.
-- (The values come from generated_values.lua, run first.)
local json = require('json')
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
