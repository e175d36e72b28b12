-- yaml: Tarantool 2.6's yaml module. encode renders one document with the console's
-- emitter (lua/console.lua), so both write the same YAML; decode reads the events
-- of libyaml's parser (lua/yaml_events.lua, a port of the one 2.6 bundles) as
-- 2.6's loader does: an alias is the very table its anchor named, or the string
-- (an anchor on a null, boolean, number or tagged scalar names nothing); the core
-- scalar tags !!str, !!int, !!float, !!bool and !!binary are read, others
-- ignored; untagged plain scalars resolve as Tarantool's decoder does: only
-- null/~, true/false/yes/no are special; numbers are decimal, hex, inf or nan.
-- Errors are libyaml's, worded and placed as 2.6 words and places them.

local type = type -- the builtin, not the one user code sees (box.lua)
local emitter = box.internal.yaml
local yaml = {NULL = box.NULL}
-- The metatables of decoded maps and arrays, shared with msgpack and json (as in 2.6).
yaml.map_mt = package.loaded.msgpack.map_mt
yaml.array_mt = package.loaded.msgpack.array_mt

--------------------------------------------------------------------------------
-- encode
--------------------------------------------------------------------------------

-- One document with the serializer options `cfg` (yaml.cfg, an instance's).
local function document(v, cfg)
    if box.tuple.is(v) then return '--- ' .. emitter.value(v, 2, 4, cfg) .. '\n...\n' end
    if emitter.is_block(v, cfg) then return '---\n' .. emitter.value(v, 0, nil, cfg) .. '\n...\n' end
    local text = emitter.value(v, 2, 4, cfg)
    if text == '' then return '---\n...\n' end
    return '--- ' .. text .. '\n...\n'
end

-- document(), its errors raised as 2.6 does: a value with no YAML form as a
-- string, what the options or a __serialize refuse as a LuajitError.
local function encode(v, cfg)
    local ok, result = pcall(document, v, cfg)
    if ok then return result end
    if type(result) == 'string' and not string.find(result, "^unsupported Lua type") then
        result = box.internal.make_error(nil, result, 'LuajitError')
    end
    error(result, 0)
end

--------------------------------------------------------------------------------
-- decode
--------------------------------------------------------------------------------

local function is_number_text(s)
    -- (Most text starts with a letter no number starts with.)
    if not string.find(s, '^[-+.%diInN]') then return false end
    if string.find(s, '^[-+]?%d+$') or string.find(s, '^[-+]?0[xX]%x+$') then return true end
    if string.find(s, '^[-+]?%d*%.?%d*[eE][-+]?%d+$') or string.find(s, '^[-+]?%d*%.%d*$') then
        return string.find(s, '%d') ~= nil
    end
    local l = string.lower(s)
    return string.find(l, '^[-+]?inf$') ~= nil or string.find(l, '^[-+]?infinity$') ~= nil
        or string.find(l, '^[-+]?nan$') ~= nil
end

local ffi = require('ffi')

-- A decimal integer text as 2.6's decoder gives it: a number below 10^14 in
-- magnitude ("-0" is 0), else a 64-bit integer cdata: int64_t while it fits below
-- INT64_MAX, uint64_t from there, saturating at either end as strtoll and
-- strtoull do.
local function integer(s)
    local n = tonumber(s)
    if math.abs(n) < 1e14 then return n == 0 and 0 or n end
    local negative = string.sub(s, 1, 1) == '-'
    local magnitude = string.gsub(string.gsub(s, '^[-+]', ''), '^0+', '')
    local function over(limit) return #magnitude > #limit or (#magnitude == #limit and magnitude > limit) end
    if negative then
        if over('9223372036854775808') then return ffi.cast('int64_t', 9223372036854775808ULL) end
        return ffi.cast('int64_t', -loadstring('return ' .. magnitude .. 'ULL')())
    end
    if over('18446744073709551615') then return 18446744073709551615ULL end
    local u = loadstring('return ' .. magnitude .. 'ULL')()
    if u < 9223372036854775807ULL then return ffi.cast('int64_t', u) end
    return u
end

-- The bytes of a !!binary scalar (base64; line breaks and spaces are no part of it).
local function binary(v)
    local text = string.gsub(tostring(v), '%s', '')
    return box.internal.native.base64_decode(text)
end

local function resolve_plain(s)
    if s == '~' or s == 'null' then return box.NULL end
    if s == 'true' or s == 'yes' then return true end
    if s == 'false' or s == 'no' then return false end
    if is_number_text(s) then
        if string.find(s, '^[-+]?%d+$') then return integer(s) end
        local n = tonumber(s)
        if n ~= nil then return n end
    end
    return s
end

-- C's strtod over `s`: its longest number prefix, 0 without one.
local function strtod(s)
    -- (LuaJIT's tonumber also reads 0b binary, which strtod stops at: 0.)
    local n = not string.find(s, '^%s*[+-]?0[bB]') and tonumber(s) or nil
    if n ~= nil then return n end
    local sign, word = string.match(string.lower(s), '^%s*([+-]?)(%a+)')
    if word ~= nil and string.sub(word, 1, 3) == 'inf' then return sign == '-' and -math.huge or math.huge end
    if word ~= nil and string.sub(word, 1, 3) == 'nan' then return 0 / 0 end
    local hex_sign, hex = string.match(s, '^%s*([+-]?)0[xX](%x+)')
    if hex ~= nil then return (hex_sign == '-' and -1 or 1) * tonumber(hex, 16) end
    local prefix = string.match(s, '^%s*[+-]?%d*%.?%d*[eE][+-]?%d+') or string.match(s, '^%s*[+-]?%d*%.?%d*')
    return tonumber(prefix) or 0
end

-- A scalar's text under a core tag (by its name after tag:yaml.org,2002:), as
-- 2.6's loader reads it: !!int by strtol (the leading digits, saturated; 0
-- without any), !!float by strtod, !!bool true only for true/yes, !!str as it
-- stands.
local SCALAR_TAGS = {
    str = function(s) return s end,
    int = function(s)
        local digits = string.match(s, '^%s*([+-]?%d+)')
        if digits == nil then return 0 end
        return math.max(math.min(tonumber(digits), 2 ^ 63), -2 ^ 63)
    end,
    float = strtod,
    bool = function(s) return s == 'true' or s == 'yes' end,
}

-- The message 2.6's loader (lyaml.cc) makes of a libyaml error raised while it
-- read document number `documents` (marks are line * 2^32 + column, from 0).
local function problem_text(e, documents)
    local text = (e.problem or 'A problem') .. ' at document: ' .. documents
    local at = e.problem_mark
    if at ~= nil and at ~= 0 then
        text = text .. string.format(', line: %d, column: %d\n', math.floor(at / 2 ^ 32) + 1, at % 2 ^ 32 + 1)
    else
        text = text .. '\n'
    end
    if e.context ~= nil then
        local m = e.context_mark
        text = text .. string.format('%s at line: %d, column: %d\n', e.context, math.floor(m / 2 ^ 32) + 1,
            m % 2 ^ 32 + 1)
    end
    return text
end

local TAG_PREFIX = 'tag:yaml.org,2002:'

-- The loader's state while it reads a text (one at a time, as the events are).
local next_event, anchors

-- A scalar event's value: by its core tag, else an untagged plain one resolved
-- ('' stays a string); a string takes the event's anchor.
local function load_scalar(e)
    local text, tag = e.value, e.tag
    if tag ~= nil and string.sub(tag, 1, #TAG_PREFIX) == TAG_PREFIX then
        local name = string.sub(tag, #TAG_PREFIX + 1)
        if name == 'binary' then return binary(text) end
        local read = SCALAR_TAGS[name]
        if read ~= nil then return read(text) end
    end
    if e.style == 'plain' then
        if text == '' then return '' end
        local v = resolve_plain(text)
        if type(v) ~= 'string' then return v end
    end
    if e.anchor ~= nil then anchors[e.anchor] = text end
    return text
end

local load_node
-- (true, the value of the node event `e` starts), or false for the end of a
-- collection or document.
local function load_event(e)
    local t = e.type
    if t == 'DOCUMENT_END' or t == 'MAPPING_END' or t == 'SEQUENCE_END' then return false end
    if t == 'MAPPING_START' then
        local map = setmetatable({}, yaml.map_mt)
        if e.anchor ~= nil then anchors[e.anchor] = map end
        while true do
            local more, key = load_node()
            if not more then return true, map end
            local found, value = load_node()
            if not found then error('unanticipated END event', 0) end
            rawset(map, key, value)
        end
    elseif t == 'SEQUENCE_START' then
        local array = setmetatable({}, yaml.array_mt)
        if e.anchor ~= nil then anchors[e.anchor] = array end
        local i = 0
        while true do
            local more, value = load_node()
            if not more then return true, array end
            i = i + 1
            array[i] = value
        end
    elseif t == 'SCALAR' then
        return true, load_scalar(e)
    elseif t == 'ALIAS' then
        local v = anchors[e.anchor]
        if v == nil then error('invalid reference: ' .. e.anchor, 0) end
        return true, v
    elseif t == 'NO' then
        error('libyaml returned YAML_NO_EVENT', 0)
    end
    error('invalid event', 0)
end
function load_node() return load_event(next_event()) end

-- Reads the documents of `s` into `out`, counting them in out.n.
local function load(s, out)
    next_event = box.internal.yaml_events(s)
    anchors = {}
    if next_event().type ~= 'STREAM_START' then error('expected STREAM_START_EVENT', 0) end
    while true do
        if next_event().type == 'STREAM_END' then return end
        out.n = out.n + 1
        -- A document whose first node event is refused is an "unexpected END
        -- event" to 2.6's loader (it reads the failure as the end).
        local read, e = pcall(next_event)
        if not read then
            if type(e) == 'table' and e.problem_mark ~= nil then e = 'unexpected END event' end
            error(e, 0)
        end
        local found, v = load_event(e)
        if not found then error('unexpected END event', 0) end
        out[out.n] = v
        if next_event().type ~= 'DOCUMENT_END' then error('expected DOCUMENT_END_EVENT', 0) end
        anchors = {}
    end
end

-- The documents of `s`, built from libyaml's events as 2.6's loader builds them:
-- maps and arrays with their metatables, scalars by tag and style, an anchor
-- naming the table or the string it is on (not a null, boolean, number or tagged
-- scalar).
local function decode(s)
    local out = {n = 0}
    local ok, err = pcall(load, s, out)
    next_event, anchors = nil, nil
    if not ok then
        if type(err) == 'table' and err.problem_mark ~= nil then err = problem_text(err, out.n) end
        error(err, 0)
    end
    return unpack(out, 1, out.n)
end

-- Refuses NaN and ±inf in what decode gave (decode_invalid_numbers off), as 2.6 does.
-- (`seen`: tables already checked; an alias makes a table appear again, or in itself.)
local function check_finite(v, seen)
    if type(v) == 'number' and (v ~= v or v == math.huge or v == -math.huge) then
        error('number must not be NaN or Inf', 0)
    end
    if type(v) == 'table' then
        seen = seen or {}
        if seen[v] then return end
        seen[v] = true
        for k, x in pairs(v) do check_finite(k, seen) check_finite(x, seen) end
    end
end

-- Takes the array and map metatables off what decode gave (decode_save_metatables off).
local function without_hints(v, seen)
    if type(v) ~= 'table' then return v end
    seen = seen or {}
    if seen[v] then return v end
    seen[v] = true
    local mt = getmetatable(v)
    if mt == yaml.array_mt or mt == yaml.map_mt then setmetatable(v, nil) end
    for _, x in pairs(v) do without_hints(x, seen) end
    return v
end

-- (Raised at the calling Lua line, as 2.6's C functions raise them through luaL_error.)
local ENCODE_USAGE = 'Usage: encode(object, {tag_prefix = <string>, tag_handle = <string>})'
local DECODE_USAGE = 'Usage: yaml.decode(document, [{tag_only = boolean}])'

-- What libyaml finds wrong with a %TAG directive, or nil.
local function tag_problem(handle, prefix)
    if handle == '' then return 'tag handle must not be empty' end
    if string.sub(handle, 1, 1) ~= '!' then return "tag handle must start with '!'" end
    if string.sub(handle, -1) ~= '!' then return "tag handle must end with '!'" end
    if string.find(string.sub(handle, 2, -2), '[^%w_-]') then
        return 'tag handle must contain alphanumerical characters only'
    end
    if prefix == '' then return 'tag prefix must not be empty' end
    return nil
end

-- The %TAG directive of the first document (handle, prefix), as 2.6's
-- yaml.decode(s, {tag_only = true}) gives it: nil when there is none, nil and
-- why for more than one or for a text libyaml refuses before its first document.
local function first_tag(s)
    local ok, e = pcall(function()
        local next_event = box.internal.yaml_events(s)
        if next_event().type ~= 'STREAM_START' then return {nil, 'expected STREAM_START_EVENT'} end
        return next_event()
    end)
    if not ok then
        if type(e) == 'table' and e.problem_mark ~= nil then return nil, problem_text(e, 0) end
        error(e, 0)
    end
    if e.type == nil then return e[1], e[2] end
    -- (One nil when there is no directive: a value, not two.)
    if e.type ~= 'DOCUMENT_START' or #e.tag_directives == 0 then return nil end
    if #e.tag_directives > 1 then return nil, 'can not decode multiple tags' end
    return e.tag_directives[1][1], e.tag_directives[1][2]
end

-- A yaml serializer: the module or an instance (new()) with options of its own.
local function new_yaml()
    local y = {NULL = box.NULL, array_mt = yaml.array_mt, map_mt = yaml.map_mt}
    y.cfg = box.internal.serializer_cfg()
    -- encode(v [, {tag_handle = ..., tag_prefix = ...}]): with both, the document
    -- begins with their %TAG directive (a bad one gives nil and why, as 2.6).
    function y.encode(...)
        local n, v, opts = select('#', ...), ...
        if n == 0 then error(ENCODE_USAGE, 2) end
        if opts == nil then return encode(v, y.cfg) end
        if type(opts) ~= 'table' then error(ENCODE_USAGE, 2) end
        local handle, prefix = opts.tag_handle, opts.tag_prefix
        for _, x in ipairs({handle or false, prefix or false}) do
            if x ~= false and type(x) ~= 'string' and type(x) ~= 'number' then error(ENCODE_USAGE, 2) end
        end
        if (handle == nil) ~= (prefix == nil) then error(ENCODE_USAGE, 2) end
        if handle == nil then return encode(v, y.cfg) end
        handle, prefix = tostring(handle), tostring(prefix)
        local problem = tag_problem(handle, prefix)
        if problem then return nil, problem end
        local text = encode(v, y.cfg)
        -- The directive makes the document start explicit.
        if string.sub(text, 1, 3) ~= '---' then text = '---\n' .. text end
        return '%TAG ' .. handle .. ' ' .. prefix .. '\n' .. text
    end
    function y.decode(...)
        local s, opts = ...
        if type(s) == 'number' then s = tostring(s) end
        if type(s) ~= 'string' then error(DECODE_USAGE, 2) end
        if opts ~= nil and type(opts) ~= 'table' then error(DECODE_USAGE, 2) end
        if opts ~= nil and opts.tag_only == true then return first_tag(s) end
        local cfg = y.cfg
        if cfg.decode_save_metatables and cfg.decode_invalid_numbers then return decode(s) end
        local out = {decode(s)}
        for i = 1, table.maxn(out) do
            if not cfg.decode_invalid_numbers then check_finite(out[i]) end
            if not cfg.decode_save_metatables then without_hints(out[i]) end
        end
        return unpack(out, 1, table.maxn(out))
    end
    y.new = new_yaml
    return y
end

package.loaded.yaml = new_yaml()
