-- One net.box connection carries the requests of many fibers at once, and a
-- timed-out request does not hold up the next; compared with Tarantool 2.6
-- (test_netbox.py).
box.cfg{listen = os.getenv('LISTEN') or '127.0.0.1:0', work_dir = os.getenv('WORK') or '.', log_level = 1}
box.schema.user.grant('guest', 'super', nil, nil, {if_not_exists = true})
local fiber = require('fiber')
function slow(x) fiber.sleep(0.3) return x end
function quick(x) return x end
local c
local done = {}
local f = fiber.create(function()
    c = require('net.box').connect(box.info.listen)
    -- One connection, two fibers: the quick call does not wait for the slow one.
    local a = fiber.create(function() local r = c:call('slow', {1}) done[#done + 1] = 'slow ' .. r end)
    local b = fiber.create(function() local r = c:call('quick', {2}) done[#done + 1] = 'quick ' .. r end)
    a:set_joinable(true) b:set_joinable(true)
    print('joins', a:join(), b:join())
    print(table.concat(done, ', '))
    -- A timed-out call leaves the connection usable at once.
    print('timeout', pcall(c.call, c, 'slow', {3}, {timeout = 0.05}))
    local t0 = fiber.clock()
    print('next', c:call('quick', {4}), fiber.clock() - t0 < 0.2)
    -- Futures in flight together.
    local futs = {}
    for i = 1, 5 do futs[i] = c:call(i % 2 == 0 and 'slow' or 'quick', {i}, {is_async = true}) end
    local order = {}
    for i = 1, 5 do futs[i]:wait_result(2) end
    for i = 1, 5 do order[i] = tostring(futs[i]:result()[1]) end
    print('futures', table.concat(order, ','))
    c:close()
    print('after close', pcall(c.call, c, 'quick', {5}))
end)
f:set_joinable(true)
print(f:join())
os.exit(0)
