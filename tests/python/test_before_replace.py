"""space:before_replace compared with real Tarantool 2.6 line for line
(before_replace_cases.lua): a trigger's result on INSERT, REPLACE, UPDATE (also
through a secondary index), UPSERT and DELETE, from Lua and over IPROTO: the new
tuple as sent, no value, nil or box.NULL (a DELETE of the old row, or nothing),
the old tuple (nothing done), another tuple (a REPLACE; the primary key may not
change), and invalid results and errors; the on_replace triggers that follow, the
request's own result, the rows left; a trigger's writes undone with a refused
statement; triggers run newest first, each given what the one before returned.
"""
from pathlib import Path

from conftest import same_output_on_both

CASES = Path(__file__).with_name("before_replace_cases.lua").read_text()


def test_before_replace_as_2_6(tmp_path):
    same_output_on_both(tmp_path, "before_replace", CASES, 411)
