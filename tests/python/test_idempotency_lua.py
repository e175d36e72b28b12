"""The Lua side of idempotency (DESIGN §3.2–3.5): tokened CALL/EVAL as one transaction,
box.atomic / box.begin with idempotent_token, box.stat.idempotency(), box.cfg options,
and box.ctl.on_iproto_request triggers (manual mode included)."""
import os
import signal
import subprocess

import pytest

from conftest import ADMIN_PASSWORD, ONCEBOX, start_oncebox, wait_port
from iproto_raw import CALL, EVAL, INSERT, SELECT, Raw

STATUS = 0x0D

SETUP = """
local s = box.schema.space.create('acc', {format = {{'id', 'unsigned'}, {'n', 'integer'}}})
s:create_index('pk')
s:insert{1, 0}
s:insert{2, 0}
runs = 0
function transfer(amount)
    box.begin()
    box.space.acc:update(1, {{'-', 2, amount}})
    box.commit()
    box.begin()
    box.space.acc:update(2, {{'+', 2, amount}})
    box.commit()
    return box.space.acc:get{1}[2], box.space.acc:get{2}[2]
end
function half_transfer(amount)
    box.space.acc:update(1, {{'-', 2, amount}})
    error('failed half way')
end
function counted() runs = runs + 1 return runs end
"""


@pytest.fixture
def ob():
    inst = start_oncebox()
    c = admin(inst)
    h, b, _ = c.request(EVAL, {0x27: SETUP, 0x21: []})
    assert h[0] == 0, b
    yield inst
    inst.stop()


def admin(inst):
    c = Raw(inst.host, inst.port)
    assert c.auth("admin", ADMIN_PASSWORD)[0][0] == 0
    return c


def ev(c, code, *args, **header):
    h, b, raw = c.request(EVAL, {0x27: code, 0x21: list(args)}, **header)
    return h, b


def balances(c):
    return ev(c, "return box.space.acc:get{1}[2], box.space.acc:get{2}[2]")[1][0x30]


def test_tokened_call_is_one_transaction_with_nested_commits(ob):
    c = admin(ob)
    h, b, _ = c.request(CALL, {0x22: "transfer", 0x21: [10]}, _12="tx-1")
    assert h[STATUS] == 1 and b[0x30] == [-10, 10]
    h, b, _ = c.request(CALL, {0x22: "transfer", 0x21: [10]}, _12="tx-1")
    assert h[STATUS] == 2 and b[0x30] == [-10, 10]
    assert balances(c) == [-10, 10]
    # A tokened call that fails leaves nothing, and its token can be used again.
    h, b, _ = c.request(CALL, {0x22: "half_transfer", 0x21: [5]}, _12="tx-2")
    assert h[0] == 0x8000 | 32 and "failed half way" in b[0x31]
    assert balances(c) == [-10, 10]
    # Without a token, the statements before the error stay (each autocommits, as in Tarantool).
    c.request(CALL, {0x22: "half_transfer", 0x21: [5]})
    assert balances(c) == [-15, 10]


def test_tokened_eval_replays(ob):
    c = admin(ob)
    h, b = ev(c, "return counted()", _12="ev-1")
    assert h[STATUS] == 1 and b[0x30] == [1]
    h, b = ev(c, "return counted()", _12="ev-1")
    assert h[STATUS] == 2 and b[0x30] == [1]
    h, b = ev(c, "return counted() + 0", _12="ev-1")
    assert h[0] == 0x8000 | 4002


def test_box_atomic_with_token(ob):
    c = admin(ob)
    code = "return box.atomic({idempotent_token = ...}, function() box.space.acc:update(1, {{'+', 2, 1}}) return counted(), 'ok' end)"
    assert ev(c, code, "at-1")[1][0x30] == [1, "ok"]
    assert ev(c, code, "at-1")[1][0x30] == [1, "ok"], "replayed without running fn"
    assert ev(c, "return runs")[1][0x30] == [1]
    assert balances(c)[0] == 1
    # A failing fn stores nothing: the next attempt runs.
    bad = "return pcall(box.atomic, {idempotent_token = 'at-2'}, function() box.space.acc:update(1, {{'+', 2, 100}}) error('no') end)"
    assert ev(c, bad)[1][0x30][0] is False
    assert balances(c)[0] == 1
    assert ev(c, code, "at-2")[1][0x30] == [2, "ok"]
    # Invalid tokens are refused.
    h, b = ev(c, "return box.atomic({idempotent_token = ''}, function() return 1 end)")
    assert h[0] == 0x8000 | 4001


def test_box_begin_with_token_discards_a_repeat(ob):
    c = admin(ob)
    code = """box.begin({idempotent_token = 'bg-1'})
              box.space.acc:update(2, {{'+', 2, 7}})
              box.commit()
              return box.space.acc:get{2}[2]"""
    assert ev(c, code)[1][0x30] == [7]
    assert ev(c, code)[1][0x30] == [7], "the second transaction was discarded"


def window_usage(c):
    """box.stat.idempotency()'s count and bytes, and what _idempotency holds (field 6: size)."""
    st = ev(c, "return box.stat.idempotency()")[1][0x30][0]
    held = ev(c, "local n = 0 for _, t in box.space._idempotency:pairs() do n = n + t[6] end"
                 " return box.space._idempotency:count(), n")[1][0x30]
    return [st["remembered"], st["bytes"]], held


def test_an_outcome_undone_with_its_failed_call_leaves_the_window_counts_true(ob):
    c = admin(ob)
    ev(c, "return 1", _12="warm-1")
    # A box.atomic outcome inside a tokened EVAL that then fails: both go.
    inner_then_fail = ("box.atomic({idempotent_token = 'inner-1'}, function() box.space.acc:update(1, {{'+', 2, 1}}) end)"
                       " error('after the inner outcome')")
    executed = ev(c, "return box.stat.idempotency().executed")[1][0x30][0]
    h, _ = ev(c, inner_then_fail, _12="outer-1")
    assert h[0] != 0
    stat, held = window_usage(c)
    assert stat == held and held[0] == 1, (stat, held)
    # The undone inner outcome is not counted as executed either.
    assert ev(c, "return box.stat.idempotency().executed")[1][0x30] == [executed]
    assert balances(c)[0] == 0
    # Neither outcome is remembered: both tokens run again.
    code = "return box.atomic({idempotent_token = 'inner-1'}, function() return box.space.acc:update(1, {{'+', 2, 1}})[2] end)"
    assert ev(c, code)[1][0x30] == [1]
    assert ev(c, "return box.space.acc:update(1, {{'+', 2, 1}})[2]", _12="outer-1")[1][0x30] == [2]
    stat, held = window_usage(c)
    assert stat == held and held[0] == 3, (stat, held)


def test_lua_token_survives_kill9(ob):
    c = admin(ob)
    code = "return box.atomic({idempotent_token = 'crash-1'}, function() return box.space.acc:update(1, {{'+', 2, 5}})[2] end)"
    assert ev(c, code)[1][0x30] == [5]
    ob.proc.send_signal(signal.SIGKILL)
    ob.proc.wait()
    ob.proc = subprocess.Popen([ONCEBOX, "--listen", f"127.0.0.1:{ob.port}", "--data-dir",
                                os.path.join(ob.workdir, "data"), "--log-level", "warn"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(ob.port, ob.proc)
    c = admin(ob)
    c.request(EVAL, {0x27: "function counted() runs = (runs or 0) + 1 return runs end", 0x21: []})
    assert ev(c, code)[1][0x30] == [5]
    assert balances(c)[0] == 5


def test_stat_and_cfg(ob):
    c = admin(ob)
    ev(c, "return 1", _12="st-1")
    ev(c, "return 1", _12="st-1")
    ev(c, "return 2", _12="st-1")
    st = ev(c, "return box.stat.idempotency()")[1][0x30][0]
    assert st["remembered"] >= 1 and st["replays"] >= 1 and st["mismatches"] >= 1 and st["executed"] >= 1
    assert set(st["evicted"]) == {"lifetime", "count", "size"}
    h, b = ev(c, "box.cfg{foo = 1}")
    assert h[0] == 0x8000 | 59 and b[0x31] == "Incorrect value for option 'foo': unexpected option"
    h, b = ev(c, "box.cfg{wal_mode = 'fsync'}")
    assert h[0] == 0x8000 | 58 and b[0x31] == "Can't set option 'wal_mode' dynamically"
    assert ev(c, "return box.cfg.idempotency_mode, box.cfg.wal_mode")[1][0x30] == ["persistent", "write"]
    # Runtime changes apply at once.
    assert ev(c, "box.cfg{idempotency_mode = 'off'}")[0][0] == 0
    h, b = ev(c, "return 3", _12="st-2")
    assert h[0] == 0x8000 | 4003
    ev(c, "box.cfg{idempotency_mode = 'persistent', idempotency_lifetime = 0}")
    import time
    deadline = time.time() + 5
    while time.time() < deadline and ev(c, "return box.space._idempotency:count()")[1][0x30] != [0]:
        time.sleep(0.2)
    assert ev(c, "return box.space._idempotency:count()")[1][0x30] == [0]
    h, b = ev(c, "box.cfg{idempotency_max_count = -1}")
    assert h[0] == 0x8000 | 59


def test_on_iproto_request_triggers(ob):
    c = admin(ob)
    ev(c, """seen = {}
             function watch(h) table.insert(seen, {h.type, h.sync, h.idempotent_token}) end
             function deny(h) if h.type == 'INSERT' then box.error{code = 4100, reason = 'no inserts'} end end
             box.ctl.on_iproto_request(watch)""")
    c.request(SELECT, {0x10: 512, 0x12: 1, 0x20: []}, _12="seen-token")
    got = ev(c, "return seen")[1][0x30][0]
    assert ["SELECT", c.sync - 1, "seen-token"] in [list(x) for x in got]
    ev(c, "box.ctl.on_iproto_request(deny)")
    h, b, _ = c.request(INSERT, {0x10: 512, 0x21: [3, 0]})
    assert h[0] == 0x8000 | 4100 and b[0x31] == "no inserts"
    assert ev(c, "return #box.ctl.on_iproto_request()")[1][0x30] == [2]
    ev(c, "box.ctl.on_iproto_request(nil, deny)")
    assert c.request(INSERT, {0x10: 512, 0x21: [3, 0]})[0][0] == 0


def test_manual_mode_hands_tokens_to_triggers(ob):
    c = admin(ob)
    ev(c, "box.cfg{idempotency_mode = 'manual'}")
    h, b, _ = c.request(INSERT, {0x10: 512, 0x21: [10, 0]}, _12="m-1")
    assert h[0] == 0x8000 | 4003, "manual mode without a trigger refuses tokened writes"
    # A trigger doing its own deduplication in Lua.
    ev(c, """box.schema.space.create('dedup'):create_index('pk', {parts = {1, 'string'}})
             box.ctl.on_iproto_request(function(h)
                 if h.idempotent_token == nil then return end
                 if box.space.dedup:get{h.idempotent_token} then
                     box.error{code = 4500, reason = 'duplicate ' .. h.idempotent_token}
                 end
                 box.space.dedup:insert{h.idempotent_token}
             end)""")
    assert c.request(INSERT, {0x10: 512, 0x21: [10, 0]}, _12="m-1")[0][0] == 0
    h, b, _ = c.request(INSERT, {0x10: 512, 0x21: [10, 0]}, _12="m-1")
    assert h[0] == 0x8000 | 4500


def test_box_atomic_forgets_a_token_past_its_lifetime(ob):
    """A record older than idempotency_lifetime is forgotten at once, not when an
    eviction step reaches it: box.atomic runs the function again."""
    c = admin(ob)
    h, b = ev(c, """
        for i = 1, 3000 do
            box.atomic({idempotent_token = 'many-' .. i}, counted)
        end
        return runs""")
    assert h[0] == 0 and b[0x30] == [3000], b
    h, b = ev(c, """
        box.cfg{idempotency_lifetime = 0}
        local again = box.atomic({idempotent_token = 'many-3000'}, counted)
        box.cfg{idempotency_lifetime = 3600}
        return again, box.atomic({idempotent_token = 'many-3000'}, counted)""")
    assert h[0] == 0 and b[0x30] == [3001, 3001], b
