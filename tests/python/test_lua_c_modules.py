"""Lua C modules: `require` through `package.cpath` and `package.loadlib` load a
shared object that takes the Lua C API from the executable, as with tarantool.

The module (c_module_demo.c) is built here with the system C compiler (the one
Rust links with) and loaded by the same script (c_module_cases.lua) on both.
"""

import shutil
import subprocess
from pathlib import Path

from conftest import run_script_on_both

HERE = Path(__file__).parent


def test_a_c_module_loads_and_runs_as_on_2_6(tmp_path, monkeypatch):
    """luaL_register, argument checks and their errors, luaL_Buffer, lua_pcall
    back into Lua, userdata with a metatable and luaL_checkudata, registry
    references, C closures with upvalues, package.loadlib (and its error for a
    missing entry point), a C function called from a fiber."""
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler is needed to build the test module"
    mod_dir = tmp_path / "mods"
    mod_dir.mkdir()
    subprocess.run(
        [cc, "-shared", "-fPIC", "-O1", "-o", str(mod_dir / "demo.so"), str(HERE / "c_module_demo.c")], check=True
    )
    monkeypatch.setenv("MODDIR", str(mod_dir))
    tarantool, oncebox = run_script_on_both(tmp_path, "c_module_cases.lua", (HERE / "c_module_cases.lua").read_text())
    assert oncebox == tarantool
    assert "counter\t3.5\t3\tcounter(3)\tuserdata" in tarantool
    assert "in fiber\tff" in tarantool
    assert len(tarantool) == 15
