"""Text-console lines (`require('console').listen`) run in fibers, as in Tarantool 2.6:
a line that sleeps lets every other connection be served, and the lines typed after it
on the same console wait their turn. Each step runs on Tarantool 2.6 and on oncebox."""
import os
import shutil
import socket
import subprocess
import tempfile
import textwrap
import time

import pytest

from conftest import ONCEBOX, free_port, wait_port
from iproto_raw import Raw

SCRIPT = textwrap.dedent("""\
    require('console').listen(os.getenv('ADMIN'))
    box.cfg{listen = os.getenv('LISTEN'), log_level = 2}
    box.schema.user.grant('guest', 'read,write,execute', 'universe', nil, {if_not_exists = true})
    s = box.schema.space.create('t', {if_not_exists = true})
    s:create_index('pk', {if_not_exists = true})
""")


class Console:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""
        greeting = self.recv_exact(128)
        assert greeting.startswith(b"Tarantool ") and b"(Lua console)" in greeting

    def recv_exact(self, n):
        while len(self.buf) < n:
            self.buf += self.sock.recv(4096)
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, *lines):
        self.sock.sendall("".join(line + "\n" for line in lines).encode())

    def reply(self):
        while b"\n...\n" not in self.buf:
            chunk = self.sock.recv(4096)
            assert chunk, "console closed"
            self.buf += chunk
        end = self.buf.index(b"\n...\n") + 5
        out, self.buf = self.buf[:end], self.buf[end:]
        return out.decode()

    def close(self):
        self.sock.close()


@pytest.fixture(params=["tarantool", "oncebox"])
def server(request):
    if request.param == "tarantool" and not shutil.which("tarantool"):
        pytest.skip("tarantool is not installed")
    workdir = tempfile.mkdtemp(prefix=f"console-fibers-{request.param}-")
    with open(os.path.join(workdir, "init.lua"), "w") as f:
        f.write(SCRIPT)
    port, admin = free_port(), free_port()
    env = dict(os.environ, LISTEN=f"127.0.0.1:{port}", ADMIN=f"127.0.0.1:{admin}")
    exe = "tarantool" if request.param == "tarantool" else ONCEBOX
    proc = subprocess.Popen([exe, "init.lua"], cwd=workdir, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(admin, proc)
        wait_port(port, proc)
        # The script's DDL may still be running: wait until the space exists.
        c = Console(admin)
        c.send("box.space.t ~= nil")
        deadline = time.time() + 15
        while c.reply() != "---\n- true\n...\n":
            assert time.time() < deadline, "the script did not finish its setup"
            time.sleep(0.05)
            c.send("box.space.t ~= nil")
        c.close()
        yield port, admin
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)


def test_a_sleeping_line_lets_others_in_and_later_lines_wait(server):
    port, admin = server
    a, b = Console(admin), Console(admin)
    t0 = time.monotonic()
    a.send("fiber = require('fiber')",
           "box.space.t:replace{1, 'before'} fiber.sleep(0.5) box.space.t:replace{2, 'after'} return 'slept'",
           "box.space.t:select{}")
    assert a.reply() == "---\n...\n"
    # While a's line sleeps, another console and the binary port are served.
    b.send("box.space.t:select{}")
    assert b.reply() == "---\n- - [1, 'before']\n...\n"
    raw = Raw("127.0.0.1", port)
    assert raw.request(0x40, {})[0][0] == 0
    raw.close()
    assert time.monotonic() - t0 < 0.45, "the others were answered during the sleep"
    # a's lines are answered in order, the third only after the second ended.
    assert a.reply() == "---\n- slept\n...\n"
    assert time.monotonic() - t0 >= 0.5
    assert a.reply() == "---\n- - [1, 'before']\n  - [2, 'after']\n...\n"
    a.close()
    b.close()


def test_a_yield_inside_a_console_transaction_aborts_it(server):
    _, admin = server
    c = Console(admin)
    c.send("fiber = require('fiber')")
    assert c.reply() == "---\n...\n"
    c.send("box.begin() box.space.t:replace{3} fiber.sleep(0) box.commit()")
    assert c.reply() == "---\n- error: Transaction has been aborted by a fiber yield\n...\n"
    c.send("box.space.t:get{3}, box.is_in_txn()")
    assert c.reply() == "---\n- null\n- false\n...\n"
    c.close()


def test_fibers_created_on_the_console_run_after_it(server):
    _, admin = server
    c = Console(admin)
    c.send("fiber = require('fiber') ch = fiber.channel(1)")
    assert c.reply() == "---\n...\n"
    c.send("fiber.create(function() fiber.sleep(0.05) ch:put('from a fiber') end) return ch:get(5)")
    assert c.reply() == "---\n- from a fiber\n...\n"
    c.close()
