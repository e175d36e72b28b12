-- The console's Lua output (`\set output lua` and `\set output lua,block`): values
-- written as Lua text, as 2.6's console writes them (its serialize_lua.c).
--
-- Line mode: `{1, 2, {a = 1}}`. Block mode: an element per line, indented by 2.
-- As in 2.6: strings in double quotes with C escapes (bytes past ASCII as \xNN),
-- a string that is not printable text as its base64; integers in full, other
-- numbers with 14 digits; box.NULL; decimals and uuids as quoted text; what has
-- no Lua form (a function, a thread) as its quoted tostring(). A map key is bare
-- when it is a name, else in brackets; an integer key is left out where it is the
-- entry's position counted from 0 (2.6's quirk). A table met a second time (a
-- shared or a cyclic reference) is written as `{nil}`.

local helpers = box.internal.serializer_helpers
local bit = require('bit')
local band, bor, bnot = bit.band, bit.bor, bit.bnot

-- What a node is (2.6's node masks).
local LVALUE, RVALUE, MAP_KEY, EMBRACE, QUOTE = 1, 2, 4, 8, 16

-- The options the console's Lua serializer has.
local OPTIONS = {
    encode_invalid_numbers = true, encode_number_precision = 14, encode_load_metatables = true,
    encode_use_tostring = true, encode_invalid_as_nil = true, encode_sparse_convert = true,
    encode_sparse_ratio = 2, encode_sparse_safe = 10,
}

local KEYWORDS = {}
for _, w in ipairs({'and', 'break', 'do', 'else', 'elseif', 'end', 'false', 'for', 'function', 'if', 'in',
                    'local', 'nil', 'not', 'or', 'repeat', 'return', 'then', 'true', 'until', 'while'}) do
    KEYWORDS[w] = true
end

local ESCAPES = {["'"] = "\\'", ['"'] = '\\"', ['\0'] = '\\0', ['\a'] = '\\a', ['\b'] = '\\b', ['\f'] = '\\f',
                 ['\v'] = '\\v', ['\r'] = '\\r', ['\n'] = '\\n', ['\t'] = '\\t'}

-- A string's text between its quotes: C escapes, other bytes C's isprint()
-- refuses as \xNN; the backslash stays as it is (2.6 does not escape it).
local function escaped(s)
    return (string.gsub(s, '[%z\1-\31\127-\255"\']', function(c)
        return ESCAPES[c] or string.format('\\x%02x', string.byte(c))
    end))
end

-- A scalar's text and kind ('str' is escaped; 'int' keys compare with their
-- position), or nil and the table (with its array length, nil for a map) to lay out.
local function scalar(v)
    if type(v) == 'nil' then return 'nil', 'raw' end
    if helpers.is_null(v) then return 'box.NULL', 'raw' end
    v = helpers.scalar_of_cdata(v)
    local ty = type(v)
    if ty == 'boolean' then return tostring(v), 'raw' end
    if ty == 'number' then
        if v == math.floor(v) and v > -2^63 and v < 2^64 then return helpers.number(v), 'int', v end
        return helpers.number(v, OPTIONS.encode_number_precision), 'raw'
    end
    local digits = helpers.cdata_integer(v)
    if digits then return digits, 'int', tonumber(v) end
    if helpers.is_extension(v) then return tostring(v), 'quoted' end
    if ty == 'string' then
        if helpers.is_printable_text(v) then return v, 'str' end
        return box.internal.native.base64_encode(v, false, false, true), 'str'
    end
    if box.tuple.is(v) then v = v:totable() end
    local hooked = helpers.follow_hooks(v, true)
    if not rawequal(hooked, v) then return scalar(hooked) end
    if type(v) ~= 'table' or helpers.is_fiber(v) then return tostring(v), 'str' end
    return nil, v, helpers.sequence_length(v, OPTIONS)
end

-- `value` as Lua text; `block`: one element per line.
local function lua_text(value, block)
    local out, suffix, noindent, prev_mask = {}, '', false, 0
    -- Tables met more than once: true until the first is written, then 'written'.
    local repeated = helpers.repeated_tables({value}, 1)

    local function emit(mask, indent, text, escape)
        if suffix ~= '' then
            out[#out + 1] = suffix
            suffix = ''
        end
        if indent > 0 and block and not noindent then out[#out + 1] = string.rep(' ', indent) end
        if band(mask, EMBRACE) ~= 0 then out[#out + 1] = '[' end
        if band(mask, QUOTE) ~= 0 then out[#out + 1] = '"' end
        out[#out + 1] = escape and escaped(text) or text
        if band(mask, QUOTE) ~= 0 then out[#out + 1] = '"' end
        if band(mask, EMBRACE) ~= 0 then out[#out + 1] = ']' end
    end

    -- A scalar node; `position`: a map key's place among its table's keys, from 0.
    local function emit_node(mask, indent, text, kind, int, position)
        if band(mask, MAP_KEY) ~= 0 then
            if kind == 'int' then
                if position == int then
                    noindent = false
                    return
                end
                mask = bor(mask, EMBRACE)
            elseif kind == 'str' then
                if KEYWORDS[text] or string.find(text, '[^%w_]') then
                    mask = bor(mask, EMBRACE, QUOTE)
                else
                    mask = band(mask, bnot(QUOTE))
                end
            end
        end
        prev_mask = mask
        emit(mask, indent, text, kind == 'str')
        if band(mask, RVALUE) ~= 0 then
            suffix = block and ',\n' or ', '
            noindent = false
        elseif band(mask, LVALUE) ~= 0 then
            suffix = ' = '
            noindent = true
        end
    end

    local function open_brace(indent)
        if block then
            emit(0, noindent and 0 or indent, '{\n')
            if noindent and band(prev_mask, LVALUE) ~= 0 then noindent = false end
        else
            emit(0, indent, '{')
        end
        return indent + 2
    end

    local function close_brace(indent)
        suffix = ''
        if block then emit(0, 0, '\n') end
        emit(0, indent - 2, '}')
        suffix = block and ',\n' or ', '
    end

    local node
    -- A table met again after it was written: `{nil}`.
    local function written_before(t, mask, indent)
        if repeated[t] == true then
            repeated[t] = 'written'
        elseif repeated[t] == 'written' then
            emit_node(mask, indent, 'nil', 'raw')
            return true
        end
        return false
    end

    node = function(v, mask, indent, position)
        local text, kind, n = scalar(v)
        if text ~= nil then
            local int = n
            if kind == 'quoted' then
                mask, kind = bor(mask, QUOTE), 'raw'
            elseif kind == 'str' then
                mask = bor(mask, QUOTE)
            end
            return emit_node(mask, indent, text, kind, int, position)
        end
        local t = kind
        indent = open_brace(indent)
        if not written_before(t, mask, indent) then
            if n ~= nil then
                for i = 1, n do node(t[i], RVALUE, indent) end
            else
                local index = 0
                for k, x in pairs(t) do
                    node(k, bor(LVALUE, MAP_KEY), indent, index)
                    index = index + 1
                    node(x, RVALUE, indent)
                end
            end
        end
        close_brace(indent)
        prev_mask = mask
    end

    node(value, 0, 0)
    return table.concat(out)
end

box.internal.console_lua_text = lua_text
