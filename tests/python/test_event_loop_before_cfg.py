"""2.6's event loop runs before box.cfg{} (a script that never calls it, luatest,
an http server started by a test): socket.tcp_server accepts and its handler
fibers read and write, the main chunk's own socket waits let them run, sleeps
and channel waits deliver I/O, and a stop signal runs box.ctl.on_shutdown
triggers and exits 0. Each against Tarantool 2.6."""

import os
import re
import signal
import subprocess
import textwrap

import pytest

from conftest import ONCEBOX, run_script_on_both

SCRIPT = textwrap.dedent(r"""
-- No box.cfg{}: 2.6's event loop runs all the same.
local socket = require('socket')
local fiber = require('fiber')
local log = {}
local server = socket.tcp_server('127.0.0.1', 0, {name = 'demo', handler = function(s, from)
    log[#log + 1] = 'accepted ' .. from.host
    while true do
        local head = s:read{delimiter = {'\n\n', '\r\n\r\n'}}
        if head == nil or head == '' then break end
        s:write(('got %d bytes: %q\n'):format(#head, head))
    end
end})
print('server', server ~= nil)
local port = server:name().port
-- The main chunk itself waits on a socket while the handler fiber answers.
local c = socket.tcp_connect('127.0.0.1', port)
c:write('GET / HTTP/1.0\r\n\r\nsecond\n\nrest')
print(c:read('\n'))
print(c:read('\n'))
print('timeout', c:read('\n', 0.05))
-- A fiber waits on a socket while the main chunk waits on a channel.
local ch = fiber.channel(1)
fiber.create(function()
    local c2 = socket.tcp_connect('127.0.0.1', port)
    c2:write('from fiber\n\n')
    ch:put(c2:read('\n'))
    c2:close()
end)
print('channel', ch:get(5))
-- Sleeps let the event loop run too.
local c3 = socket.tcp_connect('127.0.0.1', port)
local got
fiber.create(function() got = c3:read('\n') end)
c3:write('late\r\n\r\n')
fiber.sleep(0.1)
print('after sleep', got)
c:close() c3:close()
fiber.sleep(0.05)
print(table.concat(log, '; '))
local loops = {}
for _, f in pairs(require('fiber').info()) do
    -- (2.6 has fibers of its own, 'lua' and 'on_shutdown', besides these)
    if f.name:find('/') or f.name == 'before_cfg.lua' then loops[#loops + 1] = f.name end
end
table.sort(loops)
print('fibers', table.concat(loops, ' '))
print('close', server:close())
os.exit(0)
""")

STAYS_UP = textwrap.dedent(r"""
local socket = require('socket')
box.ctl.on_shutdown(function() print('on_shutdown ran') io.stdout:flush() end)
local server = socket.tcp_server('127.0.0.1', 0, function(s) s:write('hi\n') end)
print('port', type(server:name().port))
io.stdout:flush()
if arg[1] == 'sleep' then require('fiber').sleep(100) print('woke') end
""")


def test_sockets_and_fibers_run_before_box_cfg_as_on_2_6(tmp_path):
    """tcp_server with an options table (name, handler) and its accept-loop fiber,
    a read with several delimiters, the main chunk waiting on a socket and on a
    channel while fibers do socket I/O, a sleep that lets them run."""
    tarantool, oncebox = run_script_on_both(tmp_path, "before_cfg.lua", SCRIPT)
    assert oncebox == tarantool
    assert 'got 18 bytes: "GET / HTTP/1.0\\13\\' in tarantool
    assert "accepted 127.0.0.1; accepted 127.0.0.1; accepted 127.0.0.1" in tarantool
    assert any(line.startswith("fibers") and "demo/127.0.0.1:0" in line for line in tarantool)


def each_binary(tmp_path, name, source, run):
    """Writes the script `name` and returns [run(binary, script, work directory)]
    for Tarantool 2.6 and then oncebox."""
    script = tmp_path / name
    script.write_text(source)
    results = []
    for binary in ("tarantool", ONCEBOX):
        work = tmp_path / os.path.basename(binary)
        work.mkdir()
        results.append(run(binary, script, work))
    return results


def run_until_stopped(binary, script, mode, cwd):
    """Starts `script` with `mode`, sends SIGTERM once it printed its first line;
    returns (exit status, stdout lines, stderr lines)."""
    proc = subprocess.Popen(
        [binary, str(script), mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd
    )
    try:
        first = proc.stdout.readline()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, [first.rstrip("\n")] + out.splitlines(), err.splitlines()


@pytest.mark.parametrize("mode", ["end", "sleep"])
def test_a_stop_signal_before_box_cfg_as_on_2_6(tmp_path, mode):
    """A script whose tcp_server keeps it up after its end ('entering the event
    loop'), or whose main chunk sleeps: SIGTERM runs the on_shutdown trigger and
    the process exits 0; the accept loop logs 'started'."""
    results = each_binary(tmp_path, "stays_up.lua", STAYS_UP, lambda b, s, w: run_until_stopped(b, s, mode, w))
    assert results[1] == results[0]
    code, out, err = results[0]
    assert code == 0 and out == ["port\tnumber", "on_shutdown ran"], results[0]
    assert err[0] == "started"


LOGS_FROM_FIBERS = textwrap.dedent(r"""
local socket = require('socket')
local server = socket.tcp_server('127.0.0.1', 0, {name = 'named', handler = function() end})
box.cfg{work_dir = os.getenv('WORK'), log_level = 5}
local log = require('log')
local fiber = require('fiber')
log.info('from the main fiber')
fiber.create(function() fiber.name('worker') log.info('from a named fiber') end)
fiber.create(function() log.info('from an unnamed fiber') end)
server:close()
fiber.sleep(0.05)
os.exit(0)
""")


def test_log_lines_name_their_fiber_as_on_2_6(tmp_path):
    """A log line's prefix is `main/<fiber id>/<fiber name>` (2.6's ids count its
    own fibers too, so only the names are compared); the accept loop of a
    tcp_server is a fiber named after the address asked for."""

    def logged(binary, script, work):
        r = subprocess.run(
            [binary, str(script)], env=dict(os.environ, WORK=str(work)), capture_output=True, text=True, timeout=60
        )
        assert r.returncode == 0, (binary, r.stderr)
        return [m.groups() for m in re.finditer(r"main/\d+/(\S+) I> (from .*|stopped)$", r.stderr, re.M)]

    named = each_binary(tmp_path, "logs.lua", LOGS_FROM_FIBERS, logged)
    assert named[1] == named[0]
    assert named[0] == [
        ("logs.lua", "from the main fiber"),
        ("worker", "from a named fiber"),
        ("lua", "from an unnamed fiber"),
        ("named/127.0.0.1:0", "stopped"),
    ], named[0]


DELAYED_CFG = r"""
-- The main chunk ends without box.cfg{}; a fiber calls it later (tarantoolctl's
-- delayed_box_cfg case): the event loop boots for it, as 2.6's does.
local fiber = require('fiber')
fiber.create(function()
    fiber.sleep(0.1)
    print('bad cfg', pcall(box.cfg, {work_dir = os.getenv('WORK'), log_level = 1, wal_mode = 'nope'}))
    fiber.create(function() print('second', pcall(box.cfg, {log_level = 1})) end)
    print('first', pcall(box.cfg, {work_dir = os.getenv('WORK'), log_level = 1}))
    print('booted', type(box.space), box.info.status, box.cfg.log_level)
    local s = box.schema.space.create('t')
    s:create_index('pk')
    s:insert{1}
    fiber.create(function() print('another fiber', box.space.t:len(), box.space.t:get(1)) os.exit(0) end)
end)
print('main ends')
"""


def test_a_fiber_boots_after_the_main_chunk_ended_as_on_2_6(tmp_path):
    tarantool, oncebox = run_script_on_both(tmp_path, "delayed_cfg.lua", DELAYED_CFG)
    assert tarantool == oncebox
    assert tarantool == [
        "main ends",
        "bad cfg\tfalse\tIncorrect value for option 'wal_mode': nope",
        "second\ttrue",
        "first\tfalse\tCan't set option 'work_dir' dynamically",
        "booted\ttable\trunning\t1",
        "another fiber\t1\t[1]",
    ]
