-- yaml.decode on well-formed and malformed documents, as 2.6 (libyaml 0.2.5 and its
-- loader) reads them: values, and errors word for word ("... at document: D,
-- line: L, column: C" and the "while ..." context line). Written cases first, then
-- documents made by a small generator (block and flow collections, every scalar
-- style, comments, anchors, tags, document markers) and copies of them with a
-- few characters inserted, deleted or re-indented. A fixed-seed LCG drives it, so
-- both servers read the same texts. Run on Tarantool 2.6 and on oncebox; the lines
-- must match.
local yaml = require('yaml')

local function show(v, seen)
    if type(v) == 'string' then return string.format('%q', v) end
    if type(v) ~= 'table' then return type(v) .. ':' .. tostring(v) end
    seen = seen or {}
    if seen[v] then return '<seen>' end
    seen[v] = true
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return show(a, {}) < show(b, {}) end)
    local parts = {}
    for _, k in ipairs(keys) do parts[#parts + 1] = show(k, seen) .. '=' .. show(v[k], seen) end
    return '{' .. table.concat(parts, ', ') .. '}'
end

local big = string.rep('k: v\n', 4000)
local cases = {
    '%YAML 1.1\n--- a', '%YAML 1.2\n--- a', '%YAML 2.0\n--- a', '%YAML 1.1\n%YAML 1.1\n--- a', '%YAML 1.x\n--- a',
    '%YAML 1234567890.1\n--- a', '%TAG !e! tag:e.com,2000:\n--- !e!foo bar',
    '%TAG !e! tag:e.com,2000:\n%TAG !e! x:\n--- a',
    '%FOO bar\n--- a', '%TAG e! x\n--- a', '%TAG !e! x y\n--- a', '--- !u!x a', '!<tag:yaml.org,2002:int> 12',
    '!<tag:yaml.org,2002:str> 12', '!<x,y[z]> 1', '[!!str, a]', '[!!int 1, !!str]', '{!!str : a}', '! 12', '!foo 12',
    '!foo "12"', '!!binary aGVsbG8=', '!!binary |\n  aGVs\n  bG8=', 'a: !!binary', '--- a\n--- b\n...\n--- c',
    'a\n--- b', '--- a\n...\nb', '...', '--- \n...', '', '# only a comment', '---', '\239\187\191a: 1',
    'a: 1\194\133b: 2', 'a: "x\226\128\168y"', 'a: \1', 'a: \255', 'a: \192\128', 'a: \237\160\128', 'a: \226\130',
    big .. 'x: \1', string.rep('x', 2000) .. ': 1', 'a: ' .. string.rep('x', 2000),
    '{' .. string.rep('k', 1100) .. ': 1}',
    '&a a: *a', 'a: &x 1\nb: *x', 'a: &x\nb: *x', 'a: &x ""\nb: *x', '*x', '- &a [1]\n- *a\n- &a [2]\n- *a',
    'a: |0\n  x', 'a: |10\n  x', 'a: |2-\n    x\n', 'a: >1\n  x\n y', 'a: |\n\tx', 'a:\t1', '- a\n\t- b', 'a: b: c',
    '- a\nb: c', 'a: [1, 2', 'a: {b: 1', '[1]]', "a: 'x", 'a: "x', 'a: "\\q"', 'a: "\\uD800"', 'a: "\\U00110000"',
    'a: "\\x4"', '? a\n? b\n: c', '? - a\n  - b\n: x', '[a: 1, b: 2]', '[? a : 1]', '{a, b: 2}', '{a: 1, a: 2}',
    'null: 1\n~: 2', '1: a\n1.0: b', 'a: b\n  c: d', 'a:\n  - b\n  c: d', '- - - x', '-\n-\n-', 'a: -1e400',
    'a: 1e400', 'a: -0', 'a: 18446744073709551616', 'a: -9223372036854775809', 'a: 0x7FFFFFFFFFFFFFFF', 'a: 1_0',
    'a: +.inf', 'a: .NaN', '@x', '`x', 'a: @x', '- %x', 'a: !x!y z', '"a"\n"b"', "'a' 'b'", 'a:\n b\n  c',
    '  a: 1\n b: 2', 'a: 1 # c\n# d\nb: 2 #e', 'key:    value   ', 'a: "multi\n  line\n\n  text"', "a: 'x\n\n\n  y'",
    '- >-\n  a\n  b\n\n  c\n', '- |+\n  a\n\n', 'a: \r\n  b\r\n', '--- |\n  a\n--- >\n  b', '---\n---\n',
    '--- [\n---\n]', '"a\n---\nb"', "'a\n...\nb'", 'a: !!int 12\n  34', 'a: !!float 0x1}F', 'a: !!float 0b101',
    '{a: [1, 2], b: {c: d}}', '- [a, {b: c}]\n- {d: [e]}', 'a: "\\\n  b"', 'a: "x\\\n\n  y"',
}

-- A linear congruential generator (the same numbers on every Lua).
local state = 12345
local function rand(n)
    state = (state * 1103515245 + 12345) % 2147483648
    return math.floor(state / 65536) % n + 1
end
local function pick(list) return list[rand(#list)] end
local function chance(percent) return rand(100) <= percent end

local WORDS = {'a', 'b', 'key', 'x y', 'hello world', 'foo-bar', 'a:b', 'http://h/p', 'a#b', '1', '-2', '3.5', '1e3',
               '0x1F', 'null', '~', 'true', 'False', 'yes', 'no', 'on', '.inf', '-.inf', '.nan', '007', '+12',
               '\195\188n\195\175', 'tab\there', 'a, b', 'a]b', '?x', '-x', '_', 'NULL', 'TRUE', '12:30', "q'q"}
local QUOTED = {'a', ' ', 'b', "'", '"', '\\', '\n', '\195\169', ':', '#', '\t', 'x'}
local ESCAPES = {'\\n', '\\t', '\\"', '\\\\', '\\x41', '\\u00e9', '\\0', '\\/', '\\ ', '\\e', '\\N', '\\_', '\\L',
                 '\\U0001F600', '\\a', '\\b', '\\r', '\\v', '\\f', '\\\n  '}
local INSERTS = {':', '-', '?', '[', ']', '{', '}', ',', '#', '&', '*', '!', '|', '>', "'", '"', '%', '\t', '\n', ' ',
                 '\\', '@', '`', '---', '...', '\n  ', '\n- ', ': ', '\r\n', '\194\133', '\226\128\168', '\1',
                 '&a ', '*a', '!!', '%YAML 1.1\n', '%TAG ! tag:x,1:\n', '\239\187\191'}

local function plain(flow)
    while true do
        local w = pick(WORDS)
        if not (flow and string.find(w, '[,%[%]{}]')) then return w end
    end
end
local function single_quoted()
    local parts = {}
    for i = 1, rand(7) - 1 do parts[i] = pick(QUOTED) end
    local text = string.gsub(table.concat(parts), "'", "''")
    return "'" .. string.gsub(text, '\n', chance(50) and '\n  ' or '\n\n ') .. "'"
end
local function double_quoted()
    local parts = {}
    for i = 1, rand(6) - 1 do
        parts[i] = chance(35) and pick(ESCAPES) or chance(10) and '\n  ' or pick({'a', ' ', 'b c', "'", ':', '#'})
    end
    return '"' .. table.concat(parts) .. '"'
end
local function scalar(flow)
    if chance(55) then return plain(flow) end
    if chance(45) then return single_quoted() end
    return double_quoted()
end
local function flow(depth)
    if depth > 2 or chance(40) then return scalar(true) end
    local items = {}
    if chance(50) then
        for i = 1, rand(4) - 1 do items[i] = flow(depth + 1) end
        local separator = pick({', ', ',', ' , ', ',\n  '})
        return '[' .. table.concat(items, separator) .. (#items > 0 and chance(30) and ',' or '') .. ']'
    end
    for i = 1, rand(4) - 1 do
        items[i] = chance(10) and scalar(true) or scalar(true) .. pick({': ', ':  '}) .. flow(depth + 1)
    end
    return '{' .. table.concat(items, ', ') .. '}'
end
local block, sequence
-- A value after "key:" or "-": (the text on the line, the lines below).
local function value(indent, depth)
    local r = rand(100)
    if depth < 3 and r <= 25 then return '', block(indent + pick({1, 2, 4}), depth + 1) end
    if depth < 3 and r <= 30 then return '', sequence(indent, depth + 1) end
    if r <= 40 then return flow(0), {} end
    if r <= 47 then
        local lines = {}
        for i = 1, rand(5) - 1 do
            lines[i] = chance(20) and '' or string.rep(' ', indent + 2)
                .. pick({'text', 'a b', '# not comment', 'x: y', '- z', '  more indented'})
        end
        return pick({'|', '>', '|-', '>-', '|+', '>+'}) .. (chance(30) and '  # c' or ''), lines
    end
    if r <= 52 then return plain(), {string.rep(' ', indent + 2) .. plain()} end
    if r <= 55 then return '', {} end
    if r <= 60 then return '&' .. pick({'a1', 'b2'}) .. ' ' .. scalar(), {} end
    if r <= 64 then return '*a1', {} end
    if r <= 67 then return pick({'!!str ', '!!int ', '!!float ', '!!bool '}) .. plain(), {} end
    return scalar() .. (chance(15) and '  # comment' or ''), {}
end
local function append(out, first, rest)
    out[#out + 1] = first
    for _, l in ipairs(rest) do out[#out + 1] = l end
end
function block(indent, depth)
    local out, used = {}, {}
    for _ = 1, rand(3) do
        local key = scalar()
        if string.find(key, '\n') then key = plain() end
        if not used[key] then
            used[key] = true
            local v, below = value(indent, depth)
            if chance(5) then
                out[#out + 1] = string.rep(' ', indent) .. '? ' .. key
                append(out, string.rep(' ', indent) .. ':' .. (v ~= '' and ' ' .. v or ''), below)
            else
                append(out, string.rep(' ', indent) .. key .. ':' .. (v ~= '' and ' ' .. v or ''), below)
            end
            if chance(10) then out[#out + 1] = string.rep(' ', rand(indent + 1) - 1) .. '# own-line comment' end
        end
    end
    return out
end
function sequence(indent, depth)
    local out = {}
    for _ = 1, rand(3) do
        local r = rand(100)
        if depth < 3 and r <= 30 then
            local nested = r <= 20 and block(indent + 2, depth + 1) or sequence(indent + 2, depth + 1)
            nested[1] = string.rep(' ', indent) .. '- ' .. string.sub(nested[1], indent + 3)
            append(out, table.remove(nested, 1), nested)
        else
            local v, below = value(indent, depth)
            append(out, string.rep(' ', indent) .. '-' .. (v ~= '' and ' ' .. v or ''), below)
        end
    end
    return out
end
local function document()
    local r = rand(100)
    local lines = r <= 50 and block(0, 0) or r <= 80 and sequence(0, 0) or {r <= 90 and flow(0) or scalar()}
    if chance(20) then table.insert(lines, 1, '---') elseif chance(10) then table.insert(lines, 1, '--- # c') end
    if chance(15) then lines[#lines + 1] = '...' end
    local text = table.concat(lines, '\n') .. (chance(70) and '\n' or '')
    if chance(5) then text = string.gsub(text, '\n', '\r\n') end
    return text
end
local function mutated(text)
    for _ = 1, rand(3) do
        local at = rand(#text + 1) - 1
        local r = rand(100)
        if r <= 35 and #text > 0 then
            text = string.sub(text, 1, at) .. string.sub(text, at + 2)
        elseif r <= 80 then
            text = string.sub(text, 1, at) .. pick(INSERTS) .. string.sub(text, at + 1)
        else
            local start = string.find(string.sub(text, 1, at), '\n[^\n]*$') or 0
            text = string.sub(text, 1, start) .. string.rep(' ', rand(4) - 1) .. string.sub(text, start + 1)
        end
    end
    return text
end

for _ = 1, 1500 do cases[#cases + 1] = document() end
for _ = 1, 1500 do cases[#cases + 1] = mutated(document()) end

for i, text in ipairs(cases) do
    local results = {pcall(yaml.decode, text)}
    local shown = {}
    for k = 2, table.maxn(results) do
        shown[#shown + 1] = results[1] and show(results[k]) or tostring(results[k])
    end
    print(i, results[1], table.maxn(results) - 1, (string.gsub(table.concat(shown, ' | '), '[%c\128-\255]',
        function(c) return '\\' .. string.byte(c) end)))
end
os.exit(0)
