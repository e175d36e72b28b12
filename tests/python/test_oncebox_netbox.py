"""oncebox's own net.box module (`require('net.box')` in an oncebox script) as a client.

The script runs in oncebox's script mode and talks to a remote server: real
Tarantool 2.6 and oncebox get the same CRUD/call/eval/error checks; against an
oncebox remote, the `{idempotent_token = ...}` option makes a retried call,
replace, update or eval apply once and return the first outcome.
"""
import json
import os
import subprocess

import pytest

from conftest import ADMIN_PASSWORD, LUA_SHOW_SORTED, ONCEBOX, run_script_on_both

HERE = os.path.dirname(os.path.abspath(__file__))


def run_script(name, remote, tmp_path):
    env = dict(os.environ, REMOTE=f"admin:{ADMIN_PASSWORD}@{remote.host}:{remote.port}", WORK=str(tmp_path))
    out = subprocess.run([ONCEBOX, os.path.join(HERE, name)], env=env, capture_output=True, text=True,
                         timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return dict((k, v) for k, v in json.loads(out.stdout.strip().splitlines()[-1]))


def test_crud_call_eval_errors(server, tmp_path):
    r = run_script("oncebox_netbox_client.lua", server, tmp_path)
    assert r["state"] == "active" and r["ping"] is True
    assert r["insert"] == [1, "a"] and r["replace"] == [2, "b"] and r["select"] == 2
    assert r["get"] == [2, "b"]
    assert r["update"] == [1, "z"], "update field numbers are 1-based, as net.box sends them"
    assert r["delete"] == [3, "u"] and r["index"] == [2, "b"]
    assert r["call"] == [9] and r["eval"] == [1, "two"]
    assert r["dup"] == [False, 3, "Duplicate key exists in unique index 'pk' in space 'nb'"]
    assert r["nosuch"] == [False, 33, "Procedure 'nosuch' is not defined"]
    assert r["closed"] == [False, True]
    assert r["badauth"] == ["error", "Incorrect password supplied for user 'admin'"]


def test_idempotent_token_option(oncebox, tmp_path):
    r = run_script("oncebox_netbox_tokens.lua", oncebox, tmp_path)
    assert r["first"] == [1, 10] and r["retry"] == [1, 10], "the retry replays the first outcome"
    assert r["other"] == [1, 15] and r["plain"] == [1, 16]
    assert r["replace1"] == r["replace2"] == [7, "x"]
    assert r["mismatch"] == [False, 4002]
    assert r["update"] == r["update_retry"] == [1, 116]
    assert r["eval"] == r["eval_retry"] == [1116]
    assert r["final"] == [1, 1116], "each tokened operation was applied exactly once"


SELF_SCRIPT = """\
box.cfg{listen = os.getenv('LISTEN'), work_dir = os.getenv('WORK'), log_level = 1}
box.schema.user.passwd('admin', 'pw')
local s = box.schema.space.create('kv', {if_not_exists = true})
s:create_index('pk', {if_not_exists = true})
function twice(x) return x * 2 end
local fiber = require('fiber')
local c = require('net.box').connect('admin:pw@' .. os.getenv('LISTEN'))
print('state', c.state, c.error)
print('ping', c:ping())
print('call', c:call('twice', {21}))
print('eval', c:eval('return box.session.id() ~= ...', {box.session.id()}))
c.space.kv:replace({1, 'one'})
print('get', c.space.kv:get(1))
local done = 0
for i = 1, 5 do fiber.create(function() c:call('twice', {i}) done = done + 1 end) end
while done < 5 do fiber.sleep(0.01) end
print('concurrent', done)
local ok, e = pcall(c.eval, c, 'require("fiber").sleep(0.5)', {}, {timeout = 0.1})
print('timeout', ok, tostring(e), e.code)
print('after timeout', c:call('twice', {4}), c.state)
c:close()
os.exit(0)
"""


def test_connection_to_itself_works_from_a_fiber(tmp_path):
    """A request yields its fiber while the same server answers it, as with 2.6's net.box."""
    from conftest import run_script_on_both
    outs = run_script_on_both(tmp_path, "self.lua", SELF_SCRIPT)
    assert outs[0] == outs[1]
    assert outs[1][-1] == "after timeout\t8\tactive"


ASYNC_SCRIPT = r"""
box.cfg{listen = os.getenv('LISTEN'), work_dir = os.getenv('WORK'), log_level = 1}
box.schema.user.grant('guest', 'super', nil, nil, {if_not_exists = true})
local s = box.schema.space.create('t')
s:create_index('pk')
s:replace{1, 'a'} s:replace{2, 'b'}
function pushy(n) for i = 1, n do box.session.push({i}) end return 'done', n end
function slow(t) require('fiber').sleep(t or 0.05) return 42, 43 end
function fails() box.error(box.error.PROC_LUA, 'boom') end
local c = require('net.box').connect(os.getenv('LISTEN'))
""" + LUA_SHOW_SORTED + r"""
local function try(name, f, ...)
    local r = {pcall(f, ...)}
    local out = {}
    for i = 2, table.maxn(r) do
        local v = r[i]
        if not r[1] or (type(v) ~= 'table' and type(v) ~= 'string' and type(v) ~= 'number' and type(v) ~= 'boolean'
                        and v ~= nil and not box.tuple.is(v)) then
            v = 'error ' .. tostring(v)
        end
        out[#out + 1] = type(v) == 'string' and v or show(v)
    end
    print(name, r[1], table.concat(out, ' | '))
end
try('wait', function() return c:call('slow', {}, {is_async = true}):wait_result(1) end)
try('wait timeout', function() return c:call('slow', {0.5}, {is_async = true}):wait_result(0.01) end)
try('not ready', function() return c:call('slow', {0.5}, {is_async = true}):result() end)
try('error', function() return c:call('fails', {}, {is_async = true}):wait_result(1) end)
try('error then result', function() local f = c:call('fails', {}, {is_async = true}) f:wait_result(1) return f:result() end)
try('ready', function()
    local f = c:call('slow', {0.01}, {is_async = true})
    local before = f:is_ready()
    f:wait_result()
    return before, f:is_ready(), f.method
end)
try('discard', function() local f = c:call('slow', {0.2}, {is_async = true}) f:discard() return f:is_ready(), f:result() end)
try('discard wait', function() local f = c:call('slow', {0.2}, {is_async = true}) f:discard() return f:wait_result(1) end)
try('eval', function() return c:eval('return ...', {1, 2}, {is_async = true}):wait_result() end)
try('select', function() return c.space.t:select({}, {is_async = true}):wait_result() end)
try('get', function() return c.space.t:get(1, {is_async = true}):wait_result() end)
try('insert', function() return c.space.t:insert({3, 'c'}, {is_async = true}):wait_result() end)
try('insert duplicate', function() return c.space.t:insert({3, 'c'}, {is_async = true}):wait_result() end)
try('replace', function() return c.space.t:replace({3, 'd'}, {is_async = true}):wait_result() end)
try('update', function() return c.space.t:update(3, {{'=', 2, 'e'}}, {is_async = true}):wait_result() end)
try('delete', function() return c.space.t:delete(3, {is_async = true}):wait_result() end)
try('ping', function() return c:ping({is_async = true}) end)
try('several at once', function()
    local fs = {}
    for i = 1, 5 do fs[i] = c:eval('return ...', {i}, {is_async = true}) end
    local out = {}
    for i = 5, 1, -1 do out[#out + 1] = fs[i]:wait_result(1)[1] end
    return out
end)
try('on_push', function()
    local got = {}
    local r = {c:call('pushy', {2}, {on_push = function(ctx, m) table.insert(got, {ctx, m}) end, on_push_ctx = 'CTX'})}
    return r, got
end)
try('pairs', function()
    local got = {}
    for i, m in c:call('pushy', {2}, {is_async = true}):pairs(1) do table.insert(got, {i, m}) end
    return got
end)
try('pairs error', function()
    local got = {}
    for i, m in c:call('fails', {}, {is_async = true}):pairs(1) do table.insert(got, {tostring(i), tostring(m)}) end
    return got
end)
try('pushes ignored', function() return c:call('pushy', {3}) end)
try('execute', function() return c:execute([[SELECT 1 AS a, 'x' AS b]]) end)
try('execute dml', function()
    c:execute('CREATE TABLE q (id INT PRIMARY KEY AUTOINCREMENT, v INT)')
    return c:execute('INSERT INTO q (v) VALUES (?), (?)', {5, 6})
end)
try('execute error', function() return c:execute('SELEC 1') end)
try('execute named', function() return c:execute('SELECT :x AS x', {{[':x'] = 7}}) end)
try('version', function() return c.peer_version_id end)
os.exit(0)
"""


def test_futures_pushes_and_execute_match_tarantool(tmp_path):
    """net.box's {is_async = true} futures, box.session.push reaching on_push and a
    future's pairs(), and conn:execute, compared line for line with 2.6's net.box
    (each server's own net.box talking to itself)."""
    tarantool, oncebox = run_script_on_both(tmp_path, "netbox_async.lua", ASYNC_SCRIPT)
    assert tarantool == oncebox
    assert len(tarantool) == 27
    assert tarantool[0] == "wait\ttrue\t{1=42, 2=43}"
    assert any(line.startswith("pairs\ttrue\t{1={1=1, 2={1=1}}") for line in tarantool)
