"""box.backup.start() and box.backup.stop().

The calls' arguments, results and errors are compared with Tarantool 2.6 line for
line (the checkpoint index read as 2.6's luaL_checkint reads it, a second start
refused until stop, an older checkpoint missing). Then a backup is restored: its
files are copied to a new place while the server goes on writing, oncebox starts
on the copy, and finds the data as it was at start() (rows, a sequence, a
functional index, the instance uuid) and the idempotency records with it: a
retry of a write made before the backup gets its first outcome back.
"""
import os
import subprocess

from conftest import ONCEBOX, same_output_on_both

API = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local s = box.schema.space.create('s')
s:create_index('pk')
for i = 1, 10 do s:replace{i, 'x' .. i} end
local function try(...)
    local r = {pcall(box.backup.start, ...)}
    box.backup.stop()
    return r[1], type(r[2]) == 'table' and 'table' or r[2]
end
print(try('x'))
print(try(nil))
print(try({}))
print(try(-1))
print(try(-0.5))
print(try(0.7))
print(try('0'))
print(try(0, 1))
print(try(1))
print(try(1.5))
print(try('1'))
print(pcall(function() return box.backup.start('x') end))
local ok, files = pcall(box.backup.start)
print(ok, type(files), #files > 0, type(files[1]), #files == table.maxn(files))
print(pcall(box.backup.start))
print(pcall(box.backup.start, 0))
print(box.backup.stop())
print(box.backup.stop())
print(type(box.backup.start()))
box.backup.stop()
os.exit(0)
"""


def test_backup_calls_as_2_6(tmp_path):
    same_output_on_both(tmp_path, "backup_api.lua", API, 18)


TAKE = r"""
local work = os.getenv('WORK')
local fio = require('fio')
local sock = work .. '/iproto.sock'
box.cfg{work_dir = work, listen = 'unix/:' .. sock, log_level = 1}
box.schema.user.grant('guest', 'read,write,execute', 'universe')
local s = box.schema.space.create('s')
s:create_index('pk', {sequence = true})
box.schema.func.create('upper', {body = [[function(t) return {string.upper(t[2])} end]],
                                 is_deterministic = true, is_sandboxed = true})
s:create_index('by_upper', {func = 'upper', parts = {{1, 'string'}}, unique = false})
for i = 1, 100 do s:insert{box.NULL, 'name' .. i} end
local c = require('net.box').connect('unix/:' .. sock)
print('first', c.space.s:insert({1000, 'tokened'}, {idempotent_token = 'tok-1'})[2])
c:close()
print('uuid', box.info.uuid)
local files = box.backup.start()
local root = fio.pathjoin(work, 'oncebox_data', 'backup')
-- The server goes on while the files are copied.
for i = 1, 50 do s:insert{box.NULL, 'later' .. i} end
box.begin()
print('in a transaction', pcall(box.backup.start))
box.rollback()
box.snapshot()
local target = fio.pathjoin(os.getenv('RESTORE'), 'oncebox_data')
for _, f in ipairs(files) do
    assert(f:sub(1, #root + 1) == root .. '/', f)
    local dest = fio.pathjoin(target, f:sub(#root + 2))
    fio.mktree(fio.dirname(dest))
    assert(fio.copyfile(f, dest))
end
print('listed', #files > 3, fio.path.exists(root))
box.backup.stop()
print('stopped', fio.path.exists(root), s:len())
os.exit(0)
"""

RESTORED = r"""
local work = os.getenv('WORK')
local sock = work .. '/iproto.sock'
box.cfg{work_dir = work, listen = 'unix/:' .. sock, log_level = 1}
local s = box.space.s
print('uuid', box.info.uuid)
print('rows', s:len(), s:get(100)[2], s.index.pk:max()[1], #s.index.by_upper:select('NAME7'))
print('sequence', s:insert{box.NULL, 'after'}[1])
local c = require('net.box').connect('unix/:' .. sock)
print('retry', c.space.s:insert({1000, 'tokened'}, {idempotent_token = 'tok-1'})[2])
print('other', pcall(c.space.s.insert, c.space.s, {1000, 'tokened'}, {idempotent_token = 'tok-2'}))
c:close()
os.exit(0)
"""


def run(script, work, **env):
    script_path = work / "script.lua"
    script_path.write_text(script)
    r = subprocess.run(
        [ONCEBOX, str(script_path)],
        env=dict(os.environ, WORK=str(work), **env),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=work,
    )
    assert r.returncode == 0, (r.stdout, r.stderr)
    return r.stdout.splitlines()


def test_a_backup_restores_the_data_and_its_tokens(tmp_path):
    origin, restore = tmp_path / "origin", tmp_path / "restore"
    origin.mkdir()
    restore.mkdir()
    taken = run(TAKE, origin, RESTORE=str(restore))
    assert taken[0] == "first\ttokened"
    assert taken[2:] == [
        "in a transaction\tfalse\tOperation is not permitted when there is an active transaction ",
        "listed\ttrue\ttrue",
        "stopped\tfalse\t151",
    ]
    restored = run(RESTORED, restore)
    assert restored == [
        taken[1],
        "rows\t101\tname100\t1000\t1",
        "sequence\t1001",
        "retry\ttokened",
        "other\tfalse\tDuplicate key exists in unique index 'pk' in space 's'",
    ]
