"""box.cfg{background = true}: the command returns at once and the instance runs
on in the background, in a session of its own, its pid in the pid file (there
when the command returns) and its prints in the log file (tarantoolctl start
and status rely on it). The same script runs
on Tarantool 2.6 and on oncebox; only the instances they started are stopped.
"""
import os
import signal
import socket
import subprocess
import time

from conftest import ONCEBOX, free_port, process_alive, wait_port

BACKGROUND = """
print('before cfg')
-- Work before box.cfg{} (oncebox's instance in the background runs it again).
local t = os.clock() while os.clock() - t < 0.2 do end
box.cfg{background = true, log = 'instance.log', pid_file = 'instance.pid', listen = os.getenv('LISTEN')}
print('after cfg, in the background')
io.stdout:flush()
"""


def read_pid(path, timeout=15.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open(path) as f:
                text = f.read().strip()
            if text:
                return int(text)
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"no pid in {path}")


def background_run(binary, work):
    """Starts the script; returns what the start printed and how it ended, then what
    the instance in the background showed, and stops it."""
    (work / "bg.lua").write_text(BACKGROUND)
    port = free_port()
    env = dict(os.environ, LISTEN=f"127.0.0.1:{port}")
    started = subprocess.run([binary, "bg.lua"], cwd=work, env=env, capture_output=True, text=True, timeout=30)
    # tarantoolctl's `status` right after `start` reads it.
    pid_file_at_exit = (work / "instance.pid").exists()
    pid = read_pid(work / "instance.pid")
    try:
        with_session = os.getsid(pid) == pid
        # Serving: the port greets like any Tarantool.
        wait_port(port, None)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            greeting = s.recv(128)
        # Standard output is the log file: the script's print after box.cfg{} lands there.
        deadline = time.time() + 15
        while "after cfg, in the background" not in (work / "instance.log").read_text():
            assert time.time() < deadline, (work / "instance.log").read_text()[-2000:]
            time.sleep(0.05)
    finally:
        os.kill(pid, signal.SIGTERM)
        deadline = time.time() + 20
        while process_alive(pid) and time.time() < deadline:
            time.sleep(0.05)
    return {
        "exit": started.returncode,
        "stdout": started.stdout,
        "pid file when the start returns": pid_file_at_exit,
        "own session": with_session,
        "greeting": greeting[:9],
        "stopped": not process_alive(pid),
        "pid file removed": not (work / "instance.pid").exists(),
    }


def test_background_detaches_as_on_2_6(tmp_path):
    results = []
    for binary in ("tarantool", ONCEBOX):
        work = tmp_path / os.path.basename(binary)
        work.mkdir()
        results.append(background_run(binary, work))
    assert results[0] == results[1]
    assert results[1] == {
        "exit": 0,
        "stdout": "before cfg\n",
        "pid file when the start returns": True,
        "own session": True,
        "greeting": b"Tarantool",
        "stopped": True,
        "pid file removed": True,
    }


def test_background_needs_a_log(tmp_path):
    script = tmp_path / "nolog.lua"
    script.write_text("print('before cfg')\nbox.cfg{background = true}\nprint('not reached')\n")
    outcomes = []
    for binary in ("tarantool", ONCEBOX):
        r = subprocess.run([binary, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=30)
        outcomes.append((r.returncode, r.stdout, "'background' requires 'log' configuration option to be set"
                         in r.stderr))
    assert outcomes[0] == outcomes[1] == (1, "before cfg\n", True)


SERVER_BEFORE_CFG = """
local socket = require('socket')
local port = tonumber(os.getenv('SERVER_PORT'))
socket.tcp_server('127.0.0.1', port, function(s) s:write('served\\n') end)
box.cfg{background = true, log = 'instance.log', pid_file = 'instance.pid'}
"""


def test_a_server_opened_before_cfg_serves_from_the_background(tmp_path):
    """A script's socket.tcp_server opened before box.cfg{background = true}
    serves on from the instance in the background (2.6's child keeps the
    socket; oncebox's first process lets it go for the second to bind)."""
    replies = []
    for binary in ("tarantool", ONCEBOX):
        work = tmp_path / os.path.basename(binary)
        work.mkdir()
        (work / "srv.lua").write_text(SERVER_BEFORE_CFG)
        port = free_port()
        env = dict(os.environ, SERVER_PORT=str(port))
        subprocess.run([binary, "srv.lua"], cwd=work, env=env, capture_output=True, text=True, timeout=30)
        pid = read_pid(work / "instance.pid")
        try:
            wait_port(port, None)
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                replies.append(s.makefile().readline())
        finally:
            os.kill(pid, signal.SIGTERM)
            deadline = time.time() + 20
            while process_alive(pid) and time.time() < deadline:
                time.sleep(0.05)
    assert replies == ["served\n"] * 2
