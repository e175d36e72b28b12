-- yaml: Tarantool 2.6's yaml module. encode renders one document with the console's
-- emitter (lua/console.lua), so both write the same YAML; decode reads the common
-- subset: block mappings and sequences, flow collections, plain, quoted and block
-- (| and >) scalars, comments, document markers, anchors and aliases (as 2.6's
-- loader: an alias is the very table its anchor named, or the string; an anchor on
-- a null, boolean, number or tagged scalar names nothing), the core scalar tags
-- (!!str, !!int, !!float, !!bool, !!binary; others are dropped). Untagged scalars
-- resolve as Tarantool's decoder does: only null/~, true/false/yes/no are special;
-- numbers are decimal, hex, inf or nan.

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

local function fail(msg, line) error(string.format('%s at line: %d', msg, line or 0), 0) end

local function is_number_text(s)
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
    local n = tonumber(s)
    if n ~= nil then return n end
    local sign, word = string.match(string.lower(s), '^%s*([+-]?)(%a+)')
    if word ~= nil and string.sub(word, 1, 3) == 'inf' then return sign == '-' and -math.huge or math.huge end
    if word ~= nil and string.sub(word, 1, 3) == 'nan' then return 0 / 0 end
    local prefix = string.match(s, '^%s*[+-]?%d*%.?%d*[eE][+-]?%d+') or string.match(s, '^%s*[+-]?%d*%.?%d*')
    return tonumber(prefix) or 0
end

-- A scalar's text under a core tag, as 2.6's loader reads it: !!int by strtol
-- (the leading digits, saturated; 0 without any), !!float by strtod, !!bool true
-- only for true/yes, !!str as it stands.
local SCALAR_TAGS = {
    ['!!str'] = function(s) return s end,
    ['!!int'] = function(s)
        local digits = string.match(s, '^%s*([+-]?%d+)')
        if digits == nil then return 0 end
        return math.max(math.min(tonumber(digits), 2 ^ 63), -2 ^ 63)
    end,
    ['!!float'] = strtod,
    ['!!bool'] = function(s) return s == 'true' or s == 'yes' end,
}

-- The anchors of the document being read: name -> the table or string it names.
local anchors = {}
-- An anchor read before its node, which the node takes when it is made.
local pending_anchor = nil

-- `v`, named by the pending anchor if there is one: a table always, a string
-- unless `unnamed` (2.6 names no null, boolean, number or tagged scalar).
local function anchored(v, unnamed)
    local name = pending_anchor
    if name ~= nil then
        pending_anchor = nil
        if not unnamed and (type(v) == 'table' or type(v) == 'string') then anchors[name] = v end
    end
    return v
end

-- The value an alias (`*name`) stands for.
local function alias(name)
    local v = anchors[name]
    if v == nil then error('invalid reference: ' .. name, 0) end
    return v
end

-- Takes an anchor off the front of `s` (before or after a tag), left pending; the
-- tag stays.
local function take_anchor(s)
    local tag, name, rest = string.match(s, '^(![^%s]*%s+)&([^%s]+)%s*(.*)$')
    if tag == nil then
        name, rest = string.match(s, '^&([^%s]+)%s*(.*)$')
        tag = ''
    end
    if name == nil then return s end
    pending_anchor = name
    return tag .. rest
end

-- Takes the tags (dropped) and an anchor (left pending) off the front of `s`.
local function strip_props(s)
    while true do
        local prop, rest = string.match(s, '^([!&][^%s]*)%s+(.*)$')
        if prop == nil then
            prop, rest = string.match(s, '^([!&][^%s]*)$'), ''
            if prop == nil then return s end
        end
        if string.sub(prop, 1, 1) == '&' then pending_anchor = string.sub(prop, 2) end
        s = rest
    end
end

local function unescape_double(s, line)
    local map = {n = '\n', t = '\t', r = '\r', ['"'] = '"', ['\\'] = '\\', ['/'] = '/', ['0'] = '\0', a = '\a',
                 b = '\b', e = '\27', f = '\f', v = '\v', [' '] = ' ', N = '\194\133', _ = '\194\160',
                 L = '\226\128\168', P = '\226\128\169'}
    local utf8 = box.internal.utf8_char
    local out, i = {}, 1
    while i <= #s do
        local c = string.sub(s, i, i)
        if c == '\\' then
            local e = string.sub(s, i + 1, i + 1)
            local width = ({x = 2, u = 4, U = 8})[e]
            if width then
                local code = tonumber(string.sub(s, i + 2, i + 1 + width), 16)
                if code == nil then fail('found unknown escape character while parsing a quoted scalar', line) end
                out[#out + 1] = utf8(code)
                i = i + 2 + width
            elseif map[e] then
                out[#out + 1] = map[e]
                i = i + 2
            else
                fail('found unknown escape character while parsing a quoted scalar', line)
            end
        else
            out[#out + 1] = c
            i = i + 1
        end
    end
    return table.concat(out)
end

-- Folds the line breaks of a multi-line flow scalar, as libyaml: a run of breaks
-- after text is a space if it is one '\n', else its breaks but a first '\n'
-- (U+2028 and U+2029 are breaks that stay); spaces around a break go, those
-- before the closing quote stay.
local function fold(text)
    if not string.find(text, '[\n\226]') then return text end
    local lines, breaks, pos = {}, {}, 1
    while true do
        local s, e = string.find(text, '\n', pos, true)
        local ls, le = string.find(text, '\226\128[\168\169]', pos)
        if ls ~= nil and (s == nil or ls < s) then s, e = ls, le end
        if s == nil then break end
        lines[#lines + 1] = string.sub(text, pos, s - 1)
        breaks[#breaks + 1] = string.sub(text, s, e)
        pos = e + 1
    end
    if #lines == 0 then return text end
    lines[#lines + 1] = string.sub(text, pos)
    local out = {(string.gsub(lines[1], '%s+$', ''))}
    local run = {}
    for i = 2, #lines do
        local l = string.gsub(lines[i], '^%s+', '')
        if i < #lines then l = string.gsub(l, '%s+$', '') end
        run[#run + 1] = breaks[i - 1]
        if l ~= '' or i == #lines then
            if run[1] ~= '\n' then
                out[#out + 1] = table.concat(run)
            elseif #run == 1 then
                out[#out + 1] = ' '
            else
                out[#out + 1] = table.concat(run, '', 2)
            end
            out[#out + 1] = l
            run = {}
        end
    end
    return table.concat(out)
end

-- A parser over the text of one document.
local Parser = {}
Parser.__index = Parser

local function new_parser(lines, first_line)
    return setmetatable({lines = lines, i = 1, base = first_line - 1}, Parser)
end

function Parser:lineno() return self.base + self.i end

-- Skips blank and comment lines; returns the current line's indent and text, or nil at the end.
function Parser:peek()
    while self.i <= #self.lines do
        local l = self.lines[self.i]
        local indent, rest = string.match(l, '^( *)(.*)$')
        if rest ~= '' and string.sub(rest, 1, 1) ~= '#' then return #indent, rest end
        self.i = self.i + 1
    end
    return nil
end

-- Where a mapping key ends in `text` (the position of its ':'), or nil.
local function key_end(text)
    -- After node properties (a tag, an anchor), a flow collection starts no key.
    local props_end = 1
    while true do
        local after = string.match(text, '^[!&][^%s]*%s+()', props_end)
        if after == nil then break end
        props_end = after
    end
    local first = string.sub(text, props_end, props_end)
    if props_end > 1 and (first == '[' or first == '{') then return nil end
    local c = string.sub(text, 1, 1)
    local start = 1
    if c == '"' or c == "'" then
        local j = 2
        while j <= #text do
            local d = string.sub(text, j, j)
            if c == '"' and d == '\\' then
                j = j + 2
            elseif d == c and c == "'" and string.sub(text, j + 1, j + 1) == "'" then
                j = j + 2
            elseif d == c then
                break
            else
                j = j + 1
            end
        end
        start = j + 1
        local colon = string.match(text, '^%s*():', start)
        if colon and (colon == #text or string.find(string.sub(text, colon + 1, colon + 1), '%s')) then
            return colon
        end
        return nil
    end
    if c == '[' or c == '{' then return nil end
    local j = start
    while true do
        local colon = string.find(text, ':', j, true)
        if colon == nil then return nil end
        local after = string.sub(text, colon + 1, colon + 1)
        if after == '' or after == ' ' or after == '\t' then
            local before = string.sub(text, 1, colon - 1)
            if string.find(before, '%s#') then return nil end
            return colon
        end
        j = colon + 1
    end
end

local function strip_comment(s)
    local j = string.find(s, '%s#')
    if j then s = string.sub(s, 1, j - 1) end
    return (string.gsub(s, '%s+$', ''))
end

-- Flow collections and quoted scalars on one string.
local function parse_flow(text, line)
    local pos = 1
    local function ws() pos = string.find(text, '[^%s]', pos) or #text + 1 end
    local value
    local function quoted()
        local q = string.sub(text, pos, pos)
        local j, buf = pos + 1, {}
        while true do
            if j > #text then fail('found unexpected end of stream while scanning a quoted scalar', line) end
            local c = string.sub(text, j, j)
            if q == "'" and c == "'" then
                if string.sub(text, j + 1, j + 1) == "'" then
                    buf[#buf + 1] = "'"
                    j = j + 2
                else
                    break
                end
            elseif q == '"' and c == '\\' then
                buf[#buf + 1] = string.sub(text, j, j + 1)
                j = j + 2
            elseif q == '"' and c == '"' then
                break
            else
                buf[#buf + 1] = c
                j = j + 1
            end
        end
        pos = j + 1
        local s = fold(table.concat(buf))
        if q == '"' then s = unescape_double(s, line) end
        return anchored(s)
    end
    local function plain(in_flow, raw)
        local stop = in_flow and '[,%[%]{}]' or nil
        local j = pos
        while j <= #text do
            local c = string.sub(text, j, j)
            if stop and string.find(c, stop) then break end
            if c == ':' then
                local after = string.sub(text, j + 1, j + 1)
                if after == '' or string.find(after, '[%s,%[%]{}]') then break end
            end
            if c == '#' and j > pos and string.find(string.sub(text, j - 1, j - 1), '%s') then break end
            j = j + 1
        end
        local s = string.gsub(string.gsub(string.sub(text, pos, j - 1), '^%s+', ''), '%s+$', '')
        pos = j
        if raw then return fold(s) end
        local v = resolve_plain(fold(s))
        return anchored(v, v == '')
    end
    value = function(in_flow)
        ws()
        local c = string.sub(text, pos, pos)
        local scalar_tag
        while c == '!' or c == '&' do
            local prop = string.match(text, '^[^%s]*', pos)
            pos = string.match(text, '^[^%s]*%s*()', pos)
            if prop == '!!binary' then
                -- (A tagged scalar takes no anchor in 2.6.)
                pending_anchor = nil
                return binary(value(in_flow))
            end
            if c == '&' then pending_anchor = string.sub(prop, 2) end
            scalar_tag = SCALAR_TAGS[prop] or scalar_tag
            ws()
            c = string.sub(text, pos, pos)
        end
        if scalar_tag ~= nil and c ~= '[' and c ~= '{' and c ~= '*' then
            -- (A tagged scalar takes no anchor in 2.6.)
            pending_anchor = nil
            if c == '"' or c == "'" then return scalar_tag(quoted()) end
            return scalar_tag(plain(in_flow, true))
        end
        if c == '*' then
            local name = string.match(text, in_flow and '^%*([^%s,%[%]{}]+)' or '^%*([^%s]+)', pos)
            if name == nil then fail('did not find expected alphabetic or numeric character', line) end
            pos = pos + 1 + #name
            return alias(name)
        end
        if c == '[' then
            pos = pos + 1
            local t = anchored(setmetatable({}, yaml.array_mt))
            while true do
                ws()
                local d = string.sub(text, pos, pos)
                if d == ']' then pos = pos + 1 return t end
                if d == '' then fail("did not find expected ',' or ']'", line) end
                t[#t + 1] = value(true)
                ws()
                d = string.sub(text, pos, pos)
                if d == ',' then
                    pos = pos + 1
                elseif d ~= ']' then
                    fail("did not find expected ',' or ']'", line)
                end
            end
        elseif c == '{' then
            pos = pos + 1
            local t = anchored(setmetatable({}, yaml.map_mt))
            while true do
                ws()
                local d = string.sub(text, pos, pos)
                if d == '}' then pos = pos + 1 return t end
                if d == '' then fail("did not find expected ',' or '}'", line) end
                local k = value(true)
                ws()
                local v = box.NULL
                if string.sub(text, pos, pos) == ':' then
                    pos = pos + 1
                    ws()
                    local e = string.sub(text, pos, pos)
                    if e ~= ',' and e ~= '}' then v = value(true) end
                end
                if k ~= nil and k ~= box.NULL then t[k] = v end
                ws()
                d = string.sub(text, pos, pos)
                if d == ',' then
                    pos = pos + 1
                elseif d ~= '}' then
                    fail("did not find expected ',' or '}'", line)
                end
            end
        elseif c == '"' or c == "'" then
            return quoted()
        end
        return plain(in_flow)
    end
    local v = value(false)
    ws()
    local rest = string.sub(text, pos)
    if rest ~= '' and string.sub(rest, 1, 1) ~= '#' then
        fail('did not find expected <document end>', line)
    end
    return v
end

-- Whether a flow text is complete (brackets and quotes closed).
local function flow_complete(text)
    local depth, q, j = 0, nil, 1
    while j <= #text do
        local c = string.sub(text, j, j)
        if q then
            if q == '"' and c == '\\' then
                j = j + 1
            elseif c == q then
                if q == "'" and string.sub(text, j + 1, j + 1) == "'" then j = j + 1 else q = nil end
            end
        elseif c == '"' or c == "'" then
            q = c
        elseif c == '[' or c == '{' then
            depth = depth + 1
        elseif c == ']' or c == '}' then
            depth = depth - 1
        elseif c == '#' and depth == 0 then
            break
        end
        j = j + 1
    end
    return depth <= 0 and q == nil
end

-- A block scalar (| or >) whose header is `header`, its lines indented deeper than `parent`.
function Parser:block_scalar(header, parent)
    local style, chomp = string.sub(header, 1, 1), string.match(header, '^[|>]%d*([+-]?)')
    local explicit = tonumber(string.match(header, '^[|>][+-]?(%d)') or '')
    local lines, indent = {}, explicit and parent + explicit or nil
    while self.i <= #self.lines do
        local l = self.lines[self.i]
        local spaces = #string.match(l, '^( *)')
        if string.find(l, '^%s*$') then
            lines[#lines + 1] = ''
        else
            if indent == nil then indent = spaces end
            if spaces < indent or spaces <= parent then break end
            lines[#lines + 1] = string.sub(l, indent + 1)
        end
        self.i = self.i + 1
    end
    -- Clip chomping keeps the last line break only if the text has one.
    local at_end = self.i > #self.lines and self.no_final_newline
    local trailing = 0
    while #lines > 0 and lines[#lines] == '' do
        trailing = trailing + 1
        lines[#lines] = nil
    end
    local body
    if style == '|' then
        body = table.concat(lines, '\n')
    else
        local out = {}
        for n, l in ipairs(lines) do
            if n > 1 then
                local prev = lines[n - 1]
                if l == '' or prev == '' or string.find(l, '^%s') or string.find(prev, '^%s') then
                    out[#out + 1] = '\n'
                else
                    out[#out + 1] = ' '
                end
            end
            out[#out + 1] = l
        end
        body = string.gsub(table.concat(out), '\n\n', '\n')
    end
    if #lines == 0 then return '' end
    if chomp == '-' or (at_end and trailing == 0) then return body end
    if chomp == '+' then return body .. string.rep('\n', trailing + 1) end
    return body .. '\n'
end

-- An inline value starting at line `self.i` (text `text`); may continue on deeper lines.
function Parser:inline(text, indent)
    text = take_anchor(text)
    local encoded = string.match(text, '^!!binary%s+(.*)$') or (text == '!!binary' and '')
    -- (A tagged scalar takes no anchor in 2.6.)
    if encoded then
        pending_anchor = nil
        return binary(self:inline(encoded, indent))
    end
    if string.find(text, '^!!str%s') then
        -- An explicit string tag: the plain text as it stands.
        local raw = strip_comment(string.gsub(string.sub(text, 6), '^%s+', ''))
        local name = pending_anchor
        pending_anchor = nil
        local v = self:inline(raw, indent)
        if type(v) == 'table' then
            pending_anchor = name
            return anchored(v)
        end
        if type(v) == 'string' then return v end
        return raw
    end
    local tag, tagged = string.match(text, '^(!![%a]+)%s+(.*)$')
    if SCALAR_TAGS[tag] == nil then tag = nil end
    text = strip_props(text)
    local c = string.sub(text, 1, 1)
    if c == '|' or c == '>' then
        self.i = self.i + 1
        if tag ~= nil then
            pending_anchor = nil
            return SCALAR_TAGS[tag](self:block_scalar(text, indent))
        end
        return anchored(self:block_scalar(text, indent))
    end
    -- A tagged scalar on its line: read (tag and all) as flow text is.
    if tag ~= nil and c ~= '[' and c ~= '{' then text = tag .. ' ' .. tagged end
    local line = self:lineno()
    self.i = self.i + 1
    if c == '[' or c == '{' or c == '"' or c == "'" then
        while not flow_complete(text) and self.i <= #self.lines do
            text = text .. '\n' .. self.lines[self.i]
            self.i = self.i + 1
        end
        return parse_flow(text, line)
    end
    -- A plain scalar may go on over deeper lines.
    local parts = {strip_comment(text)}
    while self.i <= #self.lines do
        local l = self.lines[self.i]
        local spaces, rest = string.match(l, '^( *)(.*)$')
        if rest == '' then
            parts[#parts + 1] = ''
        elseif #spaces > indent and string.sub(rest, 1, 1) ~= '#' and key_end(rest) == nil then
            parts[#parts + 1] = strip_comment(rest)
        else
            break
        end
        self.i = self.i + 1
    end
    while #parts > 1 and parts[#parts] == '' do parts[#parts] = nil end
    if #parts == 1 then return parse_flow(parts[1], line) end
    local v = resolve_plain(fold(table.concat(parts, '\n')))
    return anchored(v, v == '')
end

-- The node at the current line, which must be indented more than `parent`.
function Parser:node(parent)
    local indent, text = self:peek()
    if indent == nil or indent <= parent then return box.NULL end
    if text == '-' or string.find(text, '^%-%s') then return self:sequence(indent) end
    if key_end(text) or string.find(text, '^%?%s') then return self:mapping(indent) end
    return self:inline(text, parent)
end

-- The value after "- " or "key: ": `rest` inline, or a nested node.
function Parser:value_after(rest, indent, col, in_mapping)
    -- (A !!binary scalar's text may be on the lines below.)
    rest = take_anchor(rest)
    if SCALAR_TAGS[string.match(rest, '^(!![%a]+)%s')] or string.find(rest, '^!!binary%s') or rest == '!!binary' then
        return self:inline(rest, indent)
    end
    rest = strip_props(rest)
    if rest == '' or string.sub(rest, 1, 1) == '#' then
        self.i = self.i + 1
        local next_indent, next_text = self:peek()
        if next_indent ~= nil and in_mapping and next_indent == indent
                and (next_text == '-' or string.find(next_text, '^%-%s')) then
            return self:sequence(indent)
        end
        if next_indent ~= nil and next_indent > indent then return self:node(indent) end
        -- An anchor on nothing names nothing (2.6 names no empty scalar).
        pending_anchor = nil
        return nil
    end
    -- "- a: 1" or "- - x": a nested block starting inside the line (not after "key: ").
    local nested = string.find(rest, '^%-%s') or rest == '-' or key_end(rest) or string.find(rest, '^%?%s')
    if nested and in_mapping then fail('mapping values are not allowed in this context', self:lineno()) end
    if nested then
        self.lines[self.i] = string.rep(' ', col) .. rest
        return self:node(indent)
    end
    return self:inline(rest, indent)
end

function Parser:sequence(indent)
    local t = anchored(setmetatable({}, yaml.array_mt))
    while true do
        local i, text = self:peek()
        if i ~= indent or not (text == '-' or string.find(text, '^%-%s')) then break end
        local rest = string.match(text, '^%-%s*(.*)$')
        local col = indent + #text - #rest
        local v = self:value_after(rest, indent, col, false)
        -- An empty item is an empty string (box.NULL, a null item, equals nil too).
        if rawequal(v, nil) then v = '' end
        t[#t + 1] = v
    end
    local i = self:peek()
    if i ~= nil and i > indent then fail('did not find expected <document end>', self:lineno()) end
    return t
end

function Parser:mapping(indent)
    local t = anchored(setmetatable({}, yaml.map_mt))
    while true do
        local i, text = self:peek()
        if i ~= indent then break end
        local k, rest
        if string.find(text, '^%?%s') then
            -- An explicit key: "? key" then ": value".
            k = self:value_after(string.sub(text, 3), indent, indent + 2, false)
            local i2, t2 = self:peek()
            if i2 == indent and string.find(t2, '^:') then
                rest = string.gsub(string.sub(t2, 2), '^%s+', '')
                local v = self:value_after(rest, indent, indent + #t2 - #rest, false)
                if k ~= nil then t[k] = rawequal(v, nil) and '' or v end
            elseif k ~= nil then
                t[k] = ''
            end
        else
            local colon = key_end(text)
            if colon == nil or text == '-' or string.find(text, '^%-%s') then
                fail('could not find expected \':\'', self:lineno())
            end
            local key_text = string.gsub(string.sub(text, 1, colon - 1), '%s+$', '')
            if key_text == '' then fail('did not find expected key', self:lineno()) end
            k = parse_flow(strip_props(key_text), self:lineno())
            rest = string.gsub(string.sub(text, colon + 1), '^%s+', '')
            local v = self:value_after(rest, indent, indent + #text - #rest, true)
            -- As Tarantool: a key without a value maps to an empty string.
            if k ~= nil and k ~= box.NULL then t[k] = rawequal(v, nil) and '' or v end
        end
    end
    local i = self:peek()
    if i ~= nil and i > indent then fail('mapping values are not allowed in this context', self:lineno()) end
    return t
end

-- Splits a stream into documents: lists of lines and the line number each starts at.
local function documents(s)
    local docs, current, ended = {}, nil, false
    local n = 0
    for l in string.gmatch(s .. (string.sub(s, -1) == '\n' and '' or '\n'), '([^\n]*)\n') do
        n = n + 1
        l = string.gsub(l, '\r$', '')
        if string.find(l, '^%-%-%-') and (#l == 3 or string.find(string.sub(l, 4, 4), '%s')) then
            current = {lines = {}, first = n, explicit = true}
            docs[#docs + 1] = current
            local rest = string.gsub(string.sub(l, 4), '^%s+', '')
            if rest ~= '' then
                current.lines[1] = rest
            else
                current.first = n + 1
            end
        elseif string.find(l, '^%.%.%.') then
            -- A document end marker must end a document, and only "---" may follow it.
            if current == nil then fail('did not find expected node content', n) end
            current, ended = nil, true
        elseif string.find(l, '^%%') and current == nil then
            -- A directive (%YAML, %TAG).
            current = nil
        else
            if current == nil and ended and not string.find(l, '^%s*$') and not string.find(l, '^%s*#') then
                fail('did not find expected <document start>', n)
            end
            if current == nil then
                current = {lines = {}, first = n}
                docs[#docs + 1] = current
            end
            current.lines[#current.lines + 1] = l
        end
    end
    return docs
end

local function decode(s)
    local docs = documents(s)
    if #docs == 0 then return nil end
    local out = {}
    for d, doc in ipairs(docs) do
        -- Anchors name nodes of their own document only.
        anchors, pending_anchor = {}, nil
        local p = new_parser(doc.lines, doc.first)
        p.no_final_newline = d == #docs and string.sub(s, -1) ~= '\n'
        local v
        if p:peek() == nil then
            v = doc.explicit and '' or nil
        else
            v = p:node(-1)
            if p:peek() ~= nil then fail('did not find expected <document start>', p:lineno()) end
        end
        out[d] = v
    end
    anchors = {}
    return unpack(out, 1, #docs)
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
-- why for more than one.
local function first_tag(s)
    local found = {}
    for line in string.gmatch(s, '[^\n]*') do
        local handle, prefix = string.match(line, '^%%TAG%s+(%S+)%s+(%S+)')
        if handle then
            found[#found + 1] = {handle, prefix}
        elseif not (line == '' or string.find(line, '^%%') or string.find(line, '^%s*#')) then
            break
        end
    end
    if #found > 1 then return nil, 'can not decode multiple tags' end
    if #found == 0 then return nil end
    return found[1][1], found[1][2]
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
