"""wal_mode = 'none': no commit is logged, box.snapshot() saves the whole state,
and the next start loads what the last snapshot saved (as 2.6 loads its last
.snap file).

Scripts run one after the other in one work directory, on Tarantool 2.6 and on
oncebox, and print the same lines: rows written before a snapshot are back, those
after it are not; a row deleted, a space dropped or created after it; a sequence; a temporary
space (its definition kept, its rows not); the directory then started with
wal_mode = 'write' and again with 'none'; a transaction open at box.snapshot()
aborted as by a yield.
"""
from conftest import scripts_in_turn_on_both

CFG = "box.cfg{work_dir = os.getenv('WORK'), log_level = 1, wal_mode = '%s'}\n"
SHOW = r"""
local function show(name)
    local s = box.space[name]
    if s == nil then return print(name, 'absent') end
    local rows = {}
    for _, t in s:pairs() do table.insert(rows, require('json').encode(t)) end
    print(name, s:count(), table.concat(rows, ' '))
end
"""

FIRST = CFG % "none" + SHOW + r"""
local t = box.schema.space.create('t')
t:create_index('pk')
t:replace{1, 'before the snapshot'}
t:replace{9, 'deleted in the second run'}
box.schema.space.create('dropped_later'):create_index('pk')
box.space.dropped_later:insert{1}
box.schema.space.create('tmp', {temporary = true}):create_index('pk')
box.space.tmp:insert{1}
box.schema.sequence.create('sq')
print(box.sequence.sq:next(), box.sequence.sq:next())
print(box.snapshot())
t:replace{2, 'after the snapshot'}
box.schema.space.create('created_later'):create_index('pk')
box.sequence.sq:next()
os.exit(0)
"""

SECOND = CFG % "none" + SHOW + r"""
show('t') show('dropped_later') show('created_later') show('tmp')
print(box.sequence.sq:next())
box.space.dropped_later:drop()
box.space.t:delete{9}
box.space.t:replace{3, 'in the second run'}
print(box.snapshot())
os.exit(0)
"""

UNDER_A_WAL = CFG % "write" + SHOW + r"""
show('t') show('dropped_later')
print(box.sequence.sq:next())
box.space.t:replace{5, 'logged'}
os.exit(0)
"""

# (Last: 2.6's snapshot keeps the aborted transaction's row, oncebox's does not.)
LAST = CFG % "none" + SHOW + r"""
show('t')
box.begin()
box.space.t:replace{4, 'in a transaction open at the snapshot'}
print(pcall(box.snapshot))
print(pcall(box.commit))
show('t')
os.exit(0)
"""


def test_a_restart_loads_the_last_snapshot_as_2_6(tmp_path):
    tarantool, oncebox = scripts_in_turn_on_both(
        tmp_path, [("first.lua", FIRST), ("second.lua", SECOND), ("wal.lua", UNDER_A_WAL), ("last.lua", LAST)])
    assert tarantool == oncebox
    assert tarantool == [
        "1\t2",
        "ok",
        't\t2\t[1,"before the snapshot"] [9,"deleted in the second run"]',
        "dropped_later\t1\t[1]",
        "created_later\tabsent",
        "tmp\t0\t",
        "3",
        "ok",
        't\t2\t[1,"before the snapshot"] [3,"in the second run"]',
        "dropped_later\tabsent",
        "4",
        't\t3\t[1,"before the snapshot"] [3,"in the second run"] [5,"logged"]',
        "true\tok",
        "false\tTransaction has been aborted by a fiber yield",
        't\t3\t[1,"before the snapshot"] [3,"in the second run"] [5,"logged"]',
    ]


VINYL_BEFORE = CFG % "write" + r"""
local v = box.schema.space.create('v', {engine = 'vinyl'})
v:create_index('pk')
v:insert{1, 'a'}
os.exit(0)
"""

VINYL_WITHOUT_A_WAL = CFG % "none" + r"""
local v = box.space.v
local function try(name, f, ...)
    local ok, err = pcall(f, ...)
    print(name, ok, ok and '' or tostring(err))
end
try('create_index', v.create_index, v, 'sk', {parts = {2, 'string'}})
try('index drop', v.index.pk.drop, v.index.pk)
try('alter', v.format, v, {{'id', 'unsigned'}})
try('truncate', v.truncate, v)
try('drop', v.drop, v)
try('insert', v.insert, v, {2, 'b'})
try('replace', v.replace, v, {1, 'c'})
try('update', v.update, v, 1, {{'=', 2, 'd'}})
try('delete', v.delete, v, 1)
try('select', v.select, v)
print(require('json').encode(v:select()))
local w = box.schema.space.create('w', {engine = 'vinyl'})
print('created', w.engine)
try('new create_index', w.create_index, w, 'pk')
local m = box.schema.space.create('m')
m:create_index('pk')
try('memtx insert', m.insert, m, {1})
os.exit(0)
"""


def test_vinyl_refuses_ddl_and_dml_without_a_wal_as_2_6(tmp_path):
    tarantool, oncebox = scripts_in_turn_on_both(tmp_path, [("v1.lua", VINYL_BEFORE), ("v2.lua", VINYL_WITHOUT_A_WAL)])
    assert tarantool == oncebox
    ddl = "Vinyl does not support DDL if wal_mode = 'none'"
    dml = "Vinyl does not support DML if wal_mode = 'none'"
    assert tarantool == [
        f"create_index\tfalse\t{ddl}", f"index drop\tfalse\t{ddl}", f"alter\tfalse\t{ddl}",
        f"truncate\tfalse\t{ddl}", f"drop\tfalse\t{ddl}", f"insert\tfalse\t{dml}", f"replace\tfalse\t{dml}",
        f"update\tfalse\t{dml}", f"delete\tfalse\t{dml}", "select\ttrue\t", '[[1,"a"]]', "created\tvinyl",
        f"new create_index\tfalse\t{ddl}", "memtx insert\ttrue\t",
    ]
