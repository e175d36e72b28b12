-- json.decode over generated texts, valid and broken: prints each result (values
-- with their types, tables with their metatables, in pairs() order) or each error
-- (with the caller's position). Run on Tarantool 2.6 and on oncebox; the lines must match.
local ffi = require('ffi')
local json = require('json')
math.randomseed(7)

local atoms = {'0', '-0', '1', '-1', '12', '1.5', '-1.25e3', '1e5', '1E-5', '1.', '1.e3', '1e', '1e+', '01', '-01',
    '0x10', '-0x10', '+1', '.5', '-.5', '99999999999999', '100000000000000', '-100000000000000',
    '9223372036854775806', '9223372036854775807', '9223372036854775808', '18446744073709551615',
    '18446744073709551616', '123456789012345678901234567890', '-9223372036854775808', '-9223372036854775809',
    '-123456789012345678901234567890', '1e400', '-1e400', '1e-400', '9e9999999999999', '3.14159265358979323846',
    '0.1', '123.456e-7', '922337203685477.5808', 'true', 'false', 'null', 'nul', 'tru', 'inf', '-inf', 'nan',
    '-nan', '-nax', 'infinity', 'NaN', 'Inf', '""', '"abc"', '"a\\"b"', '"\\\\"', '"\\/"', '"\\b\\f\\n\\r\\t"',
    '"\\u0041"', '"\\u00e9"', '"\\u20ac"', '"\\ud83d\\ude00"', '"\\ud83d"', '"\\ude00"', '"\\ud83dx"',
    '"\\ud83d\\u0041"', '"\\u12"', '"\\u12g4"', '"\\x"', '"\\u0000"', '"tab\there"', '"new\nline"',
    '"unterminated', '"\\', '"\xc3\xa9"', '[]', '{}', '[ ]', '{ }', '[1,]', '[,1]', '{"a":1,}', '{"a"}',
    '{"a":}', '{1:2}', '{"a" 1}', ':', ',', ']', '}', '@', 'x', '-', '- 1', '1 2', '\0', '1\0', '[1]\0x', ' \0',
}
local spaces = {'', ' ', '\n', '\t', '\r\n', '  \n '}

local function gen(depth)
    local r = math.random()
    if depth > 4 or r < 0.5 then return atoms[math.random(#atoms)] end
    local parts = {}
    if r < 0.75 then
        for i = 1, math.random(0, 4) do
            parts[i] = spaces[math.random(#spaces)] .. gen(depth + 1) .. spaces[math.random(#spaces)]
        end
        return '[' .. table.concat(parts, ',') .. ']'
    end
    for i = 1, math.random(0, 4) do
        local key = math.random() < 0.9 and ('"k' .. math.random(3) .. '"') or atoms[math.random(#atoms)]
        parts[i] = spaces[math.random(#spaces)] .. key .. spaces[math.random(#spaces)] .. ':' .. gen(depth + 1)
    end
    return '{' .. table.concat(parts, ',') .. '}'
end

local junk = {'"', '\\', ',', ':', '[', ']', '{', '}', '\n', '\0', 'e', '-', '.', '1'}
local function mutate(s)
    if #s == 0 then return s end
    local r, i = math.random(), math.random(#s)
    if r < 0.3 then return s:sub(1, i - 1) .. s:sub(i + 1) end
    if r < 0.6 then return s:sub(1, i) end
    return s:sub(1, i - 1) .. junk[math.random(#junk)] .. s:sub(i)
end

-- Printable ASCII as it is, other bytes as \NNN (the output stays valid text).
local function esc(s)
    return (s:gsub('[^ -~]', function(c) return string.format('\\%03d', c:byte()) end))
end

local function show(v)
    local t = type(v)
    if t == 'cdata' then return tostring(ffi.typeof(v)) .. ':' .. tostring(v) end
    if t == 'number' then return string.format('n:%.17g', v) end
    if t == 'string' then return '"' .. esc(v) .. '"' end
    if t ~= 'table' then return tostring(v) end
    local parts = {}
    for k, x in pairs(v) do parts[#parts + 1] = show(k) .. '=' .. show(x) end
    local mt = getmetatable(v)
    return (mt and mt.__serialize or '') .. '{' .. table.concat(parts, ',') .. '}'
end

local function check(s, opts)
    -- (2.6 reads past the end of a text that ends in "-na": undefined, not compared.)
    if s:find('%-na$') or s:find('%-na%z') then return end
    local ok, r = pcall(function()
        local v = json.decode(s, opts)
        return v
    end)
    if not ok then r = tostring(r):gsub('^[^:]*:%d+: ', 'at line: ') end
    print(esc(s), ok and show(r) or 'error ' .. r)
end

for _, a in ipairs(atoms) do
    check(a)
    check('[' .. a .. ']')
    check('{"k":' .. a .. '}')
end
for _ = 1, 1500 do
    local s = gen(0)
    check(s)
    check(mutate(s))
    check(mutate(mutate(s)))
end
for _ = 1, 300 do
    local s = gen(0)
    check(s, {decode_max_depth = math.random(0, 3)})
    check(s, {decode_invalid_numbers = false})
    check(s, {decode_save_metatables = false})
end
print(select('#', pcall(json.decode)), pcall(json.decode, 1, 2, 3))
-- Deep nesting: objects stop at 3,999 levels (2.6's Lua stack), whatever the option.
for _, n in ipairs({128, 129, 3999, 4000, 5000}) do
    local objects = string.rep('{"a":', n) .. '1' .. string.rep('}', n)
    local arrays = string.rep('[', n) .. string.rep(']', n)
    local ok, r = pcall(json.decode, objects, {decode_max_depth = 100000})
    print(n, ok, type(r))
    ok, r = pcall(json.decode, arrays)
    print(n, (pcall(json.decode, arrays, {decode_max_depth = 100000})), ok, type(r))
end
os.exit(0)
