-- index:pairs() while the loop's body writes: what a TREE iterator gives after
-- each change (deleted tuples skipped, new ones ahead met, updated ones as they
-- are now, a moved one met again), over chunk boundaries. Run on 2.6 and oncebox;
-- the output must be the same line for line.
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}

-- A generator of its own (not math.random), so both runs draw the same numbers.
local seed = 12345
local function rand(n)
    seed = (seed * 1103515245 + 12345) % 2147483648
    return math.floor(seed / 65536) % n + 1
end

local s = box.schema.space.create('s')
s:create_index('pk')
s:create_index('sk', {unique = false, parts = {2, 'unsigned'}})
s:create_index('ck', {parts = {3, 'string', 1, 'unsigned'}})
s:create_index('nk', {parts = {{4, 'unsigned', is_nullable = true}}, unique = false})
local named = box.schema.space.create('named')
named:create_index('pk', {parts = {1, 'string'}})

local function fill(n)
    s:truncate()
    for i = 1, n do
        s:replace{i * 2, rand(7), 'c' .. rand(5), rand(3) == 1 and box.NULL or rand(50)}
    end
end

local function row(t)
    return t[1] .. '/' .. t[2] .. '/' .. t[3] .. '/' .. tostring(t[4])
end

-- One change the loop's body may make, drawn at random: keys around `k`.
local function change(k)
    local what = rand(8)
    local key = k + 2 * (rand(9) - 5)
    if key < 1 then key = 1 end
    if what <= 2 then
        s:delete(key)
    elseif what == 3 then
        s:replace{key, rand(7), 'c' .. rand(5), rand(50)}
    elseif what == 4 then
        s:replace{key + 1, rand(7), 'c' .. rand(5), box.NULL}
    elseif what == 5 then
        if s:get(key) ~= nil then s:update(key, {{'=', 2, rand(7)}, {'=', 4, rand(50)}}) end
    elseif what == 6 then
        box.begin()
        s:delete(key)
        s:replace{key + 1, 1, 'c1', 1}
        box.rollback()
    elseif what == 7 then
        s:delete(k)
    end
end

local iterators = {'EQ', 'REQ', 'ALL', 'GE', 'GT', 'LE', 'LT'}
local keys = {
    pk = function() return {rand(60) * 2 - rand(2) + 1} end,
    sk = function() return {rand(7)} end,
    ck = function() return rand(2) == 1 and {'c' .. rand(5)} or {'c' .. rand(5), rand(60) * 2} end,
    nk = function() return rand(4) == 1 and {box.NULL} or {rand(50)} end,
}
local index_names = {'pk', 'sk', 'ck', 'nk'}

-- Loops that write as they go, on every TREE index and iterator.
for round = 1, 160 do
    fill(rand(4) == 1 and 400 or 40)
    local index = s.index[index_names[rand(4)]]
    local it = iterators[rand(#iterators)]
    local key = rand(6) == 1 and {} or keys[index.name]()
    local rate = rand(4)
    local seen = {}
    local ok, err = pcall(function()
        for _, t in index:pairs(key, {iterator = it}) do
            seen[#seen + 1] = row(t)
            if #seen > 2000 then break end
            if rand(rate) == 1 then change(t[1]) end
        end
    end)
    print(round, index.name, it, require('json').encode(key), ok and 'ok' or tostring(err))
    print(table.concat(seen, ' '))
end

-- Read-only loops that stop early or run long, over chunk boundaries.
fill(3000)
for _, n in ipairs({1, 2, 3, 7, 15, 16, 17, 100, 1023, 1024, 1025, 2999, 3000, 3001}) do
    local got, last = 0, nil
    for _, t in s:pairs() do
        got = got + 1
        last = t[1]
        if got == n then break end
    end
    print('stop at', n, got, last)
end
print('all', #s:pairs():totable(), #s.index.sk:pairs({3}):totable(), #s.index.ck:pairs({'c2'}, 'REQ'):totable())
print('luafun', s:pairs({100}, {iterator = 'GT'}):take(3):map(function(t) return t[1] end):totable()[3])

-- Every tuple deleted as the loop meets it, and every one behind it.
local n = 0
for _, t in s:pairs() do s:delete(t[1]) n = n + 1 end
print('deleted as met', n, s:count())
fill(500)
n = 0
for _, t in s.index.sk:pairs({}, {iterator = 'LE'}) do
    n = n + 1
    for _, u in s.index.sk:pairs({t[2]}, {iterator = 'GT'}) do s:delete(u[1]) end
end
print('deleted behind', n, s:count())

-- A loop whose every step moves the tuple it met further on: it meets it again.
fill(20)
local trail = {}
for _, t in s.index.sk:pairs({}, {iterator = 'GE'}) do
    trail[#trail + 1] = t[1] .. ':' .. t[2]
    if t[2] < 9 and #trail < 200 then s:update(t[1], {{'+', 2, 3}}) end
end
print('moved on', table.concat(trail, ' '))

-- The key is taken when the loop starts; options but the iterator are ignored.
fill(50)
local key = {20}
local got = {}
for _, t in s:pairs(key, {iterator = 'GE', limit = 2, offset = 3}) do
    got[#got + 1] = t[1]
    key[1] = 90
    if #got == 5 then break end
end
print('key taken', table.concat(got, ' '))

-- Errors come from the call, before the loop.
for _, case in ipairs({
    {'x', {iterator = 'GE'}}, {1, {iterator = 'BAD'}}, {{1, 2}, {}}, {1, 'BITS_ALL_SET'}, {{1}, {iterator = 100}},
}) do
    print('error', pcall(function() return s:pairs(case[1], case[2]) end))
end

-- Another fiber writes while the loop yields.
fill(30)
local fiber = require('fiber')
got = {}
for _, t in s:pairs() do
    got[#got + 1] = t[1]
    if t[1] == 10 then
        fiber.create(function()
            -- One transaction: its changes are made before it waits for the log.
            box.atomic(function() s:delete(12) s:replace{11, 1, 'c1', 1} s:replace{200, 1, 'c1', 1} end)
        end)
        fiber.yield()
    end
end
print('other fiber', table.concat(got, ' '))

-- A string primary key.
for i = 1, 30 do named:replace{string.format('k%03d', i * 3)} end
got = {}
for _, t in named:pairs('k030', 'LT') do
    got[#got + 1] = t[1]
    named:delete(string.format('k%03d', tonumber(t[1]:sub(2)) - 3))
    named:replace{t[1] .. 'x'}
end
print('strings', table.concat(got, ' '))
os.exit(0)
