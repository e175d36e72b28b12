-- decimal: Tarantool 2.6's decimal module. A decimal is a `decimal_t` cdata (as in
-- 2.6), so arithmetic and comparisons mix it with numbers, strings and 64-bit
-- integers through its ffi metatype. The digits and the arithmetic are in Rust
-- (src/decimal.rs, decNumber as in Tarantool), reached through the C functions
-- src/lua/decimal.rs passes here. Messages are 2.6's: a module function's errors
-- carry no position, an operator's the position of the expression.

local type = type -- the builtin, not the one user code sees (box.lua)
local ffi = require('ffi')
local fns = ...

ffi.cdef[[
typedef struct {
    int32_t digits;
    int32_t exponent;
    uint8_t bits;
    uint16_t lsu[13];
} decimal_t;
]]

local decimal_t = ffi.typeof('decimal_t')
local c = {
    from_string = ffi.cast('bool (*)(decimal_t *, const char *, size_t)', fns.from_string),
    from_double = ffi.cast('bool (*)(decimal_t *, double)', fns.from_double),
    from_int64 = ffi.cast('void (*)(decimal_t *, int64_t)', fns.from_int64),
    from_uint64 = ffi.cast('void (*)(decimal_t *, uint64_t)', fns.from_uint64),
    to_string = ffi.cast('size_t (*)(const decimal_t *, char *)', fns.to_string),
    binary = ffi.cast('bool (*)(int, decimal_t *, const decimal_t *, const decimal_t *)', fns.binary),
    unary = ffi.cast('bool (*)(int, decimal_t *, const decimal_t *)', fns.unary),
    compare = ffi.cast('int (*)(const decimal_t *, const decimal_t *)', fns.compare),
    measure = ffi.cast('int (*)(int, const decimal_t *)', fns.measure),
    adjust = ffi.cast('void (*)(int, decimal_t *, const decimal_t *, int)', fns.adjust),
}
local text = ffi.new('char[?]', fns.text_buffer)

local ADD, SUB, MUL, DIV, REM, POW = 0, 1, 2, 3, 4, 5
local LN, LOG10, EXP, SQRT, ABS, MINUS = 0, 1, 2, 3, 4, 5
local ROUND, TRIM, RESCALE = 0, 1, 2

local function is_decimal(v)
    return type(v) == 'cdata' and ffi.istype(decimal_t, v)
end

-- nil or a NULL pointer (box.NULL), compared without the decimal metamethods
-- (`d == nil` would call __eq again).
local void_p = ffi.typeof('void *')
local function is_null(v)
    return rawequal(v, nil) or type(v) == 'cdata' and ffi.istype(void_p, v) and v == nil
end

local int64_types = {ffi.typeof('int64_t'), ffi.typeof('int32_t'), ffi.typeof('int16_t'), ffi.typeof('int8_t'),
                     ffi.typeof('char')}
local uint64_types = {ffi.typeof('uint64_t'), ffi.typeof('uint32_t'), ffi.typeof('uint16_t'), ffi.typeof('uint8_t')}
local float_types = {ffi.typeof('double'), ffi.typeof('float')}

local function is_one_of(v, types)
    for _, t in ipairs(types) do
        if ffi.istype(t, v) then return true end
    end
    return false
end

-- The value at argument `index` as a decimal (2.6's luaT_todecimal): a decimal
-- itself, a number (through its 15 significant digits), decimal text or an
-- integer cdata. Returns nil and the message when it cannot be one.
local function to_decimal(v, index)
    local ty = type(v)
    if ty == 'cdata' then
        if ffi.istype(decimal_t, v) then return v end
        local r = decimal_t()
        if is_one_of(v, int64_types) then c.from_int64(r, v) return r end
        if is_one_of(v, uint64_types) then c.from_uint64(r, v) return r end
        if is_one_of(v, float_types) then
            if c.from_double(r, tonumber(v)) then return r end
            return nil, string.format('incorrect value to convert to decimal as %d argument', index)
        end
    elseif ty == 'number' or ty == 'string' then
        local r = decimal_t()
        local ok
        if ty == 'number' then ok = c.from_double(r, v) else ok = c.from_string(r, v, #v) end
        if ok then return r end
        return nil, string.format('incorrect value to convert to decimal as %d argument', index)
    end
    return nil, string.format('expected decimal, number or string as %d argument', index)
end

-- to_decimal, raising its message at `level` (0: no position, as 2.6's module functions).
local function checked_decimal(v, index, level)
    local d, err = to_decimal(v, index)
    if d == nil then error(err, level == 0 and 0 or level + 1) end
    return d
end

-- A decimal argument, no conversion (2.6's luaT_checkdecimal).
local function decimal_argument(v, index)
    if type(v) ~= 'cdata' then error(string.format('expected cdata as %d argument', index), 0) end
    if not ffi.istype(decimal_t, v) then error(string.format('expected decimal as %d argument', index), 0) end
    return v
end

local function binary(op)
    return function(a, b)
        local x = checked_decimal(a, 1, 2)
        local y = checked_decimal(b, 2, 2)
        local r = decimal_t()
        if not c.binary(op, r, x, y) then error('decimal operation failed', 2) end
        return r
    end
end

local function comparison(holds)
    return function(a, b)
        if rawequal(a, nil) or rawequal(b, nil) then error('attempt to compare decimal with nil', 2) end
        return holds(c.compare(checked_decimal(a, 1, 2), checked_decimal(b, 2, 2)))
    end
end

local function tostring_decimal(d)
    return ffi.string(text, c.to_string(d, text))
end

ffi.metatype(decimal_t, {
    __add = binary(ADD),
    __sub = binary(SUB),
    __mul = binary(MUL),
    __div = binary(DIV),
    __mod = binary(REM),
    __pow = binary(POW),
    __unm = function(a)
        local r = decimal_t()
        c.unary(MINUS, r, checked_decimal(a, 1, 2))
        return r
    end,
    __eq = function(a, b)
        -- nil and box.NULL equal no decimal.
        if is_null(a) or is_null(b) then return false end
        return c.compare(checked_decimal(a, 1, 2), checked_decimal(b, 2, 2)) == 0
    end,
    __lt = comparison(function(r) return r < 0 end),
    __le = comparison(function(r) return r <= 0 end),
    __tostring = tostring_decimal,
})

local decimal = {}

function decimal.new(...)
    if select('#', ...) < 1 then error('usage: decimal.new(value)', 0) end
    local d = checked_decimal((...), 1, 0)
    local r = decimal_t()
    ffi.copy(r, d, ffi.sizeof(decimal_t))
    return r
end

function decimal.is_decimal(...)
    if select('#', ...) < 1 then error('usage: decimal.is_decimal(value)', 0) end
    return is_decimal((...))
end

local function unary(name, op)
    decimal[name] = function(...)
        if select('#', ...) < 1 then error('usage: decimal.' .. name .. '(decimal)', 0) end
        local r = decimal_t()
        if not c.unary(op, r, checked_decimal((...), 1, 0)) then error('decimal operation failed', 0) end
        return r
    end
end
unary('log10', LOG10)
unary('ln', LN)
unary('exp', EXP)
unary('sqrt', SQRT)
unary('abs', ABS)

local function adjusted(name, op, usage)
    decimal[name] = function(...)
        local n = select('#', ...)
        if n < (op == TRIM and 1 or 2) then error(usage, 0) end
        local d, scale = ...
        d = decimal_argument(d, 1)
        local r = decimal_t()
        c.adjust(op, r, d, tonumber(scale) or 0)
        return r
    end
end
adjusted('round', ROUND, 'usage: decimal.round(decimal, scale)')
adjusted('trim', TRIM, 'usage: decimal.trim(decimal)')
adjusted('rescale', RESCALE, 'usage: decimal.rescale(decimal, scale)')

function decimal.precision(...)
    if select('#', ...) < 1 then error('usage: decimal.precision(decimal)', 0) end
    return c.measure(0, decimal_argument((...), 1))
end

function decimal.scale(...)
    if select('#', ...) < 1 then error('usage: decimal.scale(decimal)', 0) end
    return c.measure(1, decimal_argument((...), 1))
end

-- What src/lua/decimal.rs needs: a fresh decimal to fill, and the type test.
local helpers = {
    new = function() return decimal_t() end,
    is = is_decimal,
}

return decimal, helpers
