-- msgpack.decode of generated msgpack (every encoding of every type: fix and
-- sized integers, floats, strings, binaries, arrays and maps of 16 and 32 bits,
-- extensions, 64-bit integers 2.6 gives as cdata, NaN and nil keys, repeated
-- keys, truncated and invalid bytes, deep nesting), which oncebox decodes by a
-- walk of the Lua stack (src/lua/plain_decode.rs) or, where that walk gives up,
-- by its general decoder; and the same values as a tuple's fields, which 2.6's
-- Lua decoder grows key by key. Each result is printed in pairs() order (the
-- order depends on how a table was sized), with its metatable's hint.
-- Run on Tarantool 2.6 and on oncebox; the lines must match.
local msgpack = require('msgpack')

local state = 11
local function rand(n)
    state = (state * 1103515245 + 12345) % 2147483648
    return math.floor(state / 65536) % n + 1
end

local function be(n, bytes)
    local out = {}
    for i = bytes, 1, -1 do
        out[i] = string.char(n % 256)
        n = math.floor(n / 256)
    end
    return table.concat(out)
end

local function uint(n)
    if n < 128 and rand(3) > 1 then return string.char(n) end
    if n < 256 and rand(2) == 1 then return '\xcc' .. be(n, 1) end
    if n < 65536 and rand(2) == 1 then return '\xcd' .. be(n, 2) end
    if n < 4294967296 and rand(2) == 1 then return '\xce' .. be(n, 4) end
    return '\xcf' .. be(n, 8)
end

local function negative(n) -- n < 0
    if n >= -32 and rand(2) == 1 then return string.char(256 + n) end
    if n >= -128 and rand(2) == 1 then return '\xd0' .. be(256 + n, 1) end
    if n >= -32768 and rand(2) == 1 then return '\xd1' .. be(65536 + n, 2) end
    if n >= -2147483648 and rand(2) == 1 then return '\xd2' .. be(4294967296 + n, 4) end
    -- Two's complement of a 64-bit value, as its two halves.
    local hi = math.floor(n / 4294967296)
    local lo = n - hi * 4294967296
    return '\xd3' .. be(hi + 4294967296, 4) .. be(lo, 4)
end

local function str(s, bin)
    local n = #s
    if bin then
        if n < 256 and rand(2) == 1 then return '\xc4' .. be(n, 1) .. s end
        if n < 65536 and rand(2) == 1 then return '\xc5' .. be(n, 2) .. s end
        return '\xc6' .. be(n, 4) .. s
    end
    if n < 32 and rand(2) == 1 then return string.char(0xa0 + n) .. s end
    if n < 256 and rand(2) == 1 then return '\xd9' .. be(n, 1) .. s end
    if n < 65536 and rand(2) == 1 then return '\xda' .. be(n, 2) .. s end
    return '\xdb' .. be(n, 4) .. s
end

local function head(n, fix, h16, h32)
    if n < 16 and rand(3) > 1 then return string.char(fix + n) end
    if n < 65536 and rand(2) == 1 then return string.char(h16) .. be(n, 2) end
    return string.char(h32) .. be(n, 4)
end

local FLOATS = {'\xca\x3f\xc0\x00\x00', '\xca\x7f\xc0\x00\x00', '\xca\xff\x80\x00\x00', '\xcb\x40\x09\x21\xfb\x54\x44\x2d\x18',
                '\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00', '\xcb\x7f\xf0\x00\x00\x00\x00\x00\x00', '\xcb\x80\x00\x00\x00\x00\x00\x00\x00',
                '\xcb\x43\x30\x00\x00\x00\x00\x00\x00', '\xcb\x3f\xf0\x00\x00\x00\x00\x00\x00'}
local BIG = {0, 1, 127, 128, 255, 256, 65535, 65536, 4294967295, 4294967296, 2^53, 99999999999999, 100000000000000,
             2^62, 2^63, 2^64 - 2048}
local STRS = {'', 'a', 'key', string.rep('x', 31), string.rep('y', 40), 'nul\0byte', '\xff\xfe', 'é'}
-- Extensions: a decimal, a uuid, an unknown type, and a malformed decimal.
local EXTS = {'\xd6\x01\x03\x12\x34\x5d', '\xd8\x02' .. string.rep('\x11', 16), '\xd4\x33\x00', '\xc7\x01\x01\xff'}

local value
local function array(depth)
    local n = rand(8) - 1
    if rand(20) == 1 then n = 20 + rand(30) end
    local parts = {head(n, 0x90, 0xdc, 0xdd)}
    for i = 1, n do parts[#parts + 1] = value(depth + 1) end
    return table.concat(parts)
end

-- Keys of every kind but tables and cdata (box.NULL, 64-bit integers): a table
-- places those by their address, another each run.
local function key()
    local r = rand(12)
    if r <= 4 then return uint(rand(40)) end
    if r <= 8 then return str(STRS[rand(#STRS)] .. rand(9)) end
    if r == 9 then return negative(-rand(5)) end
    if r == 10 then return uint(rand(70000)) end
    if r == 11 then return rand(2) == 1 and '\xc3' or '\xc2' end
    -- (Not 2^52 of FLOATS: written back to a tuple it is an integer 2.6 gives as cdata.)
    return rand(8) == 1 and FLOATS[rand(7)] or str(STRS[rand(#STRS)], true)
end

local function map(depth)
    local n = rand(6) - 1
    if rand(20) == 1 then n = 17 + rand(20) end
    local parts = {head(n, 0x80, 0xde, 0xdf)}
    for i = 1, n do
        parts[#parts + 1] = key()
        parts[#parts + 1] = value(depth + 1)
    end
    return table.concat(parts)
end

function value(depth)
    local r = rand(16)
    if depth > 5 and r > 10 then r = rand(10) end
    if r <= 2 then return uint(BIG[rand(#BIG)] + (rand(3) - 1)) end
    if r == 3 then return negative(-BIG[rand(#BIG)] - rand(2)) end
    if r == 4 then return FLOATS[rand(#FLOATS)] end
    if r == 5 then return str(STRS[rand(#STRS)]) end
    if r == 6 then return str(STRS[rand(#STRS)], true) end
    if r == 7 then return rand(2) == 1 and '\xc2' or '\xc3' end
    if r == 8 then return '\xc0' end
    if r == 9 then return rand(6) == 1 and EXTS[rand(#EXTS)] or uint(rand(1000)) end
    if r == 10 then return str(string.rep('z', rand(3) == 1 and 300 or 70000)) end
    if r <= 13 then return array(depth) end
    return map(depth)
end

local show
local function show_table(t)
    local mt = getmetatable(t)
    local parts = {}
    for k, v in pairs(t) do parts[#parts + 1] = show(k) .. '=' .. show(v) end
    return (mt ~= nil and tostring(mt.__serialize) or '-') .. '{' .. table.concat(parts, ',') .. '}'
end
function show(v)
    local t = type(v)
    if t == 'table' then return show_table(v) end
    if t == 'string' then
        if #v > 100 then return 's' .. #v .. ':' .. v:sub(1, 3) end
        -- Bytes past ASCII as numbers: the output stays UTF-8.
        return (string.format('%q', v):gsub('[\128-\255]', function(c) return '\\' .. c:byte() end))
    end
    if t == 'number' then return string.format('%.17g', v) end
    if t == 'cdata' then return 'cdata:' .. tostring(v) end
    return t .. ':' .. tostring(v)
end

local function outcome(ok, v, pos)
    if not ok then return 'error ' .. tostring(v) end
    return show(v) .. ' @' .. tostring(pos)
end

for i = 1, 3000 do
    local data = rand(3) == 1 and map(0) or array(0)
    local r = rand(20)
    if r == 1 then data = data:sub(1, rand(#data)) end       -- truncated
    if r == 2 then data = data .. '\xc1' end                 -- a trailing invalid byte
    if r == 3 and #data > 2 then                             -- an invalid byte inside
        local at = rand(#data - 1) + 1
        data = data:sub(1, at - 1) .. '\xc1' .. data:sub(at + 1)
    end
    print(i, 'decode', outcome(pcall(msgpack.decode, data)))
    if r == 4 then print(i, 'from', outcome(pcall(msgpack.decode, '\x01' .. data, 2))) end
    -- As a tuple's fields: 2.6's Lua decoder grows the tables it makes.
    local ok, t = pcall(msgpack.decode, data)
    if ok and type(t) == 'table' and rand(2) == 1 then
        local made, tuple = pcall(box.tuple.new, {t})
        if made then
            print(i, 'field', show(tuple[1]))
            print(i, 'totable', show(tuple:totable()))
        end
    end
end

-- Options: nothing invalid decoded, no hint metatables.
local m = msgpack.new()
m.cfg{decode_invalid_numbers = false}
print('refused nan', pcall(m.decode, '\x92\x01\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00'))
print('refused inf key', pcall(m.decode, '\x81\xca\x7f\x80\x00\x00\x01'))
m.cfg{decode_invalid_numbers = true, decode_save_metatables = false}
print('no hints', show(m.decode('\x92\x81\xa1a\x90\x91\xc0')))
-- NaN as a key.
print('nan key', pcall(msgpack.decode, '\x81\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00\x01'))
-- Deep nesting.
for _, depth in ipairs({63, 64, 65, 200, 1000}) do
    local ok, v = pcall(msgpack.decode, string.rep('\x91', depth) .. '\x01')
    local d = 0
    while ok and type(v) == 'table' do v = v[1] d = d + 1 end
    print('depth', depth, ok, d, v)
end
os.exit(0)
