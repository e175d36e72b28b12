-- Numbers as Lua formats them (tostring and string.format), ties included: 2.6's
-- LuaJIT rounds a cut-off half away from zero. Run on Tarantool 2.6 and on
-- oncebox; the lines must match.
local formats = {'%.14g', '%.17g', '%g', '%.0f', '%.1f', '%.2f', '%.3f', '%.5e', '%.0e', '%e', '%.10g', '%.1g',
    '%f', '%.20f', '%a', '%5.1f', '%-8.3g'}
local x = 1
for i = 1, 3000 do
    -- A linear congruential generator: the same values on both.
    x = (x * 1103515245 + 12345) % 2147483648
    local kind, v = i % 6
    if kind == 0 then v = x / 2 ^ (i % 40)
    elseif kind == 1 then v = (x % 100000) + 0.5
    elseif kind == 2 then v = x * 2 ^ (i % 30) + 5
    elseif kind == 3 then v = -x / 1024
    elseif kind == 4 then v = (x % 1000) / 8
    else v = x * 1e-10 * (i % 7) end
    local line = {tostring(v)}
    for _, f in ipairs(formats) do line[#line + 1] = string.format(f, v) end
    print(table.concat(line, ' '))
end
print(tostring(123456789012345), string.format('%.0f %.0f %.1f', 0.5, 2.5, 0.25), 0.1 + 0.2, 1 / 3, -0.0, 2 ^ 63)
os.exit(0)
