-- Strings under the unicode and unicode_ci collations, compared with Tarantool 2.6
-- (test_index_reads.py): the CLDR root order of ICU at tertiary and primary
-- strength, in TREE indexes, unique checks, ranges and utf8.cmp/casecmp.
box.cfg{listen = os.getenv('LISTEN'), work_dir = os.getenv('WORK'), log_level = 1}
local words = {'ёж', 'ель', 'Ель', 'ежик', 'яблоко', 'Яблоко', 'abc', 'ABC', 'Abc', 'a-b', 'ab', 'a b', 'a_b',
    'é', 'e', 'f', 'É', 'ß', 'ss', 'straße', 'strasse', '1', '10', '2', '-1', '☢', 'İ', 'i', 'I', 'ı', 'z', 'ž',
    'Ω', 'ω', 'ä', 'a', 'b', '', ' ', '!', '~', 'æ', 'ae', 'Å', 'å', 'ø', 'o', 'ö', 'Ö', 'ñ', 'n', 'の', 'ア', '中',
    'ي', 'א'}

local function names(tuples, field)
    local out = {}
    for i, t in ipairs(tuples) do out[i] = t[field] end
    return table.concat(out, ' ')
end

-- unicode: every word is a key of its own, in ICU's order.
local cs = box.schema.space.create('cs')
cs:create_index('pk', {parts = {{1, 'string', collation = 'unicode'}}})
for _, w in ipairs(words) do cs:insert{w} end
print('unicode', names(cs:select{}, 1))
print('unicode GE e', names(cs:select({'e'}, {iterator = 'GE', limit = 6}), 1))
print('unicode LT b', names(cs:select({'b'}, {iterator = 'LT', limit = 6}), 1))

-- unicode_ci: words equal at primary strength are one key; the first stays.
local ci = box.schema.space.create('ci')
ci:create_index('pk', {parts = {{1, 'string', collation = 'unicode_ci'}}})
local refused = {}
for _, w in ipairs(words) do
    local ok = pcall(ci.insert, ci, {w})
    if not ok then refused[#refused + 1] = w end
end
print('unicode_ci', names(ci:select{}, 1))
print('unicode_ci duplicates', table.concat(refused, ' '))
print('unicode_ci get', ci:get{'STRASSE'}[1], ci:get{'Ø'}[1], ci:get{'ЕЛЬ'}[1])

-- A secondary index under unicode_ci, not unique, beside a binary primary key.
local two = box.schema.space.create('two')
two:create_index('pk')
two:create_index('name', {parts = {{2, 'string', collation = 'unicode_ci'}}, unique = false})
for i, w in ipairs(words) do two:insert{i, w} end
print('secondary EQ e', names(two.index.name:select{'e'}, 2))
print('secondary count a', two.index.name:count{'a'})

-- utf8.cmp (unicode) and utf8.casecmp (unicode_ci).
local sign = function(n) return n < 0 and '<' or (n > 0 and '>' or '=') end
print('cmp', sign(utf8.cmp('☢', 'İ')), sign(utf8.cmp('e', 'É')), sign(utf8.cmp('ёж', 'ежик')),
      sign(utf8.casecmp('É', 'e')), sign(utf8.casecmp('ß', 'ss')), sign(utf8.casecmp('a', 'b')))
os.exit(0)
