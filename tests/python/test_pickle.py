"""The `pickle` module, compared with real Tarantool 2.6 line for line
(`pickle_cases.lua`): pack of every format character against integers (cut to
width, negative, 2^63), doubles, strings, booleans, NULL, tables and numeric
cdata; unpack of each readable format, 64-bit values as numbers or cdata, and
every size, count and format error with 2.6's wording.
"""
import pathlib

from conftest import same_output_on_both

CASES = pathlib.Path(__file__).with_name("pickle_cases.lua").read_text()


def test_pickle_pack_and_unpack(tmp_path):
    same_output_on_both(tmp_path, "pickle_cases.lua", CASES, 51)
