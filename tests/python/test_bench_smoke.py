"""A one-second run of oncebox-bench against oncebox, so the load generator cannot rot."""
import json
import os
import subprocess

from conftest import ADMIN_PASSWORD, ROOT

BENCH = os.path.join(ROOT, "target", "release", "oncebox-bench")


def test_bench_tool_runs_each_workload(oncebox):
    base = [BENCH, "--addr", f"{oncebox.host}:{oncebox.port}", "--user", "admin", "--password", ADMIN_PASSWORD]
    out = subprocess.run(base + ["--setup", "--load", "1000", "--seconds", "0"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    for wl in ("ping", "select", "replace", "update", "upsert", "insert", "replace-token", "retry-storm"):
        out = subprocess.run(base + ["--workload", wl, "--seconds", "0.3", "--keys", "1000", "--json",
                                     "--connections", "2", "--depth", "8"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        r = json.loads(out.stdout.strip().splitlines()[-1])
        assert r["ops"] > 0 and r["errors"] == 0, r
