"""Fibers: Lua coroutines scheduled on the TX thread, compared with real Tarantool 2.6.

The differential steps run the same Lua over EVAL on both servers and require
identical replies. The concurrency tests show what fibers are for: a CALL that
sleeps does not hold up other requests, on other connections or on its own.
"""
import os
import subprocess
import textwrap
import time
from pathlib import Path

import msgpack
import pytest

from conftest import ADMIN_PASSWORD, ONCEBOX, run_script_on_both, start_oncebox, start_tarantool
from iproto_raw import EVAL, PING, Raw
from test_lua_differential import admin_pair, ev, pair_fixture, start_pair

SETUP = """
box.schema.space.create('f', {if_not_exists = true}):create_index('pk', {if_not_exists = true})
"""


servers = pair_fixture(SETUP)


def test_create_runs_at_once_and_sleep_yields(servers):
    p = admin_pair(servers)
    ev(p, """local fiber = require('fiber')
             local log = {}
             local f = fiber.create(function(a) table.insert(log, 'child ' .. a) fiber.sleep(0.02)
                                                table.insert(log, 'child woke') end, 'x')
             table.insert(log, 'parent ' .. f:status())
             fiber.sleep(0.05)
             table.insert(log, 'parent woke ' .. f:status())
             return log""")
    ev(p, """local fiber = require('fiber')
             local log = {}
             local f = fiber.new(function() table.insert(log, 'new ran') end)
             table.insert(log, 'before yield')
             fiber.yield()
             return log, f:status()""")
    ev(p, "return require('fiber').self():status(), type(require('fiber').id()), require('fiber').sleep(0)")


def test_bad_arguments(servers):
    p = admin_pair(servers)
    for code in ("require('fiber').sleep('x')", "require('fiber').create()", "require('fiber').create(5)",
                 "require('fiber').new()", "local f = require('fiber').create(function() end) return f:join()",
                 "return pcall(require('fiber').sleep, {})"):
        ev(p, code)


def test_channels(servers):
    p = admin_pair(servers)
    ev(p, """local fiber = require('fiber')
             local ch = fiber.channel(2)
             fiber.create(function() for i = 1, 5 do ch:put(i) end ch:close() end)
             local got = {}
             while true do local v = ch:get() if v == nil then break end table.insert(got, v) end
             return got, ch:is_closed(), ch:put(9)""")
    ev(p, """local fiber = require('fiber')
             local ch = fiber.channel()
             local r = {ch:size(), ch:put(1, 0), ch:get(0.01), ch:is_empty(), ch:count()}
             fiber.create(function() ch:put('x') end)
             table.insert(r, ch:has_writers())
             table.insert(r, ch:get())
             table.insert(r, ch:has_writers())
             return r""")
    ev(p, """local fiber = require('fiber')
             local ch = fiber.channel(1)
             local r = {ch:put(1), ch:is_full(), ch:put(2, 0.01), ch:get(), ch:is_full()}
             return r""")


def test_cond_join_cancel_wakeup(servers):
    p = admin_pair(servers)
    ev(p, """local fiber = require('fiber')
             local c = fiber.cond()
             local v = {}
             fiber.create(function() table.insert(v, c:wait()) end)
             fiber.create(function() table.insert(v, c:wait(0.01)) end)
             c:signal()
             fiber.sleep(0.05)
             return v""")
    ev(p, """local fiber = require('fiber')
             local g = fiber.new(function(a, b) fiber.sleep(0.01) return a + b end, 2, 3)
             g:set_joinable(true)
             local e = fiber.new(function() error('boom', 0) end)
             e:set_joinable(true)
             local r = {g:join()}
             local ok, err = e:join()
             return r, ok, tostring(err), g:status()""")
    ev(p, """local fiber = require('fiber')
             local j = fiber.create(function() local ok, e = pcall(fiber.sleep, 10) return ok, tostring(e), e.type end)
             j:set_joinable(true)
             j:cancel()
             local r = {j:join()}
             local s = fiber.create(function() fiber.sleep(10) end)
             s:cancel()
             fiber.yield()
             table.insert(r, s:status())
             local w = fiber.create(function() fiber.sleep(10) end)
             local t0 = fiber.clock()
             w:wakeup()
             fiber.yield()
             table.insert(r, w:status())
             table.insert(r, fiber.clock() - t0 < 1)
             return r""")


def test_a_cancel_before_a_sleep_is_seen_when_it_ends(servers):
    p = admin_pair(servers)
    ev(p, """local fiber = require('fiber')
             local j = fiber.new(function()
                 local t0 = fiber.clock()
                 local ok, e = pcall(fiber.sleep, 0.2)
                 return ok, tostring(e), fiber.clock() - t0 >= 0.15
             end)
             j:set_joinable(true)
             j:cancel()
             return j:join()""")


def test_a_yield_aborts_a_transaction(servers):
    p = admin_pair(servers)
    ev(p, """box.begin() box.space.f:replace{1} require('fiber').sleep(0)
             box.space.f:replace{2} box.commit()""")
    ev(p, "return box.space.f:select{}, box.is_in_txn()")
    ev(p, """box.begin() box.space.f:replace{3} require('fiber').create(function() end)
             local ok, e = pcall(box.commit)
             return ok, tostring(e), box.is_in_txn(), box.space.f:select{}""")
    ev(p, """local fiber = require('fiber')
             local ok, e = pcall(box.atomic, function() box.space.f:replace{4} fiber.yield() end)
             return ok, tostring(e), box.space.f:get{4}""")
    # Each fiber has its own transaction.
    ev(p, """local fiber = require('fiber')
             box.begin() box.space.f:replace{5}
             local other = fiber.new(function() return box.is_in_txn() end)
             other:set_joinable(true)
             box.commit()
             local _, in_txn = other:join()
             return in_txn, box.space.f:get{5}""")
    ev(p, "box.space.f:truncate()")


def send_eval(c, code, args=()):
    c.sync += 1
    payload = msgpack.packb({0: EVAL, 1: c.sync}) + msgpack.packb({0x27: code, 0x21: list(args)})
    c.send_packet(payload)
    return c.sync


def send_ping(c):
    c.sync += 1
    c.send_packet(msgpack.packb({0: PING, 1: c.sync}))
    return c.sync


@pytest.mark.parametrize("kind", ["oncebox", "tarantool"])
def test_a_sleeping_call_does_not_block_others(kind):
    inst = start_oncebox() if kind == "oncebox" else start_tarantool()
    try:
        slow, fast = Raw(inst.host, inst.port), Raw(inst.host, inst.port)
        for c in (slow, fast):
            assert c.auth("admin", ADMIN_PASSWORD)[0][0] == 0
        t0 = time.monotonic()
        slow_sync = send_eval(slow, "require('fiber').sleep(...) return 'slept'", [0.6])
        # Another connection is answered at once.
        h, body, _ = fast.request(EVAL, {0x27: "return 'fast'", 0x21: []})
        assert body[0x30] == ["fast"]
        assert time.monotonic() - t0 < 0.5
        # A request pipelined behind the sleeping one on the same connection is answered first.
        ping_sync = send_ping(slow)
        order = [slow.recv()[0][1], slow.recv()[0][1]]
        assert order == [ping_sync, slow_sync]
        assert time.monotonic() - t0 >= 0.6
        # A fiber that sleeps with no traffic at all still wakes on time.
        h, body, _ = fast.request(EVAL, {0x27: """
            rawset(_G, 'woke', false)
            require('fiber').create(function() require('fiber').sleep(0.2) rawset(_G, 'woke', true) end)
            return woke""", 0x21: []})
        assert body[0x30] == [False]
        time.sleep(0.5)
        h, body, _ = fast.request(EVAL, {0x27: "return woke", 0x21: []})
        assert body[0x30] == [True]
    finally:
        inst.stop()


def test_many_sleepers_wake_in_deadline_order(oncebox):
    c = Raw(oncebox.host, oncebox.port)
    assert c.auth("admin", ADMIN_PASSWORD)[0][0] == 0
    syncs = {}
    for delay in (0.3, 0.1, 0.2, 0.0):
        syncs[send_eval(c, "require('fiber').sleep(...) return ...", [delay])] = delay
    order = [syncs[c.recv()[0][1]] for _ in range(4)]
    assert order == [0.0, 0.1, 0.2, 0.3]
    c.close()


def test_writes_after_a_sleep_are_durable_before_the_reply(tmp_path):
    inst = start_oncebox()
    try:
        c = Raw(inst.host, inst.port)
        assert c.auth("admin", ADMIN_PASSWORD)[0][0] == 0
        h, body, _ = c.request(EVAL, {0x27: """
            local s = box.schema.space.create('late', {if_not_exists = true})
            s:create_index('pk', {if_not_exists = true})
            s:replace{1, 'before'}
            require('fiber').sleep(0.1)
            s:replace{2, 'after'}
            return s:count()""", 0x21: []})
        assert body[0x30] == [2]
        inst.proc.kill()
        inst.proc.wait()
        data = os.path.join(inst.workdir, "data")
        again = subprocess.Popen([ONCEBOX, "--listen", "127.0.0.1:0", "--admin-password", ADMIN_PASSWORD,
                                  "--log-level", "warn", "--data-dir", data], stdout=subprocess.PIPE, text=True)
        port = int(again.stdout.readline().strip().rsplit(":", 1)[1])
        c = Raw("127.0.0.1", port)
        assert c.auth("admin", ADMIN_PASSWORD)[0][0] == 0
        h, body, _ = c.request(EVAL, {0x27: "return box.space.late:select{}", 0x21: []})
        assert body[0x30] == [[[1, "before"], [2, "after"]]]
        again.terminate()
        again.wait(timeout=10)
    finally:
        inst.stop()


def test_a_tokened_eval_cannot_yield(oncebox):
    """A tokened CALL/EVAL is one transaction: a yield fails it with 154, nothing stays, the token is free."""
    c = Raw(oncebox.host, oncebox.port)
    assert c.auth("admin", ADMIN_PASSWORD)[0][0] == 0
    c.request(EVAL, {0x27: SETUP, 0x21: []})
    code = "box.space.f:replace{7} if ... then require('fiber').sleep(0) end return box.space.f:count()"
    h, body, _ = c.request(EVAL, {0x27: code, 0x21: [True]}, _12="tok-yield")
    assert h[0] == 0x8000 + 154, body
    h, body, _ = c.request(EVAL, {0x27: "return box.space.f:get{7} == nil", 0x21: []})
    assert body[0x30] == [True]
    # The token was released: the same request runs again (and yields again).
    h, body, _ = c.request(EVAL, {0x27: code, 0x21: [True]}, _12="tok-yield")
    assert h[0] == 0x8000 + 154


SCRIPT = textwrap.dedent("""\
    local fiber = require('fiber')
    local log = {}
    fiber.create(function() fiber.sleep(0.05) table.insert(log, 'background') end)
    fiber.sleep(0.1)
    table.insert(log, 'main ' .. fiber.self():name())
    local ch = fiber.channel()
    fiber.create(function() ch:put('through a channel') end)
    table.insert(log, ch:get())
    print(table.concat(log, ', '))
""")


@pytest.mark.parametrize("with_box", [False, True])
def test_script_fibers_match_tarantool(tmp_path, with_box):
    prelude = "box.cfg{work_dir = os.getenv('WORK'), log_level = 1}\n" if with_box else ""
    # After box.cfg tarantool stays in its event loop: the script ends with os.exit.
    outs = run_script_on_both(tmp_path, "fibers.lua", prelude + SCRIPT + ("os.exit(0)\n" if with_box else ""))
    assert outs[0] == outs[1] == ["background, main fibers.lua, through a channel"]


def test_script_main_fiber_sleeps_while_the_server_answers(tmp_path):
    """After box.cfg{listen}, the script's own fiber.sleep lets requests in (it is a fiber)."""
    script = tmp_path / "serve.lua"
    script.write_text(textwrap.dedent("""\
        box.cfg{listen = os.getenv('LISTEN'), work_dir = os.getenv('WORK'), log_level = 1}
        box.schema.user.grant('guest', 'super', nil, nil, {if_not_exists = true})
        rawset(_G, 'phase', 'sleeping')
        require('fiber').sleep(1.0)
        rawset(_G, 'phase', 'done')
    """))
    from conftest import free_port, wait_port
    port = free_port()
    env = dict(os.environ, WORK=str(tmp_path), LISTEN=f"127.0.0.1:{port}")
    proc = subprocess.Popen([ONCEBOX, str(script)], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL)
    try:
        wait_port(port, proc)
        c = Raw("127.0.0.1", port)
        h, body, _ = c.request(EVAL, {0x27: "return phase", 0x21: []})
        assert body[0x30] == ["sleeping"]
        time.sleep(1.2)
        h, body, _ = c.request(EVAL, {0x27: "return phase", 0x21: []})
        assert body[0x30] == ["done"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


AFTER_ABORT_SCRIPT = textwrap.dedent(r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local fiber = require('fiber')
local s = box.schema.space.create('t')
s:create_index('pk')
fiber.create(function()
    box.begin() s:insert{1} fiber.sleep(0)
    -- The transaction was aborted by the yield; a statement still runs in it...
    print(pcall(s.insert, s, {2}))
    -- ...and the next yield does not commit it.
    fiber.sleep(0.01)
    print(box.is_in_txn(), #s:select())
    print(pcall(box.commit))
    print(box.is_in_txn(), #s:select())
end)
fiber.sleep(0.1)
print(#s:select())
os.exit(0)
""")


def test_statements_of_a_transaction_a_yield_aborted_are_never_committed(tmp_path):
    """After a yield aborted a fiber's transaction, what it runs in it until
    box.commit is undone at each later yield, as 2.6's memtx never commits it."""
    outs = run_script_on_both(tmp_path, "after_abort.lua", AFTER_ABORT_SCRIPT)
    assert outs[1] == outs[0]
    assert outs[1][-1] == "0"


TRIGGER_YIELD_SCRIPT = textwrap.dedent(r"""
local fiber = require('fiber')
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local s = box.schema.space.create('t')
s:create_index('pk')
local log = {}
s:on_replace(function(old, new) table.insert(log, 'trigger before sleep') fiber.sleep(0.01) table.insert(log, 'trigger after sleep') end)
print(pcall(s.insert, s, {1}))
print(table.concat(log, ', '))
print(s:get{1})
log = {}
print(pcall(function() box.begin() s:insert{2} box.commit() end))
print(table.concat(log, ', '))
print(s:get{2})
fiber.create(function() print('in fiber', pcall(s.insert, s, {3})) end)
fiber.sleep(0.1)
print(s:get{3})
box.session.on_connect(function() fiber.sleep(0.01) end)
os.exit(0)
""")


def test_a_yield_in_an_on_replace_trigger_aborts_the_statement_in_scripts(tmp_path):
    outs = run_script_on_both(tmp_path, "trigger_yield.lua", TRIGGER_YIELD_SCRIPT)
    assert outs[1] == outs[0]
    assert outs[1][0] == "false\tTransaction has been aborted by a fiber yield"


def test_a_yield_in_an_on_replace_trigger_aborts_iproto_and_lua_writes():
    real, ours = start_pair("fiber = require('fiber') s = box.schema.space.create('ty') s:create_index('pk') "
                            "s:on_replace(function() fiber.sleep(0.01) end)")
    try:
        p = admin_pair((real, ours))
        p(0x02, {0x10: 512, 0x21: [1]})  # IPROTO insert: 154, nothing stays
        ev(p, "box.space.ty:insert{2}")
        ev(p, "return box.space.ty:select{}")
        ev(p, "box.begin() box.space.ty:insert{3} return box.commit()")
        assert ev(p, "return box.space.ty:count()")[1][0x30] == [0]
    finally:
        real.stop()
        ours.stop()


def test_fiber_time_is_the_loops_time_while_other_fibers_sleep(tmp_path):
    """fiber.time()/clock()/time64() stay the same in a fiber that created others
    which slept, yielded or waited (the time moved for everyone as soon as any
    fiber went to sleep: expirationd's start_time check saw two times)."""
    source = (Path(__file__).parent / "fiber_time_cases.lua").read_text()
    tarantool, oncebox = run_script_on_both(tmp_path, "fiber_time_cases.lua", source)
    assert tarantool == oncebox
    assert oncebox == ["after a fiber slept\ttrue\ttrue\ttrue", "after sleep(0), yield, cond:wait\ttrue\ttrue",
                       "after its own sleep\ttrue\ttrue", "sleep(0) loop ends\ttrue"] * 2


FIBER_ERRORS_SCRIPT = r"""
local fiber = require('fiber')
box.cfg{work_dir = os.getenv('WORK'), log = 'errors.log', log_level = 5}
local function show(label, ...) local r = {pcall(...)} local v = r[2]
  local m, n = tostring(v), 1
  while n > 0 do m, n = m:gsub('^[%w/_.]+%.lua:%d+: ', '') end
  print(label, r[1], (m:gsub('0x%x+', 'ADDR')), r[3] ~= nil and (tostring(r[3]):gsub('0x%x+', 'ADDR')) or '')
end
-- What ends a fiber: logged as the fiber, joined as a box.error.
fiber.create(function() error('boom') end)
fiber.create(function() error({code = 5}) end)
fiber.create(function() box.error(box.error.ILLEGAL_PARAMS, 'xx') end)
fiber.create(function() error(box.error.new{type = 'MyErr', reason = 'custom'}) end)
fiber.create(function() error() end)
for _, raised in ipairs({'str', 42, {code = 5}}) do
  local f = fiber.new(function() error(raised) end)
  f:set_joinable(true)
  show('join', function()
    local ok, e = f:join()
    return ok, table.concat({type(e), e.type, (tostring(e.message):gsub('^[^:]*/', ''))}, ' ')
  end)
end
local f = fiber.new(function() box.error(box.error.NO_SUCH_USER, 'u') end)
f:set_joinable(true)
show('join box', function() local ok, e = f:join() return ok, e.code, e.type end)
show('name', function() local x = fiber.new(function() end) x:name(string.rep('a', 100)) return #x:name() end)
show('name255', function() local x = fiber.new(function() end) x:name(string.rep('a', 255)) return #x:name() end)
show('name256', function() local x = fiber.new(function() end) x:name(string.rep('a', 256)) return #x:name() end)
show('truncate', function() local x = fiber.new(function() end) x:name(string.rep('a', 300), {truncate = true}) return #x:name() end)
show('top off', fiber.top)
fiber.top_enable()
show('top on', function() local t = fiber.top() return type(t.cpu), t.cpu_misses ~= nil end)
fiber.top_disable()
show('top off again', fiber.top)
show('set_joinable', function() return fiber.self().set_joinable(5) end)
show('set_joinable2', function() return fiber.self():set_joinable() end)
fiber.sleep(0.01)
for line in io.lines(os.getenv('WORK') .. '/errors.log') do
  local tail = line:match('^%S+ %S+ %[%d+%] main/%d+/(.* E> .*)$')
  if tail then print((tail:gsub('0x%x+', 'ADDR'):gsub('LuajitError: [^:]*/', 'LuajitError: '))) end
end
os.exit(0)
"""


def test_fiber_errors_names_and_top_as_26(tmp_path):
    """An error that ends a fiber is logged as 2.6 logs it (`LuajitError: text` at
    utils.c:1005, `ER_NAME: message` where a box.error was made) and joined as a
    box.error; names up to 255 bytes; fiber.top() off until enabled."""
    tarantool, oncebox = run_script_on_both(tmp_path, "fiber_errors.lua", FIBER_ERRORS_SCRIPT)
    assert tarantool == oncebox
    assert "lua utils.c:1005 E> LuajitError: fiber_errors.lua:10: boom" in tarantool, tarantool
    assert "join\ttrue\tfalse\tcdata LuajitError table: ADDR" in tarantool, tarantool
    assert len(tarantool) == 18, tarantool
