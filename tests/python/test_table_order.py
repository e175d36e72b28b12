"""Lua tables iterate in Tarantool 2.6's order (table_order_cases.lua run on both).

oncebox builds LuaJIT with string keys placed by a hash of their bytes, without a
per-process seed, as Tarantool's LuaJIT does (build.rs); decoders, tuples and schema
objects make their tables as 2.6 makes them. So what Lua prints of a table (the
console's YAML, json.encode, msgpack maps, a `pairs()` loop) comes out as on 2.6,
and the same in every run."""
from pathlib import Path

from conftest import same_output_on_both


def test_tables_iterate_and_encode_as_on_2_6(tmp_path):
    source = (Path(__file__).parent / "table_order_cases.lua").read_text()
    same_output_on_both(tmp_path, "table_order_cases.lua", source, 47)
