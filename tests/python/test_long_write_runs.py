"""A fiber that writes for a long time without yielding: what it committed is let go
as it goes (box.lua's after_write), not held until it yields.

2.6 yields for the WAL at every write outside a transaction (not without a WAL,
not inside box.begin); oncebox keeps a run of statements and lets it go every
1,024 writes, by a yield with a WAL and at once without one. A tokened CALL stays
one transaction however many statements it makes."""
import pytest

from conftest import ADMIN_PASSWORD, ONCEBOX, run_in_own_group, same_output_on_both, start_oncebox
from iproto_raw import CALL, EVAL, SELECT, Raw

OTHER_FIBER_DURING_WRITES = """
local fiber = require('fiber')
box.cfg{work_dir = os.getenv('WORK'), log_level = 1, wal_mode = '%s'}
local s = box.schema.space.create('t')
s:create_index('pk')
local ran
local function other() ran = true end

-- Autocommit writes: with a WAL the other fiber gets its turn before the loop ends.
ran = false
fiber.new(other)
for i = 1, 3000 do s:replace{i, 'x'} end
print('autocommit', ran)

-- In a transaction nothing yields.
ran = false
local f = fiber.new(other)
box.begin()
for i = 1, 3000 do s:replace{i, 'y'} end
print('in box.begin', ran)
box.commit()
fiber.yield()
print('after commit', ran)

-- box.atomic neither.
ran = false
fiber.new(other)
box.atomic(function()
    for i = 1, 3000 do s:update(i, {{'=', 2, 'z'}}) end
    print('in box.atomic', ran)
end)
fiber.yield()

-- Nor a write a trigger makes inside its statement.
ran = false
local log = box.schema.space.create('log')
log:create_index('pk')
s:on_replace(function(_, new) if new ~= nil and new[1] == 1 then
    for i = 1, 3000 do log:replace{i} end
    print('in a trigger', ran, log:count())
end end)
fiber.new(other)
s:replace{1, 'trigger'}
fiber.yield()
print('all written', s:count(), log:count(), s:get(3000)[2])

-- Nor a run inside a coroutine the code made: a yield there would reach its
-- resumer, not the scheduler.
s:on_replace(nil, s:on_replace()[1])
local gen = coroutine.wrap(function()
    for i = 1, 3000 do s:replace{i, 'co'} end
    coroutine.yield('first')
    coroutine.yield('second')
end)
print('a coroutine of its own', gen(), s:get(3000)[2], gen())
os.exit(0)
"""


@pytest.mark.parametrize("wal_mode", ["write", "none"])
def test_a_long_run_of_writes_yields_as_2_6_yields(tmp_path, wal_mode):
    lines = same_output_on_both(tmp_path, "long_run.lua", OTHER_FIBER_DURING_WRITES % wal_mode, 7)
    assert lines[0] == "autocommit\t" + ("true" if wal_mode == "write" else "false")
    assert lines[1] == "in box.begin\tfalse"
    assert lines[6] == "a coroutine of its own\tfirst\tco\tsecond"


def rss_mib_printed(tmp_path, source):
    """Runs a Lua script with oncebox; returns the VmRSS (MiB) of each
    /proc/self/status it printed, in order (reports separated by a '--' line)."""
    script = tmp_path / "memory.lua"
    script.write_text(source)
    r = run_in_own_group([ONCEBOX, str(script)], env={"WORK": str(tmp_path), "PATH": "/usr/bin:/bin"},
                         cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    return [int(next(line for line in report.splitlines() if line.startswith("VmRSS")).split()[1]) / 1024
            for report in r.stdout.split("--\n")]


MEMORY_OF_A_LONG_RUN = """
box.cfg{work_dir = os.getenv('WORK'), log_level = 1, wal_mode = 'none'}
local s = box.schema.space.create('t')
s:create_index('pk')
local function rss() local f = io.open('/proc/self/status') local t = f:read('*a') f:close() return t end
for i = 1, 20000 do s:replace{i % 1000, 'warm-up', i} end
require('fiber').yield()
collectgarbage()
io.write(rss())
io.write('--\\n')
for i = 1, 1000000 do s:replace{i % 1000, 'name' .. (i % 100), i} end
collectgarbage()
io.write(rss())
os.exit(0)
"""


def test_a_million_replaces_of_a_thousand_keys_do_not_hold_the_replaced_tuples(tmp_path):
    # Before they were let go every 1,024 writes, the run held each replaced tuple
    # and its undo entry: RSS grew by about 125 MiB here.
    before, after = rss_mib_printed(tmp_path, MEMORY_OF_A_LONG_RUN)
    grown_mib = after - before
    assert grown_mib < 40, grown_mib


MANY_WRITES = """
box.schema.space.create('m', {if_not_exists = true}):create_index('pk', {if_not_exists = true})
function many_writes(n, fail)
    for i = 1, n do box.space.m:replace{i} end
    if fail then error('after the writes') end
    return box.space.m:count()
end
"""


def test_a_tokened_call_stays_one_transaction_however_long(tmp_path):
    inst = start_oncebox()
    try:
        c = Raw(inst.host, inst.port)
        assert c.auth("admin", ADMIN_PASSWORD)[0][0] == 0
        assert c.request(EVAL, {0x27: MANY_WRITES, 0x21: []})[0][0] == 0
        space_id = c.request(EVAL, {0x27: "return box.space.m.id", 0x21: []})[1][0x30][0]

        def count():
            return len(c.request(SELECT, {0x10: space_id, 0x12: 0xFFFFFFFF, 0x20: []})[1][0x30])

        h, b, _ = c.request(CALL, {0x22: "many_writes", 0x21: [5000, True]}, _12="long-1")
        assert h[0] & 0x8000, b
        assert count() == 0, "a failed tokened CALL left statements behind"
        h, b, _ = c.request(CALL, {0x22: "many_writes", 0x21: [5000, False]}, _12="long-2")
        assert h[0] == 0 and b[0x30] == [5000], b
        h, b, _ = c.request(CALL, {0x22: "many_writes", 0x21: [5000, False]}, _12="long-2")
        assert h[0] == 0 and b[0x30] == [5000] and h[0x0D] == 2, (h, b)  # replayed
        # Without a token each statement is committed on its own, as in 2.6: they stay.
        assert c.request(EVAL, {0x27: "box.space.m:truncate()", 0x21: []})[0][0] == 0
        h, b, _ = c.request(CALL, {0x22: "many_writes", 0x21: [5000, True]})
        assert h[0] & 0x8000, b
        assert count() == 5000
        c.close()
    finally:
        inst.stop()


IDLE_AFTER_A_BURST = """
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local s = box.schema.space.create('t')
s:create_index('pk')
local function rss() local f = io.open('/proc/self/status') local t = f:read('*a') f:close() return t end
for i = 1, 2000000 do s:replace{i % 10000, 'name' .. (i % 100), i} end
require('fiber').sleep(0.5)
io.write(rss())
os.exit(0)
"""


def test_memory_a_burst_of_writes_freed_goes_back_when_the_server_idles(tmp_path):
    # Two million replaces of 10,000 keys with a WAL: about 130 MiB of log. The
    # replaced tuples and the groups' undo lists are freed as the groups become
    # durable; before the TX thread gave that memory back on going idle, mimalloc
    # kept it (RSS stayed at 150-190 MiB; 2.6's is about 30).
    [idle_mib] = rss_mib_printed(tmp_path, IDLE_AFTER_A_BURST)
    assert idle_mib < 80, idle_mib
