"""The fiber scheduler's sleepers and ready queue, against 2.6.

Sleepers are kept by wake-up time (lua/fiber.lua's heap), so fibers whose times
all passed while the loop was busy wake in time order, as 2.6's timers fire; a
fiber woken early (fiber:wakeup, a channel or a cond) leaves a stale entry that
must neither wake it again nor pile up."""
from conftest import same_output_on_both

WAKE_ORDER = """
box.cfg{work_dir = os.getenv('WORK'), log_level = 1, wal_mode = 'none'}
local fiber = require('fiber')
local clock = require('clock')
local order = {}
local delays = {7, 3, 9, 1, 5, 8, 2, 6, 4, 10, 15, 12, 11, 14, 13}
for _, d in ipairs(delays) do
    fiber.create(function() fiber.sleep(d / 1000) table.insert(order, d) end)
end
-- Busy past every deadline without yielding: they are all due at the next turn.
local t = clock.monotonic()
while clock.monotonic() - t < 0.05 do end
fiber.sleep(0.1)
print(table.concat(order, ' '))
os.exit(0)
"""


def test_fibers_due_together_wake_in_time_order(tmp_path):
    lines = same_output_on_both(tmp_path, "wake_order.lua", WAKE_ORDER, 1)
    assert lines == [" ".join(str(d) for d in range(1, 16))]


EARLY_WAKE_UPS = """
box.cfg{work_dir = os.getenv('WORK'), log_level = 1, wal_mode = 'none'}
local fiber = require('fiber')
-- A consumer that waits with a long time-out and is served at once, many times:
-- each wait leaves an entry for a time that never comes.
local ch = fiber.channel(1)
local got = 0
local consumer = fiber.create(function()
    while true do
        local v = ch:get(100)
        if v == nil or v == 'stop' then break end
        got = got + 1
    end
end)
for i = 1, 5000 do ch:put(i) end
ch:put('stop')
print('got', got)
-- A sleeper woken early by fiber:wakeup() does not wake again at its old time.
local woke = 0
local sleeper = fiber.create(function()
    fiber.sleep(0.05)
    woke = woke + 1
    fiber.sleep(10)
    woke = woke + 1
end)
sleeper:wakeup()
fiber.yield()
print('woken early', woke)
fiber.sleep(0.1)
print('not woken again', woke, sleeper:status())
-- Sleepers with later times, among many stale entries, still wake when due.
local cond = fiber.cond()
local waited = {}
for i = 1, 200 do
    fiber.create(function()
        for _ = 1, 20 do cond:wait(50) end
        waited[#waited + 1] = i
    end)
end
for _ = 1, 20 do fiber.yield() cond:broadcast() end
fiber.sleep(0.01)
print('cond waiters done', #waited)
local late = {}
for i = 1, 3 do fiber.create(function() fiber.sleep(0.02 * i) late[#late + 1] = i end) end
fiber.sleep(0.1)
print('late sleepers', table.concat(late, ' '))
sleeper:cancel()
os.exit(0)
"""


def test_fibers_woken_early_are_not_woken_again(tmp_path):
    lines = same_output_on_both(tmp_path, "early.lua", EARLY_WAKE_UPS, 5)
    assert lines[0] == "got\t5000"
    assert lines[3] == "cond waiters done\t200"
