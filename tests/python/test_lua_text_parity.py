"""Text Lua writes comes out as on Tarantool 2.6 (each script run on both).

- Numbers are formatted by LuaJIT as 2.6's LuaJIT formats them: a cut-off exactly
  half a unit rounds away from zero (build.rs patches upstream's round-to-even)."""
from pathlib import Path

from conftest import same_output_on_both

HERE = Path(__file__).parent


def test_numbers_are_formatted_as_on_2_6(tmp_path):
    source = (HERE / "number_format_cases.lua").read_text()
    same_output_on_both(tmp_path, "number_format_cases.lua", source, 3001)
