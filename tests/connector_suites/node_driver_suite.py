#!/usr/bin/env python3
"""Runs the npm tarantool-driver's own test suite (3.1.0, its mocha `test/app.js`)
against real Tarantool 2.6 and against oncebox.

The package as npm ships it (pinned in tests/node/package-lock.json, with the
suite's test dependencies mocha, chai and sinon) holds the suite and the three
instance scripts it expects (`test/box.lua`, `box1.lua`, `box2.lua`) on ports
33013-33015 of every address; the runner copies them with three free ports of
127.0.0.1 put in their place, and starts the instances itself, as the suite's
`test.sh` did in the tarantool docker image (see docker_entrypoint.lua). The suite kills and restarts them
with `docker kill|start NAME`: docker_stand_in.py does that with the runner's
processes. One test is left out: "should close the connection when timeout"
connects to 192.0.0.0 and expects the network to drop the attempt, which
depends on the machine, not on the server. Prints both pass counts and
oncebox's failing tests; exits non-zero when oncebox passes fewer than
--min-pass.

    python3 tests/connector_suites/node_driver_suite.py --min-pass 43
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from sdist import enough_passed

import docker_stand_in

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
NODE_DIR = os.path.join(ROOT, "tests", "node")
DRIVER = os.path.join(NODE_DIR, "node_modules", "tarantool-driver")
VERSION = "3.1.0"
# The suite's instances: docker name, script, the port the suite gives it.
INSTANCES = [("tarantool", "box.lua", 33013), ("reserve", "box1.lua", 33014), ("reserve_2", "box2.lua", 33015)]
LEFT_OUT = "should close the connection when timeout"


def free_ports(n):
    """`n` distinct loopback ports the kernel has just handed out."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def wait_port(port, instance, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    with open(os.path.join(instance, "log"), errors="replace") as f:
        raise SystemExit(f"{instance} did not listen on {port}:\n{f.read()[-3000:]}")


def prepare(work, ports):
    """The suite's package layout under `work`: `lib` (the installed driver's) and
    `test/` with the ports replaced; returns the package directory."""
    pkg = os.path.join(work, "pkg")
    os.makedirs(os.path.join(pkg, "test"))
    os.symlink(os.path.join(DRIVER, "lib"), os.path.join(pkg, "lib"))
    new_port = {str(old): str(new) for (_, _, old), new in zip(INSTANCES, ports)}
    ours = "|".join(new_port)
    # The scripts listen on a port alone (every address): on loopback here, and
    # where the suite compares box.cfg.listen with the port, with that address.
    rewrites = [(re.compile(rf"listen=({ours})\b"), lambda m: f"listen='127.0.0.1:{new_port[m.group(1)]}'"),
                (re.compile(rf"\.to\.eql\('({ours})'\)"), lambda m: f".to.eql('127.0.0.1:{new_port[m.group(1)]}')"),
                (re.compile(ours), lambda m: new_port[m.group(0)])]
    for name in ("app.js", "box.lua", "box1.lua", "box2.lua"):
        with open(os.path.join(DRIVER, "test", name)) as f:
            text = f.read()
        for pattern, replace in rewrites:
            text = pattern.sub(replace, text)
        with open(os.path.join(pkg, "test", name), "w") as f:
            f.write(text)
    return pkg


def run_suite(binary, label, work):
    """Runs the suite against `binary`'s instances; returns (passed, failed, failing titles, log path)."""
    run = tempfile.mkdtemp(prefix=f"run-{label}-", dir=work)
    ports = free_ports(len(INSTANCES))
    pkg = prepare(run, ports)
    bindir = os.path.join(run, "bin")
    os.makedirs(bindir)
    os.symlink(os.path.join(HERE, "docker_stand_in.py"), os.path.join(bindir, "docker"))
    state = os.path.join(run, "state")
    env = dict(os.environ, NODE_SUITE_STATE=state, NODE_SUITE_TARANTOOL=binary,
               NODE_PATH=os.path.join(NODE_DIR, "node_modules"), PATH=bindir + os.pathsep + os.environ["PATH"])
    instances = []
    for (name, script, _), port in zip(INSTANCES, ports):
        instance = os.path.join(state, name)
        os.makedirs(instance)
        shutil.copy(os.path.join(pkg, "test", script), instance)
        with open(os.path.join(instance, "script"), "w") as f:
            f.write(script)
        instances.append((instance, port))
    report = os.path.join(run, "report.json")
    log_path = os.path.join(work, f"suite-{label}.log")
    try:
        for instance, _ in instances:
            docker_stand_in.start(instance, binary)
        for instance, port in instances:
            wait_port(port, instance)
        mocha = os.path.join(NODE_DIR, "node_modules", ".bin", "mocha")
        out = subprocess.run([mocha, "--exit", "--reporter", "json", "--reporter-option", f"output={report}",
                              "--grep", LEFT_OUT, "--invert", "test/app.js"], cwd=pkg, env=env,
                             capture_output=True, text=True, timeout=600)
    finally:
        # The instances the suite restarted too: each directory holds its latest pid.
        for instance, _ in instances:
            docker_stand_in.kill(instance)
    with open(log_path, "w") as f:
        f.write(out.stdout + out.stderr)
        for instance, _ in instances:
            with open(os.path.join(instance, "log"), errors="replace") as log:
                f.write(f"\n--- {instance}/log\n" + log.read())
    if not os.path.exists(report):
        raise SystemExit(f"the node driver suite did not run against {label}; log: {log_path}")
    with open(report) as f:
        results = json.load(f)
    failing = sorted(t["fullTitle"] for t in results["failures"])
    return results["stats"]["passes"], len(failing), failing, log_path


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--min-pass", type=int, required=True)
    p.add_argument("--oncebox", default=os.path.join(ROOT, "target", "release", "oncebox"))
    p.add_argument("--no-oracle", action="store_true", help="skip the run against real Tarantool")
    p.add_argument("--json", help="write the counts here (for the compatibility report)")
    args = p.parse_args()

    subprocess.run(["npm", "ci", "--prefix", NODE_DIR, "--no-audit", "--no-fund", "--loglevel=error"], check=True)
    with open(os.path.join(DRIVER, "package.json")) as f:
        assert json.load(f)["version"] == VERSION, "tests/node/package-lock.json pins another tarantool-driver"
    work = tempfile.mkdtemp(prefix="node-driver-suite-")
    results = {"version": VERSION, "min_pass": args.min_pass}
    if not args.no_oracle:
        passed, failed, failing, log = run_suite(shutil.which("tarantool"), "tarantool", work)
        results["tarantool"] = {"passed": passed, "failed": failed, "failing": failing}
        print(f"tarantool-driver {VERSION} suite against Tarantool 2.6: passed {passed}, failed {failed} (log: {log})")
        for title in failing:
            print("  " + title)
    passed, failed, failing, log = run_suite(os.path.abspath(args.oncebox), "oncebox", work)
    results.update(passed=passed, failed=failed, failing=failing)
    print(f"tarantool-driver {VERSION} suite against oncebox: passed {passed}, failed {failed} (log: {log})")
    for title in failing:
        print("  " + title)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return enough_passed("tarantool-driver", passed, args.min_pass)


if __name__ == "__main__":
    sys.exit(main())
