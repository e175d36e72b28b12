"""console.start(): the interactive console on the standard input, compared with
real Tarantool 2.6 byte for byte (prompts, the echo of input that is not a
terminal, statements continued over lines, `\\set delimiter`, YAML results and
errors, the end of the input), and the server answering requests while the
console waits for a line."""
import os
import socket
import subprocess

from conftest import ONCEBOX, free_port, run_script_on_both, wait_port

SCRIPT = r"""
box.cfg{listen = os.getenv('LISTEN')}
print('before')
require('console').start()
print('after')
os.exit(0)
"""

INPUT = r"""x = 1 + 2
x
{1, 2, "a"}
error("boom")
box.space._space:get{280}[3]
local a = 5
a
function f(a)
return a * 2
end
f(21)
for i = 1,
2 do print(i) end
box.error.new{code = 5, reason = 'why'}
require('fiber').sleep(0.01)
\set delimiter ;
1 +
2;
"""


def test_console_start_reads_statements_from_stdin_as_2_6(tmp_path):
    tarantool, oncebox = run_script_on_both(tmp_path, "console_start.lua", SCRIPT, stdin_text=INPUT)
    assert oncebox == tarantool
    assert "- 42" in oncebox and oncebox[-1] == "tarantool> after", oncebox


def test_the_server_answers_while_the_console_waits_for_a_line(tmp_path):
    script = tmp_path / "console_wait.lua"
    script.write_text(SCRIPT)
    port = free_port()
    env = dict(os.environ, LISTEN=f"127.0.0.1:{port}")
    proc = subprocess.Popen(
        [ONCEBOX, str(script)], env=env, cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        wait_port(port, proc)
        # A PING (header {0x00: 0x40, 0x01: 7}, no body) answered while stdin is silent.
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.recv(128)
            s.sendall(b"\xce\x00\x00\x00\x05\x82\x00\x40\x01\x07")
            reply = s.recv(64)
        assert len(reply) > 5 and reply[5:].startswith(b"\x83\x00\xce\x00\x00\x00\x00"), reply
        out, _ = proc.communicate("box.space._space:count() > 0\n", timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert out.splitlines() == ["before", "tarantool> box.space._space:count() > 0", "---", "- true", "...", "",
                                "tarantool> after"], out


def test_quit_ends_the_console_as_the_end_of_input_does(tmp_path):
    """`\\help` shows 2.6's help screen; `\\q` ends console.start() there: the lines
    after it are not run and the script goes on, as in 2.6."""
    tarantool, oncebox = run_script_on_both(
        tmp_path, "console_quit.lua", SCRIPT, stdin_text="1 + 1\n\\help\nx = 5\n\\q\nprint('not run')\n"
    )
    assert oncebox == tarantool
    assert "not run" not in "\n".join(oncebox), oncebox
    assert oncebox[-2:] == ["tarantool> \\q", "after"], oncebox
