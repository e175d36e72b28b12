-- fiber.time() and fiber.clock() are the event loop's time (test_fibers.py): the same
-- until the loop turns, however many fibers run, sleep or yield meanwhile; a
-- fiber's own sleep ends in a later turn. Before and after box.cfg{}.
local fiber = require('fiber')
local function run()
    local t0, c0, t64 = fiber.time(), fiber.clock(), fiber.time64()
    fiber.create(function() fiber.sleep(0.01) end)
    print('after a fiber slept', fiber.time() == t0, fiber.clock() == c0, fiber.time64() == t64)
    fiber.create(function() fiber.sleep(0) end)
    fiber.create(function() fiber.yield() end)
    local cond = fiber.cond()
    fiber.create(function() cond:wait(0.01) end)
    print('after sleep(0), yield, cond:wait', fiber.time() == t0, fiber.clock() == c0)
    fiber.sleep(0.01)
    print('after its own sleep', fiber.time() > t0, fiber.clock() > c0)
    local t1 = fiber.time()
    local n = 0
    while fiber.time() < t1 + 0.02 do fiber.sleep(0) n = n + 1 end
    print('sleep(0) loop ends', n > 0)
end
run()
box.cfg{work_dir = os.getenv('WORK') or '.'}
local f = fiber.new(run)
f:set_joinable(true)
f:join()
os.exit(0)
