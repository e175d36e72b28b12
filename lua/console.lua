-- console: `require('console').eval(line)` as `tarantoolctl connect` uses it, with
-- results rendered as YAML the way Tarantool 2.6's console renders them.

local type = type -- the builtin, not the one user code sees (box.lua)
local yaml = {}

-- The plain scalars Tarantool's emitter quotes (besides numbers): the ones its decoder resolves.
local special_words = {['null'] = true, ['~'] = true, ['true'] = true, ['false'] = true, ['yes'] = true, ['no'] = true}

-- libyaml's line width: a single-quoted scalar breaks at a space past this column.
local BEST_WIDTH = 80

-- U+2028 and U+2029: line breaks to libyaml, as `\n` is (no plain style; in
-- quotes, the next line is indented).
local SEPARATOR = '\226\128[\168\169]'

-- `indent`: indentation of continuation lines; `col`: column where the scalar starts.
-- A run of line breaks is written as libyaml writes it: a `\n` first in the run
-- doubled, and the indentation before the text that follows (or the closing quote).
local function single_quoted(s, indent, col)
    local out = {"'"}
    local column = (col or indent) + 1
    local n = #s
    local breaks = false
    local i = 1
    while i <= n do
        local c = string.sub(s, i, i)
        local separator = string.match(s, '^' .. SEPARATOR, i)
        if separator ~= nil or c == '\n' then
            if c == '\n' and not breaks then out[#out + 1] = '\n' end
            out[#out + 1] = separator or c
            column, breaks = 0, true
            i = i + #(separator or c)
        else
            if breaks then
                out[#out + 1] = string.rep(' ', indent)
                column, breaks = indent, false
            end
            -- A character at a time: a column each, as libyaml counts.
            c = string.match(s, '^[\192-\255][\128-\191]*', i) or c
            if c == ' ' and column > BEST_WIDTH and i > 1 and i < n and string.sub(s, i + 1, i + 1) ~= ' '
                    and string.sub(s, i - 1, i - 1) ~= ' ' then
                out[#out + 1] = '\n' .. string.rep(' ', indent)
                column = indent
            elseif c == "'" then
                out[#out + 1] = "''"
                column = column + 2
            else
                out[#out + 1] = c
                column = column + 1
            end
            i = i + #c
        end
    end
    if breaks then out[#out + 1] = string.rep(' ', indent) end
    out[#out + 1] = "'"
    return table.concat(out)
end

-- libyaml's short escapes in a double-quoted scalar; other control bytes are \xXX.
local DOUBLE_QUOTED_ESCAPES = {
    ['\0'] = '\\0', ['\a'] = '\\a', ['\b'] = '\\b', ['\t'] = '\\t', ['\n'] = '\\n', ['\v'] = '\\v',
    ['\f'] = '\\f', ['\r'] = '\\r', ['\27'] = '\\e', ['"'] = '\\"', ['\\'] = '\\\\',
}

-- A character past the Basic Multilingual Plane (4 bytes of UTF-8): libyaml
-- does not print it, it escapes it as \UXXXXXXXX.
local ASTRAL = '[\240-\244][\128-\191][\128-\191][\128-\191]'

-- One character of a double-quoted scalar as libyaml writes it: escaped, or as it is.
local function double_quoted_char(c)
    local escape = DOUBLE_QUOTED_ESCAPES[c]
    if escape ~= nil then return escape end
    if #c == 1 and string.find(c, '%c') then return string.format('\\x%02X', string.byte(c)) end
    if c == '\226\128\168' then return '\\L' end
    if c == '\226\128\169' then return '\\P' end
    if #c == 4 then
        local b1, b2, b3, b4 = string.byte(c, 1, 4)
        return string.format('\\U%08X', (b1 - 0xF0) * 0x40000 + (b2 - 0x80) * 0x1000 + (b3 - 0x80) * 0x40 + (b4 - 0x80))
    end
    return c
end

-- A double-quoted scalar, folded as libyaml folds it: at a space (not the first or
-- last character, nor one after a space) past the line width, a line break and
-- `indent` in its place, and a `\` before a space that starts the next line.
-- `col`: column where the scalar starts; no folding without `indent`.
local function double_quoted(s, indent, col)
    local out = {'"'}
    local column = (col or indent or 0) + 1
    local spaces = false
    local i, n = 1, #s
    while i <= n do
        local c = string.match(s, '^[\192-\255][\128-\191]*', i) or string.sub(s, i, i)
        if c == ' ' and indent ~= nil and not spaces and column > BEST_WIDTH and i > 1 and i < n then
            out[#out + 1] = '\n' .. string.rep(' ', indent)
            column = indent
            if string.sub(s, i + 1, i + 1) == ' ' then
                out[#out + 1] = '\\'
                column = column + 1
            end
        else
            local written = double_quoted_char(c)
            out[#out + 1] = written
            column = column + (#c > 1 and #written == #c and 1 or #written)
        end
        spaces = c == ' '
        i = i + #c
    end
    out[#out + 1] = '"'
    return table.concat(out)
end

-- Whether 2.6 writes `s` as text (utf8_check_printable): valid UTF-8 whose
-- characters past ASCII are printable (no C1 control, surrogate, BOM or
-- noncharacter); other strings are written as !!binary.
local function is_printable_text(s)
    if not string.find(s, '[\128-\255]') then return true end
    local i, n = 1, #s
    while i <= n do
        local c = string.byte(s, i)
        local width = c < 0x80 and 1 or c >= 0xC2 and c < 0xE0 and 2 or c >= 0xE0 and c < 0xF0 and 3
            or c >= 0xF0 and c < 0xF5 and 4 or nil
        if width == nil or i + width - 1 > n then return false end
        local c1, c2 = string.byte(s, i + 1, i + 2)
        for k = i + 1, i + width - 1 do
            local b = string.byte(s, k)
            if b < 0x80 or b > 0xBF then return false end
        end
        -- Overlong forms and code points past U+10FFFF.
        if (c == 0xE0 and c1 < 0xA0) or (c == 0xF0 and c1 < 0x90) or (c == 0xF4 and c1 > 0x8F) then return false end
        -- C1 controls, surrogates, the BOM and U+FFFE, U+FFFF.
        if (c == 0xC2 and c1 < 0xA0) or (c == 0xED and c1 >= 0xA0)
                or (c == 0xEF and ((c1 == 0xBB and c2 == 0xBF) or (c1 == 0xBF and (c2 == 0xBE or c2 == 0xBF)))) then
            return false
        end
        i = i + width
    end
    return true
end

-- A string 2.6 writes as !!binary: its base64 text, tagged.
local function binary_scalar(s)
    return '!!binary ' .. box.internal.native.base64_encode(s, false, false, true)
end

-- A plain scalar, folded at a space past the line width as libyaml does.
local function plain(s, indent, col)
    if col == nil or col + #s <= BEST_WIDTH or not string.find(s, ' ') then return s end
    local out, column, n = {}, col, #s
    local i = 1
    while i <= n do
        -- A character at a time: a column each, as libyaml counts.
        local c = string.match(s, '^[\192-\255][\128-\191]*', i) or string.sub(s, i, i)
        if c == ' ' and column > BEST_WIDTH and i > 1 and i < n and string.sub(s, i + 1, i + 1) ~= ' '
                and string.sub(s, i - 1, i - 1) ~= ' ' then
            out[#out + 1] = '\n' .. string.rep(' ', indent)
            column = indent
        else
            out[#out + 1] = c
            column = column + 1
        end
        i = i + #c
    end
    return table.concat(out)
end

-- A literal block scalar (`|-`), lines indented to `indent`.
local function literal(s, indent)
    local chomp, body = '-', s
    if string.sub(s, -1) == '\n' then
        chomp = string.sub(s, -2) == '\n\n' and '+' or ''
        body = string.sub(s, 1, -2)
    end
    local pad = string.rep(' ', indent)
    local lines = {}
    for line in string.gmatch(body .. '\n', '([^\n]*)\n') do
        lines[#lines + 1] = line == '' and '' or pad .. line
    end
    -- A first line starting with a space needs an explicit indentation indicator.
    local indicator = string.sub(body, 1, 1) == ' ' and '2' or ''
    return '|' .. indicator .. chomp .. '\n' .. table.concat(lines, '\n')
end

local function string_scalar(s, flow, indent, col)
    if not is_printable_text(s) then return binary_scalar(s) end
    if string.find(s, ASTRAL) then return double_quoted(s, indent, col) end
    if string.find(s, '[%z\1-\9\11-\31\127]') then return double_quoted(s, indent, col) end
    if flow then return single_quoted(s, indent, col) end
    if s == '' then return '' end
    -- As libyaml: a space before a line break only survives double quotes.
    if string.find(s, ' \n') then return double_quoted(s, indent, col) end
    if string.find(s, SEPARATOR) then
        -- ... and one after U+2028/U+2029; else they are quoted as line breaks.
        if string.find(s, ' ' .. SEPARATOR) or string.find(s, SEPARATOR .. ' ') or string.find(s, '\n ') then
            return double_quoted(s, indent, col)
        end
        return single_quoted(s, indent, col)
    end
    -- As Tarantool: text with an empty line is written as a literal block.
    -- (asked for, and refused with a trailing space: then double quotes, as libyaml)
    if string.find(s, '\n\n') then
        if string.sub(s, -1) == ' ' then return double_quoted(s, indent, col) end
        return literal(s, indent)
    end
    if string.find(s, '\n ') then return double_quoted(s, indent, col) end
    if string.find(s, '\n') then return single_quoted(s, indent, col) end
    -- A leading '-' is plain when a non-space follows ("-x"), as libyaml writes it.
    if special_words[s] or tonumber(s) ~= nil or string.find(s, '^[%?:,%[%]{}#&%*!|>\'"%%@`%s]')
            or string.find(s, '^%-$') or string.find(s, '^%-%s') or string.find(s, '^%-%-%-') or string.find(s, '^%.%.%.')
            or string.find(s, ': ') or string.find(s, ' #') or string.find(s, '%s$') or string.find(s, ':$') then
        return single_quoted(s, indent, col)
    end
    return plain(s, indent, col)
end

local function is_null(v) return v == nil or v == box.NULL end

-- Scalar cdata (ffi.new('int', 1), 'unsigned short', 'float', 'bool'...) are
-- written as the numbers and booleans they hold, as 2.6's serializers take them;
-- 64-bit integers keep their own path (cdata_integer), all digits.
local ffi = require('ffi')
local scalar_cdata_kinds = {}
do
    for _, name in ipairs({'char', 'unsigned char', 'short', 'unsigned short', 'int', 'unsigned int', 'float',
                           'double'}) do
        scalar_cdata_kinds[tonumber(ffi.typeof(name))] = 'number'
    end
    scalar_cdata_kinds[tonumber(ffi.typeof('bool'))] = 'boolean'
end
-- Whether `v` is a ctype (ffi.typeof's result), not a cdata of it.
local function is_ctype(v)
    return type(v) == 'cdata' and string.sub(tostring(v), 1, 6) == 'ctype<'
end

local function scalar_of_cdata(v)
    -- (ffi.typeof of a ctype is that ctype: ctype<int> is no int.)
    if type(v) ~= 'cdata' or is_ctype(v) then return v end
    local kind = scalar_cdata_kinds[tonumber(ffi.typeof(v))]
    if kind == 'number' then return tonumber(v) end
    if kind == 'boolean' then return tonumber(v) ~= 0 end
    return v
end

-- The digits of a 64-bit integer cdata (`5ULL`, `-5LL`), or nil.
local function cdata_integer(v)
    if type(v) ~= 'cdata' then return nil end
    return string.match(tostring(v), '^(-?%d+)U?LL$')
end

-- As Tarantool: integral values in the 64-bit range in full, others with
-- `precision` (14) digits (inf, nan as printf).
local function number(n, precision)
    if n ~= n then
        -- printf writes a NaN's sign, and LuaJIT's own 0/0 is negative: '-nan'.
        local negative = ffi.cast('uint64_t *', ffi.new('double[1]', n))[0] >= 0x8000000000000000ULL
        return negative and '-nan' or 'nan'
    end
    if n == 0 then return '0' end
    if n == math.floor(n) and n >= -2^63 and n < 2^64 then return string.format('%.0f', n) end
    -- printf's %g (ties to even), as 2.6's fpconv_g_fmt: not LuaJIT's string.format.
    return box.internal.native.format_number(n, precision or 14)
end

local SEQUENCE_HINTS = {seq = true, sequence = true, array = true}
local MAP_HINTS = {map = true, mapping = true}

-- A table's length as an array, or nil for a map. As Tarantool: only positive
-- integer keys make an array, holes are nulls, but an excessively sparse one
-- (largest key over `encode_sparse_safe`, 10, and over `encode_sparse_ratio`, 2,
-- times the key count) is a map, or an error without `encode_sparse_convert`.
-- `cfg`: a serializer's options (json's), or nil for the defaults.
-- A table asked for as an array is as long as its greatest positive integer
-- key, holes nulls (2.6's luaL_arrlen: {[1] = 1, [20] = 1} is twenty long).
local table_maxn = table.maxn
local function greatest_index(t)
    local m = table_maxn(t)
    if m == math.floor(m) then return m end
    m = 0
    for k in pairs(t) do
        if type(k) == 'number' and k > m and k == math.floor(k) then m = k end
    end
    return m
end

local function sequence_length(t, cfg)
    local mt = (cfg == nil or cfg.encode_load_metatables) and getmetatable(t)
    if mt and mt.__serialize then
        local s = mt.__serialize
        if SEQUENCE_HINTS[s] then return greatest_index(t) end
        if MAP_HINTS[s] then return nil end
        -- A function is called before; anything else is refused, as 2.6 does.
        if type(s) ~= 'function' then error('invalid __serialize value', 0) end
    end
    local count, max = 0, 0
    for k in pairs(t) do
        if type(k) ~= 'number' or k < 1 or k ~= math.floor(k) then return nil end
        count = count + 1
        -- 2.6 keeps the greatest key in a uint32_t (the low 32 bits of a key
        -- below 2^63, 0 past it): {[2^53] = 1} is an empty array there.
        if k > max then max = k < 2^63 and k % 4294967296 or 0 end
    end
    local ratio, safe = 2, 10
    if cfg ~= nil then ratio, safe = cfg.encode_sparse_ratio, cfg.encode_sparse_safe end
    if ratio > 0 and max > count * ratio and max > safe then
        if cfg ~= nil and not cfg.encode_sparse_convert then error('excessively sparse array', 0) end
        return nil
    end
    return max
end

-- The options YAML is written with: the console's (any value is shown), or
-- those of the yaml serializer encoding (yaml.cfg, an instance's cfg).
local CONSOLE_OPTIONS = {
    encode_invalid_numbers = true, encode_number_precision = 14, encode_load_metatables = true,
    encode_use_tostring = true, encode_invalid_as_nil = true, encode_sparse_convert = true,
    encode_sparse_ratio = 2, encode_sparse_safe = 10,
}
local opts = CONSOLE_OPTIONS

local function is_sequence(t) return sequence_length(t, opts) ~= nil end

-- A number as YAML: NaN and ±inf only with `encode_invalid_numbers` (else null
-- with `encode_invalid_as_nil`, or an error).
local function yaml_number(n)
    if (n ~= n or n == math.huge or n == -math.huge) and not opts.encode_invalid_numbers then
        if opts.encode_invalid_as_nil then return 'null' end
        error('number must not be NaN or Inf', 0)
    end
    return number(n, opts.encode_number_precision)
end

-- The text of a value YAML has no form for (a function, a userdata): its
-- tostring() with `encode_use_tostring`, nil (for null) with
-- `encode_invalid_as_nil`, else an error.
-- A fiber object: userdata in 2.6, a table here; written as a userdata is.
local function is_fiber(v)
    local mt = type(v) == 'table' and getmetatable(v)
    return type(mt) == 'table' and rawget(mt, '__fiber') == true
end

-- The type 2.6's serializers name in their errors.
local function type_name(v) return is_fiber(v) and 'userdata' or type(v) end

local function unsupported_text(v)
    if opts.encode_use_tostring then return tostring(v) end
    if opts.encode_invalid_as_nil then return nil end
    error(string.format("unsupported Lua type '%s'", type_name(v)), 0)
end

-- A cdata's or a userdata's `__serialize` (from an ffi metatype, e.g. fio's file
-- handles, or a metatable, e.g. popen's handles), or nil.
local function object_serializer(v)
    local ty = type(v)
    if ty == 'userdata' then
        local mt = debug.getmetatable(v)
        local serializer = type(mt) == 'table' and rawget(mt, '__serialize')
        return type(serializer) == 'function' and serializer or nil
    end
    if ty ~= 'cdata' then return nil end
    local ok, serializer = pcall(function() return v.__serialize end)
    if ok and type(serializer) == 'function' then return serializer end
    return nil
end

-- A table's `__serialize` function (a box error's gives its message), or nil:
-- the serializers write what it returns instead, as 2.6's do.
local function table_serializer(v)
    local mt = getmetatable(v)
    if mt and type(mt.__serialize) == 'function' then return mt.__serialize end
    return nil
end

-- Hooks followed in a row at most: one that gives back its own object (or
-- another with a hook, on and on) is refused rather than followed forever.
local MAX_SERIALIZE_HOPS = 1000

-- What `v`'s __serialize hooks give (a table's function, a cdata's or a
-- userdata's; never a ctype's), followed to a value without one: `v` itself when
-- it has none or `load_metatables` is off.
local function follow_hooks(v, load_metatables)
    if not load_metatables then return v end
    for _ = 1, MAX_SERIALIZE_HOPS do
        local hook
        if type(v) == 'table' then hook = table_serializer(v) elseif not is_ctype(v) then hook = object_serializer(v) end
        if hook == nil then return v end
        v = hook(v)
    end
    error('too many nested __serialize hooks', 0)
end

-- A decimal or a uuid: YAML and JSON write its text, a tuple's tostring null (as 2.6).
local function is_extension(v)
    local ty = type(v)
    return ty == 'cdata' and (package.loaded.decimal.is_decimal(v) or box.internal.is_uuid(v))
end

local encode, flow

-- As in Tarantool, `__serialize = 'seq'` or 'map' asks for flow style
-- ('sequence' and 'mapping' for block style), as msgpack.decode's tables have.
local function flow_hinted(v)
    local mt = opts.encode_load_metatables and getmetatable(v)
    return mt and (mt.__serialize == 'seq' or mt.__serialize == 'map') or false
end

-- Tables a document holds more than once (a shared or a cyclic reference): as
-- 2.6's emitter, the first one written gets an anchor (&0, &1...), the others
-- are aliases of it (*0). `refs` maps such a table to true until it is written,
-- then to its anchor's number; nil outside a document.
local refs, next_anchor = nil, 0

-- The tables reachable from `roots[1..n]` (keys and values) more than once, each
-- mapped to true (2.6's serializers look for them the same way).
local function repeated_tables(roots, n)
    local seen = {}
    local function visit(t)
        if type(t) ~= 'table' then return end
        local before = seen[t]
        if before == nil then
            seen[t] = false
            for k, x in pairs(t) do
                visit(x)
                visit(k)
            end
        elseif before == false then
            seen[t] = true
        end
    end
    for i = 1, n do visit(roots[i]) end
    for t, repeated in pairs(seen) do
        if not repeated then seen[t] = nil end
    end
    return seen
end

local function track_references(roots, n)
    refs, next_anchor = repeated_tables(roots, n), 0
end

-- The anchor (`&N`, and false) or the alias (`*N`, and true) `v` is written
-- with, or nil. A table with a __serialize function is written as what it gives
-- (a new table each time); one with a style ('seq', 'map'...) is itself.
local function anchor_of(v)
    local r = refs and type(v) == 'table' and refs[v]
    if not r then return nil end
    local mt = opts.encode_load_metatables and getmetatable(v)
    if mt and type(mt.__serialize) == 'function' then return nil end
    if r == true then
        refs[v] = next_anchor
        next_anchor = next_anchor + 1
        return '&' .. refs[v], false
    end
    return '*' .. r, true
end

-- The columns `s` takes: libyaml counts characters, so UTF-8 continuation bytes add none.
local function columns(s)
    if not string.find(s, '[\128-\191]') then return #s end
    return #s - select(2, string.gsub(s, '[\128-\191]', ''))
end

-- Flow style, written into `w` as libyaml writes it: {out = the text so far,
-- column = where it ends, indent = the enclosing collection's indentation,
-- fold = whether lines break at the width}. An item or a key that would start
-- past the width starts a new line at its collection's indentation (2 further
-- in than the collection's parent), and a quoted string folds at a space past
-- it, its lines 2 further in than its collection's items. `ext_as_null`:
-- decimals and uuids as null, as 2.6 writes a tuple's tostring (never folded).
local function put(w, text)
    w.out[#w.out + 1] = text
    -- A line or paragraph separator written raw (in a quoted string) is a line
    -- break to libyaml as well: its column starts again after one.
    local tail = string.match(text, '\n([^\n]*)$')
    if string.find(text, SEPARATOR) then
        local rest, cut = tail or text, nil
        for after in string.gmatch(rest, SEPARATOR .. '()') do cut = after end
        if cut ~= nil then tail = string.sub(rest, cut) end
    end
    local last_break = tail ~= nil
    tail = tail or text
    w.column = last_break and columns(tail) or w.column + columns(tail)
end

local flow_into

-- Whether libyaml writes `k` as a complex key ("? key" then ": value"): a string
-- with a line break (\r, \n, LS, PS) or longer than 128 bytes is no simple key;
-- one written as !!binary counts by its base64 text.
local function is_complex_key(k)
    if type(k) ~= 'string' then return false end
    if not is_printable_text(k) then return 4 * math.ceil(#k / 3) > 128 end
    return #k > 128 or string.find(k, '[\r\n]') ~= nil or string.find(k, '\226\128[\168\169]') ~= nil
end

-- A flow mapping's key and the colon after it: a complex key's colon starts a
-- line of its own, at the items' indentation, when the key ends past the width.
local function flow_key(w, k, ext_as_null)
    local complex = is_complex_key(k)
    if complex then put(w, '? ') end
    flow_into(w, k, ext_as_null, true)
    if not complex then return put(w, ': ') end
    if w.fold and w.column > BEST_WIDTH then
        put(w, '\n' .. string.rep(' ', w.indent) .. ': ')
    else
        put(w, ' : ')
    end
end

-- A scalar's text in a flow collection, or nil for a collection; `key`: as a
-- mapping's key (libyaml's simple key: never folded).
local function flow_scalar(w, v, ext_as_null, key)
    if is_null(v) then return 'null' end
    v = scalar_of_cdata(v)
    local ty = type(v)
    if ty == 'boolean' then return tostring(v) end
    if ty == 'number' then return yaml_number(v) end
    if cdata_integer(v) then return cdata_integer(v) end
    if is_extension(v) then return ext_as_null and 'null' or tostring(v) end
    local col = (w.fold and not key) and w.column or -1e9
    if ty == 'string' then return string_scalar(v, true, w.indent + 2, col) end
    if (type(v) ~= 'table' or is_fiber(v)) and not box.tuple.is(v) then
        local text = unsupported_text(v)
        return text == nil and 'null' or single_quoted(text, w.indent + 2, col)
    end
    return nil
end

-- Puts a line break and the indentation of the current collection's items if
-- the line is past the width; else `space` (between items).
local function item_start(w, space)
    if w.fold and w.column > BEST_WIDTH then
        put(w, '\n' .. string.rep(' ', w.indent))
    elseif space then
        put(w, ' ')
    end
end

-- A tuple's fields as flow_into writes them: its maps in their msgpack order,
-- as 2.6 writes a tuple (Lua tables would give them in hash order, which here
-- changes from run to run). An array or a map becomes {n = count, ...} with
-- ORDERED_ARRAY (items) or ORDERED_MAP (keys, values) as metatable.
local ORDERED_ARRAY, ORDERED_MAP = {}, {}

local function be_uint(s, pos, bytes)
    local n = 0
    for i = pos, pos + bytes - 1 do n = n * 256 + string.byte(s, i) end
    return n
end

local function ordered_value(s, pos)
    local b = string.byte(s, pos)
    local count, header, map
    if b >= 0x80 and b <= 0x9f then
        count, header, map = b % 16, 1, b < 0x90
    elseif b == 0xdc or b == 0xde then
        count, header, map = be_uint(s, pos + 1, 2), 3, b == 0xde
    elseif b == 0xdd or b == 0xdf then
        count, header, map = be_uint(s, pos + 1, 4), 5, b == 0xdf
    else
        return package.loaded.msgpack.decode(s, pos)
    end
    pos = pos + header
    if not map then
        local items = {n = count}
        for i = 1, count do items[i], pos = ordered_value(s, pos) end
        return setmetatable(items, ORDERED_ARRAY), pos
    end
    local keys, values = {}, {}
    for i = 1, count do
        keys[i], pos = ordered_value(s, pos)
        values[i], pos = ordered_value(s, pos)
    end
    return setmetatable({n = count, keys = keys, values = values}, ORDERED_MAP), pos
end

flow_into = function(w, v, ext_as_null, key)
    local anchor, alias = anchor_of(v)
    if alias then return put(w, anchor) end
    if anchor then put(w, anchor .. ' ') end
    local text = flow_scalar(w, v, ext_as_null, key)
    if text ~= nil then return put(w, text) end
    if box.tuple.is(v) then v = ordered_value(package.loaded.msgpack.encode(v), 1) end
    local ordered = getmetatable(v)
    if ordered == ORDERED_ARRAY or ordered == ORDERED_MAP then
        w.indent = w.indent + 2
        put(w, ordered == ORDERED_ARRAY and '[' or '{')
        for i = 1, v.n do
            if i > 1 then put(w, ',') end
            item_start(w, i > 1)
            if ordered == ORDERED_ARRAY then
                flow_into(w, v[i], ext_as_null)
            else
                flow_key(w, v.keys[i], ext_as_null)
                flow_into(w, v.values[i], ext_as_null)
            end
        end
        put(w, ordered == ORDERED_ARRAY and ']' or '}')
        w.indent = w.indent - 2
        return
    end
    local hooked = follow_hooks(v, opts.encode_load_metatables)
    if not rawequal(hooked, v) then return flow_into(w, hooked, ext_as_null, key) end
    if type(v) ~= 'table' or is_fiber(v) then return put(w, flow_scalar(w, v, ext_as_null, key)) end
    w.indent = w.indent + 2
    local n = sequence_length(v, opts)
    if n then
        put(w, '[')
        for i = 1, n do
            if i > 1 then put(w, ',') end
            item_start(w, i > 1)
            flow_into(w, v[i], ext_as_null)
        end
        put(w, ']')
    else
        put(w, '{')
        local first = true
        for k, x in pairs(v) do
            if not first then put(w, ',') end
            item_start(w, not first)
            flow_key(w, k, ext_as_null)
            flow_into(w, x, ext_as_null)
            first = false
        end
        put(w, '}')
    end
    w.indent = w.indent - 2
end

-- `v` in flow style on one line (a tuple's tostring, a complex key).
flow = function(v, ext_as_null)
    local w = {out = {}, column = 0, indent = 0, fold = false}
    flow_into(w, v, ext_as_null)
    return table.concat(w.out)
end

-- `v` in flow style as a block's value whose items are indented to `indent`,
-- starting at column `col`: folded at the width.
local function folded_flow(v, indent, col)
    local w = {out = {}, column = col, indent = indent - 2, fold = true}
    flow_into(w, v)
    return table.concat(w.out)
end

local encode_plain

-- Renders `v` at `indent`; returns the text that follows "- " or "key: ", which
-- starts at column `col` (default `indent`). A table written before is its alias;
-- an anchored block collection starts on the next line.
encode = function(v, indent, col)
    -- A flow collection takes its anchor where flow_into writes it.
    if flow_hinted(v) then return encode_plain(v, indent, col) end
    local anchor, alias = anchor_of(v)
    if alias then return anchor end
    local text = encode_plain(v, indent, col)
    if anchor == nil then return text end
    if next(v) == nil then return anchor .. ' ' .. text end
    return anchor .. '\n' .. string.rep(' ', indent) .. text
end

encode_plain = function(v, indent, col)
    if is_null(v) then return 'null' end
    v = scalar_of_cdata(v)
    local ty = type(v)
    if ty == 'boolean' then return tostring(v) end
    if ty == 'number' then return yaml_number(v) end
    if cdata_integer(v) then return cdata_integer(v) end
    if is_extension(v) then return tostring(v) end
    if ty == 'string' then return string_scalar(v, false, indent, col or indent) end
    if box.tuple.is(v) then return folded_flow(v, indent, col or indent) end
    local hooked = follow_hooks(v, opts.encode_load_metatables)
    if not rawequal(hooked, v) then return encode(hooked, indent, col) end
    if ty ~= 'table' or is_fiber(v) then
        local text = unsupported_text(v)
        return text == nil and 'null' or string_scalar(text, false, indent, col or indent)
    end
    if flow_hinted(v) then return folded_flow(v, indent, col or indent) end
    local pad = string.rep(' ', indent)
    local n = sequence_length(v, opts)
    if n then
        if n == 0 then return '[]' end
        local lines = {}
        for i = 1, n do
            local item = encode(v[i], indent + 2)
            -- An empty plain scalar follows the dash directly, as libyaml writes it.
            lines[i] = (i == 1 and '' or pad) .. (item == '' and '-' or '- ' .. item)
        end
        return table.concat(lines, '\n')
    end
    local lines = {}
    for k, x in pairs(v) do
        if type(x) == 'table' then x = follow_hooks(x, opts.encode_load_metatables) end
        -- A key is never wrapped (a huge negative column) and an empty one is quoted.
        local key = type(k) == 'string' and (k == '' and "''" or string_scalar(k, false, indent, -1e9)) or flow(k)
        -- An alias as a key stands apart from its colon, as libyaml writes it.
        local prefix = (#lines == 0 and '' or pad) .. key .. (string.sub(key, 1, 1) == '*' and ' :' or ':')
        if is_complex_key(k) then
            -- A complex key: "? key" then ": value" (a block value compacted).
            local item = encode(x, indent + 2, indent + 2)
            lines[#lines + 1] = (#lines == 0 and '' or pad) .. '? ' .. string_scalar(k, false, indent + 2, indent + 2)
                .. '\n' .. pad .. (item == '' and ':' or ': ' .. item)
        elseif type(x) == 'table' and not box.tuple.is(x) and next(x) ~= nil and sequence_length(x, opts) ~= 0
            and not flow_hinted(x) then
            -- An anchor or an alias stands after the key.
            local anchor, alias = anchor_of(x)
            if alias then
                lines[#lines + 1] = prefix .. ' ' .. anchor
            else
                prefix = anchor and prefix .. ' ' .. anchor or prefix
                if is_sequence(x) then
                    lines[#lines + 1] = prefix .. '\n' .. pad .. encode_plain(x, indent)
                else
                    lines[#lines + 1] = prefix .. '\n' .. pad .. '  ' .. encode_plain(x, indent + 2)
                end
            end
        else
            local item = encode(x, indent + 2, indent + columns(key) + 2)
            lines[#lines + 1] = item == '' and prefix or prefix .. ' ' .. item
        end
    end
    if #lines == 0 then return '{}' end
    return table.concat(lines, '\n')
end

-- A console reply: each value as a list item of one YAML document.
function yaml.document(values, n)
    if n == 0 then return '---\n...\n' end
    local out = {'---'}
    track_references(values, n)
    local ok, err = pcall(function()
        for i = 1, n do
            local item = encode(values[i], 2)
            out[#out + 1] = item == '' and '-' or '- ' .. item
        end
    end)
    refs = nil
    if not ok then error(err, 0) end
    out[#out + 1] = '...\n'
    return table.concat(out, '\n')
end

local console = {}

-- Each session's console settings, as 2.6 keeps them with the session: the
-- output format (`\set output`), the language (`\set language`) and, on the
-- text console, the delimiter that ends a statement.
local sessions = {}
-- A session's output until it sets one.
local YAML_OUTPUT = {fmt = 'yaml'}
-- console.set_default_output's: in 2.6 only what a console.connect client asks the
-- server for; a session's own output is YAML until it sets one.
local default_output = YAML_OUTPUT

local function session_id()
    local ok, id = pcall(box.session.id)
    return ok and id or 0
end

-- The settings of the console client the running fiber serves, if it keeps them
-- apart from its session's: each client of a console served from Lua has its
-- own, though before box.cfg they all run in the server's session.
local function client_settings()
    local ok, storage = pcall(function() return rawget(require('fiber').self(), 'storage') end)
    local state = ok and storage ~= nil and storage.console or nil
    return state ~= nil and rawget(state, 'settings') or nil
end

-- The running code's console settings, if any yet.
local function known_settings()
    return client_settings() or sessions[session_id()]
end

local function session_settings()
    local settings = client_settings()
    if settings ~= nil then return settings end
    local id = session_id()
    settings = sessions[id]
    if settings == nil then
        settings = {}
        sessions[id] = settings
    end
    return settings
end

do
    local forget = box.internal.forget_session
    function box.internal.forget_session(id)
        local settings = sessions[id]
        -- The session's console fiber ends with it.
        if settings ~= nil and settings.console_worker ~= nil then settings.console_worker.lines:close() end
        sessions[id] = nil
        return forget(id)
    end
end

-- An error as the console shows it: its message.
local function error_text(e)
    if type(e) == 'table' and e.message ~= nil then e = e.message end
    return tostring(e)
end

-- The reply to a console line that ended (`status`) with `n` values, in the
-- session's output format: a YAML document, or Lua text ending with ';'.
local function format(status, n, values)
    local output = (known_settings() or {}).output or YAML_OUTPUT
    if output.fmt ~= 'lua' then
        if not status then
            local e = values[1]
            return yaml.document({{error = e == nil and box.NULL or error_text(e)}}, 1)
        end
        local ok, text = pcall(yaml.document, values, n)
        if ok then return text end
        local e = 'console: an exception occurred when formatting the output: ' .. error_text(text)
        return yaml.document({{error = e}}, 1)
    end
    local block, parts = output.opts == 'block', {}
    for i = 1, n do
        local v, text = values[i], nil
        if status then
            local ok, result = pcall(box.internal.console_lua_text, v, block)
            if ok then
                text = result
            else
                v = string.format('console: exception while formatting output: "%s"', error_text(result))
            end
        elseif v ~= nil then
            v = error_text(v)
        end
        parts[i] = text or box.internal.console_lua_text({error = v == nil and box.NULL or v}, block)
    end
    return table.concat(parts, ', ') .. ';'
end

local function format_call(ok, ...)
    if not ok then return format(false, 1, {...}) end
    return format(true, select('#', ...), {...})
end

-- `\set output yaml`, `lua`, `lua,line` or `lua,block`.
local function set_output(settings, value)
    if value == nil then error('Specify output format: lua or yaml.', 0) end
    local fmt, opts = string.match(value, '([^,]+),([^,]+)')
    fmt = fmt or value
    if fmt ~= 'yaml' and fmt ~= 'lua' then
        error(string.format('Invalid format "%s", supported languages: lua and yaml.', value), 0)
    end
    if fmt == 'lua' and opts ~= nil and opts ~= 'line' and opts ~= 'block' then
        error(string.format('Wrong option "%s", expecting: line or block.', opts), 0)
    end
    settings.output = {fmt = fmt, opts = fmt == 'lua' and opts or nil}
    return true
end

local function set_language(settings, value)
    if value == nil then return {language = settings.language or 'lua'} end
    if value ~= 'lua' and value ~= 'sql' then
        error(string.format('Invalid language "%s", supported languages: lua and sql.', value), 0)
    end
    settings.language = value
    return true
end

-- On the text console only: IPROTO sessions have no statement delimiter.
local function set_delimiter(settings, value)
    if settings.delimiter == nil then error('console.delimiter(): need existing console', 0) end
    if settings.delimiter == '$EOF$' then error('Can not install delimiter for net box sessions', 0) end
    settings.delimiter = value or ''
    if settings.console_state ~= nil then settings.console_state.delimiter = settings.delimiter end
end

local SETTERS = {output = set_output, o = set_output, language = set_language, lang = set_language,
                 l = set_language, delimiter = set_delimiter, delim = set_delimiter, d = set_delimiter}

-- A `\` command: `\set <parameter> <value>`, `\help` (or `\h`, or `\` alone),
-- `\quit` (or `\q`: the session's console stops after this line; nothing is
-- shown).
local function command(settings, text)
    local words = {}
    for word in string.gmatch(text, '[^%s]+') do words[#words + 1] = word end
    local verb = words[1]
    if verb == nil or verb == 'help' or verb == 'h' then return format(true, 1, {help()}) end
    if verb == 'quit' or verb == 'q' then
        settings.quit = true
        return
    end
    if verb ~= 'set' and verb ~= 's' then
        return format(false, 1, {string.format('Invalid command \\%s. Type \\help for help.', text)})
    end
    local name = words[2]
    if name == nil then return format(false, 1, {'Invalid set syntax, type \\help for help'}) end
    local setter = SETTERS[name]
    if setter == nil then return format(false, 1, {'Unknown parameter: ' .. name}) end
    return format_call(pcall(setter, settings, words[3]))
end

-- Runs one console line: a `\` command, SQL after `\set language sql`, else Lua:
-- as an expression first (`return <line>`), else as a statement.
function console.eval(line)
    line = line or ''
    local settings = session_settings()
    if string.sub(line, 1, 1) == '\\' then return command(settings, string.sub(line, 2)) end
    if settings.language == 'sql' then return format_call(pcall(box.execute, line)) end
    local fn, err = loadstring('return ' .. line)
    if fn == nil then fn, err = loadstring(line) end
    if fn == nil then return format(false, 1, {err}) end
    return format_call(pcall(fn))
end

-- Console state, as 2.6 keeps it in the REPL fiber's storage
-- (`fiber.self().storage.console`): `running`, `prompt`, `remote` (after
-- console.connect), `print(self, text)`, and the hooks console.on_start and
-- console.on_client_disconnect set for every console.
local hooks = {}
-- `eval(self, line)` runs a line here, or (connected) there.
local STATE_DEFAULTS = {running = false, delimiter = '', prompt = 'tarantool', ac = true,
                        eval = function(_, line) return console.eval(line) end}
local state_mt = {__index = function(_, key)
    if hooks[key] ~= nil then return hooks[key] end
    return STATE_DEFAULTS[key]
end}

local function set_hook(name)
    return function(fn)
        if fn == nil or type(fn) == 'function' then
            hooks[name] = fn
            return
        end
        error(string.format('Wrong type of %s hook: %s', name, type(fn)))
    end
end
console.on_start = set_hook('on_start')
console.on_client_disconnect = set_hook('on_client_disconnect')

-- The console the running fiber serves, if any.
local function current_state()
    local ok, storage = pcall(function() return require('fiber').self().storage end)
    return ok and storage.console or nil
end

-- A fiber serving a console line (or console.start) knows its console, as in 2.6.
local function with_state(state, f, ...)
    local storage = require('fiber').self().storage
    local saved = storage.console
    storage.console = state
    local result = {pcall(f, ...)}
    storage.console = saved
    if not result[1] then error(result[2], 0) end
    return unpack(result, 2, table.maxn(result))
end

-- console.ac(yes_no): autocompletion on this console (oncebox's console.start has none).
function console.ac(yes_no)
    local state = current_state()
    if state == nil then error('console.ac(): need existing console') end
    state.ac = not not yes_no
end

local OUTPUT_EOS = {yaml = '\n...\n', lua = ';'}

-- console.eos([eos]): what ends a reply in this session's output format; the
-- Lua format's may be changed, YAML's not.
function console.eos(value)
    local fmt = (session_settings().output or YAML_OUTPUT).fmt
    if value == nil then return tostring(OUTPUT_EOS[fmt]) end
    if fmt == 'yaml' then error('console.eos(): is immutable for output ' .. fmt) end
    OUTPUT_EOS[fmt] = value
end

-- A text console reached over a socket, with the net.box-like eval a remote
-- console needs: each line is sent ending with the '$EOF$' delimiter and the
-- reply read up to the end of the output format; pushes before it are printed.
local text_remote = {}
text_remote.__index = text_remote

function text_remote:set_error()
    self.state = 'error'
    self.error = self.socket:error() or 'Peer closed'
    return self.error
end

function text_remote:read()
    local got = self.socket:read(self.eos)
    if got ~= nil and got ~= '' then return got end
end

function text_remote:eval(text)
    -- `\set output` changes how the replies end.
    local fmt = string.match(text, '^%s*\\s[et]*%s+o[utp]*%s+([%a]+)')
    if fmt ~= nil and OUTPUT_EOS[fmt] ~= nil then
        self.fmt, self.eos = fmt, OUTPUT_EOS[fmt]
    end
    if not self.socket:write(text .. '$EOF$\n') then error(self:set_error(), 0) end
    while true do
        local got = self:read()
        if got == nil then break end
        local push
        if self.fmt == 'yaml' then
            push = got:match('^%%TAG !push! ') ~= nil
        else
            push = string.sub(got, 1, 7) == '-- Push'
        end
        if not push then return got end
        if self.print_f then self.print_f(got) end
    end
    error(self:set_error(), 0)
end

function text_remote:close() self.socket:close() end

local function connect_text(socket, u, print_f)
    local output = session_settings().output or YAML_OUTPUT
    local remote = setmetatable({socket = socket, state = 'active', host = u.host or 'localhost', port = u.service,
                                 print_f = print_f, fmt = output.fmt, eos = OUTPUT_EOS[output.fmt]}, text_remote)
    local set_output = output.opts and string.format('\\set output %s,%s', output.fmt, output.opts)
                       or '\\set output ' .. output.fmt
    for _, line in ipairs({set_output, 'require("console").delimiter("$EOF$")'}) do
        if not socket:write(line .. '\n') or not remote:read() then remote:set_error() end
    end
    return remote
end

local function connect_binary(u, opts)
    local remote = require('net.box').connect(u.host or 'localhost', u.service,
        {user = u.login, password = u.password, connect_timeout = opts.timeout})
    remote.host = remote.host or 'localhost'
    local eval = remote.eval
    remote.eval = function(conn, line) return eval(conn, 'return require("console").eval(...)', {line}) end
    return remote
end

-- A line on a connected console: run by the remote one. When that fails for
-- good (or `line` is nil: the local side ended it), the console is local again.
local function remote_eval(state, line)
    local remote = state.remote
    if line ~= nil and remote.state == 'active' then
        local ok, reply = pcall(remote.eval, remote, line)
        if remote.state == 'active' then return ok and reply or format(false, 1, {reply}) end
    end
    local err = remote.error
    pcall(remote.close, remote)
    state.remote, state.prompt, state.eval = nil, nil, nil
    pcall(state.on_client_disconnect, state)
    return err ~= nil and format(false, 1, {err}) or ''
end

-- console.connect(uri[, {timeout}]): from a console (console.start, or a line
-- on a text console), connects it to another instance, by its IPROTO port or
-- its text console: the lines that follow run there, until that connection
-- fails, or `~.` on a text console (or the end of the input) disconnects.
function console.connect(uri, opts)
    opts = opts or {}
    local state = current_state()
    if state == nil then error('console.connect() need existing console') end
    local u = uri ~= nil and require('uri').parse(tostring(uri)) or nil
    if u == nil or u.service == nil then error('Usage: console.connect("[login:password@][host:]port")') end
    local host = u.unix ~= nil and 'unix/' or u.host or 'localhost'
    local port = u.unix or u.service
    local socket = require('socket').tcp_connect(host, port, opts.timeout)
    local greeting = socket and socket:read{chunk = 128, timeout = opts.timeout}
    if greeting == nil or #greeting < 128 then
        if socket then socket:close() end
        box.error(box.error.NO_CONNECTION)
    end
    local remote
    if string.find(string.sub(greeting, 1, 64), '(Lua console)', 1, true) then
        remote = connect_text(socket, u, function(text) state:print(text) end)
    else
        socket:close()
        remote = connect_binary({host = host, service = port, login = u.login, password = u.password}, opts)
    end
    local ok, err = pcall(remote.eval, remote, 'return true')
    if not ok or remote.state ~= 'active' then
        pcall(remote.close, remote)
        pcall(state.on_client_disconnect, state)
        error(ok and (remote.error or 'Peer closed') or err, 0)
    end
    state.remote, state.eval = remote, remote_eval
    state.prompt = string.format('%s:%s', remote.host or host, remote.port or port)
    require('log').info('connected to %s:%s', remote.host or host, remote.port or port)
    return true
end

-- console.delimiter([delimiter]): the text console session's statement
-- delimiter, or sets it (2.6's clients set '$EOF$' as they connect).
function console.delimiter(value)
    local settings = known_settings()
    if settings == nil or settings.delimiter == nil then error('console.delimiter(): need existing console', 2) end
    if value == nil then return settings.delimiter end
    if type(value) ~= 'string' then error('invalid delimiter', 2) end
    settings.delimiter = value
    if settings.console_state ~= nil then settings.console_state.delimiter = value end
end

-- console.set_default_output(format) / get_default_output(): kept and checked as
-- 2.6 does; it changes no session's output (2.6's console.connect reads it).
function console.set_default_output(value)
    if value == nil then error('Nil output value passed', 2) end
    local settings = {}
    local ok, err = pcall(set_output, settings, value)
    if not ok then error(err, 2) end
    default_output = settings.output
end
function console.get_default_output(...)
    if ... ~= nil then error('Arguments provided while prohibited', 2) end
    return {fmt = default_output.fmt, opts = default_output.opts}
end

-- The server's own box.session.push: text on a text console session, sent as is.
local raw_push

-- The state of the text console session `settings` belongs to (made on first use).
local function console_state(settings)
    local state = settings.console_state
    if state == nil then
        state = setmetatable({running = true, delimiter = settings.delimiter, settings = settings}, state_mt)
        settings.console_state = state
    end
    return state
end

local run_line

-- A server console session's socket as 2.6's console state shows it (`client`):
-- its descriptor and addresses (the descriptor stays the server's).
local function session_socket(fd)
    local function address(host, port)
        if host == nil then return nil end
        local unix = host == 'unix/'
        return {host = host, port = port, type = 'SOCK_STREAM', protocol = unix and 0 or 'tcp',
                family = unix and 'AF_UNIX' or (host:find(':', 1, true) and 'AF_INET6' or 'AF_INET')}
    end
    return {
        fd = function() return fd end,
        peer = function() return address(box.internal.fd_addresses(fd)) end,
        name = function() return address(select(3, box.internal.fd_addresses(fd))) end,
    }
end

-- A server console session's own fiber: it runs the session's lines one after
-- another, with the console's state in its storage, until the session ends, as
-- 2.6 serves each console client in one fiber (its name, storage and an open
-- transaction go on from line to line; a transaction is aborted by the wait for
-- the next line, as in 2.6). The session ends when the fiber is cancelled.
local function line_fiber(settings, state)
    local worker = settings.console_worker
    if worker ~= nil and worker.fiber:status() ~= 'dead' then return worker end
    local fiber = require('fiber')
    worker = {lines = fiber.channel(1), results = fiber.channel(1)}
    local peer = box.session.peer()
    state.client = state.client or session_socket(box.session.fd())
    worker.fiber = box.internal.session_fiber(function()
        fiber.self().storage.console = state
        while true do
            local job = worker.lines:get()
            if job == nil then return end
            local result = {pcall(run_line, job.settings, job.line)}
            -- A line that cancelled this fiber ends the session after its reply.
            result.cancelled = not pcall(fiber.testcancel)
            worker.results:put(result)
            if result.cancelled then return end
        end
    end, 'console/' .. (peer or ''))
    settings.console_worker = worker
    return worker
end

-- A line from a text console session (`console.listen`): with a delimiter set,
-- lines are gathered until one ends with it (and the delimiter is dropped), as
-- 2.6's console reads a statement. Returns the reply, '' while gathering.
-- `write(text)`: where the line's pushes go (none: the server's session, whose
-- lines run in its console fiber).
function box.internal.console_line(line, write)
    local settings = session_settings()
    settings.delimiter = settings.delimiter or ''
    line = string.gsub(line, '\r$', '')
    if write ~= nil then return run_line(settings, line, write) end
    local worker = line_fiber(settings, console_state(settings))
    box.internal.fiber_take_user(worker.fiber)
    worker.lines:put({settings = settings, line = line})
    local result
    repeat
        result = worker.results:get(1)
    until result ~= nil or worker.fiber:status() == 'dead'
    -- The console fiber was cancelled (by the line, or while it waited for it):
    -- the session ends, as 2.6's ends with the fiber serving its client.
    if result == nil or result.cancelled then box.internal.call_op('console_quit') end
    if result == nil then return '', true end
    if not result[1] then error(result[2], 0) end
    return result[2], result[3]
end

-- Runs a console line (see box.internal.console_line) in the running fiber.
function run_line(settings, line, write)
    local state = console_state(settings)
    -- What the console prints itself (a remote console's pushes).
    function state.print(_, text)
        if write ~= nil then write(text) else raw_push(text) end
    end
    -- `~.` (as ssh's): leaves a connected console, else ends the session.
    if line == '~.' then
        if state.remote ~= nil then return remote_eval(state, nil), nil end
        if write == nil then box.internal.call_op('console_quit') end
        return '', true
    end
    local delimiter = settings.delimiter
    if delimiter ~= '' then
        local gathered = settings.gathered
        line = gathered and gathered .. '\n' .. line or line
        if string.sub(line, -#delimiter) ~= delimiter then
            settings.gathered = line
            return ''
        end
        settings.gathered = nil
        line = string.sub(line, 1, -#delimiter - 1)
    end
    -- What the line pushes (box.session.push) goes out as text, at once: through
    -- `write` (a console served from Lua), else through the server's session.
    settings.pushing = write or true
    settings.quit = nil
    local ok, reply = pcall(with_state, state, state.eval, state, line)
    settings.pushing = nil
    if not ok then error(reply, 0) end
    -- `\quit`: a console served from Lua stops reading (told by the second
    -- result); the server's closes the session once its replies are out.
    local quit = settings.quit
    settings.quit = nil
    if quit and write == nil then box.internal.call_op('console_quit') end
    return reply or '', quit
end

-- box.session.push on a text console: the value in the session's output format,
-- as 2.6 writes a push there (a YAML document tagged !push!, or '-- Push' and
-- the Lua text).
do
    local push = box.session.push
    raw_push = push
    local PUSH_TAG = {tag_handle = '!push!', tag_prefix = 'tag:tarantool.io/push,2018'}
    function box.session.push(...)
        local settings = known_settings()
        local pushing = settings and settings.pushing
        if not pushing then return push(...) end
        if select('#', ...) ~= 1 then error('Usage: box.session.push(data)', 2) end
        local value = ...
        local output, text = settings.output or YAML_OUTPUT, nil
        if output.fmt == 'lua' then
            text = '-- Push\n' .. box.internal.console_lua_text(value, output.opts == 'block') .. ';'
        else
            text = require('yaml').encode(value, PUSH_TAG)
        end
        -- A text console session's pushes are text: the server sends them as they are.
        if pushing == true then return push(text) end
        pushing(text)
        return true
    end
end

function console.completion_handler() return {} end

-- Whether `text` is a statement cut short (more lines complete it), as 2.6's
-- console tells: Lua's parser stopped at the end of the input.
local function incomplete(text)
    if loadstring('return ' .. text) ~= nil then return false end
    local fn, err = loadstring(text)
    return fn == nil and tostring(err):match("'<eof>'$") ~= nil
end

pcall(ffi.cdef, 'int isatty(int fd);')

-- console.start(): an interactive console on the standard input, as 2.6's: the
-- 'tarantool> ' prompt, a statement continued over lines ('         > ') until it
-- is complete (or, after `\set delimiter X`, until a line ends with X), each
-- result as YAML, until the input ends. Input that is not a terminal is echoed
-- after the prompt, as readline echoes it. The server goes on serving while the
-- console waits for a line.
local started = false
function console.start()
    if started then error('console is already started') end
    started = true
    local tty = ffi.C.isatty(0) == 1
    local stdin = box.internal.op ~= nil and box.internal.stdin_socket() or nil
    local function read_line()
        io.stdout:flush()
        local line
        if stdin ~= nil then
            line = stdin:read('\n')
            if line == nil or line == '' then return nil end
            line = line:gsub('\n$', '')
        else
            line = io.read('*l')
        end
        if line ~= nil and not tty then io.write(line, '\n') end
        return line
    end
    local delimiter = ''
    local state = setmetatable({running = true, print = function(_, text) io.write(tostring(text), '\n') end}, state_mt)
    local function run()
        if type(state.on_start) == 'function' then state:on_start() end
        while state.running do
            local prompt = state.prompt
            io.write(prompt, '> ')
            local text = read_line()
            if text == nil then
                -- The end of the input leaves a connected console, then the console.
                if state.remote == nil then break end
                io.write(remote_eval(state, nil), '\n')
            else
                while true do
                    if delimiter ~= '' then
                        if text:sub(-#delimiter) == delimiter then
                            text = text:sub(1, -#delimiter - 1)
                            break
                        end
                    elseif not incomplete(text) then
                        break
                    end
                    io.write(string.rep(' ', #prompt), '> ')
                    local more = read_line()
                    if more == nil then break end
                    text = text .. '\n' .. more
                end
                local set = text:match('^%s*\\set%s+delimiter%s*(.-)%s*$')
                if set ~= nil and state.remote == nil then
                    delimiter = set
                    io.write('---\n...\n\n')
                else
                    local settings = session_settings()
                    settings.quit = nil
                    local reply = state:eval(text)
                    if reply ~= nil then io.write(reply, '\n') end
                    -- `\quit`: the console ends as at the end of its input.
                    if settings.quit then
                        settings.quit = nil
                        break
                    end
                end
            end
        end
    end
    local ok, err = pcall(with_state, state, run)
    started = false
    if not ok then
        io.stdout:flush()
        if stdin ~= nil then stdin:close() end
        error(err, 0)
    end
    io.stdout:flush()
    if stdin ~= nil then stdin:close() end
end

-- A console's listening socket, as 2.6's console.listen returns it (a socket
-- server): name() tells its address, close() stops accepting (its sessions go
-- on; a Unix socket's file is removed).
local console_server = {}
console_server.__index = console_server

-- `socket`: the descriptor of a socket already listening on the uri, to serve.
local function open_server(server, socket)
    local bound = box.internal.call_op('console_listen', server.uri, socket)
    local host, port = string.match(bound, '^(.*):(%d+)$')
    if host ~= nil and not string.find(bound, '/') then
        server.address = {host = host, port = tonumber(port), family = string.find(host, ':') and 'AF_INET6' or 'AF_INET',
                          type = 'SOCK_STREAM', protocol = 'tcp'}
    else
        server.address = {host = 'unix/', port = bound, family = 'AF_UNIX', type = 'SOCK_STREAM', protocol = 0}
    end
    server.bound = bound
end

local function open_or_closed(server)
    if server.closed then error('attempt to use closed socket', 3) end
end

function console_server:name()
    open_or_closed(self)
    if self.lua_server ~= nil then return self.lua_server:name() end
    if self.address == nil then return nil end
    local copy = {}
    for k, v in pairs(self.address) do copy[k] = v end
    return copy
end

-- shutdown(): stops accepting (the sessions go on); name() still tells the
-- address, and close() is still due, as with 2.6's listening socket.
function console_server:shutdown()
    open_or_closed(self)
    if self.lua_server ~= nil then return self.lua_server:shutdown() end
    if self.bound == nil or self.shut then return true end
    self.shut = true
    return box.internal.call_op('console_close', self.bound)
end

function console_server:close()
    open_or_closed(self)
    self.closed = true
    if self.lua_server ~= nil then return self.lua_server:close() end
    if self.bound == nil or self.shut then return true end
    return box.internal.call_op('console_close', self.bound)
end

console_server.__tostring = function(self)
    if self.closed then return 'console: closed' end
    return 'console: ' .. (self.bound or self.uri)
end

-- A console session served from Lua: 2.6's greeting, then each line (gathered
-- up to the delimiter) answered in the session's output format, until the
-- client goes.
local function serve_console(client)
    -- The fiber serving the client keeps its console's state, as 2.6's does:
    -- `fiber.find(id).storage.console` shows its socket, delimiter, prompt; and
    -- the client's settings (output, delimiter), its own.
    local settings = {delimiter = ''}
    local state = console_state(settings)
    state.client = client
    require('fiber').self().storage.console = state
    local version = string.match(_TARANTOOL or '', '^([^-]+)') or '2.6.0'
    client:write(string.format('%-63s\n%-63s\n', 'Tarantool ' .. version .. ' (Lua console)',
                               "type 'help' for interactive help"))
    while true do
        local line = client:read('\n')
        if line == nil or line == '' then break end
        local reply, quit = box.internal.console_line((string.gsub(line, '\n$', '')),
                                                      function(text) client:write(text) end)
        if reply ~= '' and not client:write(reply) then break end
        if quit then break end
    end
end

-- Before box.cfg there is no server to serve a console: it is served from Lua
-- (over the socket module, as 2.6 serves every console), from now on.
local function lua_server(server, uri)
    local parsed = require('uri').parse(uri)
    if parsed == nil or parsed.service == nil then error('Usage: console.listen("[host:]service")', 3) end
    local host = parsed.host or 'localhost'
    if parsed.unix ~= nil then host = 'unix/' end
    local port = parsed.unix or parsed.service
    local s, err = require('socket').tcp_server(host, port, {handler = serve_console, name = 'console'})
    if s == nil then
        error(string.format('failed to create server %s:%s: %s', host, port, err or require('errno').strerror()), 3)
    end
    server.lua_server = s
end

-- Consoles served from Lua until box.cfg.
local lua_served = {}

-- At box.cfg the server's console listener takes over the consoles served from
-- Lua so far, with their listening sockets: a client waiting to be accepted is
-- served by it, those accepted before stay with Lua.
function box.internal.console_take_over()
    for _, server in ipairs(lua_served) do
        local name = not server.closed and server.lua_server:name()
        -- (Nothing to take over from a server closed or shut down meanwhile.)
        local socket = name and server.lua_server:detach()
        if socket then
            server.lua_server = nil
            server.uri = name.host == 'unix/' and name.port or string.format('%s:%s', name.host, name.port)
            open_server(server, socket)
        end
    end
    lua_served = {}
end

function console.listen(uri)
    -- A scheme ('console://unix/:/path', as 2.6's uri.parse reads it) names no address.
    local server = setmetatable({uri = (string.gsub(tostring(uri), '^%a[%w+.-]*://', ''))}, console_server)
    if box.internal.op == nil then
        lua_server(server, server.uri)
        table.insert(lua_served, server)
    else
        open_server(server)
    end
    return server
end

package.loaded.console = console
-- Runs `f(...)` writing with the options `cfg` (nil: the console's).
local function with_options(cfg, f, ...)
    local saved = opts
    opts = cfg or CONSOLE_OPTIONS
    local ok, result = pcall(f, ...)
    opts = saved
    if not ok then error(result, 0) end
    return result
end

-- yaml.value(v, indent, col, cfg): one value's YAML text, for the yaml module's
-- encode, written with the serializer options `cfg`.
function yaml.value(v, indent, col, cfg)
    track_references({v}, 1)
    local ok, text = pcall(with_options, cfg, encode, v, indent, col)
    refs = nil
    if not ok then error(text, 0) end
    return text
end
-- Whether `v` is written in block style (a non-empty table with no flow hint),
-- with the serializer options `cfg`.
function yaml.is_block(v, cfg)
    return with_options(cfg, function()
        -- What __serialize gives is laid out instead.
        v = follow_hooks(v, opts.encode_load_metatables)
        if type(v) ~= 'table' or next(v) == nil or sequence_length(v, opts) == 0 then return false end
        return not flow_hinted(v)
    end)
end
-- yaml.flow(v): v in flow style (`[1, 'a', {'b': 2}]`), as Tarantool prints a tuple.
yaml.flow = flow
box.internal.yaml = yaml
-- What the console's Lua output (console_lua_output.lua) shares with YAML's.
box.internal.serializer_helpers = {
    is_null = is_null, scalar_of_cdata = scalar_of_cdata, cdata_integer = cdata_integer, is_extension = is_extension,
    follow_hooks = follow_hooks, sequence_length = sequence_length, is_printable_text = is_printable_text,
    number = number, is_fiber = is_fiber, repeated_tables = repeated_tables,
}

--------------------------------------------------------------------------------
-- json: encode and decode, as Tarantool's json module for common values.
--------------------------------------------------------------------------------

-- The options of a serializer instance, with 2.6's defaults (json.cfg shows them).
local SERIALIZER_OPTIONS = {
    encode_sparse_convert = true, encode_sparse_ratio = 2, encode_sparse_safe = 10,
    encode_max_depth = 128, encode_deep_as_nil = false, encode_invalid_numbers = true,
    encode_number_precision = 14, encode_load_metatables = true, encode_use_tostring = false,
    encode_invalid_as_nil = false, decode_invalid_numbers = true, decode_save_metatables = true,
    decode_max_depth = 128,
}

-- A serializer's `cfg`: its options as fields; called with a table, it sets the
-- options named there (other keys are ignored, as in 2.6), then calls
-- `applied(cfg)` (nil: nothing to tell).
local function serializer_cfg(applied)
    local cfg = {}
    for k, v in pairs(SERIALIZER_OPTIONS) do cfg[k] = v end
    return setmetatable(cfg, {__call = function(self, opts)
        if type(opts) ~= 'table' then
            error(string.format("bad argument #2 to '?' (table expected, got %s)", opts == nil and 'no value' or type(opts)), 2)
        end
        for k in pairs(SERIALIZER_OPTIONS) do
            if opts[k] ~= nil then self[k] = opts[k] end
        end
        if applied ~= nil then applied(self) end
    end})
end
box.internal.serializer_cfg = serializer_cfg

-- msgpack's cfg and new(). The module's own options are the default encoder's:
-- replies to CALL and EVAL and tuples made from tables follow them, as in 2.6.
-- (box.internal.native is bound after this file runs: it is looked up when used.)
do
    local msgpack, internal = package.loaded.msgpack, box.internal
    msgpack.cfg = serializer_cfg(function(cfg) internal.native.set_msgpack_options(cfg) end)
    -- A serializer with options of its own, at their defaults.
    function msgpack.new()
        local m = {}
        for k, v in pairs(msgpack) do m[k] = v end
        local holder = {}
        m.cfg = serializer_cfg(function(cfg) holder.options = internal.native.msgpack_options(cfg) end)
        holder.options = internal.native.msgpack_options(m.cfg)
        box.internal.msgpack_functions(m, holder)
        return m
    end
end

-- One encode or decode call's options: with `n` (2) arguments, the instance's
-- `cfg` with those in `opts` (a table) over them; with one, `cfg`.
local function call_options(cfg, n, opts)
    if n == 1 then return cfg end
    if type(opts) ~= 'table' then error(string.format('attempt to index a %s value', type(opts)), 0) end
    local o = {}
    for k in pairs(SERIALIZER_OPTIONS) do
        local v = opts[k]
        if v == nil then v = cfg[k] end
        o[k] = v
    end
    return o
end

local escapes = {['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f', ['\n'] = '\\n',
                 ['\r'] = '\\r', ['\t'] = '\\t', ['/'] = '\\/'}

local function escape(c) return escapes[c] or string.format('\\u%04x', string.byte(c)) end

local function json_string(s)
    -- (Most strings have nothing to escape: no gsub for them.)
    if not string.find(s, '[%c"\\/]') then return '"' .. s .. '"' end
    return '"' .. string.gsub(s, '[%c"\\/]', escape) .. '"'
end

-- A value that is no JSON value (a function, a userdata): its tostring() with
-- `encode_use_tostring`, null with `encode_invalid_as_nil`, else an error.
local function json_other(v, cfg)
    if cfg.encode_use_tostring then return json_string(tostring(v)) end
    if cfg.encode_invalid_as_nil then return 'null' end
    error("unsupported Lua type '" .. type_name(v) .. "'", 0)
end

local function json_number(v, cfg)
    if v ~= v or v == math.huge or v == -math.huge then
        if cfg.encode_invalid_numbers then return tostring(v) end
        if cfg.encode_invalid_as_nil then return 'null' end
        error('number must not be NaN or Inf', 0)
    end
    if v == 0 then return '0' end
    if math.floor(v) == v and v >= -2^63 and v < 2^64 then return string.format('%.0f', v) end
    return box.internal.native.format_number(v, cfg.encode_number_precision)
end

-- A map key as 2.6's encoder writes it: a string, or an integer (a number of
-- int64_t's or uint64_t's range, or a 64-bit cdata) in full; anything else, a
-- fractional number too, is refused.
local function json_key(k)
    if type(k) == 'string' then return k end
    if type(k) == 'number' and k == math.floor(k) and k >= -2^63 and k < 2^64 then
        return k == 0 and '0' or string.format('%.0f', k)
    end
    return cdata_integer(k) or error('table key must be a number or string', 0)
end

-- Appends `s` to `buf` as a JSON string.
local function put_json_string(buf, s)
    -- (Most strings have nothing to escape: no gsub for them.)
    if not string.find(s, '[%c"\\/]') then
        buf:put('"', s, '"')
    else
        buf:put('"', (string.gsub(s, '[%c"\\/]', escape)), '"')
    end
end

-- Appends the JSON text of `v` to `buf` (a string.buffer: nothing is joined
-- twice, however deep the value).
local function json_put(buf, v, depth, cfg)
    -- Plain strings, numbers and booleans first: most values are, and none of the
    -- checks below (nulls, cdata, extensions, tuples, hooks) concerns them.
    local plain = type(v)
    if plain == 'string' then return put_json_string(buf, v) end
    if plain == 'number' then return buf:put(json_number(v, cfg)) end
    if plain == 'boolean' then return buf:put(v and 'true' or 'false') end
    -- nil, a `void *` NULL (box.NULL) or a NULL light userdata, as lua-cjson has
    -- them; a NULL of another pointer type is a cdata it has no form for.
    if rawequal(v, nil) or ((plain == 'userdata' or (plain == 'cdata' and ffi.istype('void *', v))) and v == box.NULL) then
        return buf:put('null')
    end
    v = scalar_of_cdata(v)
    local ty = type(v)
    if ty == 'boolean' then return buf:put(tostring(v)) end
    if ty == 'number' then return buf:put(json_number(v, cfg)) end
    if ty == 'string' then return put_json_string(buf, v) end
    local digits = cdata_integer(v)
    if digits then return buf:put(digits) end
    if is_extension(v) then return put_json_string(buf, tostring(v)) end
    if box.tuple.is(v) then v = v:totable() end
    -- A cdata's or userdata's __serialize counts under encode_load_metatables;
    -- a ctype's never does (2.6's gh-1226).
    local hooked = follow_hooks(v, cfg.encode_load_metatables)
    if not rawequal(hooked, v) then return json_put(buf, hooked, depth, cfg) end
    if type(v) ~= 'table' or is_fiber(v) then return buf:put(json_other(v, cfg)) end
    if depth >= cfg.encode_max_depth then
        if cfg.encode_deep_as_nil then return buf:put('null') end
        error('Too high nest level', 0)
    end
    local n = sequence_length(v, cfg)
    if n then
        buf:put('[')
        for i = 1, n do
            if i > 1 then buf:put(',') end
            json_put(buf, v[i], depth + 1, cfg)
        end
        return buf:put(']')
    end
    buf:put('{')
    local first = true
    for k, x in pairs(v) do
        if not first then buf:put(',') end
        first = false
        put_json_string(buf, json_key(k))
        buf:put(':')
        json_put(buf, x, depth + 1, cfg)
    end
    buf:put('}')
end

-- The buffer json.encode writes into, kept from call to call; a call made while
-- it is in use (by a __serialize hook that encodes) takes a new one.
local json_buffer, json_buffer_busy = require('string.buffer').new(), false
-- Past this size a kept buffer gives its memory back.
local JSON_BUFFER_KEPT = 1048576

-- The JSON text of `v` with the options `cfg`: true and the text, or false and
-- the error raised.
local json_plain -- box.internal.native's, once it is there
local function json_encode(v, cfg)
    -- Plain data is written in one call by src/lua/plain_json.rs; it gives up
    -- (nil) on anything this encoder has a rule of its own for.
    json_plain = json_plain or box.internal.native.json_plain
    if type(v) == 'table' and type(cfg.encode_number_precision) == 'number' then
        local text = json_plain(v, cfg.encode_number_precision, cfg.encode_max_depth, cfg.encode_sparse_convert,
            cfg.encode_sparse_ratio, cfg.encode_sparse_safe, cfg.encode_load_metatables)
        if text ~= nil then return true, text end
    end
    local buf = json_buffer_busy and require('string.buffer').new() or json_buffer
    local busy = json_buffer_busy
    json_buffer_busy = true
    buf:reset()
    local ok, err = pcall(json_put, buf, v, 0, cfg)
    json_buffer_busy = busy
    local text = ok and buf:tostring() or err
    if #buf > JSON_BUFFER_KEPT then buf:free() else buf:reset() end
    return ok, text
end

local function utf8_char(cp)
    if cp < 0x80 then return string.char(cp) end
    if cp < 0x800 then return string.char(0xC0 + math.floor(cp / 64), 0x80 + cp % 64) end
    if cp < 0x10000 then
        return string.char(0xE0 + math.floor(cp / 4096), 0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
    end
    return string.char(0xF0 + math.floor(cp / 262144), 0x80 + math.floor(cp / 4096) % 64,
        0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
end

-- yaml.lua's double-quoted strings encode their \u escapes with it too.
box.internal.utf8_char = utf8_char

-- What lua-cjson raises itself (before a quoted type name), at the caller's line.
local JSON_REFUSALS = {['Too high nest level'] = true, ['table key must be a number or string'] = true,
    ['unsupported Lua type '] = true}

-- A json serializer: `cfg` and the functions that follow it. array_mt and map_mt
-- (shared with msgpack and yaml) are the module's, set from Rust.
local function new_json()
    local json = {NULL = box.NULL, null = box.NULL, cfg = serializer_cfg()}
    local module = package.loaded.json
    if module ~= nil then json.array_mt, json.map_mt = module.array_mt, module.map_mt end

    -- A bad argument as 2.6's C functions report one (luaL_argerror): named as the
    -- caller called the function, at the calling Lua line.
    local function bad_argument(why)
        error(string.format("bad argument #1 to '%s' (%s)", debug.getinfo(2, 'n').name or '?', why), 3)
    end

    function json.encode(...)
        local n, v, opts = select('#', ...), ...
        if n ~= 1 and n ~= 2 then bad_argument('expected 1 or 2 arguments') end
        local ok, r = json_encode(v, call_options(json.cfg, n, opts))
        if ok then return r end
        -- lua-cjson's own refusals are raised at the caller's line (luaL_error),
        -- the serializer's (sparse arrays, NaN, __serialize) and hooks' as they are.
        error(r, type(r) == 'string' and JSON_REFUSALS[r:match("^[^']*")] and 2 or 0)
    end

    function json.decode(...)
        local n, s, opts = select('#', ...), ...
        if n ~= 1 and n ~= 2 then bad_argument('expected 1 or 2 arguments') end
        if type(s) == 'number' then s = tostring(s) end
        if type(s) ~= 'string' then bad_argument(string.format('string expected, got %s', type(s))) end
        local cfg = call_options(json.cfg, n, opts)
        -- The reader is src/lua/json_decode.rs: lua-cjson's tokens, numbers and
        -- messages, raised at the caller's line as lua-cjson's luaL_error raises them.
        local v, why = box.internal.native.json_decode(s, cfg.decode_max_depth,
            cfg.decode_invalid_numbers, cfg.decode_save_metatables)
        if why == nil then return v end
        error(why, 2)
    end

    -- A new serializer with options of its own, at their defaults.
    json.new = new_json
    return json
end

package.loaded.json = new_json()

--------------------------------------------------------------------------------
-- uuid (fiber is lua/fiber.lua).
--------------------------------------------------------------------------------


-- uuid is lua/uuid.lua (a struct tt_uuid cdata, as in 2.6).
