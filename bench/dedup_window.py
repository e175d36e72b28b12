#!/usr/bin/env python3
"""Tokened replaces at steady state: oncebox's window against Tarantool's Lua dedup,
unbounded and bounded to the same number of tokens.

Usage: python3 bench/dedup_window.py [--window 1000000] [--rounds 3] [--seconds 3]
                                     [--wal-mode write]

`bench/side_by_side.py` compares oncebox's tokened replace with the Lua dedup its
users write today, which keeps every token forever. oncebox keeps a bounded window
(`idempotency_max_count`) and evicts its oldest record with every new one once the
window is full. This runs three servers one after the other, each first warmed up
until its store is full (the window's size in inserts, and more): Tarantool with
the unbounded Lua dedup (side_by_side.py's), Tarantool with the same function
bounded to WINDOW records (a second index on an insert counter; the oldest record
is deleted in the same box.atomic once there are more), and oncebox started with
`--idempotency-max-count WINDOW`. Prints each server's ops/s per round and the
median ratios. After the rounds, the bounded Lua dedup must hold exactly WINDOW
records and `_idempotency` at most WINDOW (an eviction step takes every record of
the millisecond it reaches, so a full window holds a little less). Only the
Python standard library is used.
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import side_by_side as sbs  # noqa: E402

# Tarantool's Lua dedup with a window: what its users would add to bound the store.
BOUNDED_DEDUP = """
local d = box.schema.space.create('dedup_window', {if_not_exists = true})
d:create_index('pk', {parts = {{1, 'unsigned'}, {2, 'unsigned'}}, if_not_exists = true})
d:create_index('age', {parts = {{4, 'unsigned'}}, if_not_exists = true})
local inserted = 0
function dedup_replace(token, tuple)
    return box.atomic(function()
        local uid = box.session.uid()
        local seen = box.space.dedup_window:get{uid, token}
        if seen ~= nil then return seen[3] end
        local t = box.space.bench:replace(tuple)
        inserted = inserted + 1
        box.space.dedup_window:insert{uid, token, t, inserted}
        if box.space.dedup_window:len() > %d then
            local oldest = box.space.dedup_window.index.age:min()
            box.space.dedup_window:delete{oldest[1], oldest[2]}
        end
        return t
    end)
end
"""


def run(kind, mode, extra, evals, check, warm_s, rounds, seconds):
    """ops/s of each round of tokened replaces on a fresh server, after warm_s of them;
    `check` (Lua asserting on the server's store, or None) must hold after the rounds."""
    server = sbs.Server(kind, mode, extra)
    try:
        server.start()
        sbs.bench(server, "--setup", "--load", "100000", "--seconds", "0", *evals)
        server.settle()
        workload = sbs.SAME_AS.get((kind, "replace-token"), "replace-token")
        sbs.bench(server, "--workload", workload, "--seconds", str(warm_s), "--json")
        server.settle()
        out = []
        for _ in range(rounds):
            out.append(sbs.bench(server, "--workload", workload, "--seconds", str(seconds), "--json")["ops_per_sec"])
            server.settle()
        if check is not None:
            sbs.bench(server, "--seconds", "0", "--check", check)
        return out
    finally:
        server.cleanup()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--window", type=int, default=1000000, help="tokens kept (oncebox's default window)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=3)
    p.add_argument("--wal-mode", default="write")
    p.add_argument("--warmup", type=float, default=None,
                   help="seconds of tokened replaces before the rounds (default: enough to fill the window)")
    args = p.parse_args()
    # Tarantool's bounded dedup runs at about 70k ops/s: warm up past a full window.
    warm_s = args.warmup if args.warmup is not None else max(2.0, args.window / 70000 + 1)
    holds = "assert(box.space.{0}:len() {1} %d, '{0} holds ' .. box.space.{0}:len())" % args.window
    rows = [
        ("Tarantool 2.6, Lua dedup, unbounded", "tarantool", [], [], None),
        (f"Tarantool 2.6, Lua dedup, window {args.window}", "tarantool", [],
         ["--eval", BOUNDED_DEDUP % args.window], holds.format("dedup_window", "==")),
        (f"oncebox, idempotency_max_count {args.window}", "oncebox",
         ["--idempotency-max-count", str(args.window)], [], holds.format("_idempotency", "<=")),
    ]
    medians = {}
    for label, kind, extra, evals, check in rows:
        rounds = run(kind, args.wal_mode, extra, evals, check, warm_s, args.rounds, args.seconds)
        medians[label] = statistics.median(rounds)
        print(f"{label}: {rounds} ops/s, median {medians[label]:.0f}", flush=True)
    oncebox = medians[rows[2][0]]
    for label, *_ in rows[:2]:
        print(f"oncebox / ({label}): {oncebox / medians[label]:.2f}x")


if __name__ == "__main__":
    main()
