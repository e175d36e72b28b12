"""The `utf8` module (and the global `utf8`), compared with real Tarantool 2.6
line for line (`utf8_cases.lua`): upper and lower with Unicode's special
casings, len/next/sub over ill-formed bytes and positions from either end,
char of any value, isupper/islower/isalpha/isdigit as general categories, cmp
and casecmp, and every usage and argument error with 2.6's wording.
"""
import pathlib

from conftest import same_output_on_both

CASES = pathlib.Path(__file__).with_name("utf8_cases.lua").read_text()


def test_utf8_module(tmp_path):
    same_output_on_both(tmp_path, "utf8_cases.lua", CASES, 155)
