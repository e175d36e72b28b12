-- string: Tarantool's additions to Lua's string library (and so to every
-- string's methods): split, ljust, rjust, center, startswith, endswith, hex,
-- fromhex, strip, lstrip and rstrip, with 2.6's argument checks and messages.

local type = type -- the builtin, not the one user code sees (box.lua)
local bad_argument = "bad argument #%d to '%s' (%s expected, got %s)"

-- Raises 2.6's message for argument `n` of `name`, blaming the caller of the
-- public function: `helpers` is how many helper functions stand between that
-- function and this one.
local function refuse(n, name, expected, got, helpers)
    error(bad_argument:format(n, name, expected, got), 3 + (helpers or 0))
end

-- The bytes C's isspace() accepts: space, \t, \n, \v, \f, \r.
local function is_space(byte)
    return byte == 32 or (byte >= 9 and byte <= 13)
end

-- Splits at runs of white space, leading and trailing ones dropped; after
-- `max` splits the rest (from its first non-space) is the last piece.
local function split_on_space(s, max)
    local pieces, at, len = {}, 1, #s
    while true do
        while at <= len and is_space(s:byte(at)) do at = at + 1 end
        if at > len then break end
        if max <= 0 then
            pieces[#pieces + 1] = s:sub(at)
            break
        end
        local start = at
        while at <= len and not is_space(s:byte(at)) do at = at + 1 end
        pieces[#pieces + 1] = s:sub(start, at - 1)
        max = max - 1
    end
    return pieces
end

-- Splits at every occurrence of `sep` (plain text), at most `max` times. (Tail
-- called by split, as in 2.6: an empty `sep` is blamed on split's caller's caller.)
local function split_on(s, sep, max)
    if #sep == 0 then error(bad_argument:format(2, 'string.split', 'non-empty string', 'empty string'), 3) end
    local pieces, at = {}, 1
    while true do
        if max <= 0 or at > #s then
            pieces[#pieces + 1] = s:sub(at)
            break
        end
        local from, to = s:find(sep, at, true)
        if from == nil then
            pieces[#pieces + 1] = s:sub(at)
            break
        end
        pieces[#pieces + 1] = s:sub(at, from - 1)
        at = to + 1
        max = max - 1
    end
    return pieces
end

local function split(s, sep, max)
    if type(s) ~= 'string' then refuse(1, 'string.split', 'string', type(s)) end
    if sep ~= nil and type(sep) ~= 'string' then refuse(2, 'string.split', 'string', type(sep)) end
    if max ~= nil and (type(max) ~= 'number' or max < 0) then
        refuse(3, 'string.split', 'positive integer', type(max))
    end
    max = max or 0xffffffff
    if sep == nil then return split_on_space(s, max) end
    return split_on(s, sep, max)
end

-- The checks ljust, rjust and center share.
local function justify_args(name, s, width, char)
    if type(s) ~= 'string' then refuse(1, name, 'string', type(s), 1) end
    if type(width) ~= 'number' or width < 0 then refuse(2, name, 'positive integer', type(width), 1) end
    if char ~= nil and (type(char) ~= 'string' or #char ~= 1) then refuse(3, name, 'char', type(char), 1) end
    return char or ' '
end

local function ljust(s, width, char)
    char = justify_args('string.ljust', s, width, char)
    local missing = width - #s
    if missing < 0 then return s end
    return s .. char:rep(missing)
end

local function rjust(s, width, char)
    char = justify_args('string.rjust', s, width, char)
    local missing = width - #s
    if missing < 0 then return s end
    return char:rep(missing) .. s
end

local function center(s, width, char)
    char = justify_args('string.center', s, width, char)
    local missing = width - #s
    if missing < 0 then return s end
    local left = math.floor(missing / 2)
    return char:rep(left) .. s .. char:rep(missing - left)
end

-- The checks startswith and endswith share, and their bounds made positive:
-- 1-based, inclusive, clamped to the string. `got` names an argument's type in
-- a message (2.6's endswith names the string's type whichever is wrong).
local function affix_args(name, got, s, affix, first, last)
    if type(s) ~= 'string' then refuse(1, name, 'string', got(s), 1) end
    if type(affix) ~= 'string' then refuse(2, name, 'string', got(affix), 1) end
    if first ~= nil and type(first) ~= 'number' then refuse(3, name, 'integer', got(first), 1) end
    if last ~= nil and type(last) ~= 'number' then refuse(4, name, 'integer', got(last), 1) end
    local len = #s
    if first == nil then
        first = 1
    elseif first < 0 then
        first = math.max(len + first + 1, 0)
    end
    if last == nil or last > len then
        last = len
    elseif last < 0 then
        last = math.max(len + last + 1, 0)
    end
    return first, last
end

local function startswith(s, head, first, last)
    first, last = affix_args('string.startswith', type, s, head, first, last)
    if #head == 0 then return true end
    if last - first + 1 < #head or first > last then return false end
    return s:sub(first, first + #head - 1) == head
end

-- 2.6's endswith takes both lengths before it checks anything: a value without
-- one fails there, with the message its line gives.
local function length_of(value, name)
    local ok, len = pcall(function() return #value end)
    if ok then return len end
    error(("builtin/string.lua:248: attempt to get length of local '%s' (a %s value)"):format(name, type(value)), 0)
end

local function endswith(s, tail, first, last)
    length_of(tail, 'tail')
    length_of(s, 'inp')
    first, last = affix_args('string.endswith', function() return type(s) end, s, tail, first, last)
    if #tail == 0 then return true end
    if last - first + 1 < #tail or first > last then return false end
    return s:sub(last - #tail + 1, last) == tail
end

local function hex(s)
    if type(s) ~= 'string' then refuse(1, 'string.hex', 'string', type(s)) end
    return (s:gsub('.', function(c) return ('%02x'):format(c:byte()) end))
end

local function fromhex(s)
    if type(s) ~= 'string' then refuse(1, 'string.fromhex', 'string', type(s)) end
    if #s % 2 ~= 0 then refuse(1, 'string.fromhex', 'even amount of chars', 'odd amount') end
    if s:find('[^%x]') then refuse(1, 'string.fromhex', 'hex string', 'non hex chars') end
    return (s:gsub('%x%x', function(pair) return string.char(tonumber(pair, 16)) end))
end

-- Strips the bytes of `chars` (white space by default) from the ends asked for.
local function stripper(name, left, right)
    return function(s, chars)
        if type(s) ~= 'string' then refuse(1, name, 'string', type(s)) end
        if s == '' then return s end
        local strip
        if chars == nil then
            strip = is_space
        elseif type(chars) ~= 'string' then
            refuse(2, name, 'string', type(chars))
        elseif chars == '' then
            return s
        else
            local set = {}
            for i = 1, #chars do set[chars:byte(i)] = true end
            strip = function(byte) return set[byte] ~= nil end
        end
        local first, last = 1, #s
        if left then
            while first <= last and strip(s:byte(first)) do first = first + 1 end
        end
        if right then
            while last >= first and strip(s:byte(last)) do last = last - 1 end
        end
        return s:sub(first, last)
    end
end

string.split = split
string.ljust = ljust
string.rjust = rjust
string.center = center
string.startswith = startswith
string.endswith = endswith
string.hex = hex
string.fromhex = fromhex
string.strip = stripper('string.strip', true, true)
string.lstrip = stripper('string.lstrip', true, false)
string.rstrip = stripper('string.rstrip', false, true)
