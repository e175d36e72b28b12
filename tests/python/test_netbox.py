"""Tarantool 2.6's net.box (run by the real `tarantool` binary) as a client of each server: auth, schema
loading and reload, CRUD, call/eval, errors, async requests, close and wait_connected, reconnect_after.
Then oncebox's own net.box against 2.6's, script for script (the *_cases.lua files beside this one):
buffers, connection triggers, remote schema objects, pushes, many fibers on one connection, schema reloads."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ADMIN_PASSWORD, LUA_PRINT_ROW, same_output_on_both


def cases_on_both(tmp_path, cases, lines):
    """Runs the script `cases` (beside this file) on both; its lines, checked equal."""
    return same_output_on_both(tmp_path, cases, (Path(__file__).parent / cases).read_text(), lines)

SCRIPT = os.path.join(os.path.dirname(__file__), "netbox_client.lua")


def test_netbox_client(server, tmp_path):
    if not shutil.which("tarantool"):
        pytest.skip("real tarantool is not installed")
    out = subprocess.run(["tarantool", SCRIPT, f"{server.host}:{server.port}", ADMIN_PASSWORD],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr + out.stdout
    assert out.stdout.strip().endswith("ok")


ERRORS_MODULE_NEEDS = r"""
box.cfg{listen = os.getenv('LISTEN'), work_dir = os.getenv('WORK'), log_level = 1}
box.schema.user.grant('guest', 'read,write,execute', 'universe', nil, {if_not_exists = true})
local net = require('net.box')
local port = tonumber(os.getenv('LISTEN'):match(':(%d+)$'))
local function p(...)
    local t = {}
    for i = 1, select('#', ...) do t[i] = tostring((select(i, ...))) end
    print((table.concat(t, ' | '):gsub('0x%x+', '0x')))
end
-- box.error objects are cdata to type(), and concatenate as their message.
local e = box.error.new({code = 1, reason = 'boom'})
p('error', type(e), e .. '!', '>' .. e, e .. e)
-- A call's arguments with holes arrive as box.NULL, counted to the last one.
rawset(_G, 'args', function(...) local a, b, c = ... return select('#', ...), type(b), tostring(b), type(c) end)
local c = net.connect(port)
p('holes', c:call('args', {'1', nil, false, nil}))
p('seq length', #require('msgpack').encode(setmetatable({1, nil, 3}, {__serialize = 'seq'})))
-- A bare port leaves conn.host nil.
p('host', c.host, c.port == port, net.connect(tostring(port)).host, net.connect('localhost:' .. port).host)
-- A request's traceback shows the C function that called it.
p('traceback', c:eval('local t = debug.traceback("x") return t'))
-- Where an error handler finds a failed request raised.
local function raised_in(f, ...)
    local file
    xpcall(f, function() file = debug.getinfo(3, 'S').short_src end, ...)
    return file
end
local future = c:eval('require("fiber").sleep(5)', nil, {is_async = true})
c:close()
p('closed: pending', future:wait_result(2))
p('closed: next', pcall(c.eval, c, 'return 1'))
p('closed: raised in', raised_in(c.eval, c, 'return 1'), c.state, c.error)
os.exit(0)
"""


def test_net_box_and_errors_as_the_errors_module_needs(tmp_path):
    """What the errors module (2.2.1, whose suite passes here as on 2.6) relies on:
    box.error objects as cdata to type() and concatenable, nil arguments arriving
    as box.NULL, conn.host nil for a bare port, a request's traceback ending in
    its C caller, 'Connection closed' for what is pending or sent after close(),
    raised from net_box.lua."""
    lines = same_output_on_both(tmp_path, "errors_needs.lua", ERRORS_MODULE_NEEDS, 11)
    assert lines[0] == "error | cdata | boom! | >boom | boomboom"
    assert lines[1] == "holes | 3 | cdata | cdata<void *>: NULL | boolean"


def test_replies_into_a_buffer_as_2_6(tmp_path):
    """{buffer = ibuf} on call, eval, select, insert, replace, update, upsert and
    delete puts the reply body's bytes (skip_header: the data alone) into the
    buffer and returns their count, also for is_async futures; calls append;
    get/min/max/count refuse a buffer with 2.6's text; a remote error raises."""
    lines = cases_on_both(tmp_path, "netbox_buffer_cases.lua", 36)
    assert "select skip\ttrue\tnumber\t22\tdd000000029301a161cb3ff80000000000009202a162" in lines
    assert "appended\tdd0000000101dd0000000102" in lines


def test_connection_triggers_and_connecting_in_the_background_as_2_6(tmp_path):
    """{wait_connected = false} returns at once in state 'initial' and a fiber
    connects; on_connect, on_disconnect and on_schema_reload are 2.6's trigger
    lists (set, list, errors) and run in 2.6's order with the connection; a
    trigger set after a waited connect does not run; close() runs on_disconnect
    while the state still says 'active'."""
    lines = cases_on_both(tmp_path, "netbox_triggers_cases.lua", 12)
    assert lines[-4:] == [
        "state after connect initial",
        "on_schema_reload true",
        "on_connect true fetch_schema",
        "on_disconnect true active",
    ], lines


def test_remote_space_and_index_objects_as_2_6(tmp_path):
    """A remote space has 2.6's fields (field_count, enabled, temporary,
    is_sync, _format) and format() (setting one refused); an index its id,
    name, type, unique, space and parts (1-based fieldno, type, is_nullable,
    collation by name)."""
    lines = cases_on_both(tmp_path, "netbox_schema_cases.lua", 14)
    assert '  parts\t[{"collation":"unicode_ci","fieldno":3,"is_nullable":true,"type":"string"}]' in lines


def test_pushes_reach_the_caller_as_they_come_as_2_6(tmp_path):
    """The called function waits until the caller has seen its first push: only
    pushes delivered as they come (to on_push in the caller's fiber, and to a
    future's pairs) let it finish. A time-out leaves the pushes already seen."""
    lines = cases_on_both(tmp_path, "netbox_push_cases.lua", 8)
    assert lines[0] == 'on_push\tdone\tctx:[1,"msg"] ctx:[2,"msg"] ctx:[3,"msg"]'
    assert lines[5] == "pairs timeout\t1=p cdata<void *>: NULL=Timeout exceeded"


def test_a_connection_carries_many_fibers_requests_at_once_as_2_6(tmp_path):
    """A quick call from one fiber is answered before a slow call another fiber
    made first on the same connection; a timed-out call leaves the next one
    answered at once; futures in flight together; close() fails what follows."""
    lines = cases_on_both(tmp_path, "netbox_pipelining_cases.lua", 7)
    assert lines[1] == "quick 2, slow 1"
    assert lines[3] == "next\t4\ttrue"


def test_a_schema_change_is_picked_up_from_the_replies_as_2_6(tmp_path):
    """After the server's schema changes, the next reply's schema version has
    the connection load the schema again (a new space appears, a dropped one
    goes, on_schema_reload runs once per change), also from a future's reply."""
    lines = cases_on_both(tmp_path, "netbox_schema_reload_cases.lua", 7)
    assert lines[2] == "after\ttrue\ttrue\t1"
    assert lines[5] == "async\ttrue\t3"


def test_reconnect_after_as_2_6(tmp_path):
    """With reconnect_after, a connection to a peer that is down keeps trying
    ('error_reconnect'), requests wait for it within their time-out, it notices
    the peer going away without a request (on_disconnect) and comes back
    (on_connect) when the peer does; close() stops it. Without it, the peer going
    is final ('error', "Peer closed"). A reconnecting connection nobody holds is
    collected. The peer is a second instance of the same executable, started and
    killed by the script."""
    lines = cases_on_both(tmp_path, "netbox_reconnect_cases.lua", 28)
    assert lines[1] == "down: reconnecting | true | Connection refused"
    assert lines[15] == "events | on_disconnect active, on_connect fetch_schema"
    assert lines[21] == "plain: noticed | true | error | Peer closed"
    # Dropped while reconnecting, a connection is collected and its fiber ends.
    assert lines[26:] == ["dropped: reconnecting fibers | 1", "dropped: collected fibers | 0"]


CREDENTIALS = r"""
box.cfg{listen = os.getenv('LISTEN')}
box.schema.user.create('test', {password = 'pas'})
box.schema.user.create('nopass')
local fiber = require('fiber')
local seen = {}
box.session.on_auth(function(user, ok) seen[#seen + 1] = user .. '=' .. tostring(ok) end)
local function try(label, ...)
    seen = {}
    local ok, c = pcall(require('net.box').connect, ...)
    fiber.sleep(0.05)
    if not ok then print(label, 'raised', tostring(c)) return end
    print(label, c.state, tostring(c.error), table.concat(seen, ','))
    c:close()
end
local uri = box.info.listen
-- A user given logs in (with an empty password by default), guest too; no user
-- stays guest with no AUTH at all.
try('guest empty', 'guest:@' .. uri)
try('guest wrong', 'guest:pw@' .. uri)
try('guest bare', 'guest@' .. uri)
try('no user', uri)
try('test right', 'test:pas@' .. uri)
try('test wrong', 'test:x@' .. uri)
try('nopass', 'nopass@' .. uri)
try('opts user', uri, {user = 'test', password = 'pas'})
try('opts over uri', 'test:x@' .. uri, {user = 'guest'})
try('password alone', uri, {password = 'x'})
os.exit(0)
"""


def test_credentials_and_on_auth_as_2_6(tmp_path):
    lines = same_output_on_both(tmp_path, "credentials.lua", CREDENTIALS, 10)
    assert lines[0] == "guest empty\tactive\tnil\tguest=true"


TUPLES_AS_KEYS_AND_OPERATIONS = LUA_PRINT_ROW + r"""
box.cfg{listen = os.getenv('LISTEN'), log_level = 1}
box.schema.user.grant('guest', 'super')
local s = box.schema.space.create('t')
s:create_index('pk')
s:replace{1, 'a'}
s:replace{2, 'b'}
local c = require('net.box').connect(os.getenv('LISTEN'))
local t = c.space.t
-- Tuples where a key or the update operations go (as xlog.pairs gives them and
-- tarantoolctl play passes them on).
p(t:get(box.tuple.new{1}))
p(t:update(box.tuple.new{1}, box.tuple.new{{'=', 2, 'x'}}))
p(t.index.pk:update(box.tuple.new{2}, box.tuple.new{{'=', 2, 'y'}}))
p(t:delete(box.tuple.new{2}))
p(#t:select(box.tuple.new{1}), #t:select())
c:close()
os.exit(0)
"""


def test_tuples_as_keys_and_update_operations_as_2_6(tmp_path):
    lines = same_output_on_both(tmp_path, "tuples_as_keys.lua", TUPLES_AS_KEYS_AND_OPERATIONS, 5)
    assert lines[1:3] == ["[1, 'x']", "[2, 'y']"], lines


def test_tuples_carry_their_space_field_names_as_2_6(tmp_path):
    """A tuple from a remote space's get, select, min, max, insert, replace,
    update or delete is named by the space's format (t.id, t:tomap()); a call's
    result is not a tuple; after the server renames the fields, reload_schema
    gives the same space object the new names."""
    lines = cases_on_both(tmp_path, "netbox_field_names_cases.lua", 10)
    assert lines[0] == "field\t1\t1\tnil\t1"
    assert lines[8] == "reloaded\ttrue\t1=1 2=11 abc2=11 id2=1\t1\tnil"


def test_index_count_takes_the_iterator_as_2_6(tmp_path):
    """index:count sends the key and its options: an iterator counts (it was
    ignored, every count an EQ count); an asynchronous count gives the number."""
    lines = cases_on_both(tmp_path, "netbox_count_cases.lua", 6)
    assert lines[1] == "iterator\t3\t1\t5"
    assert lines[3] == "async\t1"


FUTURES = r"""
box.cfg{listen = os.getenv('LISTEN'), log_level = 1}
box.schema.user.grant('guest', 'super', nil, nil, {if_not_exists = true})
local fiber = require('fiber')
local cond
function long_function(...) cond = fiber.cond() cond:wait() return ... end
local function finish() while not cond do fiber.sleep(0.01) end cond:signal() cond = nil end
local c = require('net.box').connect(box.cfg.listen)
-- As in 2.6, a future nobody holds is garbage, though its request is pending.
local weak = setmetatable({}, {__mode = 'v'})
weak.future = c:call('long_function', {1, 2, 3}, {is_async = true})
print(weak.future ~= nil)
collectgarbage() collectgarbage()
print(weak.future == nil)
finish()
local future = c:call('long_function', {1, 2, 3}, {is_async = true})
collectgarbage()
finish()
print(future:wait_result(10)[3])
-- A time-out that is not a number of seconds is a usage error.
for _, t in ipairs({true, '100', -1}) do print(pcall(future.wait_result, future, t)) end
for _, t in ipairs({true, -1}) do print(pcall(future.pairs, future, t)) end
c:close()
os.exit(0)
"""


def test_futures_are_garbage_when_dropped_and_check_time_outs_as_2_6(tmp_path):
    same_output_on_both(tmp_path, "futures.lua", FUTURES, 8)
