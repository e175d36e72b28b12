-- utf8: Tarantool's UTF-8 module (also the global `utf8`): upper, lower, len,
-- next, sub, char, isupper, islower, isalpha, isdigit, cmp, casecmp. The work
-- is box.internal.utf8's; here arguments are checked with 2.6's messages.
-- cmp and casecmp follow oncebox's 'unicode' and 'unicode_ci' collations
-- (an approximation of ICU's, as for indexes).

local type = type -- the builtin, not the one user code sees (box.lua)
local native = box.internal.utf8

local utf8 = {}

-- Raised as a C function raises: positioned at the caller's line.
local function usage(message)
    error(message, 3)
end

-- luaL_checkinteger / luaL_optinteger: a number or a numeric string, truncated.
local function integer(value, n, default)
    if value == nil and default ~= nil then
        return default
    end
    local number = tonumber(value)
    if type(value) ~= 'number' and type(value) ~= 'string' then
        number = nil
    end
    if number == nil then
        local info = debug.getinfo(2, 'n')
        error(string.format("bad argument #%d to '%s' (number expected, got %s)", n, info and info.name or '?',
            type(value)), 3)
    end
    return number >= 0 and math.floor(number) or math.ceil(number)
end

-- lua_isstring: strings and numbers.
local function is_string(value)
    local kind = type(value)
    return kind == 'string' or kind == 'number'
end

-- upper(s) or lower(s): one string (or number) in, its case mapped.
local function case_mapper(upper, name)
    return function(...)
        local s = ...
        if select('#', ...) ~= 1 or not is_string(s) then
            usage('Usage: utf8.' .. name .. '(<string>)')
        end
        return native.case(tostring(s), upper)
    end
end

utf8.upper = case_mapper(true, 'upper')
utf8.lower = case_mapper(false, 'lower')

function utf8.len(...)
    local s, i, j = ...
    if select('#', ...) > 3 or not is_string(s) then
        usage('Usage: utf8.len(<string>, [i, [j]])')
    end
    return native.len(tostring(s), integer(i, 2, 1), integer(j, 3, -1))
end

function utf8.next(...)
    local s, pos = ...
    if select('#', ...) > 2 or not is_string(s) then
        usage('Usage: utf8.next(<string>, [<byte offset>])')
    end
    local after, code = native.next(tostring(s), integer(pos, 2, 1))
    if after == nil then
        return
    end
    return after, code
end

function utf8.sub(...)
    local s, i, j = ...
    if select('#', ...) < 2 or not is_string(s) then
        usage('Usage: utf8.sub(<string>, [i, [j]])')
    end
    return native.sub(tostring(s), integer(i, 2), integer(j, 3, -1))
end

function utf8.char(...)
    local n = select('#', ...)
    if n < 1 then
        usage('Usage: utf8.char(<char code>')
    end
    local codes = { ... }
    for k = 1, n do
        codes[k] = integer(codes[k], k)
    end
    return native.char(unpack(codes, 1, n))
end

-- One character (a string of exactly one) or a code point, tested for `class`.
local function checker(class, name)
    return function(...)
        local c = ...
        if select('#', ...) ~= 1 then
            usage('Usage: utf8.' .. name .. '(<string> or <one symbol code>)')
        end
        if type(c) ~= 'string' then
            c = integer(c, 1)
        end
        return native.is(class, c)
    end
end

utf8.isupper = checker('upper', 'isupper')
utf8.islower = checker('lower', 'islower')
utf8.isalpha = checker('alpha', 'isalpha')
utf8.isdigit = checker('digit', 'isdigit')

local function comparer(caseless, name)
    return function(...)
        local a, b = ...
        if select('#', ...) ~= 2 or not is_string(a) or not is_string(b) then
            usage('Usage: utf8.' .. name .. '(<string1>, <string2>)')
        end
        return native.cmp(tostring(a), tostring(b), caseless)
    end
end

utf8.cmp = comparer(false, 'cmp')
utf8.casecmp = comparer(true, 'casecmp')

package.loaded.utf8 = utf8
rawset(_G, 'utf8', utf8)
