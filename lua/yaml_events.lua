-- yaml_events: the YAML reader, scanner and parser of libyaml 0.2.5 (the one
-- Debian's Tarantool 2.6 links), written in Lua: a text in, its events out, one at
-- a time, with the same errors at the same places (problem, context and their
-- marks). yaml.decode builds its values from these events as 2.6's loader
-- (lyaml.cc) does.
--
-- box.internal.yaml_events(text) gives a function returning the next event, a
-- table {type = 'STREAM_START' | 'DOCUMENT_START' | 'DOCUMENT_END' |
-- 'SEQUENCE_START' | 'SEQUENCE_END' | 'MAPPING_START' | 'MAPPING_END' | 'SCALAR' |
-- 'ALIAS' | 'STREAM_END' | 'NO'}, with `anchor`, `tag` (resolved through the tag
-- directives), `value` and `style` where they apply (and `tag_directives` on a
-- document start). An error is raised as a table {problem, problem_mark, context,
-- context_mark}, a mark being line * 2^32 + column, both counted from 0.

local byte, sub, find, char = string.byte, string.sub, string.find, string.char
local concat, insert = table.concat, table.insert

-- Input bytes decoded at a time by libyaml's reader: a bad character further on is
-- only found once the scanner reaches that part.
local READ_CHUNK = 16384

-- The first bad character of UTF-8 text `s` from byte `from`, as libyaml's reader
-- finds it: (byte offset, problem) or nil.
local function reader_problem(s, from)
    local n = #s
    local i = from
    while true do
        i = find(s, '[^\t\n\r\32-\126]', i)
        if i == nil then return nil end
        local b = byte(s, i)
        local width = b < 0x80 and 1 or b >= 0xC0 and b < 0xE0 and 2 or b >= 0xE0 and b < 0xF0 and 3
            or b >= 0xF0 and b < 0xF8 and 4 or 0
        if width == 0 then return i, 'invalid leading UTF-8 octet' end
        if i + width - 1 > n then return i, 'incomplete UTF-8 octet sequence' end
        local value = width == 1 and b or width == 2 and b % 0x20 or width == 3 and b % 0x10 or b % 0x08
        for k = 1, width - 1 do
            local t = byte(s, i + k)
            if t < 0x80 or t >= 0xC0 then return i + k, 'invalid trailing UTF-8 octet' end
            value = value * 64 + t % 64
        end
        if not (width == 1 or (width == 2 and value >= 0x80) or (width == 3 and value >= 0x800)
                or (width == 4 and value >= 0x10000)) then
            return i, 'invalid length of a UTF-8 sequence'
        end
        if (value >= 0xD800 and value <= 0xDFFF) or value > 0x10FFFF then return i, 'invalid Unicode character' end
        if not (value == 0x09 or value == 0x0A or value == 0x0D or (value >= 0x20 and value <= 0x7E)
                or value == 0x85 or (value >= 0xA0 and value <= 0xD7FF) or (value >= 0xE000 and value <= 0xFFFD)
                or (value >= 0x10000 and value <= 0x10FFFF)) then
            return i, 'control characters are not allowed'
        end
        i = i + width
    end
end

-- UTF-16 text `s` (after its byte order mark; `low` is 1 for little endian, 2 for
-- big) as UTF-8, or nil and what libyaml's reader finds wrong with it.
local function from_utf16(s, low)
    local out = {}
    local high = 3 - low
    local i, n = 1, #s
    while i <= n do
        if i + 1 > n then return nil, 'incomplete UTF-16 character' end
        local value = byte(s, i + low - 1) + byte(s, i + high - 1) * 256
        if value >= 0xDC00 and value <= 0xDFFF then return nil, 'unexpected low surrogate area' end
        if value >= 0xD800 and value <= 0xDBFF then
            if i + 3 > n then return nil, 'incomplete UTF-16 surrogate pair' end
            local value2 = byte(s, i + 1 + low) + byte(s, i + 1 + high) * 256
            if value2 < 0xDC00 or value2 > 0xDFFF then return nil, 'expected low surrogate area' end
            value = 0x10000 + (value - 0xD800) * 1024 + (value2 - 0xDC00)
            i = i + 4
        else
            i = i + 2
        end
        out[#out + 1] = value
    end
    return out
end

local function is_alpha(c)
    return c ~= nil and ((c >= 48 and c <= 57) or (c >= 65 and c <= 90) or (c >= 97 and c <= 122) or c == 95
        or c == 45)
end
local function is_digit(c) return c ~= nil and c >= 48 and c <= 57 end
local function is_hex(c)
    return c ~= nil and ((c >= 48 and c <= 57) or (c >= 65 and c <= 70) or (c >= 97 and c <= 102))
end
local function hex_value(c) return c >= 97 and c - 87 or c >= 65 and c - 55 or c - 48 end
local function width_of(c)
    return c < 0x80 and 1 or c >= 0xC0 and c < 0xE0 and 2 or c >= 0xE0 and c < 0xF0 and 3 or c >= 0xF0 and 4 or 1
end
-- A code point's UTF-8 bytes.
local function utf8(v)
    if v <= 0x7F then return char(v) end
    if v <= 0x7FF then return char(0xC0 + math.floor(v / 64), 0x80 + v % 64) end
    if v <= 0xFFFF then
        return char(0xE0 + math.floor(v / 4096), 0x80 + math.floor(v / 64) % 64, 0x80 + v % 64)
    end
    return char(0xF0 + math.floor(v / 262144), 0x80 + math.floor(v / 4096) % 64, 0x80 + math.floor(v / 64) % 64,
        0x80 + v % 64)
end

local ESCAPES = {
    [48] = '\0', [97] = '\7', [98] = '\8', [116] = '\t', [9] = '\t', [110] = '\n', [118] = '\11', [102] = '\12',
    [114] = '\r', [101] = '\27', [32] = ' ', [34] = '"', [47] = '/', [92] = '\\', [78] = '\194\133',
    [95] = '\194\160', [76] = '\226\128\168', [80] = '\226\128\169',
}
local ESCAPE_LENGTHS = {[120] = 2, [117] = 4, [85] = 8}

-- Bytes that end a plain scalar in a flow collection.
local FLOW_ENDS = {[44] = true, [91] = true, [93] = true, [123] = true, [125] = true}
-- Bytes after which a ':' in a flow collection's plain scalar is refused.
local AFTER_COLON_REFUSED = {[44] = true, [63] = true, [91] = true, [93] = true, [123] = true, [125] = true}
-- Bytes after which an anchor or alias name may end.
local ANCHOR_ENDS = {[63] = true, [58] = true, [44] = true, [93] = true, [125] = true, [37] = true, [64] = true,
                     [96] = true}
-- Bytes of a tag's URI besides letters and digits; ',', '[' and ']' only in a
-- %TAG prefix or a verbatim tag (!<...>).
local URI_CHARS = {}
for c in string.gmatch(";/?:@&=+$.%!~*'()", '.') do URI_CHARS[byte(c)] = true end
local URI_FLOW_CHARS = {[44] = true, [91] = true, [93] = true}
-- Bytes no plain scalar starts with.
local NOT_PLAIN_START = {}
for c in string.gmatch("-?:,[]{}#&*!|>'\"%@`", '.') do NOT_PLAIN_START[byte(c)] = true end

-- The state of the text being read: one at a time (yaml.decode reads a text's
-- events to the end before it returns, and nothing it calls decodes YAML).
local s, n, p -- the text, its length (or where a bad character cuts it), the next character's byte
local late_problem -- what is wrong where the text is cut
local line, column, index -- the next character's mark
local queue, head -- tokens scanned and not yet taken (queue[head] first)
local tokens_parsed, token_available, stream_start_produced, stream_end_produced
local flow_level, indent, indents, simple_key_allowed, simple_keys -- the scanner's
local state, states, marks, tag_directives -- the parser's (tag_directives: {handle, prefix} in force)

----------------------------------------------------------------------------
-- reader
----------------------------------------------------------------------------

-- Byte `k` ahead of the next character (0 at the end of the text).
local function at(k)
    local pos = p + k
    if pos > n then
        if late_problem then error({problem = late_problem, problem_mark = 0}, 0) end
        return 0
    end
    return byte(s, pos)
end
local function is_break_at(k)
    local c = at(k)
    if c == 13 or c == 10 then return true end
    if c == 0xC2 then return at(k + 1) == 0x85 end
    if c == 0xE2 then
        if at(k + 1) ~= 0x80 then return false end
        local c2 = at(k + 2)
        return c2 == 0xA8 or c2 == 0xA9
    end
    return false
end
local function is_blank_at(k) local c = at(k) return c == 32 or c == 9 end
local function is_z_at(k) return at(k) == 0 end
local function is_breakz_at(k) return is_break_at(k) or is_z_at(k) end
local function is_blankz_at(k) return is_blank_at(k) or is_breakz_at(k) end
-- Where the next character is: line * 2^32 + column (a number, not a table: a
-- token has two).
local function mark() return line * 4294967296 + column end

local function skip()
    index = index + 1
    column = column + 1
    p = p + width_of(at(0))
end
local function skip_line()
    if at(0) == 13 and at(1) == 10 then
        index, column, line, p = index + 2, 0, line + 1, p + 2
    elseif is_break_at(0) then
        index, column, line = index + 1, 0, line + 1
        p = p + width_of(at(0))
    end
end
-- The next character, consumed.
local function read()
    local w = width_of(at(0))
    local c = sub(s, p, p + w - 1)
    p = p + w
    index = index + 1
    column = column + 1
    return c
end
-- The line break at the next character, consumed, as it is kept in a scalar.
local function read_line()
    local c = at(0)
    if c == 13 and at(1) == 10 then
        p, index, column, line = p + 2, index + 2, 0, line + 1
        return '\n'
    elseif c == 13 or c == 10 then
        p, index, column, line = p + 1, index + 1, 0, line + 1
        return '\n'
    elseif c == 0xC2 and at(1) == 0x85 then
        p, index, column, line = p + 2, index + 1, 0, line + 1
        return '\n'
    elseif c == 0xE2 and at(1) == 0x80 and (at(2) == 0xA8 or at(2) == 0xA9) then
        local b = sub(s, p, p + 2)
        p, index, column, line = p + 3, index + 1, 0, line + 1
        return b
    end
    return ''
end

-- Skips the ASCII bytes up to the first one `stop` (a pattern: a set that
-- holds \128-\255) matches: what the character loops would do one by one.
local function skip_run(stop)
    local q = find(s, stop, p) or n + 1
    if q > n + 1 then q = n + 1 end
    local d = q - p
    if d > 0 then p, column, index = q, column + d, index + d end
end

----------------------------------------------------------------------------
-- scanner
----------------------------------------------------------------------------

-- A simple key slot holding no key (one per flow level, and the block level's).
local function no_simple_key()
    return {possible = false, required = false, token_number = 0, mark = 0, line = 0, column = 0, index = 0}
end

local function scanner_error(context, context_mark, problem)
    error({context = context, context_mark = context_mark, problem = problem, problem_mark = mark()}, 0)
end
local function queued() return #queue - head + 1 end
local function enqueue(token) queue[#queue + 1] = token end

local function stale_simple_keys()
    for i = 1, #simple_keys do
        local key = simple_keys[i]
        if key.possible and (key.line < line or key.index + 1024 < index) then
            if key.required then
                scanner_error('while scanning a simple key', key.mark, "could not find expected ':'")
            end
            key.possible = false
        end
    end
end
local function remove_simple_key()
    local key = simple_keys[#simple_keys]
    if key.possible and key.required then
        scanner_error('while scanning a simple key', key.mark, "could not find expected ':'")
    end
    key.possible = false
end
local function save_simple_key()
    local required = flow_level == 0 and indent == column
    if simple_key_allowed then
        local key = {possible = true, required = required, token_number = tokens_parsed + queued(),
                     mark = mark(), line = line, column = column, index = index}
        remove_simple_key()
        simple_keys[#simple_keys] = key
    end
end
local function increase_flow_level()
    simple_keys[#simple_keys + 1] = no_simple_key()
    flow_level = flow_level + 1
end
local function decrease_flow_level()
    if flow_level > 0 then
        flow_level = flow_level - 1
        simple_keys[#simple_keys] = nil
    end
end
-- Opens a block collection at `col` (its start token at queue position
-- `number`, or at the end when nil).
local function roll_indent(col, number, type, m)
    if flow_level > 0 then return end
    if indent < col then
        indents[#indents + 1] = indent
        indent = col
        local token = {type = type, start_mark = m, end_mark = m}
        if number == nil then
            enqueue(token)
        else
            insert(queue, head + number - tokens_parsed, token)
        end
    end
end
local function unroll_indent(col)
    if flow_level > 0 then return end
    while indent > col do
        local m = mark()
        enqueue({type = 'BLOCK_END', start_mark = m, end_mark = m})
        indent = indents[#indents]
        indents[#indents] = nil
    end
end

local function simple_token(type)
    local start_mark = mark()
    skip()
    enqueue({type = type, start_mark = start_mark, end_mark = mark()})
end

local function scan_to_next_token()
    while true do
        if column == 0 and at(0) == 0xEF and at(1) == 0xBB and at(2) == 0xBF then skip() end
        while at(0) == 32 or ((flow_level > 0 or not simple_key_allowed) and at(0) == 9) do skip() end
        if at(0) == 35 then
            while not is_breakz_at(0) do skip() end
        end
        if is_break_at(0) then
            skip_line()
            if flow_level == 0 then simple_key_allowed = true end
        else
            break
        end
    end
end

-- Takes the rest of a directive's or block scalar header's line: blanks, a
-- comment, the line break.
local function end_line(context, start_mark)
    while is_blank_at(0) do skip() end
    if at(0) == 35 then
        while not is_breakz_at(0) do skip() end
    end
    if not is_breakz_at(0) then scanner_error(context, start_mark, 'did not find expected comment or line break') end
    if is_break_at(0) then skip_line() end
end

local function scan_directive_name(start_mark)
    local name = {}
    while is_alpha(at(0)) do name[#name + 1] = read() end
    if #name == 0 then
        scanner_error('while scanning a directive', start_mark, 'could not find expected directive name')
    end
    if not is_blankz_at(0) then
        scanner_error('while scanning a directive', start_mark, 'found unexpected non-alphabetical character')
    end
    return concat(name)
end
local function scan_version_number(start_mark)
    local value, length = 0, 0
    while is_digit(at(0)) do
        length = length + 1
        if length > 9 then
            scanner_error('while scanning a %YAML directive', start_mark, 'found extremely long version number')
        end
        value = value * 10 + at(0) - 48
        skip()
    end
    if length == 0 then
        scanner_error('while scanning a %YAML directive', start_mark, 'did not find expected version number')
    end
    return value
end
local function scan_tag_handle(directive, start_mark)
    if at(0) ~= 33 then
        scanner_error(directive and 'while scanning a tag directive' or 'while scanning a tag', start_mark,
            "did not find expected '!'")
    end
    local handle = {read()}
    while is_alpha(at(0)) do handle[#handle + 1] = read() end
    if at(0) == 33 then
        handle[#handle + 1] = read()
    elseif directive and not (#handle == 1) then
        scanner_error('while parsing a tag directive', start_mark, "did not find expected '!'")
    end
    return concat(handle)
end
local function scan_uri_escapes(directive, start_mark, out)
    local width = 0
    repeat
        if not (at(0) == 37 and is_hex(at(1)) and is_hex(at(2))) then
            scanner_error(directive and 'while parsing a %TAG directive' or 'while parsing a tag', start_mark,
                'did not find URI escaped octet')
        end
        local octet = hex_value(at(1)) * 16 + hex_value(at(2))
        if width == 0 then
            width = octet < 0x80 and 1 or (octet >= 0xC0 and octet < 0xE0) and 2
                or (octet >= 0xE0 and octet < 0xF0) and 3 or (octet >= 0xF0 and octet < 0xF8) and 4 or 0
            if width == 0 then
                scanner_error(directive and 'while parsing a %TAG directive' or 'while parsing a tag',
                    start_mark, 'found an incorrect leading UTF-8 octet')
            end
        elseif octet < 0x80 or octet >= 0xC0 then
            scanner_error(directive and 'while parsing a %TAG directive' or 'while parsing a tag', start_mark,
                'found an incorrect trailing UTF-8 octet')
        end
        out[#out + 1] = char(octet)
        skip() skip() skip()
        width = width - 1
    until width == 0
end
local function scan_tag_uri(uri_char, directive, head_text, start_mark)
    local out = {}
    local length = head_text and #head_text or 0
    if length > 1 then out[1] = sub(head_text, 2) end
    while true do
        local c = at(0)
        if not (is_alpha(c) or URI_CHARS[c] or (uri_char and URI_FLOW_CHARS[c])) then break end
        if c == 37 then
            scan_uri_escapes(directive, start_mark, out)
        else
            out[#out + 1] = read()
        end
        length = length + 1
    end
    if length == 0 then
        scanner_error(directive and 'while parsing a %TAG directive' or 'while parsing a tag', start_mark,
            'did not find expected tag URI')
    end
    return concat(out)
end

local function scan_directive()
    local start_mark = mark()
    skip()
    local name = scan_directive_name(start_mark)
    local token
    if name == 'YAML' then
        while is_blank_at(0) do skip() end
        local major = scan_version_number(start_mark)
        if at(0) ~= 46 then
            scanner_error('while scanning a %YAML directive', start_mark,
                "did not find expected digit or '.' character")
        end
        skip()
        local minor = scan_version_number(start_mark)
        token = {type = 'VERSION_DIRECTIVE', major = major, minor = minor, start_mark = start_mark,
                 end_mark = mark()}
    elseif name == 'TAG' then
        while is_blank_at(0) do skip() end
        local handle = scan_tag_handle(true, start_mark)
        if not is_blank_at(0) then
            scanner_error('while scanning a %TAG directive', start_mark, 'did not find expected whitespace')
        end
        while is_blank_at(0) do skip() end
        local prefix = scan_tag_uri(true, true, nil, start_mark)
        if not is_blankz_at(0) then
            scanner_error('while scanning a %TAG directive', start_mark,
                'did not find expected whitespace or line break')
        end
        token = {type = 'TAG_DIRECTIVE', handle = handle, prefix = prefix, start_mark = start_mark,
                 end_mark = mark()}
    else
        scanner_error('while scanning a directive', start_mark, 'found unknown directive name')
    end
    end_line('while scanning a directive', start_mark)
    return token
end

local function scan_anchor(type)
    local start_mark = mark()
    skip()
    local name = {}
    while is_alpha(at(0)) do name[#name + 1] = read() end
    local end_mark = mark()
    if #name == 0 or not (is_blankz_at(0) or ANCHOR_ENDS[at(0)]) then
        scanner_error(type == 'ANCHOR' and 'while scanning an anchor' or 'while scanning an alias', start_mark,
            'did not find expected alphabetic or numeric character')
    end
    return {type = type, value = concat(name), start_mark = start_mark, end_mark = end_mark}
end

local function scan_tag()
    local start_mark = mark()
    local handle, suffix
    if at(1) == 60 then
        handle = ''
        skip() skip()
        suffix = scan_tag_uri(true, false, nil, start_mark)
        if at(0) ~= 62 then scanner_error('while scanning a tag', start_mark, "did not find the expected '>'") end
        skip()
    else
        handle = scan_tag_handle(false, start_mark)
        if #handle > 1 and sub(handle, 1, 1) == '!' and sub(handle, -1) == '!' then
            suffix = scan_tag_uri(false, false, nil, start_mark)
        else
            suffix = scan_tag_uri(false, false, handle, start_mark)
            handle = '!'
            if suffix == '' then handle, suffix = suffix, handle end
        end
    end
    if not is_blankz_at(0) and not (flow_level > 0 and at(0) == 44) then
        scanner_error('while scanning a tag', start_mark, 'did not find expected whitespace or line break')
    end
    return {type = 'TAG', handle = handle, suffix = suffix, start_mark = start_mark, end_mark = mark()}
end

-- The line breaks (and indentation) before a block scalar's next line;
-- settles the indentation when it is not known yet. Returns the breaks, the
-- indentation and the end mark.
local function scan_block_scalar_breaks(ind, start_mark)
    local max_indent = 0
    local breaks = {}
    local end_mark = mark()
    while true do
        while (ind == 0 or column < ind) and at(0) == 32 do skip() end
        if column > max_indent then max_indent = column end
        if (ind == 0 or column < ind) and at(0) == 9 then
            scanner_error('while scanning a block scalar', start_mark,
                'found a tab character where an indentation space is expected')
        end
        if not is_break_at(0) then break end
        breaks[#breaks + 1] = read_line()
        end_mark = mark()
    end
    if ind == 0 then
        ind = max_indent
        if ind < indent + 1 then ind = indent + 1 end
        if ind < 1 then ind = 1 end
    end
    return concat(breaks), ind, end_mark
end

local function scan_block_scalar(literal)
    local start_mark = mark()
    skip()
    local chomping, increment = 0, 0
    local c = at(0)
    if c == 43 or c == 45 then
        chomping = c == 43 and 1 or -1
        skip()
        if is_digit(at(0)) then
            if at(0) == 48 then
                scanner_error('while scanning a block scalar', start_mark,
                    'found an indentation indicator equal to 0')
            end
            increment = at(0) - 48
            skip()
        end
    elseif is_digit(c) then
        if c == 48 then
            scanner_error('while scanning a block scalar', start_mark, 'found an indentation indicator equal to 0')
        end
        increment = c - 48
        skip()
        if at(0) == 43 or at(0) == 45 then
            chomping = at(0) == 43 and 1 or -1
            skip()
        end
    end
    end_line('while scanning a block scalar', start_mark)
    local ind = 0
    if increment > 0 then ind = indent >= 0 and indent + increment or increment end
    local out = {}
    local leading_break, leading_blank, trailing_blank = '', false, false
    local trailing_breaks, end_mark
    trailing_breaks, ind, end_mark = scan_block_scalar_breaks(ind, start_mark)
    while column == ind and not is_z_at(0) do
        trailing_blank = is_blank_at(0)
        if not literal and sub(leading_break, 1, 1) == '\n' and not leading_blank and not trailing_blank then
            if trailing_breaks == '' then out[#out + 1] = ' ' end
            leading_break = ''
        else
            out[#out + 1] = leading_break
            leading_break = ''
        end
        out[#out + 1] = trailing_breaks
        leading_blank = is_blank_at(0)
        local from = p
        while not is_breakz_at(0) do
            skip_run('[\r\n\128-\255]')
            if not is_breakz_at(0) then skip() end
        end
        out[#out + 1] = sub(s, from, p - 1)
        leading_break = read_line()
        trailing_breaks, ind, end_mark = scan_block_scalar_breaks(ind, start_mark)
    end
    if chomping ~= -1 then out[#out + 1] = leading_break end
    if chomping == 1 then out[#out + 1] = trailing_breaks end
    return {type = 'SCALAR', value = concat(out), style = literal and 'literal' or 'folded',
            start_mark = start_mark, end_mark = end_mark}
end

local function is_document_indicator()
    if column ~= 0 then return false end
    local c = at(0)
    return (c == 45 and at(1) == 45 and at(2) == 45 or c == 46 and at(1) == 46 and at(2) == 46)
        and is_blankz_at(3)
end

-- What follows the spaces and breaks inside a flow or plain scalar, given the
-- first break, the others and the spaces before a break: the text it reads as.
local function folded(leading_break, trailing_breaks)
    if sub(leading_break, 1, 1) == '\n' then
        if trailing_breaks == '' then return ' ' end
        return trailing_breaks
    end
    return leading_break .. trailing_breaks
end

local function scan_flow_scalar(single)
    local start_mark = mark()
    skip()
    local out = {}
    local quote = single and 39 or 34
    while true do
        if is_document_indicator() then
            scanner_error('while scanning a quoted scalar', start_mark, 'found unexpected document indicator')
        end
        if is_z_at(0) then
            scanner_error('while scanning a quoted scalar', start_mark, 'found unexpected end of stream')
        end
        local leading_blanks = false
        while not is_blankz_at(0) do
            local c = at(0)
            if single and c == 39 and at(1) == 39 then
                out[#out + 1] = "'"
                skip() skip()
            elseif c == quote then
                break
            elseif not single and c == 92 and is_break_at(1) then
                skip()
                skip_line()
                leading_blanks = true
                break
            elseif not single and c == 92 then
                local e = at(1)
                local length = ESCAPE_LENGTHS[e]
                if length == nil then
                    local text = ESCAPES[e]
                    if text == nil then
                        scanner_error('while parsing a quoted scalar', start_mark, 'found unknown escape character')
                    end
                    out[#out + 1] = text
                end
                skip() skip()
                if length then
                    local value = 0
                    for k = 0, length - 1 do
                        local h = at(k)
                        if not is_hex(h) then
                            scanner_error('while parsing a quoted scalar', start_mark,
                                'did not find expected hexdecimal number')
                        end
                        value = value * 16 + hex_value(h)
                    end
                    if (value >= 0xD800 and value <= 0xDFFF) or value > 0x10FFFF then
                        scanner_error('while parsing a quoted scalar', start_mark,
                            'found invalid Unicode character escape code')
                    end
                    out[#out + 1] = utf8(value)
                    for _ = 1, length do skip() end
                end
            else
                local from = p
                skip()
                skip_run(single and "[ \t\r\n'\128-\255]" or '[ \t\r\n"\\\128-\255]')
                out[#out + 1] = sub(s, from, p - 1)
            end
        end
        if at(0) == quote then break end
        local whitespaces, leading_break, trailing_breaks = {}, '', {}
        while is_blank_at(0) or is_break_at(0) do
            if is_blank_at(0) then
                if not leading_blanks then whitespaces[#whitespaces + 1] = read() else skip() end
            elseif not leading_blanks then
                whitespaces = {}
                leading_break = read_line()
                leading_blanks = true
            else
                trailing_breaks[#trailing_breaks + 1] = read_line()
            end
        end
        if leading_blanks then
            out[#out + 1] = folded(leading_break, concat(trailing_breaks))
        else
            out[#out + 1] = concat(whitespaces)
        end
    end
    skip()
    return {type = 'SCALAR', value = concat(out), style = single and 'single' or 'double',
            start_mark = start_mark, end_mark = mark()}
end

-- The pieces of the scalar being scanned, pieces[1..npieces] (one table for all:
-- a scanner is not re-entered).
local pieces, npieces = {}, 0
local function add(text)
    npieces = npieces + 1
    pieces[npieces] = text
end

local function scan_plain_scalar()
    npieces = 0
    local leading_break, trailing_breaks, whitespaces = '', '', ''
    local leading_blanks = false
    local ind = indent + 1
    local start_mark = mark()
    local end_mark = start_mark
    local stop = flow_level > 0 and '[ \t\r\n:,%[%]{}\128-\255]' or '[ \t\r\n:\128-\255]'
    while true do
        if is_document_indicator() then break end
        if at(0) == 35 then break end
        while not is_blankz_at(0) do
            local c = at(0)
            if flow_level > 0 and c == 58 and AFTER_COLON_REFUSED[at(1)] then
                scanner_error('while scanning a plain scalar', start_mark, "found unexpected ':'")
            end
            if (c == 58 and is_blankz_at(1)) or (flow_level > 0 and FLOW_ENDS[c]) then break end
            if leading_blanks then
                add(folded(leading_break, trailing_breaks))
                leading_break, trailing_breaks = '', ''
                leading_blanks = false
            elseif whitespaces ~= '' then
                add(whitespaces)
                whitespaces = ''
            end
            local from = p
            skip()
            skip_run(stop)
            add(sub(s, from, p - 1))
            end_mark = mark()
        end
        if not (is_blank_at(0) or is_break_at(0)) then break end
        while is_blank_at(0) or is_break_at(0) do
            if is_blank_at(0) then
                if leading_blanks and column < ind and at(0) == 9 then
                    scanner_error('while scanning a plain scalar', start_mark,
                        'found a tab character that violates indentation')
                end
                if not leading_blanks then whitespaces = whitespaces .. read() else skip() end
            elseif not leading_blanks then
                whitespaces = ''
                leading_break = read_line()
                leading_blanks = true
            else
                trailing_breaks = trailing_breaks .. read_line()
            end
        end
        if flow_level == 0 and column < ind then break end
    end
    if leading_blanks then simple_key_allowed = true end
    local value = npieces == 1 and pieces[1] or concat(pieces, '', 1, npieces)
    return {type = 'SCALAR', value = value, style = 'plain', start_mark = start_mark, end_mark = end_mark}
end

local function fetch_stream_end()
    if column ~= 0 then
        column = 0
        line = line + 1
    end
    unroll_indent(-1)
    remove_simple_key()
    simple_key_allowed = false
    local m = mark()
    enqueue({type = 'STREAM_END', start_mark = m, end_mark = m})
end
local function fetch_document_indicator(type)
    unroll_indent(-1)
    remove_simple_key()
    simple_key_allowed = false
    local start_mark = mark()
    skip() skip() skip()
    enqueue({type = type, start_mark = start_mark, end_mark = mark()})
end
local function fetch_flow_collection_start(type)
    save_simple_key()
    increase_flow_level()
    simple_key_allowed = true
    simple_token(type)
end
local function fetch_flow_collection_end(type)
    remove_simple_key()
    decrease_flow_level()
    simple_key_allowed = false
    simple_token(type)
end
local function fetch_block_entry()
    if flow_level == 0 then
        if not simple_key_allowed then
            scanner_error(nil, mark(), 'block sequence entries are not allowed in this context')
        end
        roll_indent(column, nil, 'BLOCK_SEQUENCE_START', mark())
    end
    remove_simple_key()
    simple_key_allowed = true
    simple_token('BLOCK_ENTRY')
end
local function fetch_key()
    if flow_level == 0 then
        if not simple_key_allowed then
            scanner_error(nil, mark(), 'mapping keys are not allowed in this context')
        end
        roll_indent(column, nil, 'BLOCK_MAPPING_START', mark())
    end
    remove_simple_key()
    simple_key_allowed = flow_level == 0
    simple_token('KEY')
end
local function fetch_value()
    local key = simple_keys[#simple_keys]
    if key.possible then
        insert(queue, head + key.token_number - tokens_parsed,
            {type = 'KEY', start_mark = key.mark, end_mark = key.mark})
        roll_indent(key.column, key.token_number, 'BLOCK_MAPPING_START', key.mark)
        key.possible = false
        simple_key_allowed = false
    else
        if flow_level == 0 then
            if not simple_key_allowed then
                scanner_error(nil, mark(), 'mapping values are not allowed in this context')
            end
            roll_indent(column, nil, 'BLOCK_MAPPING_START', mark())
        end
        simple_key_allowed = flow_level == 0
    end
    simple_token('VALUE')
end

local function fetch_next_token()
    if not stream_start_produced then
        indent = -1
        simple_keys[#simple_keys + 1] = no_simple_key()
        simple_key_allowed = true
        stream_start_produced = true
        local m = mark()
        enqueue({type = 'STREAM_START', start_mark = m, end_mark = m})
        return
    end
    scan_to_next_token()
    stale_simple_keys()
    unroll_indent(column)
    local c = at(0)
    if c == 0 then return fetch_stream_end() end
    if column == 0 and c == 37 then
        unroll_indent(-1)
        remove_simple_key()
        simple_key_allowed = false
        return enqueue(scan_directive())
    end
    if column == 0 and c == 45 and at(1) == 45 and at(2) == 45 and is_blankz_at(3) then
        return fetch_document_indicator('DOCUMENT_START')
    end
    if column == 0 and c == 46 and at(1) == 46 and at(2) == 46 and is_blankz_at(3) then
        return fetch_document_indicator('DOCUMENT_END')
    end
    if c == 91 then return fetch_flow_collection_start('FLOW_SEQUENCE_START') end
    if c == 123 then return fetch_flow_collection_start('FLOW_MAPPING_START') end
    if c == 93 then return fetch_flow_collection_end('FLOW_SEQUENCE_END') end
    if c == 125 then return fetch_flow_collection_end('FLOW_MAPPING_END') end
    if c == 44 then
        remove_simple_key()
        simple_key_allowed = true
        return simple_token('FLOW_ENTRY')
    end
    if c == 45 and is_blankz_at(1) then return fetch_block_entry() end
    if c == 63 and (flow_level > 0 or is_blankz_at(1)) then return fetch_key() end
    if c == 58 and (flow_level > 0 or is_blankz_at(1)) then return fetch_value() end
    if c == 42 or c == 38 then
        save_simple_key()
        simple_key_allowed = false
        return enqueue(scan_anchor(c == 42 and 'ALIAS' or 'ANCHOR'))
    end
    if c == 33 then
        save_simple_key()
        simple_key_allowed = false
        return enqueue(scan_tag())
    end
    if (c == 124 or c == 62) and flow_level == 0 then
        remove_simple_key()
        simple_key_allowed = true
        return enqueue(scan_block_scalar(c == 124))
    end
    if c == 39 or c == 34 then
        save_simple_key()
        simple_key_allowed = false
        return enqueue(scan_flow_scalar(c == 39))
    end
    if not (is_blankz_at(0) or NOT_PLAIN_START[c]) or (c == 45 and not is_blank_at(1))
            or (flow_level == 0 and (c == 63 or c == 58) and not is_blankz_at(1)) then
        save_simple_key()
        simple_key_allowed = false
        return enqueue(scan_plain_scalar())
    end
    scanner_error('while scanning for the next token', mark(), 'found character that cannot start any token')
end

local function fetch_more_tokens()
    while true do
        local need = false
        if head > #queue then
            need = true
        else
            stale_simple_keys()
            for i = 1, #simple_keys do
                local key = simple_keys[i]
                if key.possible and key.token_number == tokens_parsed then
                    need = true
                    break
                end
            end
        end
        if not need then break end
        fetch_next_token()
    end
    token_available = true
end

----------------------------------------------------------------------------
-- parser
----------------------------------------------------------------------------
local function peek()
    if not token_available then fetch_more_tokens() end
    return queue[head]
end
local function skip_token()
    token_available = false
    tokens_parsed = tokens_parsed + 1
    stream_end_produced = queue[head].type == 'STREAM_END'
    head = head + 1
    if head > #queue then
        -- (Emptied in place: the queue drains after nearly every token.)
        for i = 1, #queue do queue[i] = nil end
        head = 1
    end
end

local function pop_state()
    local st = states[#states]
    states[#states] = nil
    return st
end
local function pop_mark()
    local m = marks[#marks]
    marks[#marks] = nil
    return m
end
local function parser_error(problem, problem_mark, context, context_mark)
    error({problem = problem, problem_mark = problem_mark, context = context, context_mark = context_mark}, 0)
end
local function empty_scalar()
    return {type = 'SCALAR', value = '', style = 'plain', plain_implicit = true}
end

local function append_tag_directive(handle, prefix, allow_duplicates, m)
    for _, d in ipairs(tag_directives) do
        if d[1] == handle then
            if allow_duplicates then return end
            parser_error('found duplicate %TAG directive', m)
        end
    end
    tag_directives[#tag_directives + 1] = {handle, prefix}
end
-- The directives before a document: its %YAML version and %TAG pairs.
local function process_directives()
    local version, tags = nil, {}
    local token = peek()
    while token.type == 'VERSION_DIRECTIVE' or token.type == 'TAG_DIRECTIVE' do
        if token.type == 'VERSION_DIRECTIVE' then
            if version then parser_error('found duplicate %YAML directive', token.start_mark) end
            if token.major ~= 1 or (token.minor ~= 1 and token.minor ~= 2) then
                parser_error('found incompatible YAML document', token.start_mark)
            end
            version = {token.major, token.minor}
        else
            append_tag_directive(token.handle, token.prefix, false, token.start_mark)
            tags[#tags + 1] = {token.handle, token.prefix}
        end
        skip_token()
        token = peek()
    end
    append_tag_directive('!', '!', true, token.start_mark)
    append_tag_directive('!!', 'tag:yaml.org,2002:', true, token.start_mark)
    return version, tags
end

local parse_node
local function document_start(implicit)
    local token = peek()
    if not implicit then
        while token.type == 'DOCUMENT_END' do
            skip_token()
            token = peek()
        end
    end
    local t = token.type
    if implicit and t ~= 'VERSION_DIRECTIVE' and t ~= 'TAG_DIRECTIVE' and t ~= 'DOCUMENT_START'
            and t ~= 'STREAM_END' then
        process_directives()
        states[#states + 1] = 'DOCUMENT_END'
        state = 'BLOCK_NODE'
        return {type = 'DOCUMENT_START', implicit = true, tag_directives = {}}
    elseif t ~= 'STREAM_END' then
        local _, tags = process_directives()
        token = peek()
        if token.type ~= 'DOCUMENT_START' then
            parser_error('did not find expected <document start>', token.start_mark)
        end
        states[#states + 1] = 'DOCUMENT_END'
        state = 'DOCUMENT_CONTENT'
        skip_token()
        return {type = 'DOCUMENT_START', implicit = false, tag_directives = tags}
    end
    state = 'END'
    skip_token()
    return {type = 'STREAM_END'}
end

function parse_node(block, indentless_sequence)
    local token = peek()
    if token.type == 'ALIAS' then
        state = pop_state()
        skip_token()
        return {type = 'ALIAS', anchor = token.value}
    end
    local start_mark = token.start_mark
    local anchor, tag_handle, tag_suffix, tag, tag_mark
    if token.type == 'ANCHOR' then
        anchor = token.value
        skip_token()
        token = peek()
        if token.type == 'TAG' then
            tag_handle, tag_suffix, tag_mark = token.handle, token.suffix, token.start_mark
            skip_token()
            token = peek()
        end
    elseif token.type == 'TAG' then
        tag_handle, tag_suffix = token.handle, token.suffix
        tag_mark = token.start_mark
        skip_token()
        token = peek()
        if token.type == 'ANCHOR' then
            anchor = token.value
            skip_token()
            token = peek()
        end
    end
    if tag_handle then
        if tag_handle == '' then
            tag = tag_suffix
        else
            for _, d in ipairs(tag_directives) do
                if d[1] == tag_handle then
                    tag = d[2] .. tag_suffix
                    break
                end
            end
            if tag == nil then
                parser_error('found undefined tag handle', tag_mark, 'while parsing a node', start_mark)
            end
        end
    end
    local t = token.type
    if indentless_sequence and t == 'BLOCK_ENTRY' then
        state = 'INDENTLESS_SEQUENCE_ENTRY'
        return {type = 'SEQUENCE_START', anchor = anchor, tag = tag}
    end
    if t == 'SCALAR' then
        state = pop_state()
        skip_token()
        return {type = 'SCALAR', anchor = anchor, tag = tag, value = token.value, style = token.style}
    elseif t == 'FLOW_SEQUENCE_START' then
        state = 'FLOW_SEQUENCE_FIRST_ENTRY'
        return {type = 'SEQUENCE_START', anchor = anchor, tag = tag}
    elseif t == 'FLOW_MAPPING_START' then
        state = 'FLOW_MAPPING_FIRST_KEY'
        return {type = 'MAPPING_START', anchor = anchor, tag = tag}
    elseif block and t == 'BLOCK_SEQUENCE_START' then
        state = 'BLOCK_SEQUENCE_FIRST_ENTRY'
        return {type = 'SEQUENCE_START', anchor = anchor, tag = tag}
    elseif block and t == 'BLOCK_MAPPING_START' then
        state = 'BLOCK_MAPPING_FIRST_KEY'
        return {type = 'MAPPING_START', anchor = anchor, tag = tag}
    elseif anchor or tag then
        state = pop_state()
        return {type = 'SCALAR', anchor = anchor, tag = tag, value = '', style = 'plain'}
    end
    parser_error('did not find expected node content', token.start_mark,
        block and 'while parsing a block node' or 'while parsing a flow node', start_mark)
end

-- Takes a collection's start token (for its first entry), its mark kept for errors.
local function take_start(first)
    if first then
        marks[#marks + 1] = peek().start_mark
        skip_token()
    end
end
-- Takes a collection's end token: the event that ends it.
local function end_collection(type)
    state = pop_state()
    pop_mark()
    skip_token()
    return {type = type}
end
-- Takes an entry's indicator ('-', '?', ':'): the node after it, parsed with
-- `after` as the state to come back to, or an empty scalar when the next token
-- is one of `stops`.
local function node_after(stops, after, block, indentless_sequence)
    skip_token()
    if not stops[peek().type] then
        states[#states + 1] = after
        return parse_node(block, indentless_sequence)
    end
    state = after
    return empty_scalar()
end

local BLOCK_SEQUENCE_STOPS = {BLOCK_ENTRY = true, BLOCK_END = true}
local INDENTLESS_SEQUENCE_STOPS = {BLOCK_ENTRY = true, KEY = true, VALUE = true, BLOCK_END = true}
local BLOCK_MAPPING_STOPS = {KEY = true, VALUE = true, BLOCK_END = true}
local FLOW_SEQUENCE_PAIR_STOPS = {VALUE = true, FLOW_ENTRY = true, FLOW_SEQUENCE_END = true}
local FLOW_SEQUENCE_PAIR_VALUE_STOPS = {FLOW_ENTRY = true, FLOW_SEQUENCE_END = true}
local FLOW_MAPPING_KEY_STOPS = {VALUE = true, FLOW_ENTRY = true, FLOW_MAPPING_END = true}
local FLOW_MAPPING_VALUE_STOPS = {FLOW_ENTRY = true, FLOW_MAPPING_END = true}

local function block_sequence_entry(first)
    take_start(first)
    local token = peek()
    if token.type == 'BLOCK_ENTRY' then
        return node_after(BLOCK_SEQUENCE_STOPS, 'BLOCK_SEQUENCE_ENTRY', true, false)
    elseif token.type == 'BLOCK_END' then
        return end_collection('SEQUENCE_END')
    end
    parser_error("did not find expected '-' indicator", token.start_mark, 'while parsing a block collection',
        pop_mark())
end
local function indentless_sequence_entry()
    if peek().type == 'BLOCK_ENTRY' then
        return node_after(INDENTLESS_SEQUENCE_STOPS, 'INDENTLESS_SEQUENCE_ENTRY', true, false)
    end
    state = pop_state()
    return {type = 'SEQUENCE_END'}
end
local function block_mapping_key(first)
    take_start(first)
    local token = peek()
    if token.type == 'KEY' then
        return node_after(BLOCK_MAPPING_STOPS, 'BLOCK_MAPPING_VALUE', true, true)
    elseif token.type == 'BLOCK_END' then
        return end_collection('MAPPING_END')
    end
    parser_error('did not find expected key', token.start_mark, 'while parsing a block mapping', pop_mark())
end
local function block_mapping_value()
    if peek().type == 'VALUE' then return node_after(BLOCK_MAPPING_STOPS, 'BLOCK_MAPPING_KEY', true, true) end
    state = 'BLOCK_MAPPING_KEY'
    return empty_scalar()
end

-- The token that starts a flow collection's next entry, past the ',' before it
-- (none before the first), or the collection's end.
local function next_flow_entry(first, end_type, problem, context)
    take_start(first)
    local token = peek()
    if token.type ~= end_type and not first then
        if token.type ~= 'FLOW_ENTRY' then parser_error(problem, token.start_mark, context, pop_mark()) end
        skip_token()
        token = peek()
    end
    return token
end

local function flow_sequence_entry(first)
    local token = next_flow_entry(first, 'FLOW_SEQUENCE_END', "did not find expected ',' or ']'",
        'while parsing a flow sequence')
    if token.type == 'KEY' then
        -- A single pair ([a: 1]): a flow mapping of its own.
        state = 'FLOW_SEQUENCE_ENTRY_MAPPING_KEY'
        skip_token()
        return {type = 'MAPPING_START'}
    elseif token.type ~= 'FLOW_SEQUENCE_END' then
        states[#states + 1] = 'FLOW_SEQUENCE_ENTRY'
        return parse_node(false, false)
    end
    return end_collection('SEQUENCE_END')
end
local function flow_sequence_entry_mapping_key()
    if not FLOW_SEQUENCE_PAIR_STOPS[peek().type] then
        states[#states + 1] = 'FLOW_SEQUENCE_ENTRY_MAPPING_VALUE'
        return parse_node(false, false)
    end
    skip_token()
    state = 'FLOW_SEQUENCE_ENTRY_MAPPING_VALUE'
    return empty_scalar()
end
local function flow_sequence_entry_mapping_value()
    if peek().type == 'VALUE' then
        return node_after(FLOW_SEQUENCE_PAIR_VALUE_STOPS, 'FLOW_SEQUENCE_ENTRY_MAPPING_END', false, false)
    end
    state = 'FLOW_SEQUENCE_ENTRY_MAPPING_END'
    return empty_scalar()
end
local function flow_mapping_key(first)
    local token = next_flow_entry(first, 'FLOW_MAPPING_END', "did not find expected ',' or '}'",
        'while parsing a flow mapping')
    if token.type == 'KEY' then
        return node_after(FLOW_MAPPING_KEY_STOPS, 'FLOW_MAPPING_VALUE', false, false)
    elseif token.type ~= 'FLOW_MAPPING_END' then
        states[#states + 1] = 'FLOW_MAPPING_EMPTY_VALUE'
        return parse_node(false, false)
    end
    return end_collection('MAPPING_END')
end
local function flow_mapping_value(empty)
    if not empty and peek().type == 'VALUE' then
        return node_after(FLOW_MAPPING_VALUE_STOPS, 'FLOW_MAPPING_KEY', false, false)
    end
    state = 'FLOW_MAPPING_KEY'
    return empty_scalar()
end

local handlers = {
    IMPLICIT_DOCUMENT_START = function() return document_start(true) end,
    DOCUMENT_START = function() return document_start(false) end,
    DOCUMENT_CONTENT = function()
        local t = peek().type
        if t == 'VERSION_DIRECTIVE' or t == 'TAG_DIRECTIVE' or t == 'DOCUMENT_START' or t == 'DOCUMENT_END'
                or t == 'STREAM_END' then
            state = pop_state()
            return empty_scalar()
        end
        return parse_node(true, false)
    end,
    DOCUMENT_END = function()
        local token = peek()
        if token.type == 'DOCUMENT_END' then skip_token() end
        tag_directives = {}
        state = 'DOCUMENT_START'
        return {type = 'DOCUMENT_END'}
    end,
    BLOCK_NODE = function() return parse_node(true, false) end,
    BLOCK_SEQUENCE_FIRST_ENTRY = function() return block_sequence_entry(true) end,
    BLOCK_SEQUENCE_ENTRY = function() return block_sequence_entry(false) end,
    INDENTLESS_SEQUENCE_ENTRY = indentless_sequence_entry,
    BLOCK_MAPPING_FIRST_KEY = function() return block_mapping_key(true) end,
    BLOCK_MAPPING_KEY = function() return block_mapping_key(false) end,
    BLOCK_MAPPING_VALUE = block_mapping_value,
    FLOW_SEQUENCE_FIRST_ENTRY = function() return flow_sequence_entry(true) end,
    FLOW_SEQUENCE_ENTRY = function() return flow_sequence_entry(false) end,
    FLOW_SEQUENCE_ENTRY_MAPPING_KEY = flow_sequence_entry_mapping_key,
    FLOW_SEQUENCE_ENTRY_MAPPING_VALUE = flow_sequence_entry_mapping_value,
    FLOW_SEQUENCE_ENTRY_MAPPING_END = function()
        peek()
        state = 'FLOW_SEQUENCE_ENTRY'
        return {type = 'MAPPING_END'}
    end,
    FLOW_MAPPING_FIRST_KEY = function() return flow_mapping_key(true) end,
    FLOW_MAPPING_KEY = function() return flow_mapping_key(false) end,
    FLOW_MAPPING_VALUE = function() return flow_mapping_value(false) end,
    FLOW_MAPPING_EMPTY_VALUE = function() return flow_mapping_value(true) end,
}

local function next_event()
    if stream_end_produced or state == 'END' then return {type = 'NO'} end
    if state == 'STREAM_START' then
        local token = peek()
        if token.type ~= 'STREAM_START' then
            parser_error('did not find expected <stream-start>', token.start_mark)
        end
        state = 'IMPLICIT_DOCUMENT_START'
        skip_token()
        return {type = 'STREAM_START'}
    end
    return handlers[state]()
end

-- Starts reading `text`: gives the function that returns its next event.
local function events(text)
    s = text
    p = 1
    -- A UTF-8 byte order mark at the very start is not part of the text; UTF-16's
    -- (FF FE little endian, FE FF big) make it UTF-16, read here as UTF-8.
    if sub(s, 1, 3) == '\239\187\191' then
        p = 4
    elseif sub(s, 1, 2) == '\255\254' or sub(s, 1, 2) == '\254\255' then
        local codes, problem = from_utf16(sub(s, 3), byte(s, 1) == 255 and 1 or 2)
        if codes == nil then error({problem = problem, problem_mark = 0}, 0) end
        for i, code in ipairs(codes) do codes[i] = utf8(code) end
        s = concat(codes)
    end
    n = #s
    -- A bad character: raised at once when it is in the first chunk the reader
    -- decodes, else when the scanner reaches its chunk (the text is cut there).
    late_problem = nil
    do
        local at, problem = reader_problem(s, p)
        if at ~= nil then
            local chunk_start = math.floor((at - p) / READ_CHUNK) * READ_CHUNK + p
            if chunk_start <= p then
                error({problem = problem, problem_mark = 0}, 0)
            end
            late_problem = problem
            n = chunk_start - 1
        end
    end
    line, column, index = 0, 0, 0
    queue, head = {}, 1
    tokens_parsed, token_available, stream_start_produced, stream_end_produced = 0, false, false, false
    flow_level, indent, indents, simple_key_allowed, simple_keys = 0, -1, {}, false, {}
    state, states, marks, tag_directives = 'STREAM_START', {}, {}, {}
    return next_event
end

box.internal.yaml_events = events
