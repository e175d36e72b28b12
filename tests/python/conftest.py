"""Fixtures: oncebox and real Tarantool 2.6 on ephemeral loopback ports.

Both servers are started by the tests themselves and killed afterwards; only
processes started here are ever stopped.
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ONCEBOX = os.environ.get("ONCEBOX_BIN", os.path.join(ROOT, "target", "release", "oncebox"))
ADMIN_PASSWORD = "pw"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout=15.0):
    """Waits until `port` accepts; fails early if `proc` (None: a process not
    ours to watch, such as one gone to the background) has exited."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"port {port} never opened")


def process_alive(pid):
    """Whether process `pid` runs (a zombie left to an init that does not reap does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


class Instance:
    """A running server: host, port and the process handle."""

    def __init__(self, kind, port, proc, workdir):
        self.kind = kind
        self.host = "127.0.0.1"
        self.port = port
        self.proc = proc
        self.workdir = workdir

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)


def start_oncebox(*extra, env=None):
    workdir = tempfile.mkdtemp(prefix="oncebox-")
    proc = subprocess.Popen(
        [ONCEBOX, "--listen", "127.0.0.1:0", "--admin-password", ADMIN_PASSWORD, "--log-level", "warn",
         "--data-dir", os.path.join(workdir, "data"), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    line = proc.stdout.readline()
    if not line.startswith("oncebox listening on "):
        proc.kill()
        raise RuntimeError(f"unexpected first line {line!r}")
    port = int(line.strip().rsplit(":", 1)[1])
    return Instance("oncebox", port, proc, workdir)


TARANTOOL_INIT = """
box.cfg{listen = os.getenv('LISTEN'), log = 'tarantool.log', log_level = 2}
box.schema.user.passwd('admin', os.getenv('ADMIN_PASSWORD'))
"""


def start_tarantool():
    if not shutil.which("tarantool"):
        pytest.skip("real tarantool is not installed")
    workdir = tempfile.mkdtemp(prefix="tarantool-")
    with open(os.path.join(workdir, "init.lua"), "w") as f:
        f.write(TARANTOOL_INIT)
    port = free_port()
    env = dict(os.environ, LISTEN=f"127.0.0.1:{port}", ADMIN_PASSWORD=ADMIN_PASSWORD)
    proc = subprocess.Popen(["tarantool", "init.lua"], cwd=workdir, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port, proc)
    wait_writable(port, proc)
    return Instance("tarantool", port, proc, workdir)


def wait_writable(port, proc, timeout=15.0):
    """Tarantool listens before box.cfg has finished: wait until it is running and writable."""
    from iproto_raw import EVAL, Raw

    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("tarantool exited")
        try:
            c = Raw("127.0.0.1", port)
            if c.auth("admin", ADMIN_PASSWORD)[0][0] == 0:
                h, b, _ = c.request(EVAL, {0x27: "return box.info.status, box.info.ro", 0x21: []})
                c.close()
                if h[0] == 0 and b[0x30] == ["running", False]:
                    return
        except (OSError, EOFError):
            pass
        time.sleep(0.05)
    raise RuntimeError("tarantool never became writable")


@pytest.fixture
def oncebox():
    inst = start_oncebox()
    yield inst
    inst.stop()


@pytest.fixture
def tarantool():
    inst = start_tarantool()
    yield inst
    inst.stop()


@pytest.fixture(params=["oncebox", "tarantool"])
def server(request):
    """Runs a test against oncebox and against real Tarantool 2.6."""
    inst = start_oncebox() if request.param == "oncebox" else start_tarantool()
    yield inst
    inst.stop()


def run_script_on_both(tmp_path, name, source, stdin_text=None, tarantool_may_abort_at_exit=False):
    """Runs a Lua script with `tarantool` and with oncebox, each in a work directory of
    its own (`WORK`) with a free `LISTEN` address (and `stdin_text` as standard input,
    if given); returns both stdouts as lines (tarantool's first). With
    `tarantool_may_abort_at_exit`, Tarantool's SIGABRT (a 2.6 crash while it exits,
    after the script's output) is taken as its exit."""
    script = tmp_path / name
    script.write_text(source)
    outs = []
    for binary in ("tarantool", ONCEBOX):
        work = tmp_path / os.path.basename(binary)
        work.mkdir(exist_ok=True)
        env = dict(os.environ, WORK=str(work), LISTEN=f"127.0.0.1:{free_port()}")
        r = run_in_own_group([binary, str(script)], env=env, cwd=work, input_text=stdin_text, timeout=60)
        aborted = tarantool_may_abort_at_exit and binary == "tarantool" and r.returncode == -signal.SIGABRT
        assert r.returncode == 0 or aborted, (binary, r.stdout, r.stderr)
        outs.append(r.stdout.splitlines())
    return outs


def run_in_own_group(argv, env, cwd, input_text=None, timeout=60):
    """subprocess.run(capture_output=True, text=True) in a process group of its own:
    on a time-out the whole group is killed, so the processes a script started
    (a peer instance through popen) do not outlive it. Raises TimeoutExpired then."""
    proc = subprocess.Popen(argv, env=env, cwd=cwd, text=True, start_new_session=True,
                            stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(input=input_text, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


# A Lua helper for differential scripts: `p(...)` prints its arguments, nils
# included, as strings joined by " | ".
LUA_PRINT_ROW = """local function p(...)
  local t = {...}
  for i = 1, select('#', ...) do t[i] = tostring(t[i]) end
  print(table.concat(t, ' | '))
end
"""


# show(v): a value as text, maps with sorted keys (so that a check does not hang on
# how a table was built), tuples as their fields, box.error objects as
# "error <message>".
LUA_SHOW_SORTED = r"""
local function show(v)
    if box.tuple.is(v) then v = v:totable() end
    if type(v) == 'table' and getmetatable(v) ~= nil and v.code ~= nil then return 'error ' .. tostring(v) end
    if type(v) == 'string' then return string.format('%q', v) end
    if type(v) ~= 'table' then return tostring(v) end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    local out = {}
    for _, k in ipairs(keys) do out[#out + 1] = tostring(k) .. '=' .. show(v[k]) end
    return '{' .. table.concat(out, ', ') .. '}'
end
"""


# try(name, f, ...): calls f, then prints name, 'ok' and what it returned (shown
# as LUA_SHOW_SORTED's show does, which it follows), or name, 'error' and the
# error (with its cause after ' <- ', if it has one).
LUA_TRY = r"""
local function try(name, f, ...)
    local r = {pcall(f, ...)}
    if r[1] then
        local out = {}
        for i = 2, table.maxn(r) do out[#out + 1] = show(r[i]) end
        print(name, 'ok', table.concat(out, ' '))
    else
        local e = r[2]
        local text = tostring(e)
        if type(e) == 'table' and e.prev ~= nil then text = text .. ' <- ' .. tostring(e.prev) end
        print(name, 'error', text)
    end
end
"""


# p(...): how many values it got, then each (tostring), as one line.
LUA_PRINT_COUNTED = r"""local function p(...)
    local t = {}
    for i = 1, select('#', ...) do t[i] = tostring((select(i, ...))) end
    print(select('#', ...) .. ': ' .. table.concat(t, ' | '))
end
"""


def scripts_in_turn_on_both(tmp_path, scripts):
    """Runs `scripts` ((name, source) pairs) one after the other in one work
    directory (env WORK) with each server, Tarantool 2.6 first; returns the
    stdout lines of each server's runs, joined: (tarantool, oncebox)."""
    outs = []
    for binary in ("tarantool", ONCEBOX):
        work = tmp_path / os.path.basename(binary)
        work.mkdir()
        env = dict(os.environ, WORK=str(work))
        lines = []
        for name, source in scripts:
            script = tmp_path / name
            script.write_text(source)
            r = subprocess.run([binary, str(script)], env=env, capture_output=True, text=True, timeout=60, cwd=work)
            assert r.returncode == 0, (binary, r.stdout, r.stderr)
            lines += r.stdout.splitlines()
        outs.append(lines)
    return outs[0], outs[1]


def same_output_on_both(tmp_path, name, source, lines, **how):
    """Runs a Lua script on both (`run_script_on_both`, given `how`) and checks that it
    printed `lines` lines, equal line for line; returns Tarantool's lines."""
    tarantool, oncebox = run_script_on_both(tmp_path, name, source, **how)
    mismatches = [(t, o) for t, o in zip(tarantool, oncebox) if t != o]
    assert not mismatches, mismatches[:5]
    assert len(tarantool) == len(oncebox) == lines, (len(tarantool), len(oncebox), tarantool[-3:])
    return tarantool


def tarantool_on_path(tmp_path):
    """An environment whose `tarantool` is oncebox (a symlink in `tmp_path`/bin,
    first on PATH), for what runs it by that name (`env tarantool` scripts)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "tarantool").symlink_to(ONCEBOX)
    return dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")


CONSOLE_SERVER = """
box.cfg{work_dir = os.getenv('WORK'), listen = os.getenv('LISTEN'), log = 'server.log'}
require('console').listen(os.getenv('ADMIN'))
"""


def console_transcripts_on_both(tmp_path, lines):
    """Sends `lines` one by one to the text console of a server started as a
    script (box.cfg{listen} on a Unix socket, `LISTEN`, and a console on
    another), as Tarantool's test-run does, on 2.6 and on oncebox; returns each
    server's replies joined (tarantool's first), one YAML document per line."""
    transcripts = []
    for binary in ("tarantool", ONCEBOX):
        work = tmp_path / ("console-" + os.path.basename(binary))
        work.mkdir()
        (work / "server.lua").write_text(CONSOLE_SERVER)
        admin, listen = str(work / "admin.sock"), str(work / "listen.sock")
        env = dict(os.environ, WORK=str(work), ADMIN=admin, LISTEN=listen)
        proc = subprocess.Popen([binary, "server.lua"], cwd=work, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        replies = []
        try:
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(30)
            deadline = time.time() + 15
            while True:
                try:
                    s.connect(admin)
                    break
                except OSError:
                    assert time.time() < deadline and proc.poll() is None, "no console"
                    time.sleep(0.02)
            s.recv(128)
            for line in lines:
                s.sendall(line.encode() + b"\n")
                buf = b""
                while not buf.endswith(b"\n...\n"):
                    chunk = s.recv(65536)
                    assert chunk, (binary, line, buf)
                    buf += chunk
                replies.append(buf.decode())
            s.close()
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        transcripts.append(replies)
    return transcripts[0], transcripts[1]
