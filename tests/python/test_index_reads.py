"""Index reads from Lua (select with every iterator, key prefix, limit and offset;
count; min and max) on a two-part TREE, a nullable non-unique TREE and a HASH,
compared with Tarantool 2.6 line for line.

A HASH index's scan order (and so GT from a key) has a test of its own, below.
"""
import os
import subprocess
from pathlib import Path

from conftest import ONCEBOX, same_output_on_both

HERE = Path(__file__).parent

SCRIPT = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local json = require('json')
local s = box.schema.space.create('t')
s:create_index('pk', {parts = {{1, 'unsigned'}, {2, 'string'}}})
s:create_index('sec', {parts = {{3, 'integer', is_nullable = true}}, unique = false})
s:create_index('h', {type = 'hash', parts = {{4, 'string'}}})
local n = 0
for a = 1, 4 do
  for _, b in ipairs({'a', 'b', 'c'}) do
    n = n + 1
    s:insert{a, b, (n % 3 == 0) and box.NULL or (n % 5) - 2, 'h' .. n}
  end
end
local its = {'EQ', 'REQ', 'GE', 'GT', 'LE', 'LT', 'ALL'}
local keys = {{}, {2}, {2, 'b'}, {0}, {5}, {2, 'bb'}, {4, 'c'}, {1, 'a'}}
local function show(ok, r)
  if not ok then return 'error: ' .. tostring(r) end
  local out = {}
  for _, t in ipairs(r) do table.insert(out, t[1] .. t[2]) end
  return table.concat(out, ',')
end
for _, it in ipairs(its) do
  for _, k in ipairs(keys) do
    for _, lim in ipairs({{}, {limit = 2}, {offset = 1, limit = 2}}) do
      local opts = {iterator = it, limit = lim.limit, offset = lim.offset}
      print('pk', it, json.encode(k), lim.limit, lim.offset, show(pcall(s.index.pk.select, s.index.pk, k, opts)))
    end
    print('pk count', it, json.encode(k), pcall(s.index.pk.count, s.index.pk, k, {iterator = it}))
    -- (count takes no limit nor offset.)
    print('pk count limited', it, json.encode(k), pcall(s.index.pk.count, s.index.pk, k, {iterator = it, limit = 1, offset = 1}))
  end
  for _, k in ipairs({{}, {0}, {-1}, {box.NULL}, {2}, {-5}}) do
    print('sec', it, json.encode(k), show(pcall(s.index.sec.select, s.index.sec, k, {iterator = it})))
    print('sec count', it, json.encode(k), pcall(s.index.sec.count, s.index.sec, k, it))
  end
  for _, k in ipairs({{}, {'h3'}, {'zz'}}) do
    -- GT from a key follows the hash table's own order, which is not Tarantool's.
    if it == 'GT' and #k > 0 then goto next_key end
    local ok, r = pcall(s.index.h.select, s.index.h, k, {iterator = it})
    if ok then
      local out = {}
      for _, t in ipairs(r) do table.insert(out, t[4]) end
      table.sort(out)
      r = table.concat(out, ',')
    end
    print('hash', it, json.encode(k), ok, ok and r or tostring(r))
    ::next_key::
  end
end
print('min', json.encode(s.index.pk:min({2})), json.encode(s.index.pk:max({2})), json.encode(s.index.pk:min()), json.encode(s.index.sec:max()))
print('get', pcall(s.get, s, {2}))
print('random', s.index.pk:random(0) ~= nil)
os.exit(0)
"""


def test_index_reads_match_tarantool(tmp_path):
    tarantool = same_output_on_both(tmp_path, "index_reads.lua", SCRIPT, 386)
    # Both kinds of HASH refusal are in the matrix, in Tarantool's order of checks.
    assert any("does not support selects via a partial key" in line for line in tarantool)
    assert any("does not support requested iterator type" in line for line in tarantool)


NO_INDEX_SCRIPT = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local s = box.schema.space.create('noidx')
local function show(f) print(pcall(f)) end
show(function() return s:get(1) end)
show(function() return s:get{1} end)
show(function() return s:count(1) end)
show(function() return s:count() end)
show(function() return s:update(1, {}) end)
show(function() return s:delete(1) end)
show(function() return s:insert{1} end)
show(function() return s:replace{1} end)
show(function() return s:upsert({1}, {}) end)
show(function() return s:select() end)
show(function() return s:len() end)
show(function() local n = 0 for _ in s:pairs() do n = n + 1 end return n end)
show(function() return #s:pairs({1}, {iterator = 'GE'}):totable() end)
local t = box.schema.space.create('t')
t:create_index('pk')
t:insert{1, 2}
show(function() return t:get(1) end)
show(function() return t:get{1, 2} end)
show(function() return t:get('x') end)
show(function() return t:get() end)
show(function() return t:get(nil) end)
print(select('#', t:get(5)), select('#', t:get(1)))
os.exit(0)
"""


def test_reads_of_a_space_without_an_index_match_tarantool(tmp_path):
    """space:get/count/pairs before the first index (and get's key checks after it)."""
    same_output_on_both(tmp_path, "no_index.lua", NO_INDEX_SCRIPT, 19)


def test_pairs_goes_on_after_each_change_as_2_6(tmp_path):
    """index:pairs() reads a TREE index as the loop goes: a loop whose body deletes,
    inserts, updates (moving a tuple on in a secondary index), rolls back, or lets
    another fiber write, meets what 2.6's iterator meets; on every TREE index kind
    and iterator, across the chunks it reads in; errors come from the call, and
    options other than the iterator are ignored. (pairs() used to read the whole
    select first: a loop that stopped at once paid for every tuple.)"""
    source = (HERE / "pairs_cases.lua").read_text()
    same_output_on_both(tmp_path, "pairs_cases.lua", source, 347)


def test_hash_index_scan_order_as_2_6(tmp_path):
    """select{}, pairs() and GT over HASH indexes (primary and secondary, unsigned,
    string, multi-part, number and scalar keys) meet the tuples in 2.6's order,
    after random inserts, replaces, updates, deletes and failed inserts (it was
    the order of a keyed hash, another each run)."""
    source = (Path(__file__).parent / "hash_order_cases.lua").read_text()
    lines = same_output_on_both(tmp_path, "hash_order_cases.lua", source, 13)
    assert lines[0].startswith("replace\t")
    assert lines[11] == "gt missing\t"


def test_bitset_indexes_as_2_6(tmp_path):
    """BITSET indexes: definitions (2.6's defaults and checks), EQ and the BITS_*
    searches with their counts, what a BITSET refuses (get, min, max, random, GT,
    partial keys), and the scan order by entry id (a freed id is given out next)."""
    source = (Path(__file__).parent / "bitset_cases.lua").read_text()
    lines = same_output_on_both(tmp_path, "bitset_cases.lua", source, 41)
    assert lines[11] == "EQ\ttrue\t5,12,19"
    assert lines[36].startswith("order\t1,2,26,4,5")


def test_rtree_indexes_as_2_6(tmp_path):
    """RTREE indexes: definitions (dimension, distance, 2.6's checks), fields
    checked as points or boxes, every search (EQ, GT, GE, LT, LE, OVERLAPS,
    NEIGHBOR, ALL) with box and point keys, counts, and list order while 2.6's
    tree has one page; with 200 entries, the same sets and distances."""
    source = (Path(__file__).parent / "rtree_cases.lua").read_text()
    lines = same_output_on_both(tmp_path, "rtree_cases.lua", source, 52)
    assert lines[24] == "LE\ttrue\t2,7,8,21"
    assert lines[39] == "neigh\t20,6,10,1,22,30,5,12,11,21,2,8,9,4"


def test_unicode_collations_as_2_6(tmp_path):
    """Strings under the unicode and unicode_ci collations order, compare equal
    and meet unique checks as in 2.6 (ICU's CLDR root order at tertiary and at
    primary strength): symbols before digits before letters, accents after their
    base letter, Cyrillic, CJK; under unicode_ci 'É' is 'e' and 'ß' is 'ss'."""
    source = (Path(__file__).parent / "collation_cases.lua").read_text()
    lines = same_output_on_both(tmp_path, "collation_cases.lua", source, 9)
    assert lines[-1] == "cmp\t<\t<\t<\t=\t=\t<"


def test_locale_collations_as_2_6_and_after_a_restart(tmp_path):
    """The ICU collations of _collation beyond the root order (a built-in
    locale's, or one box.internal.collation.create defines: locale, strength,
    numeric_collation, case_first) order keys and find duplicates as in 2.6, and
    again after a restart; options 2.6 refuses are refused with its messages."""
    source = (Path(__file__).parent / "locale_collation_cases.lua").read_text()
    first = same_output_on_both(tmp_path, "locale_collation_cases.lua", source, 29)
    assert first[0] == "true"
    assert first[5] == "false | Failed to initialize collation: unknown collation type."
    again = same_output_on_both(tmp_path, "locale_collation_cases.lua", source, 8)
    assert again[0] == "after restart\tfalse\ttrue"
    assert again[1:] == first[-7:]


IN_USE_COLLATION = """
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
box.internal.collation.create('ru', 'ICU', 'ru-RU')
local s = box.schema.space.create('t')
s:create_index('pk', {parts = {{1, 'string', collation = 'ru'}}})
print(pcall(box.internal.collation.drop, 'ru'))
s:drop()
print(pcall(box.internal.collation.drop, 'ru'))
os.exit(0)
"""


def test_a_collation_an_index_uses_is_not_dropped(tmp_path):
    """Unlike 2.6, which drops it and then cannot read the index definition
    after a restart from a snapshot: a collation in use stays until its index goes."""
    script = tmp_path / "in_use.lua"
    script.write_text(IN_USE_COLLATION)
    out = subprocess.run([ONCEBOX, str(script)], cwd=tmp_path, env=dict(os.environ, WORK=str(tmp_path)),
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.splitlines() == ["false	Can't drop collation ru : collation is referenced", "true"], out
