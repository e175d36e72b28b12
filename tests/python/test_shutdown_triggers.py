"""box.ctl.on_shutdown and the order trigger lists run in, compared with real
Tarantool 2.6: on_shutdown triggers run once, newest first, with no arguments,
at os.exit and on SIGTERM (a server script keeps running until then); the
session's on_connect / on_disconnect triggers run newest first too.
"""
import os
import signal
import subprocess

from conftest import ONCEBOX, free_port, same_output_on_both, wait_port

AT_EXIT = r"""
box.cfg{listen = os.getenv('LISTEN')}
print(type(box.ctl.on_shutdown), type(box.ctl.set_on_shutdown_timeout))
local a = box.ctl.on_shutdown(function(...) print('a', select('#', ...), box.info.status) end)
box.ctl.on_shutdown(function() print('b') end)
local gone = box.ctl.on_shutdown(function() print('removed, never runs') end)
print(#box.ctl.on_shutdown(), box.ctl.on_shutdown()[1] == a)
box.ctl.on_shutdown(nil, gone)
print(#box.ctl.on_shutdown())
box.session.on_connect(function() print('connect a') end)
box.session.on_connect(function() print('connect b') end)
box.session.on_disconnect(function() print('disconnect a') end)
box.session.on_disconnect(function() print('disconnect b') end)
local c = require('net.box').connect(os.getenv('LISTEN'))
c:ping()
c:close()
require('fiber').sleep(0.1)
print('exiting')
os.exit(0)
"""

ON_SIGTERM = r"""
box.cfg{listen = os.getenv('LISTEN')}
box.ctl.on_shutdown(function() print('first set') io.stdout:flush() end)
box.ctl.on_shutdown(function() print('stopping') io.stdout:flush() end)
print('serving')
io.stdout:flush()
"""


def test_on_shutdown_at_exit_and_trigger_order_as_2_6(tmp_path):
    same_output_on_both(tmp_path, "at_exit", AT_EXIT, 10)


def run_until_sigterm(binary, tmp_path):
    work = tmp_path / os.path.basename(binary)
    work.mkdir()
    script = work / "serve.lua"
    script.write_text(ON_SIGTERM)
    port = free_port()
    env = dict(os.environ, LISTEN=f"127.0.0.1:{port}")
    proc = subprocess.Popen([binary, str(script)], cwd=work, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        wait_port(port, proc)
        # The port opens in box.cfg, before the triggers are set: wait for the line
        # the script prints after them, or a SIGTERM may come first.
        first = proc.stdout.readline()
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=20)
        out = first + out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return out.splitlines()


def test_on_shutdown_runs_on_sigterm_as_2_6(tmp_path):
    expected = ["serving", "stopping", "first set"]
    assert run_until_sigterm("tarantool", tmp_path) == expected
    assert run_until_sigterm(ONCEBOX, tmp_path) == expected
