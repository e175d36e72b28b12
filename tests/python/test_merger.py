"""The merger module against Tarantool 2.6 (merger_cases.lua): table, tuple and
buffer sources and their chunk iterators, merging in key_def order (forward,
reverse, several parts, equal keys in 2.6's heap order), limit, select into a
buffer, pairs through luafun, mergers of mergers, and every usage and source
error with its type and text; sources used again after their iterator ended
(a box.NULL state going on), NULL pointers as chunks, and msgpackffi's
internal encoders."""

from pathlib import Path

from conftest import run_script_on_both

CASES = (Path(__file__).parent / "merger_cases.lua").read_text()


def test_merger_as_2_6(tmp_path):
    tarantool, oncebox = run_script_on_both(tmp_path, "merger_cases.lua", CASES)
    assert oncebox == tarantool
    assert "tuple use 2\t[[3],[4]]" in tarantool and "decode pointer\t[[1,\"a\"],[2,\"b\"]]" in tarantool
    assert (
        'ties\tok\t{tuple[1,"a1"], tuple[1,"b1"], tuple[1,"c1"], tuple[1,"c2"], tuple[2,"d1"], '
        'tuple[2,"a2"], tuple[2,"c3"], tuple[2,"a3"], tuple[2,"b2"]}'
    ) in tarantool
    assert "buffer holds\t{{1}, {2}, {3}, {4}}" in tarantool
    assert len(tarantool) == 61
