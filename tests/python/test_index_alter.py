"""index:alter compared with Tarantool 2.6: name, type, uniqueness, parts, sequence, and refusals."""
from conftest import same_output_on_both

SCRIPT = """\
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local s = box.schema.space.create('t')
s:create_index('pk')
s:create_index('sk', {parts = {{2, 'unsigned'}}, unique = false})
s:insert{1, 10, 'a'} s:insert{2, 20, 'b'} s:insert{3, 10, 'c'}
local function try(f) local ok, e = pcall(f) print(ok, ok and '' or tostring(e)) end
print(type(s.index.sk.alter))
try(function() s.index.sk:alter({parts = {{3, 'string'}}}) end)
print(s.index.sk.parts[1].fieldno, s.index.sk.parts[1].type)
local r = s.index.sk:select('b') print(#r, r[1] and r[1][1])
try(function() s.index.sk:alter({name = 'sk2'}) end)
print(s.index.sk2 ~= nil, s.index.sk == nil)
try(function() s.index.sk2:alter({unique = true}) end)
print(s.index.sk2.unique)
try(function() s.index.sk2:alter({parts = {{2, 'unsigned'}}}) end)
try(function() s.index.pk:alter({type = 'hash'}) end)
print(s.index.pk.type)
try(function() s.index.pk:alter({bogus = 1}) end)
try(function() s.index.sk2:alter({parts = {{2, 'unsigned'}}, unique = false}) end)
print(#s.index.sk2:select(10))
local s = box.schema.space.create('q')
s:create_index('pk', {sequence = true})
s:insert{box.NULL, 'a'}
print(s.index.pk.sequence_id ~= nil, box.sequence.q_seq ~= nil)
try(function() s.index.pk:alter({sequence = false}) end)
print(s.index.pk.sequence_id, box.sequence.q_seq)
try(function() s:insert{box.NULL, 'b'} end)
box.schema.sequence.create('myseq')
try(function() s.index.pk:alter({sequence = 'myseq'}) end)
print(s.index.pk.sequence_id == box.sequence.myseq.id)
try(function() s:insert{box.NULL, 'c'} end)
print(s:count())
try(function() s.index.pk:alter({parts = {{2, 'string'}}}) end)
s:create_index('sk', {parts = {{2, 'string'}}})
try(function() s.index.sk:alter({sequence = true}) end)
try(function() s.index.sk:alter({type = 'hash', name = 'by_name'}) end)
print(s.index.by_name.type, s.index.by_name:get('a') ~= nil)
try(function() s.index.by_name:alter(5) end)
try(function() s.index.by_name:alter({id = 3}) end)
print(s.index[3] and s.index[3].name, type(s.index[1]))
os.exit(0)
"""


def test_index_alter(tmp_path):
    same_output_on_both(tmp_path, "index_alter.lua", SCRIPT, 29)
