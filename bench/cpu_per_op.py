#!/usr/bin/env python3
"""Server CPU per operation, thread by thread, around one oncebox-bench run.

Usage: python3 bench/cpu_per_op.py [--bin target/release/oncebox] [--seconds 4]
                                   [--bench-args "--connections 1 --depth 1"]
                                   WORKLOAD [-- SERVER_ARGS...]

Starts oncebox on an ephemeral loopback port in a temporary directory, loads the
`bench` space (100,000 tuples), reads each server thread's CPU time from /proc
before and after one run of WORKLOAD, and prints ops/s, p99/p999 and the CPU
microseconds per operation of each thread and of the client. Where the sum over
server and client is well below the cores' time, the run is not CPU-bound. The
figures move with the machine's load: compare binaries in alternating rounds.
Only the Python standard library is used.
"""
import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BENCH = os.path.join(ROOT, "target", "release", "oncebox-bench")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def thread_cpu_ticks(pid):
    """CPU ticks (user + system) per thread name of process `pid`."""
    ticks = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        ticks[name] = ticks.get(name, 0) + int(fields[11]) + int(fields[12])
    return ticks


def main():
    argv = sys.argv[1:]
    server_args = []
    if "--" in argv:
        server_args = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    p = argparse.ArgumentParser()
    p.add_argument("workload")
    p.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "oncebox"))
    p.add_argument("--seconds", default="4")
    p.add_argument("--bench-args", default="")
    args = p.parse_args(argv)

    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        server = subprocess.Popen(
            [args.bin, "--listen", f"127.0.0.1:{port}", "--data-dir", os.path.join(tmp, "data"),
             "--admin-password", "pw", "--log-level", "warn"] + server_args,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.time() + 60
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), 0.2).close()
                    break
                except OSError:
                    if time.time() > deadline or server.poll() is not None:
                        raise RuntimeError("oncebox did not start")
                    time.sleep(0.02)
            auth = ["--addr", f"127.0.0.1:{port}", "--user", "admin", "--password", "pw"]
            subprocess.run([BENCH] + auth + ["--setup", "--load", "100000", "--seconds", "0.1",
                                             "--workload", "ping"], check=True, stdout=subprocess.DEVNULL)
            before = thread_cpu_ticks(server.pid)
            client_before = resource.getrusage(resource.RUSAGE_CHILDREN)
            run = subprocess.run([BENCH] + auth + args.bench_args.split()
                                 + ["--workload", args.workload, "--seconds", args.seconds, "--json"],
                                 capture_output=True, text=True, check=True)
            after = thread_cpu_ticks(server.pid)
            client_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        finally:
            server.terminate()
            server.wait()
    res = json.loads(run.stdout.strip().splitlines()[-1])
    ops = res["ops"]
    hz = os.sysconf("SC_CLK_TCK")
    print(f"{args.workload}: {res['ops_per_sec']} ops/s, p99 {res['p99_us']} us, p999 {res['p999_us']} us")
    total = 0.0
    for name in sorted(after, key=lambda n: before.get(n, 0) - after[n]):
        us = (after[name] - before.get(name, 0)) / hz / ops * 1e6
        total += us
        if us >= 0.01:
            print(f"  {name:20s} {us:6.2f} us/op")
    client = (client_after.ru_utime + client_after.ru_stime
              - client_before.ru_utime - client_before.ru_stime) / ops * 1e6
    print(f"  server total {total:.2f} us/op; client {client:.2f} us/op")


if __name__ == "__main__":
    main()
