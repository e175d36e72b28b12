-- Cases for test_utf8.py: printed alike by Tarantool 2.6 and oncebox.
-- (bytes past ASCII printed as \xNN: the output may hold ill-formed UTF-8)
local function show(v) return (tostring(v):gsub('[\128-\255]', function(c) return string.format('\\x%02x', c:byte()) end)) end
local function p(...) local t = {...} for i = 1, select('#', ...) do t[i] = show(t[i]) end print(select('#', ...) .. ': ' .. table.concat(t, ' | ')) end
local function e(f, ...) local r = {pcall(f, ...)} if r[1] then p(unpack(r, 2, table.maxn(r))) else print('ERR ' .. show(r[2])) end end
local ks = {} for k in pairs(utf8) do table.insert(ks, k) end table.sort(ks) print(table.concat(ks, ' '), utf8 == require('utf8'))
local s = 'Привет, Мир! ß ǅ İ ﬀ Straße ΣΑΣ σας'
for _, x in ipairs({s, '', 'abc', 'a\xffb', '\xe2\x82', 'ÀÉÎÕÜ àéîõü', 'Ǉǈǉ', 'ŉ', 'ﬁ', 'ΐ', 'ᾈ', 'ς', 'i̇'}) do
  e(utf8.upper, x) e(utf8.lower, x) e(utf8.len, x)
end
e(utf8.upper, 5) e(utf8.upper) e(utf8.upper, 'a', 'b') e(utf8.upper, {}) e(utf8.lower, nil)
for _, args in ipairs({{'abc', 2}, {'abc', -1}, {'abc', 2, 2}, {'abc', 4}, {'abc', 5}, {'abc', 0}, {'abc', -4}, {'abc', 1, 4}, {'abc', 1, 0},
                       {'abc', 1, -5}, {'abc', '2'}, {'abc', 2.7}, {'a\xffb\xfe'}, {'a\xffb', 3}, {'\xc3'}, {'a\xc3\xa9', 3}, {'a\xc3\xa9', 2, 2},
                       {'абв', 2}, {'абв', 3}, {'абв', 1, 3}, {'x', true}, {'x', nil, 1}, {'a', 1, 1, 1}, {5}, {}}) do
  e(utf8.len, unpack(args, 1, table.maxn(args)))
end
for _, args in ipairs({{s}, {s, 3}, {s, 13}, {s, #s + 1}, {s, #s}, {'a\xffb', 2}, {'a\xffb', 3}, {'абв', 2}, {'abc', -1}, {'abc', -3}, {'abc', -4}, {'abc', 0}, {''}, {'x', 'y'}, {'a', 1, 2}, {7}}) do
  e(utf8.next, unpack(args, 1, table.maxn(args)))
end
for _, args in ipairs({{s, 1, 6}, {s, -3}, {s, 3, 2}, {s, 0}, {s, -100, 2}, {'abc', 2, 100}, {s, 2, -2}, {s, -5, -2}, {s, -3, 30}, {s, 100}, {s, 1, 0}, {s, -1, -1},
                       {s, 0, 0}, {'привет', 2, 4}, {'a\xffbc', 2, 3}, {'a\xffbc', -2}, {'x'}, {'x', nil}, {'x', 'a'}, {'abc', '2', '2'}, {5, 1, 1}}) do
  e(utf8.sub, unpack(args, 1, table.maxn(args)))
end
e(utf8.char, 72, 1055, 0x1F600) e(utf8.char) e(utf8.char, 65) e(utf8.char, '66', 67.9) e(utf8.char, 'x') e(utf8.char, 65, nil)
e(function() return #utf8.char(-1), #utf8.char(0x110000), #utf8.char(0xD800) end)
for _, c in ipairs({'a', 'A', '1', 'Я', 'я', '٣', ' ', 'ǅ', 'ab', '', 'Ⅻ', 'ª', '\xff', 65, 97, 0x42F, 0x663, 0x2160, 65.9, '65', -1}) do
  e(function() return c, utf8.isupper(c), utf8.islower(c), utf8.isalpha(c), utf8.isdigit(c) end)
end
e(utf8.isalpha) e(utf8.isalpha, 'a', 'b') e(utf8.isalpha, nil) e(utf8.isalpha, true)
for _, pr in ipairs({{'a', 'b'}, {'b', 'a'}, {'a', 'a'}, {'a', 'A'}, {'A', 'a'}, {'abc', 'ABD'}, {'Я', 'я'}, {'яблоко', 'Яблоко'}, {'а', 'б'}, {'', 'a'}, {'10', '9'}, {1, 2}}) do
  e(function() return pr[1], pr[2], utf8.cmp(pr[1], pr[2]), utf8.casecmp(pr[1], pr[2]) end)
end
e(utf8.cmp, 'a') e(utf8.casecmp, 'a', {})
e(function() local r = utf8.len('a', 1, 1, 1) end)
e(function() local r = utf8.sub('x', 'a') end)
os.exit(0)
