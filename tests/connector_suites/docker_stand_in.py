#!/usr/bin/env python3
"""`docker kill NAME` and `docker start NAME` for the npm tarantool-driver's own suite.

The suite stops and starts its servers as docker containers (`tarantool`,
`reserve`, `reserve_2`); node_driver_suite.py puts this script first in PATH as
`docker`, so they are processes of the runner's instead: each NAME is a directory
under $NODE_SUITE_STATE holding the instance's script (`script`), its pid (`pid`)
and its log (`log`); $NODE_SUITE_TARANTOOL is the server binary. An instance
runs as it did in the tarantool docker image: through docker_entrypoint.lua. `kill` sends
SIGKILL and returns once the process is gone, `start` starts the script again in
the same directory (so with the same data), in the background.
"""
import os
import signal
import subprocess
import sys
import time

ENTRYPOINT = os.path.join(os.path.dirname(os.path.realpath(__file__)), "docker_entrypoint.lua")


def pid_gone(pid):
    """Whether `pid` has exited (a zombie waiting for its parent counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def kill(instance):
    with open(os.path.join(instance, "pid")) as f:
        pid = int(f.read())
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return 1
    deadline = time.monotonic() + 10
    while not pid_gone(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    return 0


def start(instance, binary):
    with open(os.path.join(instance, "script")) as f:
        script = f.read().strip()
    with open(os.path.join(instance, "log"), "ab") as log:
        proc = subprocess.Popen([binary, ENTRYPOINT, script], cwd=instance, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=log, start_new_session=True)
    with open(os.path.join(instance, "pid"), "w") as f:
        f.write(str(proc.pid))
    return 0


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("kill", "start"):
        print("usage: docker kill|start NAME", file=sys.stderr)
        return 2
    instance = os.path.join(os.environ["NODE_SUITE_STATE"], sys.argv[2])
    return kill(instance) if sys.argv[1] == "kill" else start(instance, os.environ["NODE_SUITE_TARANTOOL"])


if __name__ == "__main__":
    sys.exit(main())
