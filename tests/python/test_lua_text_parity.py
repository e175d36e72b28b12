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


def test_json_encode_writes_values_as_2_6(tmp_path):
    """json.encode over 3,000 generated values under several options: lua-cjson's
    number keys (int64_t's and uint64_t's range), its precision clamp (1 to 14),
    its refusals at the caller's line, and tables shaped as 2.6's luaL_tofield
    shapes them (the greatest key kept in a uint32_t)."""
    source = (HERE / "generated_values.lua").read_text() + (HERE / "json_encode_cases.lua").read_text()
    same_output_on_both(tmp_path, "json_encode_cases.lua", source, 3008)


def test_yaml_encode_folds_lines_as_2_6(tmp_path):
    """yaml.encode over 3,000 generated values and 400 long multi-byte sentences:
    lines folded at 80 columns counted in characters (not bytes), a raw line or
    paragraph separator starting the column again, a complex key's colon on a line
    of its own past the width, and no space after a colon with nothing behind it."""
    source = (HERE / "generated_values.lua").read_text() + (HERE / "yaml_encode_cases.lua").read_text()
    same_output_on_both(tmp_path, "yaml_encode_cases.lua", source, 29690)


def test_yaml_decode_resolves_anchors_and_aliases_as_2_6(tmp_path):
    """An alias is the very table its anchor named (what yaml.encode wrote as &0 and
    *0 comes back shared, a table may hold itself), or the string; an anchor on a
    null, boolean, number, empty or tagged scalar names nothing, nor does one of an
    earlier document: 2.6's `invalid reference: name`."""
    source = (HERE / "yaml_alias_cases.lua").read_text()
    same_output_on_both(tmp_path, "yaml_alias_cases.lua", source, 30)


def test_yaml_decode_reads_tagged_scalars_as_2_6(tmp_path):
    """!!int as strtol reads (leading digits, saturated, 0 without any), !!float as
    strtod, !!bool true for true and yes only, !!str as it stands: plain, quoted and
    block scalars, in blocks and flows (the tags were dropped, so `!!int 1.5` was 1.5
    and `!!bool abc` the text abc); a plain one over several lines is folded first."""
    source = (HERE / "yaml_tag_cases.lua").read_text()
    same_output_on_both(tmp_path, "yaml_tag_cases.lua", source, 351)


def test_yaml_decode_reads_documents_and_errors_as_2_6(tmp_path):
    """yaml.decode is libyaml 0.2.5's reader, scanner and parser with 2.6's loader on
    top: over written and generated documents, well-formed and not, the values and
    the errors (with their document, line, column and context line) are 2.6's. The
    line-based reader it replaces differed on 1,230 of these 3,117 lines (escaped
    line breaks in double quotes, null keys, flow collections under-indented,
    a document's first node refused, %YAML 2.0, tabs, every error's wording)."""
    source = (HERE / "yaml_decode_cases.lua").read_text()
    same_output_on_both(tmp_path, "yaml_decode_cases.lua", source, 3117)


def test_msgpack_encode_of_plain_data_as_2_6(tmp_path):
    """Plain Lua data is written by a walk of the Lua stack (src/lua/plain_encode.rs)
    and everything else by the general encoder: 5,000 generated values (edge
    numbers, -0, 2^63, sparse arrays, table and boolean keys, nested tables),
    2,000 of them with `__serialize` hints (the decoders' and hand-made ones,
    hooks, bad hints) and box.NULL, decoded values written back, and the cases
    that send it to the general one come out byte for byte as 2.6's (an error
    object without metatables is 2.6's unsupported cdata)."""
    source = (HERE / "msgpack_plain_cases.lua").read_text()
    same_output_on_both(tmp_path, "msgpack_plain_cases.lua", source, 7308)


def test_msgpack_decode_as_2_6(tmp_path):
    """msgpack.decode of 3,000 generated values in every encoding (and as a
    tuple's fields): the same values, tables iterating in the same order (sized
    as 2.6 sizes them), the same hint metatables, 64-bit cdata, box.NULL, and
    the same errors: a NaN key is 2.6's plain "table index is NaN" (it carried a
    stack trace), and the marker 0xc1, which 2.6's check lets through, its
    "extension type: 0" (it was "invalid MsgPack")."""
    source = (HERE / "msgpack_decode_cases.lua").read_text()
    same_output_on_both(tmp_path, "msgpack_decode_cases.lua", source, 5133)


def test_serializers_write_numbers_keys_and_lines_as_2_6(tmp_path):
    """Doubles through printf (ties to even) in JSON, YAML and a tuple's text, while
    tostring rounds them away from zero; msgpack and YAML table shapes; libyaml's
    complex keys and its columns counted in characters."""
    source = (HERE / "serializer_text_cases.lua").read_text()
    same_output_on_both(tmp_path, "serializer_text_cases.lua", source, 46)
