"""The `csv` module, compared with real Tarantool 2.6 line for line
(`csv_cases.lua`): csv.load and csv.iterate on quoting (doubled quotes, quotes
opening mid-field, line ends inside quotes), spaces around fields, empty
fields and lines, every line-end style, delimiter and quote_char options,
skip_head_lines, input that ends inside quotes, a readable read in pieces of
every size; csv.dump of rows and of one row, escaping, options, a writable,
and the usage errors.
"""
import pathlib

from conftest import same_output_on_both

CASES = pathlib.Path(__file__).with_name("csv_cases.lua").read_text()


def test_csv_load_iterate_and_dump(tmp_path):
    same_output_on_both(tmp_path, "csv_cases.lua", CASES, 71)
