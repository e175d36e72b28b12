"""The `xlog` module reading files real Tarantool 2.6 wrote (logs, snapshots,
compressed transactions, multi-statement transactions, NOPs, damaged and
foreign files), and tarantoolctl (2.6's own script) run by oncebox as the
`tarantool` executable: `cat`, `connect`, and an instance's start, status,
enter, eval and stop, beside real Tarantool's."""
import os
import re
import subprocess
import time

import pytest
import yaml

from conftest import (LUA_SHOW_SORTED, ONCEBOX, free_port, process_alive, run_script_on_both,
                      tarantool_on_path, wait_port)

MAKE_FILES = r"""
box.cfg{log_level = 1}
local s = box.schema.space.create('t')
s:create_index('pk')
s:insert{1, 'one'}
s:replace{2, 'two', {a = 1}}
s:update({1}, {{'=', 2, 'uno'}})
s:upsert({3, 'three'}, {{'+', 1, 1}})
s:delete{2}
s:before_replace(function(old, new) if new[1] == 7 then return old end end)
s:insert{7}
box.begin() s:insert{10} s:insert{11} box.commit()
-- A transaction big enough to be written compressed.
box.begin() for i = 100, 400 do s:insert{i, string.rep('x', 50)} end box.commit()
box.snapshot()
s:insert{5000, 1.5, true, box.NULL, -7, 18446744073709551615ULL, -9223372036854775807LL}
os.exit(0)
"""

READ_FILES = LUA_SHOW_SORTED + r"""
local xlog, fio = require('xlog'), require('fio')
local dir = os.getenv('FILES')
local names = fio.listdir(dir)
table.sort(names)
for _, name in ipairs(names) do
    local ok, err = pcall(function()
        local n = 0
        for lsn, record in xlog.pairs(fio.pathjoin(dir, name)) do
            n = n + 1
            local body = record.BODY or {}
            print(name, lsn, show(record), box.tuple.is(body.tuple), box.tuple.is(body.key))
        end
        print(name, 'rows', n)
    end)
    if not ok then print(name, 'error', tostring(err):gsub(dir, 'DIR')) end
end
for _, args in ipairs({{}, {'a', 'b'}, {5}}) do
    local ok, err = pcall(xlog.pairs, unpack(args))
    print(ok, (tostring(err):gsub(':%d+:', ':N:')))
end
os.exit(0)
"""


def make_files(tmp_path):
    """A directory of files real Tarantool wrote, and a few damaged or foreign ones."""
    files = tmp_path / "files"
    files.mkdir()
    (files / "make.lua").write_text(MAKE_FILES)
    subprocess.run(["tarantool", "make.lua"], cwd=files, check=True, timeout=60, capture_output=True)
    (files / "make.lua").unlink()
    first = sorted(files.glob("*.xlog"))[0].read_bytes()
    (files / "cut.xlog").write_bytes(first[: len(first) // 2])
    damaged = bytearray(first)
    damaged[len(damaged) // 3] ^= 0xFF
    (files / "damaged.xlog").write_bytes(bytes(damaged))
    (files / "foreign.xlog").write_bytes(b"FOO\n0.13\n\n")
    (files / "text.xlog").write_bytes(b"hello\n")
    return files


def test_xlog_pairs_reads_tarantools_files_as_2_6(tmp_path, monkeypatch):
    files = make_files(tmp_path)
    monkeypatch.setenv("FILES", str(files))
    tarantool, oncebox = run_script_on_both(tmp_path, "read_files.lua", READ_FILES)
    assert oncebox == tarantool
    text = "\n".join(tarantool)
    # Compressed and multi-statement transactions, NOPs and damage were all met.
    assert 'type="NOP"' in text and "commit=true" in text and 'tuple={1=400, 2="xxx' in text
    assert "\ttrue\tfalse" in text and "\tfalse\ttrue" in text, "the tuple and the key come as tuples"
    assert "text.xlog\terror\tUnexpected end of file" in text and "foreign.xlog\terror\txlog reader" in text
    assert "damaged.xlog\trows" in text and "cut.xlog\trows" in text


def documents(text):
    return list(yaml.safe_load_all(text))


def test_tarantoolctl_cat_run_by_oncebox(tmp_path):
    files = make_files(tmp_path)
    xlogs = [str(p) for p in sorted(files.glob("0*.xlog")) + sorted(files.glob("0*.snap"))]
    real = subprocess.run(["tarantoolctl", "cat", *xlogs], capture_output=True, text=True, timeout=60)
    ours = subprocess.run(["tarantoolctl", "cat", *xlogs], capture_output=True, text=True, timeout=60,
                          env=tarantool_on_path(tmp_path))
    assert ours.returncode == real.returncode == 0, ours.stderr
    # The same records, printed the same (YAML keys in 2.6's table order).
    assert documents(ours.stdout) == documents(real.stdout)
    assert ours.stdout == real.stdout
    assert len(documents(real.stdout)) > 300


def test_tarantoolctl_connect_run_by_oncebox(tmp_path):
    port = free_port()
    server = tmp_path / "server"
    server.mkdir()
    (server / "s.lua").write_text(
        f"box.cfg{{listen = '127.0.0.1:{port}', log_level = 1}}\n"
        "box.schema.user.grant('guest', 'super', nil, nil, {if_not_exists = true})\n")
    proc = subprocess.Popen(["tarantool", "s.lua"], cwd=server, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc)
        outputs = []
        for env in (None, tarantool_on_path(tmp_path)):
            for code in ("box.session.type(), 1 + 1\n", "error('x')\n"):
                r = subprocess.run(["tarantoolctl", "connect", f"127.0.0.1:{port}"], input=code, capture_output=True,
                                   text=True, timeout=60, env=env)
                outputs.append((r.returncode, r.stdout, r.stderr.replace(str(port), "PORT")))
        assert outputs[2:] == outputs[:2]
        assert outputs[0][0] == 0 and "- binary\n- 2\n" in outputs[0][1], outputs
        assert outputs[1][0] == 3 and "Error while executing remote command" in outputs[1][2], outputs
    finally:
        proc.kill()
        proc.wait()


def tarantoolctl_lifecycle(tmp_path, env, background=False):
    """start (in the foreground, background = false, or as tarantoolctl's default,
    in the background), status, enter, eval, stop and status again, with a
    user-level .tarantoolctl in `tmp_path`: each command's exit status and output,
    numbers blanked, and the files left in the run directory."""
    port = free_port()
    for d in ("run", "data", "log", "inst"):
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
    (tmp_path / ".tarantoolctl").write_text(
        "default_cfg = {\n"
        + "".join(f"    {k} = '{tmp_path / d}',\n" for k, d in
                  (("pid_file", "run"), ("wal_dir", "data"), ("memtx_dir", "data"), ("vinyl_dir", "data"),
                   ("log", "log")))
        + ("" if background else "    background = false,\n") + "}\n"
        f"instance_dir = '{tmp_path / 'inst'}'\n")
    (tmp_path / "inst" / "app.lua").write_text(f"box.cfg{{listen = '127.0.0.1:{port}'}}\n")
    env = dict(env, PWD=str(tmp_path))
    env.pop("NOTIFY_SOCKET", None)

    def ctl(*args, stdin=None):
        r = subprocess.run(["tarantoolctl", *args], cwd=tmp_path, env=env, input=stdin, capture_output=True,
                           text=True, timeout=60)
        return r.returncode, r.stdout, r.stderr

    if background:
        # The start returns once the instance has gone to the background.
        start = None
        started = ctl("start", "app")
        wait_port(port, None)
        # The console socket comes after box.cfg{} returns (tarantoolctl opens it then).
        deadline = time.time() + 15
        while not (tmp_path / "run" / "app.control").exists() and time.time() < deadline:
            time.sleep(0.05)
    else:
        start = subprocess.Popen(["tarantoolctl", "start", "app"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        wait_port(port, start)
    try:
        steps = [ctl("status", "app"), ctl("enter", "app", stdin="box.info.status\n"),
                 ctl("eval", "app", "/dev/stdin", stdin="return box.space._space:count() > 0\n"),
                 sorted(os.listdir(tmp_path / "run"))]
        pid = int((tmp_path / "run" / "app.pid").read_text().strip())
        steps += [ctl("stop", "app")]
        if start is None:
            # stop signals the instance and returns: wait for it to be gone.
            deadline = time.time() + 30
            while process_alive(pid) and time.time() < deadline:
                time.sleep(0.05)
            steps += [started[:2]]
        else:
            out, _ = start.communicate(timeout=60)
            steps += [(start.returncode, out)]
        steps += [ctl("status", "app"), sorted(os.listdir(tmp_path / "run"))]
    finally:
        if start is not None and start.poll() is None:
            start.kill()
            start.wait()
        stop_leftover(tmp_path / "run" / "app.pid")
    return [re.sub(r"\d{3,}", "N", repr(step).replace(str(tmp_path), "DIR")) for step in steps]


def stop_leftover(pid_file):
    """Kills the instance a failed test started in the background, if it still runs."""
    try:
        os.kill(int(pid_file.read_text().strip()), 9)
    except (OSError, ValueError):
        pass


@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
def test_tarantoolctl_start_status_enter_eval_stop_run_by_oncebox(tmp_path, background):
    real = tarantoolctl_lifecycle(tmp_path / "real", os.environ, background)
    ours = tarantoolctl_lifecycle(tmp_path / "ours", tarantool_on_path(tmp_path), background)
    assert ours == real
    assert real[0].startswith("(0, '', 'app is running") and "- running" in real[1], real
    assert real[3] == "['app.control', 'app.pid']" and real[-1] == "[]", real


PLAY_TARGET = r"""
box.cfg{listen = os.getenv('LISTEN'), log_level = 1}
box.schema.user.grant('guest', 'super', nil, nil, {if_not_exists = true})
box.schema.space.create('t', {id = 512, if_not_exists = true}):create_index('pk', {if_not_exists = true})
"""

PLAYED = ("return box.space.t:count(), box.space.t:get{1}, box.space.t:get{3}, box.space.t:get{400}, "
          "box.space.t:get{5000}\n")


def play(tmp_path, server_binary, env):
    """`tarantoolctl play` of files real 2.6 wrote into a fresh `server_binary`,
    tarantoolctl run with `env`; what the target then holds."""
    tmp_path.mkdir(parents=True)
    files = make_files(tmp_path)
    logs = [str(p) for p in sorted(files.glob("0*.xlog"))]
    port = free_port()
    work = tmp_path / "server"
    work.mkdir()
    (work / "s.lua").write_text(PLAY_TARGET)
    server = subprocess.Popen([server_binary, "s.lua"], cwd=work, env=dict(os.environ, LISTEN=f"127.0.0.1:{port}"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, server)
        played = subprocess.run(["tarantoolctl", "play", f"127.0.0.1:{port}", *logs], env=env, capture_output=True,
                                text=True, timeout=60)
        held = subprocess.run(["tarantoolctl", "connect", f"127.0.0.1:{port}"], input=PLAYED, capture_output=True,
                              text=True, timeout=60)
        return played.returncode, held.stdout
    finally:
        server.kill()
        server.wait()


def test_tarantoolctl_play_into_oncebox_and_by_oncebox(tmp_path):
    """A Tarantool 2.6 log replayed into oncebox (real tarantoolctl), and by
    tarantoolctl run on oncebox into real Tarantool: the same rows as 2.6 into 2.6."""
    reference = play(tmp_path / "real", "tarantool", os.environ)
    into_oncebox = play(tmp_path / "into", ONCEBOX, os.environ)
    by_oncebox = play(tmp_path / "by", "tarantool", tarantool_on_path(tmp_path))
    assert into_oncebox == by_oncebox == reference
    assert reference[0] == 0 and "- [5000, 1.5, true, null, -7, 18446744073709551615" in reference[1], reference
