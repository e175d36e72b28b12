"""Tarantool 2.6's net.box (run by the real `tarantool` binary) as a client of each server: auth, schema
loading and reload, CRUD, call/eval, errors, async requests, close and wait_connected, reconnect_after."""
import os
import shutil
import subprocess

import pytest

from conftest import ADMIN_PASSWORD

SCRIPT = os.path.join(os.path.dirname(__file__), "netbox_client.lua")


def test_netbox_client(server, tmp_path):
    if not shutil.which("tarantool"):
        pytest.skip("real tarantool is not installed")
    out = subprocess.run(["tarantool", SCRIPT, f"{server.host}:{server.port}", ADMIN_PASSWORD],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr + out.stdout
    assert out.stdout.strip().endswith("ok")
