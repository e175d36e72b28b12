-- The collations _collation defines beyond unicode and unicode_ci: a built-in
-- locale's (unicode_sv_s3, unicode_uk_s3), and ones box.internal.collation.create
-- makes (a locale, strength, numeric_collation, case_first), ordering TREE keys and
-- surviving a restart; compared with Tarantool 2.6 (test_index_reads.py). The
-- script runs twice in the same directory: the second run only reads.
box.cfg{listen = os.getenv('LISTEN'), work_dir = os.getenv('WORK'), log_level = 1}
local C = box.internal.collation
local function p(...)
    local r = {pcall(...)}
    for i = 1, #r do r[i] = tostring(r[i]) end
    print(table.concat(r, ' | '))
end
local words = {'Яблоко', 'ёж', 'Ёлка', 'еда', 'жук', 'ель', 'Ель', 'apple', 'Zoo', 'a10', 'a9', 'A9', 'étude',
    'Etude', 'ä', 'z', 'å', 'ö', 'o', 'ß', 'ss', 'i', 'I', 'ı', 'İ'}
local collations = {'ru', 'num', 'up', 'ru_ci', 'unicode_sv_s3', 'unicode_uk_s3'}
local first_run = box.space.t_ru == nil
if first_run then
    p(C.create, 'ru', 'ICU', 'ru-RU')
    p(C.create, 'ru', 'ICU', 'ru-RU', {if_not_exists = true})
    p(C.create, 'num', 'ICU', '', {numeric_collation = 'ON'})
    p(C.create, 'up', 'ICU', 'en', {case_first = 'upper_first'})
    p(C.create, 'ru_ci', 'ICU', 'ru_RU', {strength = 'primary'})
    p(C.create, 'bad', 'XXX', 'ru-RU')
    p(C.create, 'bad', 'ICU', 'ru', {strength = 'loud'})
    p(C.create, 'bad', 'ICU', 'ru', {case_first = 'x'})
    p(C.create, 7)
    print('ids', C.id_by_name('ru'), C.exists('ru'), C.exists('bad'))
    for _, coll in ipairs(collations) do
        local s = box.schema.space.create('t_' .. coll)
        local ok, err = pcall(s.create_index, s, 'pk', {parts = {{1, 'string', collation = coll}}})
        if not ok then print(coll, err) end
        local dups = 0
        for _, w in ipairs(words) do
            if not pcall(s.insert, s, {w}) then dups = dups + 1 end
        end
        print(coll, 'duplicates', dups)
    end
    -- A collation no index uses can go.
    p(C.create, 'gone', 'ICU', 'de')
    p(C.drop, 'gone')
    p(C.drop, 'gone', {if_exists = true})
    p(C.exists, 'gone')
    p(function() return box.space._collation:delete{0} end)
    p(function() return box.space._collation:update({1}, {{'=', 3, 5}}) end)
else
    print('after restart', C.exists('gone'), C.exists('num'))
end
for _, coll in ipairs(collations) do
    local s = box.space['t_' .. coll]
    local r = {}
    for _, t in s:pairs() do r[#r + 1] = t[1] end
    print(coll, table.concat(r, ' '), s.index.pk.parts[1].collation)
end
s = box.space.t_ru_ci
print('ci get', s:get{'ЕЛЬ'} ~= nil, s:get{'ёж'} ~= nil)
os.exit(0)
