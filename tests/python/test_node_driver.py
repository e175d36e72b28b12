"""The npm tarantool-driver (tests/node, version pinned in package-lock.json) as a client of each server.

tests/node/connector_test.js holds the checks: connect and auth (admin, a created user,
guest, a wrong password), CRUD by space and index name through the driver's _vspace/_vindex
lookups, call (CALL_16), eval, error messages, schema-change invalidation, pipelining,
200 concurrent requests, disconnect and automatic reconnect after a dropped socket.
"""
import os
import shutil
import subprocess

import pytest

from conftest import ADMIN_PASSWORD

NODE_DIR = os.path.join(os.path.dirname(__file__), "..", "node")
SCRIPT = os.path.join(NODE_DIR, "connector_test.js")


@pytest.fixture(scope="module")
def node_project():
    """Installs the pinned driver with `npm ci` once for this module."""
    if not shutil.which("node"):
        pytest.skip("node is not installed (scripts/test-all.sh installs nodejs and npm)")
    if not shutil.which("npm"):
        pytest.skip("npm is not installed (scripts/test-all.sh installs nodejs and npm)")
    out = subprocess.run(["npm", "ci", "--prefix", NODE_DIR, "--no-audit", "--no-fund", "--loglevel=error"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, "npm ci failed:\n" + out.stdout + out.stderr
    return NODE_DIR


def test_node_tarantool_driver(node_project, server):
    out = subprocess.run(["node", SCRIPT, server.host, str(server.port), "admin", ADMIN_PASSWORD],
                         cwd=node_project, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, f"{server.kind}: {out.stderr}{out.stdout}"
    assert out.stdout.strip() == "ok"
