#!/usr/bin/env python3
"""Runs the tarantool-python connector's own test suite with oncebox standing in as `tarantool`.

The suite comes from the PyPI source distribution of tarantool==1.3.0 (it holds
`test/`); it finds the server through TARANTOOL_BOX_PATH, where a `tarantool`
symlink to oncebox is placed. Prints the pass count and the failing tests, and
exits non-zero below --min-pass.

    python3 tests/connector_suites/tarantool_python.py --min-pass 120
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from sdist import enough_passed, extract_sdist, oncebox_as_tarantool

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VERSION = "1.3.0"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--min-pass", type=int, required=True)
    p.add_argument("--oncebox", default=os.path.join(ROOT, "target", "release", "oncebox"))
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--json", help="write the counts here (for the compatibility report)")
    args = p.parse_args()

    work = tempfile.mkdtemp(prefix="tarantool-python-suite-")
    src = extract_sdist(args.python, "tarantool", VERSION, work)
    bindir = oncebox_as_tarantool(args.oncebox, work)
    env = dict(os.environ, TARANTOOL_BOX_PATH=bindir)
    out = subprocess.run([args.python, "-m", "unittest", "test.suites"], cwd=src, env=env,
                         capture_output=True, text=True, timeout=1200)
    log = out.stdout + out.stderr
    with open(os.path.join(work, "suite.log"), "w") as f:
        f.write(log)
    ran = int(re.search(r"^Ran (\d+) tests?", log, re.M).group(1))
    skipped = int((re.search(r"skipped=(\d+)", log) or [0, 0])[1])
    failing = sorted({re.sub(r" \(name=.*", "", l) for l in log.splitlines() if re.match(r"^(ERROR|FAIL): ", l)})
    class_setups = [f for f in failing if "setUpClass" in f]
    passed = ran - skipped - (len(failing) - len(class_setups))
    print(f"tarantool-python {VERSION} suite against oncebox: ran {ran}, passed {passed}, skipped {skipped}, "
          f"failing {len(failing)} (log: {os.path.join(work, 'suite.log')})")
    for f in failing:
        print("  " + f)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"version": VERSION, "ran": ran, "passed": passed, "skipped": skipped,
                       "failing": failing, "min_pass": args.min_pass}, f, indent=1)
    return enough_passed("tarantool-python", passed, args.min_pass)


if __name__ == "__main__":
    sys.exit(main())
