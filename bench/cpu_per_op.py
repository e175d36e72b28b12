#!/usr/bin/env python3
"""Server CPU per operation, thread by thread, around one oncebox-bench run.

Usage: python3 bench/cpu_per_op.py [--bin target/release/oncebox] [--seconds 4] [--warmup 0]
                                   [--bench-args "--connections 1 --depth 1"]
                                   [--tarantool] [--wal-mode write]
                                   WORKLOAD [-- SERVER_ARGS...]

Starts oncebox on an ephemeral loopback port in a temporary directory, loads the
`bench` space (100,000 tuples), reads each server thread's CPU time from /proc
before and after one run of WORKLOAD, and prints ops/s, p99/p999 and the CPU
microseconds per operation of each thread and of the client. Where the sum over
server and client is well below the cores' time, the run is not CPU-bound (the
"idle" line: the cores' time per operation nobody used). With --tarantool the
server is real Tarantool started as bench/side_by_side.py starts it. The
figures move with the machine's load: compare binaries in alternating rounds.
Only the Python standard library is used.
"""
import argparse
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import side_by_side  # noqa: E402  (the servers are started exactly as the report starts them)


def thread_cpu_ticks(pid):
    """CPU ticks (user + system) and voluntary context switches (times the thread
    blocked) per thread of process `pid`: {tid: (name, ticks, switches)}."""
    threads = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                switches = next(int(l.split()[1]) for l in f if l.startswith("voluntary_ctxt_switches"))
        except (OSError, StopIteration):
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        threads[tid] = (name, int(fields[11]) + int(fields[12]), switches)
    return threads


def process_cpu_ticks(pid):
    """CPU ticks of process `pid`, its ended threads included."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def per_name(before, after):
    """{name: (ticks, switches)} spent between two `thread_cpu_ticks` readings by
    the threads alive at the second (a thread started in between counts whole)."""
    spent = {}
    for tid, (name, ticks, switches) in after.items():
        _, t0, s0 = before.get(tid, (name, 0, 0))
        t, s = spent.get(name, (0, 0))
        spent[name] = (t + ticks - t0, s + switches - s0)
    return spent


def machine_ticks():
    """(idle, steal) ticks of all cores so far, from /proc/stat."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[4]) + int(fields[5]), int(fields[8])


def main():
    argv = sys.argv[1:]
    server_args = []
    if "--" in argv:
        server_args = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    p = argparse.ArgumentParser()
    p.add_argument("workload")
    p.add_argument("--bin", default=side_by_side.ONCEBOX)
    p.add_argument("--seconds", default="4")
    p.add_argument("--bench-args", default="")
    p.add_argument("--tarantool", action="store_true", help="measure real Tarantool instead")
    p.add_argument("--wal-mode", default="write")
    p.add_argument("--warmup", default="0",
                   help="seconds of WORKLOAD run (and settled) before the measured run, to reach a steady state")
    args = p.parse_args(argv)

    side_by_side.ONCEBOX = args.bin
    server = side_by_side.Server("tarantool" if args.tarantool else "oncebox", args.wal_mode, server_args)
    try:
        server.start()
        side_by_side.bench(server, "--setup", "--eval", side_by_side.BENCH_FN, "--load", "100000", "--seconds", "0")
        server.settle()
        workload = side_by_side.SAME_AS.get((server.kind, args.workload), args.workload)
        if float(args.warmup) > 0:
            side_by_side.bench(server, *args.bench_args.split(), "--workload", workload,
                               "--seconds", args.warmup, "--json")
            server.settle()
        before = thread_cpu_ticks(server.proc.pid)
        process_before = process_cpu_ticks(server.proc.pid)
        client_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall_before = time.monotonic()
        machine_before = machine_ticks()
        res = side_by_side.bench(server, *args.bench_args.split(), "--workload", workload,
                                 "--seconds", args.seconds, "--json")
        wall = time.monotonic() - wall_before
        machine_after = machine_ticks()
        after = thread_cpu_ticks(server.proc.pid)
        process_after = process_cpu_ticks(server.proc.pid)
        client_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        server.cleanup()
    ops = res["ops"]
    hz = os.sysconf("SC_CLK_TCK")
    print(f"{server.kind} {args.workload}: {res['ops_per_sec']} ops/s, p99 {res['p99_us']} us, "
          f"p999 {res['p999_us']} us")
    spent = per_name(before, after)
    for name in sorted(spent, key=lambda n: -spent[n][0]):
        ticks, switches = spent[name]
        us = ticks / hz / ops * 1e6
        if us >= 0.01:
            print(f"  {name:20s} {us:6.2f} us/op, blocks {switches / ops:.3f} times/op")
    # Threads that ended during the run (oncebox starts a thread per checkpoint).
    ended = process_after - process_before - sum(t for t, _ in spent.values())
    if ended / hz / ops * 1e6 >= 0.01:
        print(f"  {'(ended threads)':20s} {ended / hz / ops * 1e6:6.2f} us/op")
    total = (process_after - process_before) / hz / ops * 1e6
    client = (client_after.ru_utime + client_after.ru_stime
              - client_before.ru_utime - client_before.ru_stime) / ops * 1e6
    # The client process also connects and shuts down: the cores' time is over its whole run.
    idle = (os.cpu_count() or 1) * wall / ops * 1e6 - total - client
    idle_ticks, steal_ticks = (a - b for a, b in zip(machine_after, machine_before))
    client_blocks = (client_after.ru_nvcsw - client_before.ru_nvcsw) / ops
    print(f"  server total {total:.2f} us/op; client {client:.2f} us/op, blocks {client_blocks:.3f} times/op; "
          f"idle {idle:.2f} us/op "
          f"(kernel: idle {idle_ticks / hz / ops * 1e6:.2f}, stolen by the host {steal_ticks / hz / ops * 1e6:.2f})")


if __name__ == "__main__":
    main()
