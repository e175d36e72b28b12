#!/usr/bin/env python3
"""Lua API operations (bench/lua_ops.lua) on real Tarantool 2.6 and on oncebox,
side by side: each round runs the script once on each (the first one
alternating between rounds), and the table gives each operation's median
microseconds per call on each and the ratio (Tarantool's time over oncebox's:
above 1, oncebox is faster).

Usage: python3 bench/lua_side_by_side.py [--bin target/release/oncebox] [--rounds 3]
                                         [--scale 1] [--markdown]

Only the Python standard library is used. Both run in a temporary directory each
with wal_mode = 'none' (what is measured is the Lua path, not the disk).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "lua_ops.lua")
DEFAULT_BIN = os.path.join(HERE, "..", "target", "release", "oncebox")


def run_once(binary, scale):
    """{operation: microseconds per call} from one run of the script."""
    with tempfile.TemporaryDirectory(prefix="lua-ops-") as work:
        env = dict(os.environ, WORK=work, SCALE=str(scale))
        out = subprocess.run([binary, SCRIPT], cwd=work, env=env, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(f"{binary}: exit {out.returncode}: {out.stderr[-2000:]}")
    per_call = {}
    for line in out.stdout.splitlines():
        name, seconds, times = line.split("\t")
        per_call[name] = float(seconds) * 1e6 / int(times)
    return per_call


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default=DEFAULT_BIN)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = p.parse_args()
    runs = {"tarantool": [], "oncebox": []}
    for r in range(args.rounds):
        order = [("tarantool", "tarantool"), ("oncebox", args.bin)]
        if r % 2:
            order.reverse()
        for name, binary in order:
            runs[name].append(run_once(binary, args.scale))
    names = list(runs["oncebox"][0])
    rows = []
    for op in names:
        t = statistics.median(run[op] for run in runs["tarantool"])
        o = statistics.median(run[op] for run in runs["oncebox"])
        rows.append((op, t, o, t / o if o > 0 else float("inf")))
    if args.markdown:
        print("| operation | Tarantool 2.6 us/call | oncebox us/call | ratio (Tarantool / oncebox) |")
        print("|---|---:|---:|---:|")
        for op, t, o, ratio in rows:
            print(f"| {op} | {t:.3f} | {o:.3f} | {ratio:.2f}x |")
    else:
        for op, t, o, ratio in rows:
            print(f"{op:24s} {t:10.3f} {o:10.3f} {ratio:7.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
