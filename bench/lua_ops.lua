-- Lua API operations an application's code runs (box.space calls, tuples,
-- iterators, serializers, fibers), each timed on its own: run by
-- bench/lua_side_by_side.py with `tarantool` and with oncebox. Prints one line
-- per operation: its name, the CPU seconds it took and how many times it ran.
-- SCALE (environment, default 1) multiplies the counts (a smoke run uses 0.001).
local clock = require('clock')
local fiber = require('fiber')
local json = require('json')
local msgpack = require('msgpack')

box.cfg{work_dir = os.getenv('WORK'), log_level = 1, wal_mode = 'none'}
local scale = tonumber(os.getenv('SCALE')) or 1

local s = box.schema.space.create('ops')
s:create_index('pk')
s:create_index('sk', {parts = {2, 'string'}, unique = false})
for i = 1, 10000 do s:replace{i, 'name' .. (i % 100), i * 2.5, {x = i, tags = {'a', 'b'}}, true} end

local function run(name, times, f)
    local n = math.max(1, math.floor(times * scale))
    collectgarbage()
    local started = clock.proc()
    f(n)
    print(string.format('%s\t%.6f\t%d', name, clock.proc() - started, n))
end

local records = {}
for i = 1, 100 do records[i] = {id = i, name = 'name' .. i, score = i * 2.5, tags = {'a', 'b/c'}, ok = true} end
local packed, text = msgpack.encode(records), json.encode(records)
local decoded = msgpack.decode(packed)
local tuple = s:get(5)

run('get', 1000000, function(n) for i = 1, n do s:get(i % 10000 + 1) end end)
run('select 10', 200000, function(n) for i = 1, n do s:select(i % 9000, {iterator = 'GE', limit = 10}) end end)
run('pairs 10', 200000, function(n)
    for i = 1, n do
        for _, t in s:pairs(i % 9000, {iterator = 'GE'}) do if t[1] > i % 9000 + 10 then break end end
    end
end)
run('pairs all', 20, function(n) for _ = 1, n do for _, t in s:pairs() do end end end)
run('count key', 20000, function(n) for _ = 1, n do s.index.sk:count('name5') end end)
run('replace', 500000, function(n) for i = 1, n do s:replace{i % 10000 + 1, 'name' .. (i % 100), i} end end)
run('update', 500000, function(n) for i = 1, n do s:update(i % 10000 + 1, {{'=', 3, i}}) end end)
run('upsert', 500000, function(n) for i = 1, n do s:upsert({i % 10000 + 1, 'x', 0}, {{'+', 3, 1}}) end end)
run('insert+delete', 300000, function(n) for i = 1, n do s:insert{20000 + i, 'x', 1} s:delete(20000 + i) end end)
run('begin/commit', 300000, function(n)
    for i = 1, n do box.begin() s:replace{i % 10000 + 1, 'y', 1} box.commit() end
end)
run('tuple[i]', 5000000, function(n) for _ = 1, n do local _ = tuple[2] end end)
run('tuple:totable', 1000000, function(n) for _ = 1, n do tuple:totable() end end)
run('tuple.new', 1000000, function(n) for i = 1, n do box.tuple.new{i, 'abc', 3} end end)
run('msgpack.encode', 20000, function(n) for _ = 1, n do msgpack.encode(records) end end)
run('msgpack.encode decoded', 20000, function(n) for _ = 1, n do msgpack.encode(decoded) end end)
run('msgpack.decode', 20000, function(n) for _ = 1, n do msgpack.decode(packed) end end)
run('json.encode', 10000, function(n) for _ = 1, n do json.encode(records) end end)
run('json.decode', 10000, function(n) for _ = 1, n do json.decode(text) end end)
run('fiber.create', 100000, function(n) for _ = 1, n do fiber.create(function() end) end end)
run('fiber.yield', 300000, function(n) for _ = 1, n do fiber.yield() end end)
run('channel put/get', 300000, function(n)
    local ch = fiber.channel(10)
    for i = 1, n do ch:put(i) ch:get() end
end)
run('begin/commit, empty', 1000000, function(n) for _ = 1, n do box.begin() box.commit() end end)

-- A replace that moves a unique secondary key over a string.
local moved = box.schema.space.create('moved')
moved:create_index('pk')
moved:create_index('sk', {parts = {2, 'string', 3, 'unsigned'}})
run('replace, unique string key moves', 300000, function(n)
    for i = 1, n do moved:replace{i % 10000 + 1, 'name' .. (i % 100), i} end
end)

-- Yields while many fibers sleep (the scheduler must not look at every sleeper).
local sleepers = {}
for i = 1, math.max(1, math.floor(10000 * scale)) do
    sleepers[i] = fiber.create(function() fiber.sleep(1000) end)
end
run('fiber.yield, 10000 asleep', 100000, function(n) for _ = 1, n do fiber.yield() end end)
for _, f in ipairs(sleepers) do f:cancel() end
os.exit(0)
