"""Text Lua reads and writes comes out as on Tarantool 2.6 (each script run on both).

- json.decode (src/lua/json_decode.rs) reads as 2.6's lua-cjson: its tokens, its
  numbers (64-bit cdata from 10^14, saturating; huge exponents are infinities), its
  error texts at the caller's line, its refusal of UTF-16/32 and its reading of
  `-na` as NaN; tables grown as it grows them, so they iterate in its order.
- Numbers are formatted by LuaJIT as 2.6's LuaJIT formats them: a cut-off exactly
  half a unit rounds away from zero (build.rs patches upstream's round-to-even)."""
from pathlib import Path

from conftest import same_output_on_both

HERE = Path(__file__).parent


def test_json_decode_reads_texts_as_2_6(tmp_path):
    source = (HERE / "json_decode_cases.lua").read_text()
    same_output_on_both(tmp_path, "json_decode_cases.lua", source, 5707)


def test_numbers_are_formatted_as_on_2_6(tmp_path):
    source = (HERE / "number_format_cases.lua").read_text()
    same_output_on_both(tmp_path, "number_format_cases.lua", source, 3001)
