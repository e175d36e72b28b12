#!/usr/bin/env python3
"""Runs oncebox-bench against real Tarantool 2.6 and oncebox with the same settings.

Usage: python3 bench/side_by_side.py [--seconds 5] [--modes write,fsync]
                                     [--workloads ping,select,replace,update,upsert,insert]
                                     [--restart-tuples 1000000] [--out results.json]

Each server runs on an ephemeral loopback port in its own temporary directory
and is killed afterwards. Prints a markdown table with the oncebox/Tarantool ratio.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
ONCEBOX = os.path.join(ROOT, "target", "release", "oncebox")
BENCH = os.path.join(ROOT, "target", "release", "oncebox-bench")
PASSWORD = "benchpw"

TARANTOOL_INIT = """
box.cfg{listen = os.getenv('LISTEN'), wal_mode = os.getenv('WAL_MODE'), log = 'tarantool.log',
        memtx_memory = 2 * 1024 * 1024 * 1024, checkpoint_interval = 0}
box.schema.user.passwd('admin', os.getenv('ADMIN_PASSWORD'))
-- What Tarantool users do today for deduplication: a dedup space checked and
-- written in the same box.atomic as the data, called over IPROTO.
local dedup = box.schema.space.create('dedup', {if_not_exists = true})
dedup:create_index('pk', {parts = {{1, 'unsigned'}, {2, 'unsigned'}}, if_not_exists = true})
function dedup_replace(token, tuple)
    return box.atomic(function()
        local seen = box.space.dedup:get{box.session.uid(), token}
        if seen ~= nil then return seen[3] end
        local t = box.space.bench:replace(tuple)
        box.space.dedup:insert{box.session.uid(), token, t}
        return t
    end)
end
"""

# Workloads that each server runs its own way.
SAME_AS = {("tarantool", "replace-token"): "call-dedup"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout=120):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError("server exited")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return time.time() - t0
        except OSError:
            time.sleep(0.005)
    raise RuntimeError("server did not start")


class Server:
    def __init__(self, kind, mode):
        self.kind, self.mode = kind, mode
        self.dir = tempfile.mkdtemp(prefix=f"bench-{kind}-")
        self.port = free_port()
        self.proc = None

    def start(self):
        if self.kind == "tarantool":
            with open(os.path.join(self.dir, "init.lua"), "w") as f:
                f.write(TARANTOOL_INIT)
            env = dict(os.environ, LISTEN=f"127.0.0.1:{self.port}", WAL_MODE=self.mode, ADMIN_PASSWORD=PASSWORD)
            self.proc = subprocess.Popen(["tarantool", "init.lua"], cwd=self.dir, env=env,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        else:
            self.proc = subprocess.Popen([ONCEBOX, "--listen", f"127.0.0.1:{self.port}", "--wal-mode", self.mode,
                                          "--data-dir", os.path.join(self.dir, "data"), "--admin-password", PASSWORD,
                                          "--log-level", "warn"],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return wait_port(self.port, self.proc)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def rss_kb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def bench(server, *args):
    cmd = [BENCH, "--addr", f"127.0.0.1:{server.port}", "--user", "admin", "--password", PASSWORD, *args]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise RuntimeError(f"{server.kind}: {' '.join(args)}: {out.stderr}")
    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
    return json.loads(lines[-1]) if lines else None


def throughput(args):
    results = {}
    for mode in args.modes.split(","):
        for kind in ("tarantool", "oncebox"):
            s = Server(kind, mode)
            try:
                s.start()
                bench(s, "--setup", "--load", str(args.keys), "--seconds", "0")
                for wl in args.workloads.split(","):
                    r = bench(s, "--workload", SAME_AS.get((kind, wl), wl), "--connections", "4", "--depth", "64",
                              "--seconds", str(args.seconds), "--keys", str(args.keys), "--json")
                    results[(mode, wl, kind)] = r
                    print(f"{mode:5} {wl:8} {kind:9} {r['ops_per_sec']:>10} ops/s errors={r['errors']}",
                          file=sys.stderr)
                r = bench(s, "--workload", "select", "--connections", "1", "--depth", "1",
                          "--seconds", str(args.seconds), "--keys", str(args.keys), "--json")
                results[(mode, "select-depth1", kind)] = r
                r = bench(s, "--workload", "replace", "--connections", "1", "--depth", "1",
                          "--seconds", str(args.seconds), "--keys", str(args.keys), "--json")
                results[(mode, "replace-depth1", kind)] = r
            finally:
                s.cleanup()
    return results


def restart(args):
    out = {}
    for kind in ("tarantool", "oncebox"):
        s = Server(kind, "write")
        try:
            s.start()
            t0 = time.time()
            bench(s, "--setup", "--load", str(args.restart_tuples), "--seconds", "0")
            load_s = time.time() - t0
            rss = s.rss_kb()
            s.stop()
            # Ready means answering a read of the data, not just an open port
            # (Tarantool listens while it is still recovering).
            t0 = time.time()
            s.start()
            bench(s, "--workload", "select", "--keys", str(args.restart_tuples), "--connections", "1",
                  "--depth", "1", "--seconds", "0.001")
            start_s = time.time() - t0
            out[kind] = {"tuples": args.restart_tuples, "load_s": round(load_s, 2),
                         "restart_s": round(start_s, 2), "rss_kb_loaded": rss}
            print(f"restart {kind}: {out[kind]}", file=sys.stderr)
        finally:
            s.cleanup()
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--modes", default="write,fsync")
    p.add_argument("--workloads", default="ping,select,replace,update,upsert,insert")
    p.add_argument("--keys", type=int, default=100000)
    p.add_argument("--restart-tuples", type=int, default=1000000)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    res = throughput(args)
    rst = restart(args) if args.restart_tuples > 0 else {}
    print("| wal_mode | workload | Tarantool 2.6 ops/s | oncebox ops/s | ratio | Tarantool p99 us | oncebox p99 us |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for (mode, wl, kind), r in sorted(res.items()):
        if kind != "oncebox":
            continue
        t = res[(mode, wl, "tarantool")]
        ratio = r["ops_per_sec"] / t["ops_per_sec"] if t["ops_per_sec"] else 0
        print(f"| {mode} | {wl} | {t['ops_per_sec']:.0f} | {r['ops_per_sec']:.0f} | {ratio:.2f}x "
              f"| {t['p99_us']} | {r['p99_us']} |")
    if rst:
        print()
        print("| server | tuples | load s | RSS after load (MiB) | restart s |")
        print("|---|---:|---:|---:|---:|")
        for kind, r in rst.items():
            print(f"| {kind} | {r['tuples']} | {r['load_s']} | {r['rss_kb_loaded'] // 1024} | {r['restart_s']} |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"throughput": {"/".join(k): v for k, v in res.items()}, "restart": rst}, f, indent=1)


if __name__ == "__main__":
    main()
