"""Schema and data API misuse from Lua, compared with Tarantool 2.6 line for line.

Options checked as 2.6 checks them (create_index, alter, user, role and function
creation), 2.6's index part forms (a part given as {field, type} pairs is not
nullable, whatever the format says), its messages for unknown types in formats
and parts, unknown iterator names, select's offset and limit taken as uint32,
grants checked against the object type, and the usage errors of update and
upsert. Error positions (the `file:line:` of a Lua error) are left out.
"""
from conftest import same_output_on_both

SCRIPT = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local s = box.schema.space.create('t', {format = {{'id', 'unsigned'}, {'v', 'any', is_nullable = true}}})
s:create_index('pk')
s:create_index('sk', {parts = {2, 'unsigned'}, unique = false})
s:insert{1, 5}
s:insert{2, 6}
local function show(label, ...) local r = {pcall(...)} local v = r[2]
  if type(v) == 'table' then v = require('json').encode(v) end
  print(label, r[1], type(r[2]), (tostring(v):gsub('^[%w/_.]+%.lua:%d+: ', ''))) end
local pk, sk = s.index.pk, s.index.sk
show('sel1', pk.select, pk, 'x')
show('sel2', pk.select, pk, {1}, {iterator = 'BOGUS'})
show('sel3', pk.select, pk, {1}, {iterator = 99})
show('sel4', pk.select, pk, {1}, {limit = 'x'})
show('sel5', pk.select, pk, {1}, {offset = -1})
show('sel6', pk.select, pk, {1}, 5)
show('sel7', pk.select, pk, {1, 2})
show('sel8', sk.select, sk, {'a'})
show('sel9', pk.select, pk, nil, {iterator = 'GT', limit = 1})
show('get1', pk.get, pk)
show('get2', sk.get, sk, {5})
show('get3', pk.get, pk, {1, 2})
show('min1', pk.min, pk, 'x')
show('max1', pk.max, pk, {1, 2})
show('cnt1', pk.count, pk, {1}, {iterator = 'BOGUS'})
show('cnt2', sk.count, sk, 'x')
show('rnd1', pk.random, pk, 'x')
show('rnd2', pk.random, pk)
show('pairs1', function() return pk:pairs({1}, {iterator = 'BOGUS'}) end)
show('pairs2', function() return pk:pairs('x') end)
show('len1', s.len, s, 5)
show('count1', s.count, s, {1}, {iterator = 'LE'})
show('del1', s.delete, s, {1, 2})
show('del2', sk.delete, sk, {5})
show('ins1', s.insert, s, {'x'})
show('ins2', s.insert, s, {})
show('ins3', s.insert, s, {1, 5})
show('rep1', s.replace, s, {3, 'str'})
show('upd1', s.update, s, {2}, {{'=', 1, 9}})
show('upd2', s.update, s, {2}, {{'=', 'nofield', 9}})
show('upd3', s.update, s, {2}, {{'=', 'v', 'x'}})
show('ups1', s.upsert, s, {2}, {{'+', 2, 1}})
show('cs1', box.schema.space.create, 't')
show('cs2', box.schema.space.create, 'u', {bogus = 1})
show('cs3', box.schema.space.create, 'u', {engine = 'bogus'})
show('cs4', box.schema.space.create, 'u', {format = 5})
show('cs5', box.schema.space.create, 'u', {format = {{'a', 'bogus'}}})
show('cs6', box.schema.space.create, 5)
show('cs7', box.schema.space.create, 'u', {id = 'x'})
show('cs8', box.schema.space.create, 'u', {field_count = -1})
show('ci1', s.create_index, s, 'pk')
show('ci2', s.create_index, s, 'x', {type = 'bogus'})
show('ci3', s.create_index, s, 'x', {parts = {9, 'unsigned'}})
show('ci4', s.create_index, s, 'x', {parts = {'nofield'}})
show('ci5', s.create_index, s, 'x', {parts = {2, 'bogus'}})
show('ci6', s.create_index, s, 'x', {bogus = 1})
show('ci7', s.create_index, s, 'x', {type = 'hash', unique = false})
show('ci8', s.create_index, s, 'x', {parts = {{field = 2, type = 'unsigned', bogus = 1}}})
show('ci9', s.create_index, s, 'x', {parts = {2}, unique = 'yes'})
show('ci10', s.create_index, s, 'x', {type = 'bitset', parts = {2, 'unsigned'}, unique = true})
show('ci11', s.create_index, s, 5)
show('alt1', pk.alter, pk, {bogus = 1})
show('alt2', s.alter, s, {bogus = 1})
show('fmt1', s.format, s, {{'a'}})
show('fmt2', s.format, s, {{name = 'id', type = 'string'}})
show('fmt3', s.format, s, 5)
show('drop1', function() return box.space.nonexist:drop() end)
show('grant1', box.schema.user.grant, 'nouser', 'read', 'space', 't')
show('grant2', box.schema.user.grant, 'guest', 'bogus', 'space', 't')
show('grant3', box.schema.user.grant, 'guest', 'read', 'space', 'nospace')
show('grant4', box.schema.user.grant, 'guest', 'read', 'bogus', 't')
show('uc1', box.schema.user.create, 'guest')
show('uc2', box.schema.user.create, 'u1', {bogus = 1})
show('uc3', box.schema.user.create, 'u1', {password = 5})
show('seq1', box.schema.sequence.create, 's', {bogus = 1})
show('seq2', box.schema.sequence.create, 's', {min = 10, max = 5})
show('seq3', box.schema.sequence.create, 's', {start = 100, max = 5})
show('fn1', box.schema.func.create, 'f', {bogus = 1})
show('fn2', box.schema.func.create, 'f', {language = 'bogus'})
show('tuple1', box.tuple.new, 5)
show('tuple2', function() return box.tuple.new{1}:update({{'=', 5, 1}}) end)
show('tuple3', function() return box.tuple.new{1}[0] end)
show('begin1', function() box.begin() box.begin() end)
box.rollback()
show('commit1', box.commit)
show('sp1', box.savepoint)
show('rb1', box.rollback_to_savepoint, 5)
show('atomic1', box.atomic, 5)
local s2 = box.schema.space.create('t2')
s2:create_index('pk')
local function show2(label, ...) local r = {pcall(...)} print(label, r[1], tostring(r[2])) end
show2('f1', s2.format, s2, {{name = 'a', type = 'bogus'}})
show2('f2', box.space._space.update, box.space._space, {s2.id}, {{'=', 7, {{name = 'a', type = 'bogus'}}}})
show2('f3', box.space._space.insert, box.space._space, {600, 1, 'x', 'memtx', 0, setmetatable({}, {__serialize='map'}), {{name = 'a', type = 'bogus'}}})
show2('f4', box.space._space.insert, box.space._space, {601, 1, 'y', 'memtx', 0, setmetatable({}, {__serialize='map'}), {{type = 'unsigned'}}})
show2('f5', box.space._space.insert, box.space._space, {602, 1, 'z', 'memtx', 0, setmetatable({}, {__serialize='map'}), {{name = 'a', is_nullable = 'x'}}})
show2('f6', box.space._space.insert, box.space._space, {603, 1, 'w', 'memtx', 0, setmetatable({}, {__serialize='map'}), {{name = 'a', type = 5}}})
show2('f7', box.space._space.update, box.space._space, {s2.id}, {{'=', 7, {{type = 'unsigned'}}}})
show2('i1', box.space._index.insert, box.space._index, {s2.id, 5, 'i', 'tree', {unique = true}, {{0, 'bogus'}}})
show2('i2', box.space._index.insert, box.space._index, {s2.id, 5, 'i', 'tree', {unique = true}, {{field = 0, type = 'bogus'}}})
show2('i3', s2.create_index, s2, 'x', {parts = {{1, 'bogus'}}})
show2('i4', s2.create_index, s2, 'x', {parts = {{field = 1, type = 'bogus'}}})
show2('i5', s2.create_index, s2, 'x', {parts = {{field = 1, type = 'unsigned', is_nullable = true}, {2, 'bogus'}}})
local s3 = box.schema.space.create('t3', {format = {{'id', 'unsigned'}, {'v', 'any', is_nullable = true}}})
s3:create_index('pk')
print((select(1, pcall(s3.create_index, s3, 'b', {type = 'bitset', parts = {2, 'unsigned'}}))))
print((select(1, pcall(s3.create_index, s3, 'h', {type = 'hash', parts = {2, 'unsigned'}}))))
print((select(1, pcall(s3.create_index, s3, 't', {type = 'tree', parts = {2, 'unsigned'}, unique = false}))))
if s3.index.t then print(s3.index.t.parts[1].is_nullable) end
print(pcall(s3.insert, s3, {1}))
print(pcall(box.space._index.insert, box.space._index, {s3.id, 7, 'b2', 'bitset', {unique = false}, {{1, 'unsigned'}}}))
os.exit(0)
"""


def test_schema_and_data_api_misuse_matches_tarantool(tmp_path):
    tarantool = same_output_on_both(tmp_path, "api_misuse.lua", SCRIPT, 95)
    assert "sel2\tfalse\tcdata\tUnknown iterator type 'BOGUS'" in tarantool
    assert "ci6\tfalse\tcdata\tIllegal parameters, unexpected option 'bogus'" in tarantool
    assert "grant2\tfalse\tcdata\tUnsupported space privilege 'bogus'" in tarantool
    assert "f1\tfalse\tCan't modify space 't2': field 1 has unknown field type" in tarantool
    assert "ups1\tfalse\tcdata\tTuple field 2 required by space format is missing" in tarantool
