#!/usr/bin/env python3
"""Runs the asynctnt connector's own test suite with oncebox standing in as `tarantool`,
and the same suite against real Tarantool 2.6 as the oracle.

The suite comes from the PyPI source distribution of asynctnt==2.4.0 (it holds
`tests/`, but not the instance script `tests/files/app.lua` the tests start
their servers with): oncebox's own script, `asynctnt_app.lua` next to this
file, takes its place. The suite starts each server itself (`tarantool app.lua`
from PATH, on ports it asks the kernel for); a `tarantool` symlink to oncebox is
put first in PATH. Prints both pass counts and oncebox's failing tests, and
exits non-zero when oncebox passes fewer than --min-pass.

    python3 tests/connector_suites/asynctnt_suite.py --min-pass 233
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from sdist import enough_passed, extract_sdist, oncebox_as_tarantool

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VERSION = "2.4.0"
APP_LUA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "asynctnt_app.lua")


def run_suite(python, work, tarantool_dir, label):
    """Runs the suite with `tarantool` from `tarantool_dir` (None: the system's);
    returns (counts, failing test ids, log path)."""
    env = dict(os.environ)
    if tarantool_dir:
        env["PATH"] = tarantool_dir + os.pathsep + env["PATH"]
    # The suite's own instances leave their directories in the working directory.
    cwd = tempfile.mkdtemp(prefix=f"run-{label}-", dir=work)
    shutil.copytree(os.path.join(work, "tests"), os.path.join(cwd, "tests"))
    out = subprocess.run([python, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider", "-rfE",
                          "--override-ini", "addopts="], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=900)
    log = out.stdout + out.stderr
    log_path = os.path.join(work, f"suite-{label}.log")
    with open(log_path, "w") as f:
        f.write(log)
    summary = log.strip().splitlines()[-1] if log.strip() else ""
    counts = {k: int((re.search(rf"(\d+) {k}", summary) or [0, 0])[1]) for k in ("passed", "failed", "skipped",
                                                                                  "error")}
    if not re.search(r"\d+ (passed|failed)", summary):
        raise SystemExit(f"the asynctnt suite did not run against {label}; log: {log_path}\n{log[-3000:]}")
    failing = sorted({m.group(1) for m in re.finditer(r"^(?:FAILED|ERROR) (\S+)", log, re.M)})
    return counts, failing, log_path


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--min-pass", type=int, required=True)
    p.add_argument("--oncebox", default=os.path.join(ROOT, "target", "release", "oncebox"))
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--no-oracle", action="store_true", help="skip the run against real Tarantool")
    p.add_argument("--json", help="write the counts here (for the compatibility report)")
    args = p.parse_args()

    work = tempfile.mkdtemp(prefix="asynctnt-suite-")
    # Only the tests: `import asynctnt` must find the installed package, not its sources.
    src = extract_sdist(args.python, "asynctnt", VERSION, work, subdir="tests")
    shutil.move(os.path.join(src, "tests"), os.path.join(work, "tests"))
    os.makedirs(os.path.join(work, "tests", "files"))
    shutil.copy(APP_LUA, os.path.join(work, "tests", "files", "app.lua"))
    bindir = oncebox_as_tarantool(args.oncebox, work)

    results = {"version": VERSION, "min_pass": args.min_pass}
    if not args.no_oracle:
        oracle, oracle_failing, oracle_log = run_suite(args.python, work, None, "tarantool")
        results["tarantool"] = dict(oracle, failing=oracle_failing)
        print(f"asynctnt {VERSION} suite against Tarantool 2.6: passed {oracle['passed']}, failed "
              f"{oracle['failed'] + oracle['error']}, skipped {oracle['skipped']} (log: {oracle_log})")
    counts, failing, log_path = run_suite(args.python, work, bindir, "oncebox")
    results.update(counts, failing=failing)
    print(f"asynctnt {VERSION} suite against oncebox: passed {counts['passed']}, failed "
          f"{counts['failed'] + counts['error']}, skipped {counts['skipped']} (log: {log_path})")
    for f in failing:
        print("  " + f)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return enough_passed("asynctnt", counts["passed"], args.min_pass)


if __name__ == "__main__":
    sys.exit(main())
