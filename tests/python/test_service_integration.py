"""What a service manager sees, compared with real Tarantool 2.6: systemd's
readiness messages on $NOTIFY_SOCKET (Debian's tarantool@.service is
Type=notify), box.cfg{pid_file} (written, locked, refused to a second instance,
removed at exit), the `title` module, and dofile (which tarantoolctl start runs
an instance's script with) letting the script's box.cfg{} boot."""
import os
import socket
import subprocess
import tempfile
import time

from conftest import ONCEBOX, free_port, run_script_on_both, same_output_on_both, wait_port


def notifications(binary, source, tmp_path):
    """The messages `binary` running `source` sends to $NOTIFY_SOCKET, and its exit status."""
    work = tempfile.mkdtemp(dir=tmp_path)
    with open(os.path.join(work, "s.lua"), "w") as f:
        f.write(source)
    path = os.path.join(work, "notify.sock")
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(path)
    receiver.settimeout(0.2)
    env = dict(os.environ, NOTIFY_SOCKET=path)
    proc = subprocess.Popen([binary, "s.lua"], cwd=work, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    messages, deadline = [], time.time() + 20
    try:
        while time.time() < deadline and "READY=1" not in messages:
            try:
                messages.append(receiver.recv(4096).decode())
            except socket.timeout:
                if proc.poll() is not None:
                    break
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=20)
        receiver.close()
    return messages, proc.returncode


SCRIPTS = {
    # Booted and serving: loading, running, then ready once the main chunk ends.
    "listen": "box.cfg{log_level = 1, listen = '127.0.0.1:0'}\n",
    # No box, but a fiber keeps the process up: ready.
    "fiber": "require('fiber').create(function() require('fiber').sleep(30) end)\n",
    # Ends at once: nothing.
    "no-cfg": "local x = 1\n",
    # Refused (a read-only instance cannot bootstrap): loading only.
    "refused": "box.cfg{log_level = 1, read_only = true}\n",
}


def test_systemd_readiness_messages_as_2_6(tmp_path):
    for name, source in SCRIPTS.items():
        real = notifications("tarantool", source, tmp_path)
        ours = notifications(ONCEBOX, source, tmp_path)
        assert ours == real, name
    assert notifications(ONCEBOX, SCRIPTS["listen"], tmp_path)[0] == ["STATUS=loading", "STATUS=running", "READY=1"]


PID_FILE = r"""
box.cfg{log_level = 1, pid_file = 'my.pid'}
local f = io.open('my.pid')
local pid = f:read('*a')
f:close()
print(pid == tostring(box.info.pid), pcall(box.cfg, {pid_file = 'other.pid'}))
print(box.cfg.pid_file)
os.exit(0)
"""


def test_pid_file_written_fixed_and_removed_at_exit(tmp_path):
    tarantool, oncebox = run_script_on_both(tmp_path, "pid_file.lua", PID_FILE)
    assert oncebox == tarantool == ["true\tfalse\tCan't set option 'pid_file' dynamically", "my.pid"]
    for work in ("tarantool", os.path.basename(ONCEBOX)):
        assert not (tmp_path / work / "my.pid").exists(), work


def test_a_pid_file_held_by_a_running_instance_stops_a_second_one(tmp_path):
    results = []
    for binary in ("tarantool", ONCEBOX):
        work = tempfile.mkdtemp(dir=tmp_path)
        port = free_port()
        script = os.path.join(work, "s.lua")
        with open(script, "w") as f:
            f.write("box.cfg{log_level = 1, pid_file = os.getenv('PF'), listen = os.getenv('L')}\n")
        first = subprocess.Popen([binary, script], cwd=work, env=dict(os.environ, PF="x.pid", L=f"127.0.0.1:{port}"),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(port, first)
            other = os.path.join(work, "other")
            os.mkdir(other)
            second = subprocess.run([binary, script], cwd=other, capture_output=True, text=True, timeout=60,
                                    env=dict(os.environ, PF="../x.pid", L="127.0.0.1:0"))
            results.append((second.returncode, second.stdout, second.stderr.replace(str(first.pid), "PID")))
        finally:
            first.terminate()
            first.wait(timeout=20)
        assert not os.path.exists(os.path.join(work, "x.pid")), "removed when the holder stopped"
    assert results[1] == results[0] == (1, "", "the daemon is already running: PID PID\n")


TITLE = r"""
local title = require('title')
local function show()
    local text, parts = title.get()
    local keys = {}
    for k, v in pairs(parts) do keys[#keys + 1] = k .. '=' .. tostring(v) end
    table.sort(keys)
    print(string.format('%q', text), table.concat(keys, ' '))
end
show()
title.update{script_name = 'myscript', __defer_update = true}
show()
title.update('custom one')
show()
title.update{custom_title = 'x', status = 'weird', interpretor_name = 'interp'}
show()
print(pcall(title.update, 5))
box.cfg{log_level = 1, custom_proc_title = 'mytitle'}
show()
box.cfg{custom_proc_title = 'other'}
show()
os.exit(0)
"""


def test_title_module_as_2_6(tmp_path):
    lines = same_output_on_both(tmp_path, "title.lua", TITLE, 7)
    assert lines[5].startswith("\"interp myscript <running>: mytitle\""), lines


DOFILE = r"""
local fio = require('fio')
local function write(name, text) local f = io.open(name, 'w') f:write(text) f:close() end
write('ok.lua', 'return 1, 2, ...\n')
write('bad.lua', 'error("inner")\n')
write('syn.lua', 'x = = 1\n')
-- An instance script, as tarantoolctl start runs it: its box.cfg{} boots under dofile.
write('instance.lua', 'box.cfg{log_level = 1} return box.info.status\n')
print(dofile('ok.lua'))
print(select('#', dofile('ok.lua')))
for _, arg in ipairs({'missing.lua', 'bad.lua', 'syn.lua', 5, {}}) do print(pcall(dofile, arg)) end
print(pcall(dofile, 'instance.lua'))
os.exit(0)
"""


def test_dofile_as_2_6_and_box_cfg_under_it(tmp_path):
    lines = same_output_on_both(tmp_path, "dofile.lua", DOFILE, 8)
    assert lines[-1] == "true\trunning"
