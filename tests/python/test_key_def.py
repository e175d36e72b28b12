"""The key_def module compared with real Tarantool 2.6 line for line
(key_def_cases.lua): key_def.new from parts (as index.parts gives them, or with
`field`), its argument errors, collations by name or id (none before
box.cfg{}), extract_key, compare and compare_with_key
(collations, partial keys, nullable parts, number/integer/scalar ordering),
merge, totable, parts on JSON paths inside fields, and sorting rows with it.
"""
from pathlib import Path

from conftest import same_output_on_both

CASES = Path(__file__).with_name("key_def_cases.lua").read_text()


def test_key_def_as_2_6(tmp_path):
    same_output_on_both(tmp_path, "key_def", CASES, 59)
