-- yaml.decode's core tags on scalars, as 2.6's loader reads them: !!int takes the
-- leading digits (strtol: 0 without any, saturated), !!float a number prefix
-- (strtod), !!bool is true only for true and yes, !!str keeps the text, whatever
-- the scalar's style (plain on one line or several, quoted, block); tags on
-- collections change nothing.
-- Run on Tarantool 2.6 and on oncebox; the lines must match.
local yaml = require('yaml')
local function show(v)
    if type(v) ~= 'table' then return type(v) .. ':' .. tostring(v) end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    local parts = {}
    for _, k in ipairs(keys) do parts[#parts + 1] = tostring(k) .. '=' .. show(v[k]) end
    return '{' .. table.concat(parts, ', ') .. '}'
end
local values = {'5', '-12', '+7', '0012', '1.5', '12abc', 'abc', '0x10', '1e3', ' 42', '99999999999999999999',
                '-99999999999999999999', 'true', 'yes', 'no', 'false', 'True', 'null', '~', '', 'inf', '-inf',
                'nan', '.5', '5.', '1e', '2.5e-3x'}
local cases = {}
for _, tag in ipairs({'!!int', '!!float', '!!bool', '!!str'}) do
    for _, v in ipairs(values) do
        cases[#cases + 1] = 'a: ' .. tag .. ' ' .. v
        cases[#cases + 1] = '[' .. tag .. ' ' .. v .. ']'
        cases[#cases + 1] = 'a: ' .. tag .. ' "' .. v .. '"'
    end
    cases[#cases + 1] = 'a: ' .. tag .. ' |\n  12\n  34\nb: 1'
    cases[#cases + 1] = 'a: ' .. tag .. ' [1, 2]'
    cases[#cases + 1] = 'a: ' .. tag .. ' 12\n  34\nb: 1'
    cases[#cases + 1] = '- ' .. tag .. ' 2.5\n  x\n\n  y\n- 3'
    cases[#cases + 1] = '- ' .. tag .. ' 7\n- ' .. tag .. ' x'
    cases[#cases + 1] = 'a: &x ' .. tag .. ' 7\nb: *x'
end
for i, text in ipairs(cases) do
    local ok, r = pcall(yaml.decode, text)
    print(i, ok, ok and show(r) or r)
end
os.exit(0)
