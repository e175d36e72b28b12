-- console: `require('console').eval(line)` as `tarantoolctl connect` uses it, with
-- results rendered as YAML the way Tarantool 2.6's console renders them.

local yaml = {}

-- The plain scalars Tarantool's emitter quotes (besides numbers): the ones its decoder resolves.
local special_words = {['null'] = true, ['~'] = true, ['true'] = true, ['false'] = true, ['yes'] = true, ['no'] = true}

-- libyaml's line width: a single-quoted scalar breaks at a space past this column.
local BEST_WIDTH = 80

-- `indent`: indentation of continuation lines; `col`: column where the scalar starts.
local function single_quoted(s, indent, col)
    local out = {"'"}
    local column = (col or indent) + 1
    local n = #s
    for i = 1, n do
        local c = string.sub(s, i, i)
        if c == ' ' and column > BEST_WIDTH and i > 1 and i < n and string.sub(s, i + 1, i + 1) ~= ' '
                and string.sub(s, i - 1, i - 1) ~= ' ' then
            out[#out + 1] = '\n' .. string.rep(' ', indent)
            column = indent
        elseif c == '\n' then
            -- A line break in a single-quoted scalar is written as an empty line.
            out[#out + 1] = '\n\n' .. string.rep(' ', indent)
            column = indent
        elseif c == "'" then
            out[#out + 1] = "''"
            column = column + 2
        else
            out[#out + 1] = c
            column = column + 1
        end
    end
    out[#out + 1] = "'"
    return table.concat(out)
end

local function double_quoted(s)
    local escaped = string.gsub(s, '[%c"\\]', function(c)
        local map = {['\t'] = '\\t', ['\n'] = '\\n', ['\r'] = '\\r', ['"'] = '\\"', ['\\'] = '\\\\'}
        return map[c] or string.format('\\x%02X', string.byte(c))
    end)
    return '"' .. escaped .. '"'
end

-- A plain scalar, folded at a space past the line width as libyaml does.
local function plain(s, indent, col)
    if col == nil or col + #s <= BEST_WIDTH or not string.find(s, ' ') then return s end
    local out, column, n = {}, col, #s
    for i = 1, n do
        local c = string.sub(s, i, i)
        if c == ' ' and column > BEST_WIDTH and i > 1 and i < n and string.sub(s, i + 1, i + 1) ~= ' '
                and string.sub(s, i - 1, i - 1) ~= ' ' then
            out[#out + 1] = '\n' .. string.rep(' ', indent)
            column = indent
        else
            out[#out + 1] = c
            column = column + 1
        end
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
    if string.find(s, '[%z\1-\9\11-\31\127]') then return double_quoted(s) end
    if flow then return single_quoted(s, indent, col) end
    if s == '' then return '' end
    -- As libyaml: a space before a line break only survives double quotes.
    if string.find(s, ' \n') then return double_quoted(s) end
    -- As Tarantool: text with an empty line is written as a literal block.
    if string.find(s, '\n\n') and string.sub(s, -1) ~= ' ' then return literal(s, indent) end
    if string.find(s, '\n ') then return double_quoted(s) end
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

-- The digits of a 64-bit integer cdata (`5ULL`, `-5LL`), or nil.
local function cdata_integer(v)
    if type(v) ~= 'cdata' then return nil end
    return string.match(tostring(v), '^(-?%d+)U?LL$')
end

-- As Tarantool: integral values in the 64-bit range in full, others with 14 digits (inf, nan as printf).
local function number(n)
    if n ~= n then
        -- printf writes a NaN's sign, and LuaJIT's own 0/0 is negative: '-nan'.
        local ffi = require('ffi')
        local negative = ffi.cast('uint64_t *', ffi.new('double[1]', n))[0] >= 0x8000000000000000ULL
        return negative and '-nan' or 'nan'
    end
    if n == 0 then return '0' end
    if n == math.floor(n) and n >= -2^63 and n < 2^64 then return string.format('%.0f', n) end
    return string.format('%.14g', n)
end

-- A table's length as an array, or nil for a map. As Tarantool: only positive
-- integer keys make an array, holes are nulls, but an excessively sparse one
-- (largest key over 10 and over twice the key count) is a map.
local function sequence_length(t)
    local mt = getmetatable(t)
    if mt and mt.__serialize then
        local s = mt.__serialize
        if s == 'seq' or s == 'sequence' or s == 'array' then return #t end
        if s == 'map' or s == 'mapping' then return nil end
    end
    local count, max = 0, 0
    for k in pairs(t) do
        if type(k) ~= 'number' or k < 1 or k ~= math.floor(k) then return nil end
        count = count + 1
        if k > max then max = k end
    end
    if max > 10 and max > 2 * count then return nil end
    return max
end

local function is_sequence(t) return sequence_length(t) ~= nil end

local encode

local function flow(v)
    if is_null(v) then return 'null' end
    local ty = type(v)
    if ty == 'boolean' then return tostring(v) end
    if ty == 'number' then return number(v) end
    if cdata_integer(v) then return cdata_integer(v) end
    if ty == 'string' then return string_scalar(v, true, 0) end
    if box.tuple.is(v) then v = v:totable() end
    if type(v) ~= 'table' then return single_quoted(tostring(v), 0) end
    local parts = {}
    local n = sequence_length(v)
    if n then
        for i = 1, n do parts[i] = flow(v[i]) end
        return '[' .. table.concat(parts, ', ') .. ']'
    end
    for k, x in pairs(v) do parts[#parts + 1] = flow(k) .. ': ' .. flow(x) end
    return '{' .. table.concat(parts, ', ') .. '}'
end

-- Renders `v` at `indent`; returns the text that follows "- " or "key: ", which
-- starts at column `col` (default `indent`).
encode = function(v, indent, col)
    if is_null(v) then return 'null' end
    local ty = type(v)
    if ty == 'boolean' then return tostring(v) end
    if ty == 'number' then return number(v) end
    if cdata_integer(v) then return cdata_integer(v) end
    if ty == 'string' then return string_scalar(v, false, indent, col or indent) end
    if box.tuple.is(v) then return flow(v) end
    if ty ~= 'table' then return string_scalar(tostring(v), false, indent, col or indent) end
    -- As in Tarantool, `__serialize = 'seq'` or 'map' asks for flow style
    -- ('sequence' and 'mapping' for block style).
    local mt = getmetatable(v)
    if mt and (mt.__serialize == 'seq' or mt.__serialize == 'map') then return flow(v) end
    local pad = string.rep(' ', indent)
    local n = sequence_length(v)
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
        -- A key is never wrapped (a huge negative column) and an empty one is quoted.
        local key = type(k) == 'string' and (k == '' and "''" or string_scalar(k, false, indent, -1e9)) or flow(k)
        local prefix = (#lines == 0 and '' or pad) .. key .. ':'
        if type(k) == 'string' and string.find(k, '\n') then
            -- A multi-line key is a complex key: "? key" then ": value" (a block value compacted).
            lines[#lines + 1] = (#lines == 0 and '' or pad) .. '? ' .. string_scalar(k, false, indent + 2, indent + 2)
                .. '\n' .. pad .. ': ' .. encode(x, indent + 2, indent + 2)
        elseif type(x) == 'table' and not box.tuple.is(x) and next(x) ~= nil then
            if is_sequence(x) then
                lines[#lines + 1] = prefix .. '\n' .. pad .. encode(x, indent)
            else
                lines[#lines + 1] = prefix .. '\n' .. pad .. '  ' .. encode(x, indent + 2)
            end
        else
            local item = encode(x, indent + 2, indent + #key + 2)
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
    for i = 1, n do
        local item = encode(values[i], 2)
        out[#out + 1] = item == '' and '-' or '- ' .. item
    end
    out[#out + 1] = '...\n'
    return table.concat(out, '\n')
end

local console = {}

-- Runs one console line: as an expression first (`return <line>`), else as a statement.
function console.eval(line)
    line = line or ''
    local fn, err = loadstring('return ' .. line)
    if fn == nil then fn, err = loadstring(line) end
    if fn == nil then return yaml.document({{error = err}}, 1) end
    local r = (function(...) return {n = select('#', ...), ...} end)(pcall(fn))
    if not r[1] then
        local e = r[2]
        if type(e) == 'table' and e.message ~= nil then e = e.message end
        return yaml.document({{error = tostring(e)}}, 1)
    end
    return yaml.document({unpack(r, 2, r.n)}, r.n - 1)
end

function console.completion_handler() return {} end

local pending = {}

-- Before box.cfg there is no server yet: the console opens right after it boots.
function console.listen(uri)
    if box.internal.op == nil then
        table.insert(pending, tostring(uri))
        return
    end
    return box.internal.call_op('console_listen', tostring(uri))
end

function box.internal.open_pending_consoles()
    for _, uri in ipairs(pending) do box.internal.call_op('console_listen', uri) end
    pending = {}
end

package.loaded.console = console
-- yaml.value(v, indent, col): one value's YAML text, for the yaml module's encode.
yaml.value = encode
-- yaml.flow(v): v in flow style (`[1, 'a', {'b': 2}]`), as Tarantool prints a tuple.
yaml.flow = flow
box.internal.yaml = yaml

--------------------------------------------------------------------------------
-- json: encode and decode, as Tarantool's json module for common values.
--------------------------------------------------------------------------------

local json = {NULL = box.NULL}

local escapes = {['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f', ['\n'] = '\\n',
                 ['\r'] = '\\r', ['\t'] = '\\t', ['/'] = '\\/'}

local function json_string(s)
    return '"' .. string.gsub(s, '[%c"\\/]', function(c)
        return escapes[c] or string.format('\\u%04x', string.byte(c))
    end) .. '"'
end

local function json_encode(v, depth)
    if depth > 128 then error('json.encode: too deeply nested', 0) end
    if is_null(v) then return 'null' end
    local ty = type(v)
    if ty == 'boolean' then return tostring(v) end
    if ty == 'number' then
        if v ~= v or v == math.huge or v == -math.huge then return tostring(v) end
        if v == 0 then return '0' end
        if math.floor(v) == v and v >= -2^63 and v < 2^64 then return string.format('%.0f', v) end
        return string.format('%.14g', v)
    end
    if ty == 'string' then return json_string(v) end
    if cdata_integer(v) then return cdata_integer(v) end
    if box.tuple.is(v) then v = v:totable() end
    if type(v) ~= 'table' then error("json.encode: unsupported Lua type '" .. type(v) .. "'", 0) end
    local parts = {}
    local n = sequence_length(v)
    if n then
        for i = 1, n do parts[i] = json_encode(v[i], depth + 1) end
        return '[' .. table.concat(parts, ',') .. ']'
    end
    for k, x in pairs(v) do
        parts[#parts + 1] = json_string(tostring(k)) .. ':' .. json_encode(x, depth + 1)
    end
    return '{' .. table.concat(parts, ',') .. '}'
end

function json.encode(v) return json_encode(v, 0) end

-- An integer literal of magnitude 10^14 or more, as 2.6 decodes it: an int64_t
-- cdata (`5LL`), or uint64_t past int64's range, saturating at either end.
local function json_big_integer(num)
    local ffi = require('ffi')
    local negative = string.sub(num, 1, 1) == '-'
    local max = negative and 9223372036854775808ULL or 18446744073709551615ULL
    local v = 0ULL
    for i = negative and 2 or 1, #num do
        local d = string.byte(num, i) - 48
        if v > (max - d) / 10 then return negative and ffi.cast('int64_t', 0ULL - max) or max end
        v = v * 10 + d
    end
    if negative then return ffi.cast('int64_t', 0ULL - v) end
    if v > 9223372036854775807ULL then return v end
    return ffi.cast('int64_t', v)
end

function json.decode(s)
    if type(s) ~= 'string' then error('json.decode: expected a string', 0) end
    local pos = 1
    local function fail(what) error(string.format("json.decode: %s at character %d", what, pos), 0) end
    local function ws() pos = string.find(s, '[^ \t\r\n]', pos) or #s + 1 end
    local value
    local function str()
        pos = pos + 1
        local out = {}
        while true do
            local c = string.sub(s, pos, pos)
            if c == '' then fail('unterminated string') end
            if c == '"' then pos = pos + 1 break end
            if c == '\\' then
                local e = string.sub(s, pos + 1, pos + 1)
                local map = {b = '\b', f = '\f', n = '\n', r = '\r', t = '\t', ['"'] = '"', ['\\'] = '\\', ['/'] = '/'}
                if map[e] then
                    out[#out + 1] = map[e]
                    pos = pos + 2
                elseif e == 'u' then
                    local code = tonumber(string.sub(s, pos + 2, pos + 5), 16) or fail('bad \\u escape')
                    if code < 0x80 then
                        out[#out + 1] = string.char(code)
                    elseif code < 0x800 then
                        out[#out + 1] = string.char(0xC0 + math.floor(code / 64), 0x80 + code % 64)
                    else
                        out[#out + 1] = string.char(0xE0 + math.floor(code / 4096), 0x80 + math.floor(code / 64) % 64,
                                                    0x80 + code % 64)
                    end
                    pos = pos + 6
                else
                    fail('bad escape')
                end
            else
                out[#out + 1] = c
                pos = pos + 1
            end
        end
        return table.concat(out)
    end
    value = function(depth)
        if depth > 128 then fail('too deeply nested') end
        ws()
        local c = string.sub(s, pos, pos)
        if c == '{' then
            pos = pos + 1
            local t = setmetatable({}, {__serialize = 'map'})
            ws()
            if string.sub(s, pos, pos) == '}' then pos = pos + 1 return t end
            while true do
                ws()
                if string.sub(s, pos, pos) ~= '"' then fail('expected a key') end
                local k = str()
                ws()
                if string.sub(s, pos, pos) ~= ':' then fail("expected ':'") end
                pos = pos + 1
                t[k] = value(depth + 1)
                ws()
                local d = string.sub(s, pos, pos)
                pos = pos + 1
                if d == '}' then return t end
                if d ~= ',' then fail("expected ',' or '}'") end
            end
        elseif c == '[' then
            pos = pos + 1
            local t = setmetatable({}, {__serialize = 'seq'})
            ws()
            if string.sub(s, pos, pos) == ']' then pos = pos + 1 return t end
            local n = 0
            while true do
                n = n + 1
                t[n] = value(depth + 1)
                ws()
                local d = string.sub(s, pos, pos)
                pos = pos + 1
                if d == ']' then return t end
                if d ~= ',' then fail("expected ',' or ']'") end
            end
        elseif c == '"' then
            return str()
        elseif string.find(s, '^true', pos) then
            pos = pos + 4
            return true
        elseif string.find(s, '^false', pos) then
            pos = pos + 5
            return false
        elseif string.find(s, '^null', pos) then
            pos = pos + 4
            return box.NULL
        else
            local num = string.match(s, '^-?%d+%.?%d*[eE]?[-+]?%d*', pos)
            if num == nil or num == '' then fail('unexpected symbol') end
            pos = pos + #num
            local n = tonumber(num)
            if n ~= nil and (n >= 1e14 or n <= -1e14) and not string.find(num, '[.eE]') then
                return json_big_integer(num)
            end
            return n
        end
    end
    local v = value(0)
    ws()
    if pos <= #s then fail('trailing garbage') end
    return v
end

package.loaded.json = json

--------------------------------------------------------------------------------
-- uuid (fiber is lua/fiber.lua).
--------------------------------------------------------------------------------


-- uuid: values are MP_EXT type 2, sent to clients and stored as uuids.
local uuid_make = box.internal.uuid_make
local uuid = setmetatable({}, {__call = function() return uuid_make('new') end})
function uuid.new() return uuid_make('new') end
function uuid.str() return tostring(uuid_make('new')) end
function uuid.bin() return uuid_make('new'):bin() end
function uuid.fromstr(s) return uuid_make('fromstr', s) end
function uuid.frombin(b) return uuid_make('frombin', b) end
uuid.NULL = uuid_make('fromstr', '00000000-0000-0000-0000-000000000000')
package.loaded.uuid = uuid
