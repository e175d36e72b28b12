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

from conftest import ADMIN_PASSWORD, ONCEBOX

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
