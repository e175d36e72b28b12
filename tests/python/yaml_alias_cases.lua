-- yaml.decode's anchors and aliases, as 2.6's loader reads them: an alias is the
-- very table its anchor named (so a table yaml.encode wrote as &0 / *0 comes back
-- shared), or the string; an anchor on a null, boolean, number, empty or tagged
-- scalar names nothing ("invalid reference"); anchors do not reach into the next
-- document. Run on Tarantool 2.6 and on oncebox; the lines must match.
local yaml = require('yaml')

-- `v` as text, tables in key order, a table met before written as its first path.
local function show(v, seen, path)
    seen, path = seen or {}, path or '$'
    if type(v) ~= 'table' then
        return type(v) == 'string' and string.format('%q', v) or tostring(v)
    end
    if seen[v] then return '<' .. seen[v] .. '>' end
    seen[v] = path
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    local parts = {}
    for _, k in ipairs(keys) do
        parts[#parts + 1] = tostring(k) .. '=' .. show(v[k], seen, path .. '.' .. tostring(k))
    end
    return '{' .. table.concat(parts, ', ') .. '}'
end

local function decode(text, decoder)
    local r = {pcall(decoder or yaml.decode, text)}
    local out = {tostring(r[1])}
    for i = 2, table.maxn(r) do out[#out + 1] = r[1] and show(r[i]) or tostring(r[i]) end
    return table.concat(out, ' ')
end

local shared = {1, {x = 'y'}}
local cases = {
    yaml.encode({a = shared, b = shared, c = {shared, {shared}}}),
    yaml.encode({m = {k = shared[2]}, n = shared[2], s = 'text'}),
    'a: &x 1\nb: *x',
    'a: &x foo\nb: *x',
    'a: &x "quoted"\nb: [*x, *x]',
    "a: &x ''\nb: *x",
    'a: &x |\n  block\n  text\nb: *x',
    'a: &x null\nb: *x',
    'a: &x true\nb: *x',
    'a: &x\nb: 1\nc: *x',
    'a: &x !!binary aGk=\nb: *x',
    'a: &x !!str 5\nb: 1',
    '- &a [1, 2]\n- *a\n- {k: *a}',
    '- &m\n  k: v\n  l: [1]\n- *m\n- k: *m',
    'a: &s\n- 1\n- 2\nb: *s',
    '&a [*a]',
    '&m {self: *m, n: 1}',
    '[&a [1], &b {x: *a}, *b]',
    '- *nope',
    '{a: *nope}',
    '--- &a [1]\n--- *a',
    '--- &a [1]\n--- [2]\n...',
    '- &a1 x\n- &a1 y\n- *a1',
    'key: &k value # comment\nother: *k',
}
for i, text in ipairs(cases) do print(i, decode(text)) end

-- The same through an instance that drops the map/array hints and refuses NaN
-- (both walk what was decoded: a table that contains itself is walked once).
local strict = yaml.new()
strict.cfg({decode_save_metatables = false, decode_invalid_numbers = false})
print('strict', decode('&a [*a, 1]', strict.decode), decode('- &x [1]\n- *x\n- .nan', strict.decode))
local self_ref = strict.decode('&m {me: *m}')
print('self', rawequal(self_ref.me, self_ref), getmetatable(self_ref) == nil)
os.exit(0)
