"""Short runs of the benchmark tools against oncebox, so they cannot rot.

Benchmarks are never timed assertions: these only check that each workload runs
without errors and that the chart is drawn.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ADMIN_PASSWORD, ONCEBOX, ROOT

BENCH = os.path.join(ROOT, "target", "release", "oncebox-bench")
CHART = os.path.join(ROOT, "target", "release", "oncebox-chart")
BENCH_FN = "function bench_fn(k) return box.space.bench:get(k) end"


def test_bench_tool_runs_each_workload(oncebox):
    base = [BENCH, "--addr", f"{oncebox.host}:{oncebox.port}", "--user", "admin", "--password", ADMIN_PASSWORD]
    out = subprocess.run(base + ["--setup", "--eval", BENCH_FN, "--load", "1000", "--seconds", "0"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    for wl in ("ping", "select", "replace", "update", "upsert", "insert", "call", "replace-token", "retry-storm"):
        out = subprocess.run(base + ["--workload", wl, "--seconds", "0.3", "--keys", "1000", "--json",
                                     "--connections", "2", "--depth", "8"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        r = json.loads(out.stdout.strip().splitlines()[-1])
        assert r["ops"] > 0 and r["errors"] == 0, r


def test_bench_tool_loads_tokens_and_checks(oncebox):
    base = [BENCH, "--addr", f"{oncebox.host}:{oncebox.port}", "--user", "admin", "--password", ADMIN_PASSWORD]
    check = "assert(box.space._idempotency:len() >= 500, 'only ' .. box.space._idempotency:len())"
    out = subprocess.run(base + ["--setup", "--load", "500", "--load-workload", "replace-token", "--keys", "100",
                                 "--seconds", "0", "--check", check], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    out = subprocess.run(base + ["--seconds", "0", "--check", "assert(box.space._idempotency:len() > 10 ^ 9)"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "assertion failed" in out.stderr, out.stderr


def test_dedup_window_runs_both_servers_with_bounded_stores():
    """bench/dedup_window.py on a tiny window: every row measured, and its checks that
    the bounded Lua dedup and `_idempotency` stay within the window held."""
    if not shutil.which("tarantool"):
        pytest.skip("real tarantool is not installed")
    out = subprocess.run(["python3", os.path.join(ROOT, "bench", "dedup_window.py"), "--window", "300",
                          "--rounds", "1", "--seconds", "0.3", "--warmup", "0.5"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Tarantool 2.6, Lua dedup, window 300:" in out.stdout, out.stdout
    assert "oncebox / (Tarantool 2.6, Lua dedup, window 300):" in out.stdout, out.stdout


def test_chart_draws_results(tmp_path):
    results = {"modes": ["write", "fsync"], "workloads": ["ping", "call", "retry-storm"], "throughput": {}}
    for mode in ("write", "fsync"):
        for wl, t, o in (("ping", 1000, 900), ("call", 400, 300), ("retry-storm", None, 200)):
            for kind, v in (("tarantool", t), ("oncebox", o)):
                if v is not None:
                    results["throughput"][f"{mode}/{wl}/{kind}"] = {"ops_per_sec": v, "p99_us": 1}
    src, svg = tmp_path / "results.json", tmp_path / "throughput.svg"
    src.write_text(json.dumps(results))
    out = subprocess.run([CHART, str(src), str(svg)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    text = svg.read_text()
    assert text.startswith("<svg") and "wal_mode = fsync" in text and "0.75x" in text and "oncebox" in text
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    out = subprocess.run([CHART, str(bad), str(svg)], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "throughput" in out.stderr


def test_report_is_rewritten_from_results(tmp_path):
    """side_by_side.py --from: no servers, just the chart and the markdown from a results file."""
    tp = {}
    for mode in ("write",):
        for wl, t, o in (("replace", 1000, 500), ("call", 400, 300), ("replace-token", 100, 90),
                         ("select-depth1", 10, 9), ("replace-depth1", 8, 7)):
            tp[f"{mode}/{wl}/tarantool"] = {"ops_per_sec": t, "p99_us": 1}
            tp[f"{mode}/{wl}/oncebox"] = {"ops_per_sec": o, "p99_us": 2}
    # Three rounds of replace, paired by index: ratios 0.5, 0.6 and 0.4.
    tp["write/replace/tarantool"]["rounds_ops_per_sec"] = [1000, 1000, 1000]
    tp["write/replace/oncebox"]["rounds_ops_per_sec"] = [500, 600, 400]
    # Server CPU per operation: the median over the rounds.
    tp["write/replace/tarantool"]["rounds_cpu_us_per_op"] = [2.5, 2.0, 9.0]
    tp["write/replace/oncebox"]["rounds_cpu_us_per_op"] = [1.75, 1.5, 1.8]
    item = {"count": 10, "load_s": 1.0, "restart_s": 0.5, "rss_kb_base": 1, "rss_kb_loaded": 2,
            "rss_kb_restarted": 2, "bytes_per_item": 100, "bytes_per_item_restarted": 100}
    results = {"modes": ["write"], "workloads": ["replace", "call", "replace-token", "select-depth1",
                                                  "replace-depth1"],
               "meta": {"command": "python3 bench/side_by_side.py", "machine": "test", "tarantool": "2.6"},
               "settings": {"seconds": 1, "keys": 10}, "throughput": tp,
               "restart": {w: {"tarantool": item, "oncebox": item} for w in ("tuples", "tokens")}}
    src = tmp_path / "results.json"
    src.write_text(json.dumps(results))
    out = subprocess.run(["python3", os.path.join(ROOT, "bench", "side_by_side.py"), "--from", str(src),
                          "--out", str(tmp_path / "out.json"), "--chart", str(tmp_path / "t.svg"),
                          "--report", str(tmp_path / "B.md")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    md = (tmp_path / "B.md").read_text()
    assert "![" in md and "(t.svg)" in md and "| write | call | 400 | 300 | 0.75x |" in md
    assert "| tokens | oncebox (`_idempotency`) | 10 |" in md
    assert "| write | replace | 1000 | 500 | 0.50x | 0.40–0.60 | 1 | 2 | 2.50 / 1.75 |" in md, \
        "the spread of per-round ratios, the median CPU per operation"
    assert "| write | call | 400 | 300 | 0.75x |  | 1 | 2 | n/a / n/a |" in md
    assert (tmp_path / "t.svg").read_text().startswith("<svg")


def test_lua_side_by_side_runs_each_operation():
    """bench/lua_side_by_side.py, scaled down: every operation of bench/lua_ops.lua
    runs on Tarantool 2.6 and on oncebox and gets a row (timings are not checked)."""
    script = os.path.join(ROOT, "bench", "lua_side_by_side.py")
    out = subprocess.run([sys.executable, script, "--bin", ONCEBOX, "--rounds", "1", "--scale", "0.001", "--markdown"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = [l for l in out.stdout.splitlines() if l.startswith("| ") and not l.startswith("| operation")]
    assert len(rows) >= 20, out.stdout
    assert any(r.startswith("| pairs 10 |") for r in rows), out.stdout

