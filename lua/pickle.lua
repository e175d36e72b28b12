-- pickle: Tarantool's binary packing module.
-- * pickle.pack(format, ...) packs one argument per format character:
--   b/B 8-bit, s/S 16-bit, i/I 32-bit, l/L 64-bit integers in this machine's
--   byte order; n 16-bit, N 32-bit, q/Q 64-bit integers big-endian; f float,
--   d double; a/A a string's bytes. Integers are cut to their width.
-- * pickle.unpack(format, s) reads them back (b, s, n, i, N, l, q, f, d; a/A
--   takes the rest) and returns one value per character.
-- Errors carry 2.6's messages.

local type = type -- the builtin, not the one user code sees (box.lua)
local ffi = require('ffi')

local pickle = {}

local scratch = ffi.new('union { uint64_t u; double d; float f; uint8_t b[8]; uint16_t u16; uint32_t u32; }')
local LITTLE_ENDIAN = ffi.abi('le')
local AS_NUMBER = 1e14

-- Raised as a C function raises: at the caller's line.
local function fail(message)
    error(message, 3)
end

-- luaL_checklstring's failure: "bad argument #n to 'name' (string expected, got t)".
local function string_expected(n, value, present)
    local info = debug.getinfo(2, 'n')
    local got = present and type(value) or 'no value'
    error(string.format("bad argument #%d to '%s' (string expected, got %s)", n, info and info.name or '?', got), 3)
end

local int64_t, uint64_t = ffi.typeof('int64_t'), ffi.typeof('uint64_t')
local integer_ctypes = {}
for _, name in ipairs({ 'int8_t', 'uint8_t', 'int16_t', 'uint16_t', 'int32_t', 'uint32_t', 'int64_t', 'uint64_t' }) do
    table.insert(integer_ctypes, ffi.typeof(name))
end

-- `value` as msgpack would take it when it is an integer: its 64 bits, or nil.
local function integer_bits(value)
    if type(value) == 'number' then
        if value ~= value or value < -2 ^ 63 or value >= 2 ^ 64 or value ~= math.floor(value) then
            return nil
        end
        return value < 0 and ffi.cast(uint64_t, ffi.cast(int64_t, value)) or ffi.cast(uint64_t, value)
    elseif type(value) == 'cdata' then
        for _, ctype in ipairs(integer_ctypes) do
            if ffi.istype(ctype, value) then
                return ffi.cast(uint64_t, value)
            end
        end
    end
    return nil
end

-- The first `width` bytes of `bits` in memory (the low ones on this machine).
local function native_bytes(bits, width)
    scratch.u = bits
    return ffi.string(scratch.b, width)
end

-- The low `width` bytes of `bits`, most significant first.
local function big_endian_bytes(bits, width)
    local bytes = native_bytes(bits, 8)
    if LITTLE_ENDIAN then
        return bytes:sub(1, width):reverse()
    end
    return bytes:sub(9 - width)
end

local INTEGER_FORMATS = {
    b = { 1, false, '8' }, B = { 1, false, '8' },
    s = { 2, false, '16' }, S = { 2, false, '16' }, n = { 2, true, '16' },
    i = { 4, false, '32' }, I = { 4, false, '32' }, N = { 4, true, '32' },
    l = { 8, false, '64' }, L = { 8, false, '64' }, q = { 8, true, '64' }, Q = { 8, true, '64' },
}

function pickle.pack(...)
    local format = ...
    if type(format) ~= 'string' and type(format) ~= 'number' then
        string_expected(1, format, select('#', ...) >= 1)
    end
    format = tostring(format)
    local nargs = select('#', ...)
    local out = {}
    for k = 1, #format do
        local spec = format:sub(k, k)
        if k + 1 > nargs then
            fail('pickle.pack: argument count does not match the format')
        end
        local value = select(k + 1, ...)
        local integer = INTEGER_FORMATS[spec]
        if integer then
            local width, big_endian, bits_name = integer[1], integer[2], integer[3]
            local bits = integer_bits(value)
            if bits == nil then
                fail('pickle.pack: expected ' .. bits_name .. '-bit int')
            end
            out[#out + 1] = big_endian and big_endian_bytes(bits, width) or native_bytes(bits, width)
        elseif spec == 'd' then
            scratch.d = tonumber(type(value) ~= 'cdata' and value or nil) or 0
            out[#out + 1] = ffi.string(scratch.b, 8)
        elseif spec == 'f' then
            scratch.f = tonumber(type(value) ~= 'cdata' and value or nil) or 0
            out[#out + 1] = ffi.string(scratch.b, 4)
        elseif spec == 'a' or spec == 'A' then
            if type(value) ~= 'string' and type(value) ~= 'number' then
                string_expected(k + 1, value, true)
            end
            out[#out + 1] = tostring(value)
        else
            fail("pickle.pack: unsupported pack format specifier '" .. spec .. "'")
        end
    end
    return table.concat(out)
end

-- A 64-bit value as 2.6 hands one to Lua: a number below 10^14, else uint64_t cdata.
local function uint64_value(bits)
    return bits < AS_NUMBER and tonumber(bits) or bits
end

-- `width` bytes of `s` from `at` read into `scratch`, reversed when `big_endian`.
local function load(s, at, width, big_endian)
    local bytes = s:sub(at, at + width - 1)
    if big_endian and LITTLE_ENDIAN then
        bytes = bytes:reverse()
    end
    ffi.copy(scratch.b, bytes, width)
end

local UNPACK_FORMATS = {
    b = { 1, false, function() return scratch.b[0] end },
    s = { 2, false, function() return scratch.u16 end },
    n = { 2, true, function() return scratch.u16 end },
    i = { 4, false, function() return tonumber(scratch.u32) end },
    N = { 4, true, function() return tonumber(scratch.u32) end },
    l = { 8, false, function() return uint64_value(scratch.u) end },
    q = { 8, true, function() return uint64_value(scratch.u) end },
    d = { 8, false, function() return scratch.d end },
    f = { 4, false, function() return scratch.f end },
}

function pickle.unpack(...)
    local format, s = ...
    local nargs = select('#', ...)
    if type(format) ~= 'string' and type(format) ~= 'number' then
        string_expected(1, format, nargs >= 1)
    end
    if type(s) ~= 'string' and type(s) ~= 'number' then
        string_expected(2, s, nargs >= 2)
    end
    format, s = tostring(format), tostring(s)
    local values, at = {}, 1
    for k = 1, #format do
        local spec = format:sub(k, k)
        local reader = UNPACK_FORMATS[spec]
        if reader then
            local width = reader[1]
            if at + width - 1 > #s then
                fail(string.format("pickle.unpack('%s'): got %d bytes (expected: %d+)", spec, #s, at + width - 1))
            end
            scratch.u = 0
            load(s, at, width, reader[2])
            values[#values + 1] = reader[3]()
            at = at + width
        elseif spec == 'a' or spec == 'A' then
            values[#values + 1] = s:sub(at)
            at = #s + 1
        else
            fail("pickle.unpack: unsupported format specifier '" .. spec .. "'")
        end
    end
    if at ~= #s + 1 then
        fail(string.format("pickle.unpack('%s'): too many bytes: unpacked %d, total %d", format, at - 1, #s))
    end
    return unpack(values, 1, #format)
end

package.loaded.pickle = pickle
