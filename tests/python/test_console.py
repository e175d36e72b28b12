"""The console as `tarantoolctl connect` uses it: `require('console').eval(line)` over
EVAL, rendering YAML as Tarantool 2.6 does (compared with the real one), and the real
`tarantoolctl connect` against oncebox."""
import shutil
import subprocess

import pytest

from conftest import ADMIN_PASSWORD, start_oncebox, start_tarantool
from iproto_raw import EVAL, Raw

SETUP = "s = box.schema.space.create('t') s:create_index('pk') s:insert{1, 'Alice', 55} s:insert{2, [[it's]], {a = 1}}"

LINES = [
    "return true", "1, 'two', {3}", "box.space.t:select{}", "box.space.t:get{1}", "", "nil", "{a = 1}",
    "{b = {1, 2}}", "{}", "'yes'", "'1'", "'null'", "'a: b'", "1.5", "box.NULL", "error('x')", "x = ",
    "{1, {2, 3}, {k = 'v'}}", "'multi\\nline'", "-5", "2^64", "box.tuple.new{1, 'a b', true, 0.5}",
    "local a = 1", "string.rep('x', 3)", "{'', ' lead', 'tab\\t'}", "box.space.t:insert{1, 'dup'}",
    "{true, false}", "'Alice'", "box.space.nope:select{}", "box.error(box.error.NO_SUCH_USER, 'who')",
    "string.rep('word ', 40)", "{k = string.rep('long value ', 12)}", "box.space.t:get{1}\n1, 'two'",
    "require('json').encode({1, 'a', {b = true}, box.NULL, 1.5, 'q\"'})", "require('json').decode('[1, \"x\", null]')",
    "require('json').encode(box.space.t:get{1})",
]


@pytest.fixture(scope="module")
def servers():
    real, ours = start_tarantool(), start_oncebox()
    for inst in (real, ours):
        c = Raw(inst.host, inst.port)
        assert c.auth("admin", ADMIN_PASSWORD)[0][0] == 0
        assert c.request(EVAL, {0x27: SETUP, 0x21: []})[0][0] == 0
        c.close()
    yield real, ours
    real.stop()
    ours.stop()


def console_eval(inst, line):
    c = Raw(inst.host, inst.port)
    c.auth("admin", ADMIN_PASSWORD)
    h, b, _ = c.request(EVAL, {0x27: 'return require("console").eval(...)', 0x21: [line + "\n"]})
    c.close()
    assert h[0] == 0, b
    return b[0x30][0]


@pytest.mark.parametrize("line", LINES)
def test_console_eval_matches_tarantool(servers, line):
    real, ours = servers
    assert console_eval(ours, line) == console_eval(real, line)


def test_tarantoolctl_connect(servers):
    if not shutil.which("tarantoolctl"):
        pytest.skip("tarantoolctl is not installed")
    real, ours = servers
    # Piped input reaches the server as one chunk, as with the real tarantoolctl.
    script = "return box.space.t:get{1}, 'two', box.space.t:count(), box.space.nope\n"
    outs = []
    for inst in (real, ours):
        out = subprocess.run(["tarantoolctl", "connect", f"admin:{ADMIN_PASSWORD}@{inst.host}:{inst.port}"],
                             input=script, capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        outs.append(out.stdout.replace(str(inst.port), "PORT"))
    assert outs[1] == outs[0]
    assert "[1, 'Alice', 55]" in outs[1]
