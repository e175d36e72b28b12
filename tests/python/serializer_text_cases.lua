-- What 2.6's serializers write where it differs from what Lua itself would:
-- doubles through C's printf (ties to even), table shapes from a uint32_t
-- greatest key, libyaml's complex keys and character columns, lua-cjson's
-- number keys, precision clamp and error positions. Run on Tarantool 2.6 and on
-- oncebox; the lines must match.
local json, yaml, msgpack = require('json'), require('yaml'), require('msgpack')
-- Line breaks as |, other bytes outside printable ASCII as \NNN: one line each.
local function show(s)
    return (s:gsub('\n', '|'):gsub('[^ -~|]', function(c) return '\\' .. c:byte() end))
end
local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end

-- Doubles: serializers round a cut-off half to even, tostring away from zero.
for _, v in ipairs({1234567890123.25, 1234567890123.75, 0.125, 2.5e-7, 922337203685477.625, 1 / 3}) do
    print(tostring(v), json.encode(v), show(yaml.encode(v)), tostring(box.tuple.new({v})),
          json.encode(v, {encode_number_precision = 2}), json.encode(v, {encode_number_precision = 17}),
          json.encode(v, {encode_number_precision = 0}))
end
-- Number keys of int64_t's and uint64_t's range; a greatest key kept in 32 bits.
for _, t in ipairs({{[2^63] = 1}, {[-2^63] = 1}, {[2^64 - 2048] = 1}, {[2^53] = 1}, {[2^32 + 1] = 'x'},
                    {[2^32 + 3] = 'x', [2] = 5}, {[2^32 + 1] = 'x', [3] = 'y'}, {[1e300] = 1}}) do
    print(pcall(json.encode, t))
    print(show(yaml.encode(t)), hex(msgpack.encode(t)), show(yaml.encode({k = t})))
end
print(pcall(json.encode, {[1.5] = 1}))
-- Complex keys: a line break (\r, \n, NEL, LS, PS) or more than 128 bytes.
local long = string.rep('k', 129)
for _, k in ipairs({'a\rb', 'a\nb', 'a\194\133b', 'a\226\128\168b', 'a\226\128\169b', long, string.rep('k', 128)}) do
    print(show(yaml.encode({[k] = 1})), show(yaml.encode({{[k] = 1, z = 2}})))
    print(show(tostring(box.tuple.new({{[k] = 1}}))))
end
-- Flow lines break at the 80th character, multi-byte ones counted once.
print(show(yaml.encode({{'κλειδί κλειδί κλειδί', 'κλειδί κλειδί κλειδί', 'κλειδί κλειδί κλειδί',
                         'κλειδί κλειδί', {a = 'é'}}})))
print(show(tostring(box.tuple.new({string.rep('é', 30), string.rep('€', 30), string.rep('é', 30), 'x'}))))
-- lua-cjson raises its own refusals at the caller's line, the serializer's without one.
print(pcall(function() local s = json.encode({print}) return s end))
print(pcall(function() local s = json.encode({[true] = 1}) return s end))
print(pcall(function() local s = json.encode({{{}}}, {encode_max_depth = 1}) return s end))
print(pcall(function() local s = json.encode({0 / 0}, {encode_invalid_numbers = false}) return s end))
print(pcall(function() local s = json.encode({1, [20] = 1}, {encode_sparse_convert = false}) return s end))
print(pcall(function() local s = json.encode(setmetatable({}, {__serialize = 'x'})) return s end))
print(pcall(function() local s = json.encode(setmetatable({}, {__serialize = function() error('boom') end})) return s end))
os.exit(0)
