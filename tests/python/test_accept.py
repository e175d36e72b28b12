"""Accepting connections.

A burst of connects while the server is busy waits in a full-size accept queue
(Tarantool asks for net.core.somaxconn), and on_connect triggers run in the order
connections were accepted, before the client sees its greeting (as in Tarantool
2.6): a request sent after a greeting arrived never overtakes the connect of a
connection opened earlier."""
import concurrent.futures
import os
import shutil
import signal
import socket
import subprocess
import tempfile

import pytest

from conftest import ONCEBOX, free_port, wait_port
from iproto_raw import EVAL, Raw

# As the conformance harness starts a server: box.cfg{listen} comes last, so an
# open port means the triggers are set.
INIT = """
box.cfg{}
box.schema.user.passwd('admin', 'pw')
box.schema.user.grant('guest', 'read,write,execute', 'universe')
box.schema.user.create('u1', {password = 'p1'})
box.schema.user.grant('u1', 'read,write,execute', 'universe')
local log = box.schema.space.create('slog')
log:create_index('pk')
box.session.on_connect(function() log:auto_increment{'connect', box.session.id()} end)
box.session.on_auth(function(user, ok) log:auto_increment{'auth', box.session.id(), ok} end)
box.cfg{listen = os.getenv('LISTEN')}
"""


def probe_then_auth(binary):
    """Starts a server, opens and closes a probe connection (as a port check does),
    then authenticates on a second one; returns the trigger log."""
    workdir = tempfile.mkdtemp(prefix="session-order-")
    try:
        with open(os.path.join(workdir, "init.lua"), "w") as f:
            f.write(INIT)
        port = free_port()
        env = dict(os.environ, LISTEN=f"127.0.0.1:{port}")
        proc = subprocess.Popen([binary, "init.lua"], cwd=workdir, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(port, proc)  # the probe: connects and closes at once
            c = Raw("127.0.0.1", port)
            assert c.auth("u1", "p1")[0][0] == 0
            h, b, _ = c.request(EVAL, {0x27: "return box.space.slog:select{}", 0x21: []})
            assert h[0] == 0, b
            c.close()
            return [row[1:] for row in b[0x30][0]]
        finally:
            proc.kill()
            proc.wait()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def test_tarantool_logs_the_probe_first():
    if not shutil.which("tarantool"):
        pytest.skip("real tarantool is not installed")
    log = probe_then_auth("tarantool")
    assert [row[0] for row in log] == ["connect", "connect", "auth"]
    assert log[0][1] < log[1][1] == log[2][1]


def test_a_probe_connect_is_logged_before_a_later_connection_authenticates():
    # Servers side by side, so the network thread is as busy as in a CI run: the
    # order must not depend on when a connection's task happens to be scheduled.
    runs = 40
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        logs = list(pool.map(lambda _: probe_then_auth(ONCEBOX), range(runs)))
    for log in logs:
        probe, client = log[0][1], log[1][1]
        assert log == [["connect", probe], ["connect", client], ["auth", client, True]], logs


def test_a_burst_of_connects_waits_in_the_accept_queue(server):
    # With the server stopped nothing is accepted: every connect must still
    # complete in the kernel's queue (tokio's TcpListener::bind queued only 128).
    burst = 600
    server.proc.send_signal(signal.SIGSTOP)
    try:
        socks = [socket.create_connection((server.host, server.port), timeout=5) for _ in range(burst)]
    finally:
        server.proc.send_signal(signal.SIGCONT)
    for s in socks:
        s.close()
    c = Raw(server.host, server.port)
    c.close()
