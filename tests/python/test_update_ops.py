"""UPDATE and UPSERT operations, alone and in pairs, compared with Tarantool 2.6.

One Lua script runs under `tarantool` and under oncebox as a drop-in. It applies
every operation of a list on its own, and pairs of them (on the same field, or an
insert/delete followed by anything), with `space:update` and `space:upsert` from the
same tuple, and prints each result or error: the outputs must be equal line for
line. The pairs are where 2.6's rules are subtle ('=' may set a field again, the
other operations may not; UPSERT skips a failing operation and goes on).
"""
from conftest import ADMIN_PASSWORD, same_output_on_both
from iproto_raw import EVAL, UPDATE, Raw

SCRIPT = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local s = box.schema.space.create('t')
s:create_index('pk')
local json = require('json')
local base = {10, 'abc', 5.5, -3, 'xyz'}
local single = {
  {'=', 2, 7}, {'=', 6, 'new'}, {'=', 7, 'gap'}, {'=', -1, 'last'}, {'=', -6, 'neg'},
  {'!', 2, 7}, {'!', 6, 'end'}, {'!', -1, 'end2'}, {'!', 7, 'gap'},
  {'#', 2, 1}, {'#', 2, 10}, {'#', -1, 1}, {'#', 5, 1}, {'#', 6, 1},
  {'+', 2, 1}, {'+', 4, 1.5}, {'+', 5, 2}, {'-', 5, 10}, {'+', 4, 2}, {'-', 2, 1},
  {'&', 2, 3}, {'|', 2, 4}, {'^', 2, 1}, {'&', 5, 1},
  {':', 3, 2, 1, 'Q'}, {':', 3, -1, 0, 'E'}, {':', 3, 10, 0, 'F'}, {':', 3, -5, 1, 'G'},
  {':', 3, 1, -1, 'H'}, {':', 2, 1, 1, 'Z'},
}
local cases = {}
for _, a in ipairs(single) do table.insert(cases, {a}) end
for _, a in ipairs(single) do
  for _, b in ipairs(single) do
    if a[2] == b[2] or a[1] == '!' or a[1] == '#' then table.insert(cases, {a, b}) end
  end
end
for i, ops in ipairs(cases) do
  local t = {i, unpack(base)}
  s:replace(t)
  local ok, err = pcall(s.update, s, i, ops)
  local updated = ok and json.encode(s:get(i)) or ('error: ' .. tostring(err))
  s:replace(t)
  local ok2, err2 = pcall(s.upsert, s, {i, 0}, ops)
  local upserted = ok2 and json.encode(s:get(i)) or ('error: ' .. tostring(err2))
  print(i, json.encode(ops), 'update: ' .. updated, 'upsert: ' .. upserted)
end
print('cases', #cases)
os.exit(0)
"""


def test_operations_and_pairs_match_tarantool(tmp_path):
    tarantool = same_output_on_both(tmp_path, "update_ops.lua", SCRIPT, 421)
    assert tarantool[-1] == "cases\t420"
    # The matrix holds both kinds of answer: results and 2.6's double-update refusal.
    assert any("double update of the same field" in line for line in tarantool)
    assert sum("update: [" in line for line in tarantool) > 200


CHECKS_SCRIPT = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local json = require('json')
local s = box.schema.space.create('f', {format = {
  {name = 'id', type = 'unsigned'}, {name = 'n', type = 'integer'},
  {name = 's', type = 'string'}, {name = 'o', type = 'number', is_nullable = true},
  {name = 'x', type = 'any'},
}})
s:create_index('pk')
s:create_index('by_x', {parts = {{5, 'unsigned'}}, unique = false})
s:create_index('by_s', {parts = {{3, 'string'}, {6, 'string', is_nullable = true}}})
local cases = {
  {{'=', 2, 'text'}}, {{'+', 2, 1}}, {{'=', 2, -7}}, {{'=', 3, 9}}, {{':', 3, 1, 1, 'Q'}},
  {{'=', 4, box.NULL}}, {{'=', 4, 'no'}}, {{'+', 4, 0.5}}, {{'=', 5, 'str'}}, {{'=', 5, 12}},
  {{'=', 6, 7}}, {{'=', 6, 'six'}}, {{'=', 1, 99}}, {{'+', 1, 0}}, {{'=', 2, 3}, {'=', 3, 4}},
  {{'=', 3, 'ok'}, {'=', 2, 'bad'}}, {{'#', 2, 1}}, {{'#', 3, 1}}, {{'!', 2, 'in'}},
  {{'!', 3, 5}}, {{'#', 4, 2}}, {{'=', 2, 1}, {'#', 4, 1}}, {{'|', 5, 8}}, {{'=', 7, 'tail'}},
  {{'=', 'n', 'named'}}, {{'=', 'o', 'named'}}, {{'=', 's', 'ok'}, {'=', 'x', -1}},
}
for i, ops in ipairs(cases) do
  local t = {i, 10, 's' .. i, 1.5, 100 + i}
  s:replace(t)
  local ok, err = pcall(s.update, s, i, ops)
  print(i, json.encode(ops), ok and json.encode(s:get(i)) or ('error: ' .. tostring(err)))
  if not ok then print('', err.code) end
  s:replace(t)
  local ok2, err2 = pcall(s.upsert, s, t, ops)
  print('', 'upsert', ok2 and json.encode(s:get(i)) or ('error: ' .. tostring(err2)))
end
for i, t in ipairs({{1, 'x'}, {2, 3, 's'}, {3, 3, 's', 'bad'}, {4, 3, 5}, {5, 3, 's', box.NULL, 'x'}}) do
  local ok, err = pcall(s.insert, s, t)
  print('insert', i, ok and 'ok' or tostring(err))
end
print('cases', #cases)
os.exit(0)
"""


def test_an_update_is_checked_against_format_and_indexes_like_tarantool(tmp_path):
    """Every field an operation changed, moved or added is checked as 2.6 checks it:
    the format's type, each index part's type, nullability; fields left alone pass.
    The fields present are checked before a missing one is named (an insert too)."""
    tarantool = same_output_on_both(tmp_path, "update_checks.lua", CHECKS_SCRIPT, 78)
    assert tarantool[-1] == "cases\t27"
    assert sum("does not match" in line or "Tuple field" in line for line in tarantool) >= 8


TUPLE_UPDATE_SCRIPT = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local s = box.schema.space.create('t', {format = {{'id', 'unsigned'}, {'n', 'integer'},
                                                   {'o', 'string', is_nullable = true}}})
s:create_index('pk')
s:create_index('sk', {parts = {{4, 'unsigned'}}, unique = false})
local t = s:replace{1, 2, 'x', 7}
local cases = {
  {{'=', 2, 'str'}}, {{'=', 3, box.NULL}}, {{'=', 3, 5}}, {{'=', 4, 'no'}}, {{'#', 2, 1}}, {{'=', 1, 'k'}},
  {{'=', 5, 'new'}}, {{'#', 4, 1}}, {{'=', 'n', 9}}, {{'+', 'n', 1}, {'=', 'o', 'y'}}, {{'!', 2, 'in'}},
}
for _, ops in ipairs(cases) do
  local ok, r = pcall(t.update, t, ops)
  print('update', ok, tostring(r))
  local ok2, r2 = pcall(t.upsert, t, ops)
  print('upsert', ok2, tostring(r2))
end
local chained = t:update({{'+', 2, 1}})
print('chained', chained.n, pcall(chained.update, chained, {{'=', 'n', 'bad'}}))
local free = box.tuple.new{1, 2}
print('free', pcall(free.update, free, {{'=', 1, 'x'}}))
os.exit(0)
"""


def test_a_tuple_from_a_space_updates_under_its_format(tmp_path):
    """`tuple:update` and `tuple:upsert` on a tuple read from a space give a tuple its
    format and indexes accept, or 2.6's error; a `box.tuple.new` tuple has no rules."""
    tarantool = same_output_on_both(tmp_path, "tuple_update.lua", TUPLE_UPDATE_SCRIPT, 24)
    assert sum("does not match" in line for line in tarantool) >= 6


MISSING_KEY_SCRIPT = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local s = box.schema.space.create('m')
s:create_index('pk')
s:insert{1, 5}
local function show(...) local r = {pcall(...)} print(r[1], type(r[2]), tostring(r[2])) end
-- Operations that are not a list of operations: read only when the key names a tuple.
for _, ops in ipairs({{'+', 1, 10}, {{'+', 2, 1}, 5}, {{'?', 2, 1}}, {{'+'}}, {{}}}) do
  show(s.update, s, {999}, ops); show(s.update, s, {1}, ops); show(s.index.pk.update, s.index.pk, {999}, ops)
end
-- Not a table at all: 2.6's usage errors, plain strings, whatever the key.
for _, ops in ipairs({5, 'x', true}) do
  show(s.update, s, {999}, ops); show(s.index.pk.update, s.index.pk, {1}, ops)
  show(s.upsert, s, {1}, ops); show(s.upsert, s, ops, {})
end
show(s.update, s, {1}, nil); show(s.upsert, s, {1}, nil)
show(s.update, s, {1}, box.tuple.new{{'=', 2, 3}})
show(s.upsert, s, box.tuple.new{2, 2}, box.tuple.new{{'=', 2, 3}})
show(s.upsert, s, {7, 1}, {'+', 1, 10})
os.exit(0)
"""


def test_an_update_of_a_missing_key_does_not_read_its_operations(tmp_path):
    tarantool = same_output_on_both(tmp_path, "missing_key.lua", MISSING_KEY_SCRIPT, 32)
    assert tarantool[0] == "true\tnil\tnil"
    assert "update operation must be an array" in tarantool[1]
    assert tarantool[15] == "false\tstring\tUsage index:update(key, ops)"


def test_an_iproto_update_of_a_missing_key_does_not_read_its_operations(server):
    """The npm tarantool-driver's own suite sends `['+', 1, 10]` as the operations."""
    conn = Raw(server.host, server.port)
    try:
        _, body, _ = conn.auth("admin", ADMIN_PASSWORD)
        conn.request(EVAL, {0x27: "box.schema.space.create('u'):create_index('pk') box.space.u:insert{1, 5}",
                            0x21: []})
        space_id = conn.request(EVAL, {0x27: "return box.space.u.id", 0x21: []})[1][0x30][0]
        header, body, _ = conn.request(UPDATE, {0x10: space_id, 0x11: 0, 0x20: [999], 0x21: ["+", 1, 10]})
        assert header[0] == 0 and body == {0x30: []}
        header, body, _ = conn.request(UPDATE, {0x10: space_id, 0x11: 0, 0x20: [1], 0x21: ["+", 1, 10]})
        assert header[0] == 0x8000 | 1, body
        assert body[0x31] == "Illegal parameters, update operation must be an array {op,..}"
    finally:
        conn.close()
