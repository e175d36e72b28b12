-- msgpack.encode of plain data (tables without metatables, strings, numbers,
-- booleans, nil), which oncebox writes by a walk of the Lua stack
-- (src/lua/plain_encode.rs), and of what makes that walk give up to the general
-- encoder (a refused sparse array, the depth limit, NaN and inf, box.NULL, a
-- __serialize hint): 5,000 generated values by a fixed-seed LCG, hex per line.
-- Run on Tarantool 2.6 and on oncebox; the lines must match.
local msgpack = require('msgpack')
local state = 7
local function rand(n) state = (state * 1103515245 + 12345) % 2147483648 return math.floor(state / 65536) % n + 1 end
local NUMS = {0, -0.0, 1, -1, 0.5, -0.5, 127, 128, 255, 256, 65535, 65536, 2^31, 2^32, 2^53, 2^53 + 1, 2^63, -2^63, 2^64,
              -2^63 - 4096, 1e300, -1e300, 1e-300, 3.14, 100000000000000, -100000000000000, 2^62, 4294967295}
local STRS = {'', 'a', string.rep('x', 31), string.rep('y', 32), string.rep('z', 300), 'nul\0byte', 'é'}
local value
local function tbl(depth)
    local t = {}
    local r = rand(6)
    if r == 1 then for i = 1, rand(5) - 1 do t[i] = value(depth + 1) end
    elseif r == 2 then for i = 1, rand(4) do t[rand(40)] = value(depth + 1) end
    elseif r == 3 then for i = 1, rand(4) do t[STRS[rand(#STRS)] .. i] = value(depth + 1) end
    elseif r == 4 then t[true] = value(depth + 1) t[1.5] = 'x' t[-3] = 1
    elseif r == 5 then t[{1}] = value(depth + 1)
    else for i = 1, 20 do t[i] = i end t[25] = 'gap' end
    return t
end
function value(depth)
    local r = rand(10)
    if depth > 4 then r = rand(5) end
    if r == 1 then return NUMS[rand(#NUMS)] end
    if r == 2 then return STRS[rand(#STRS)] end
    if r == 3 then return rand(2) == 1 end
    if r == 4 then return nil end
    if r == 5 then return rand(100000) * (rand(2) == 1 and 1 or -1) end
    return tbl(depth)
end
local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end
for i = 1, 5000 do
    local v = tbl(0)
    local ok, e = pcall(msgpack.encode, v)
    print(i, ok, ok and hex(e) or e)
end
-- options: sparse refused, depth, invalid numbers
local m = msgpack.new()
m.cfg{encode_sparse_convert = false}
print(pcall(m.encode, {[1] = 1, [100] = 2}))
m.cfg{encode_sparse_convert = true, encode_max_depth = 2}
print(pcall(m.encode, {{{1}}}))
m.cfg{encode_max_depth = 128, encode_invalid_numbers = false}
print(pcall(m.encode, {0/0}))
print(pcall(m.encode, {1/0}))
print(hex(msgpack.encode({box.NULL, 1})), hex(msgpack.encode(setmetatable({1, 2}, {__serialize = 'map'}))))

-- Tables with __serialize hints (what msgpack.decode and json.decode give, and
-- hand-made ones), box.NULL among plain data, and the metatables the walk leaves
-- to the general encoder (a hook, a bad hint, __index alone, a fiber's, an error's).
local HINTS = {
    getmetatable(msgpack.decode('\x90')), getmetatable(msgpack.decode('\x80')),
    getmetatable(require('json').decode('[]')), getmetatable(require('json').decode('{}')),
    {__serialize = 'seq'}, {__serialize = 'sequence'}, {__serialize = 'array'}, {__serialize = 'map'},
    {__serialize = 'mapping'}, {__index = {}}, {__serialize = function(t) return {'hooked', #t} end},
    {__serialize = 'bad'}, {__serialize = 5}, setmetatable({}, {__index = {__serialize = 'map'}}),
}
local function hinted(v, depth)
    if type(v) ~= 'table' or depth > 6 then return v end
    local t = {}
    for k, x in pairs(v) do t[k] = hinted(x, depth + 1) end
    -- (Not beside a table key: a table places those by address, another each run.)
    local keyed_by_table = false
    for k in pairs(t) do keyed_by_table = keyed_by_table or type(k) == 'table' end
    if rand(4) == 1 and not keyed_by_table then t[rand(3)] = box.NULL end
    if rand(3) > 1 then setmetatable(t, HINTS[rand(#HINTS)]) end
    return t
end
for i = 1, 2000 do
    local v = hinted(tbl(0), 0)
    local ok, e = pcall(msgpack.encode, v)
    print('hinted', i, ok, ok and hex(e) or e)
end
-- Decoded values written back: the same bytes.
for i = 1, 300 do
    local ok, e = pcall(msgpack.encode, tbl(0))
    if ok then
        local back = msgpack.encode((msgpack.decode(e)))
        print('decoded', i, back == e or hex(back))
    end
end
-- Metatables ignored (encode_load_metatables = false), but a fiber's and an error's.
m = msgpack.new()
m.cfg{encode_load_metatables = false}
print(hex(m.encode(setmetatable({1, 2}, {__serialize = 'map'}))), hex(m.encode({setmetatable({}, {__serialize = 'seq'})})))
print(pcall(m.encode, {box.error.new(box.error.UNKNOWN)}))
print(hex(msgpack.encode(setmetatable({[1] = 1, [3] = 3}, {__serialize = 'seq'}))),
      hex(msgpack.encode(setmetatable({[1] = 1, [200] = 3}, {__serialize = 'seq'}))),
      hex(msgpack.encode(setmetatable({[1.5] = 1, [2] = 2, [-1] = 0}, {__serialize = 'array'}))),
      hex(msgpack.encode({box.NULL, {box.NULL}, {a = box.NULL}})))
os.exit(0)
