-- console: `require('console').eval(line)` as `tarantoolctl connect` uses it, with
-- results rendered as YAML the way Tarantool 2.6's console renders them.

local yaml = {}

local special_words = {
    ['null'] = true, ['Null'] = true, ['NULL'] = true, ['~'] = true, ['true'] = true, ['True'] = true,
    ['TRUE'] = true, ['false'] = true, ['False'] = true, ['FALSE'] = true, ['yes'] = true, ['Yes'] = true,
    ['YES'] = true, ['no'] = true, ['No'] = true, ['NO'] = true, ['on'] = true, ['On'] = true, ['ON'] = true,
    ['off'] = true, ['Off'] = true, ['OFF'] = true, ['y'] = true, ['n'] = true,
}

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

local function string_scalar(s, flow, indent, col)
    if string.find(s, '[%z\1-\9\11-\31\127]') then return double_quoted(s) end
    if flow then return single_quoted(s, indent, col) end
    if s == '' then return '' end
    if string.find(s, '\n') then return single_quoted(s, indent, col) end
    if special_words[s] or tonumber(s) ~= nil or string.find(s, '^[%-%?:,%[%]{}#&%*!|>\'"%%@`%s]')
            or string.find(s, ': ') or string.find(s, ' #') or string.find(s, '%s$') or string.find(s, ':$') then
        return single_quoted(s, indent, col)
    end
    return s
end

local function is_null(v) return v == nil or v == box.NULL end

local function number(n)
    if n ~= n then return '.nan' end
    if n == math.huge then return '.inf' end
    if n == -math.huge then return '-.inf' end
    return string.format('%.14g', n)
end

local function is_sequence(t)
    local mt = getmetatable(t)
    if mt and mt.__serialize then
        local s = mt.__serialize
        if s == 'seq' or s == 'sequence' or s == 'array' then return true end
        if s == 'map' or s == 'mapping' then return false end
    end
    local n = 0
    for _ in pairs(t) do n = n + 1 end
    return n == #t
end

local encode

local function flow(v)
    if is_null(v) then return 'null' end
    local ty = type(v)
    if ty == 'boolean' then return tostring(v) end
    if ty == 'number' then return number(v) end
    if ty == 'string' then return string_scalar(v, true, 0) end
    if box.tuple.is(v) then v = v:totable() end
    if type(v) ~= 'table' then return tostring(v) end
    local parts = {}
    if is_sequence(v) then
        for i = 1, #v do parts[i] = flow(v[i]) end
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
    if ty == 'string' then return string_scalar(v, false, indent, col or indent) end
    if box.tuple.is(v) then return flow(v) end
    if ty ~= 'table' then return tostring(v) end
    local pad = string.rep(' ', indent)
    if is_sequence(v) then
        if #v == 0 then return '[]' end
        local lines = {}
        for i = 1, #v do
            local item = encode(v[i], indent + 2)
            -- An empty plain scalar follows the dash directly, as libyaml writes it.
            lines[i] = (i == 1 and '' or pad) .. (item == '' and '-' or '- ' .. item)
        end
        return table.concat(lines, '\n')
    end
    local lines = {}
    for k, x in pairs(v) do
        local key = type(k) == 'string' and string_scalar(k, false, indent) or flow(k)
        local prefix = (#lines == 0 and '' or pad) .. key .. ':'
        if type(x) == 'table' and not box.tuple.is(x) and next(x) ~= nil then
            if is_sequence(x) then
                lines[#lines + 1] = prefix .. '\n' .. pad .. encode(x, indent)
            else
                lines[#lines + 1] = prefix .. '\n' .. pad .. '  ' .. encode(x, indent + 2)
            end
        else
            lines[#lines + 1] = prefix .. ' ' .. encode(x, indent + 2, indent + #key + 2)
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

function console.listen(uri)
    return box.internal.call_op('console_listen', tostring(uri))
end

package.loaded.console = console
box.internal.yaml = yaml
