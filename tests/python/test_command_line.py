"""The `tarantool` command line, with oncebox as `tarantool` beside real Tarantool 2.6.

`-e EXPR` and `-l NAME` run before the script, in order; with no script, standard
input is the script when it is not a terminal (`-` names it), and `-i` starts the
console after it, greeting first; the script's chunk gets the arguments as `...`;
options it does not know are refused as 2.6's getopt refuses them (exit status
64). (An error in `-e` or `-l` is fatal on both, but 2.6 then hangs: not compared.) Each case runs under both executables, named `tarantool`, in a directory of
its own; stdout, stderr and the exit status must be equal (the version in the
console's greeting aside).
"""
import os
import re
import subprocess

import pytest

from conftest import tarantool_on_path

SCRIPT = "print(...) print(arg[0], arg[1], #arg)\n"

CASES = [
    ("eval-before-script", ["-e", "print(0)", "-e", "x = 7", "script.lua", "p", "q"], ""),
    ("eval-then-stdin", ["-e", "print(1)"], "print(2)\n"),
    ("require", ["-l", "json", "-e", "print(json.encode({1, x}))"], ""),
    ("stdin-script", [], "print(1 + 1) print(arg[0])\n"),
    ("stdin-named", ["-", "a", "b"], "print(arg[0], ...)\n"),
    ("stdin-error", [], "error('e2')\n"),
    ("console-after-stdin", ["-i"], "x = 5 print(x)\n"),
    ("script-syntax-error", ["bad.lua"], ""),
    ("no-such-script", ["nonexist.lua"], ""),
    ("unknown-long-option", ["--bogus"], ""),
    ("unknown-short-option", ["-x"], ""),
    ("option-without-value", ["-e"], ""),
]


def run(executable, args, stdin, cwd, env):
    out = subprocess.run([executable, *args], input=stdin, capture_output=True, text=True, cwd=cwd, env=env,
                         timeout=30)
    # The executable as it names itself and the version in the greeting differ by nature.
    text = (out.stdout + "\n--stderr--\n" + out.stderr).replace(executable, "tarantool")
    text = re.sub(r"Tarantool 2\.6\.0-\S+", "Tarantool 2.6.0", text)
    return text, out.returncode


@pytest.mark.parametrize("name,args,stdin", CASES, ids=[c[0] for c in CASES])
def test_tarantool_command_line(tmp_path, name, args, stdin):
    results = []
    for label in ("tarantool", "oncebox"):
        work = tmp_path / label
        work.mkdir()
        (work / "script.lua").write_text(SCRIPT)
        (work / "bad.lua").write_text("print(1\n")
        env = dict(os.environ) if label == "tarantool" else tarantool_on_path(work)
        # Both named `tarantool`, found on PATH as a user runs them.
        results.append(run("tarantool", args, stdin, work, env))
    assert results[1] == results[0]
    if name == "eval-before-script":
        assert results[0][0].startswith("0\np\tq\nscript.lua\tp\t2\n")
    if name == "unknown-long-option":
        assert results[0][1] == 64
