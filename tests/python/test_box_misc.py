"""Smaller box APIs scripts call at start, compared with real Tarantool 2.6
line for line: box.once (results, second call, usage errors), box.info.pid
and uptime, os.environ(), box.session.type() in the script and its fibers,
box.func (fields, call with a table, dotted names, errors), and
box.ctl.wait_rw / wait_ro; space:bsize() (the tuples' bytes, as uint64_t,
through inserts, deletes, replaces and truncate), index:bsize(), stat() and
compact(); box.info.memory(), box.slab.info() and box.runtime.info() with 2.6's
fields and types, growing with the data; box.error.last/clear/set, per fiber;
box.info.lsn, signature, vclock, replication and cluster; box.schema.index
(create, rename, alter, drop by ids) and space objects already held showing a
schema change at once.
"""
import subprocess

from conftest import LUA_PRINT_COUNTED, ONCEBOX, same_output_on_both

SCRIPT = r"""
box.cfg{listen = os.getenv('LISTEN')}
local function p(...) local t = {...} for i = 1, select('#', ...) do t[i] = tostring(t[i]) end print(select('#', ...) .. ': ' .. table.concat(t, ' | ')) end
p(box.once('a', function(x) return x, 'second' end, 'first'))
p(box.once('a', function() return 'again' end))
p(pcall(box.once, 'b'))
p(pcall(box.once, 5, function() end))
p(type(box.info.pid), box.info.pid == require('tarantool').pid(), type(box.info.uptime), box.info.uptime >= 0, math.floor(box.info.uptime) == box.info.uptime)
local env = os.environ()
p(type(env), env.WORK == os.getenv('WORK'), env.LISTEN == os.getenv('LISTEN'))
p(box.session.type())
require('fiber').create(function() p('fiber', box.session.type()) end)
box.schema.func.create('f1', {if_not_exists = true})
box.schema.func.create('mod.f2', {if_not_exists = true, setuid = true})
rawset(_G, 'f1', function(...) return select('#', ...), ... end)
rawset(_G, 'mod', {f2 = function(a) return a * 2 end})
p(type(box.func), type(box.func.f1), box.func.f1.name, box.func.f1.setuid, box.func.f1.language, box.func['mod.f2'].setuid, box.func.nosuch)
p(box.func.f1:call({1, 2, 3}))
p(box.func.f1:call())
p(box.func['mod.f2']:call({21}))
p(select(2, pcall(box.func.f1.call, box.func.f1, 5)):match('Use.*'))
rawset(_G, 'f1', nil)
p(pcall(box.func.f1.call, box.func.f1))
p(box.ctl.wait_rw(), box.ctl.wait_rw(0.01))
p(pcall(box.ctl.wait_ro, 0.01))
os.exit(0)
"""


def test_once_info_environ_session_type_func_and_wait(tmp_path):
    same_output_on_both(tmp_path, "misc.lua", SCRIPT, 16)


SIZES = r"""
box.cfg{}
local s = box.schema.space.create('s') s:create_index('pk') s:create_index('h', {type = 'hash'}) s:create_index('sk', {parts = {2, 'string'}, unique = false})
print(s:bsize(), type(s.index.pk:bsize()), s.index.pk:bsize() >= 0)
for i = 1, 1000 do s:insert{i, 'name' .. i, string.rep('x', i % 50)} end
local exact = 0 for _, t in s:pairs() do exact = exact + t:bsize() end
print(s:bsize(), exact, s:bsize() == exact, s.index.pk:bsize() > 0, s.index.h:bsize() > 0, s.index.sk:bsize() > 0)
local st = s.index.pk:stat() local n = 0 for _ in pairs(st) do n = n + 1 end print(type(st), n)
print(s.index.pk:compact(), s:len(), s.index.sk:len(), s:count(), s.index.sk:count('name5'))
s:delete{1} s:replace{2, 'changed'}
local exact = 0 for _, t in s:pairs() do exact = exact + t:bsize() end
print(s:bsize() == exact)
s:truncate() print(s:bsize())
os.exit(0)
"""


def test_space_and_index_sizes(tmp_path):
    same_output_on_both(tmp_path, "sizes.lua", SIZES, 6)


MEMORY = r"""
box.cfg{}
local function show(t) local ks = {} for k, v in pairs(t) do ks[#ks+1] = k .. ':' .. type(v) end table.sort(ks) return table.concat(ks, ' ') end
print(show(box.info.memory()))
print(show(box.runtime.info()))
print(show(box.slab.info()))
local slab = box.slab.info()
print(slab.quota_used_ratio:match('^%d+%.%d%d%%$') ~= nil, slab.items_used_ratio:match('^%d+%.%d%d%%$') ~= nil, slab.quota_size == box.cfg.memtx_memory)
print(box.runtime.info().maxalloc)
local s = box.schema.space.create('s') s:create_index('pk')
local before = box.info.memory().data
for i = 1, 1000 do s:insert{i, string.rep('x', 100)} end
print(box.info.memory().data > before, box.slab.info().items_used > 0, box.runtime.info().lua > 0)
print(type(box.slab.stats()), type(box.slab.check))
os.exit(0)
"""


def test_memory_reports_have_2_6_fields(tmp_path):
    same_output_on_both(tmp_path, "memory.lua", MEMORY, 7)


LAST_ERROR = r"""
box.cfg{}
local function show(e) return e == nil and 'nil' or (e.code .. ' ' .. e.message) end
print(type(box.error.last), type(box.error.clear), type(box.error.set))
print(show(box.error.last()))
local s = box.schema.space.create('s') s:create_index('pk')
s:insert{1}
pcall(s.insert, s, {1})
print(show(box.error.last()))
box.error.clear()
print(show(box.error.last()))
pcall(box.error, box.error.ILLEGAL_PARAMS, 'bad')
print(show(box.error.last()))
local e = box.error.new({code = 123, reason = 'custom'})
print(show(box.error.last()))
box.error.set(e)
print(show(box.error.last()))
pcall(error, 'plain lua error')
print(show(box.error.last()))
s:insert{2}
print(show(box.error.last()))
require('fiber').create(function() print('fiber', show(box.error.last())) pcall(s.insert, s, {2}) print('fiber', show(box.error.last())) end)
print(show(box.error.last()))
pcall(box.error.raise, box.error.new({code = 5, reason = 'r'}))
print(show(box.error.last()))
os.exit(0)
"""


def test_box_error_last_clear_and_set(tmp_path):
    same_output_on_both(tmp_path, "last_error.lua", LAST_ERROR, 13)


LSN = r"""
box.cfg{}
local function keys(t) local ks = {} for k, v in pairs(t) do ks[#ks+1] = tostring(k) .. ':' .. type(v) end table.sort(ks) return table.concat(ks, ' ') end
print(keys(box.info.replication), keys(box.info.replication[1]), box.info.replication[1].uuid == box.info.uuid, box.info.replication[1].id)
print(keys(box.info.cluster), type(box.info.cluster.uuid), #box.info.cluster.uuid)
local l0, s0 = box.info.lsn, box.info.signature
print(type(l0), l0 == s0, box.info.replication[1].lsn == l0, (l0 == 0 and next(box.info.vclock) == nil) or box.info.vclock[1] == l0)
box.space._schema:replace{'x'}
require('fiber').sleep(0.1)
print(box.info.lsn > l0, box.info.vclock[1] == box.info.lsn, box.info.signature == box.info.lsn)
os.exit(0)
"""


def test_box_info_lsn_vclock_replication_and_cluster(tmp_path):
    same_output_on_both(tmp_path, "lsn.lua", LSN, 4)


SCHEMA_INDEX = r"""
box.cfg{log_level = 1}
""" + LUA_PRINT_COUNTED + r"""
local s = box.schema.space.create('t')
p('create', box.schema.index.create(s.id, 'pk', {parts = {1, 'unsigned'}}).name,
  box.schema.index.create(s.id, 'sk', {parts = {2, 'string'}, unique = false}).id)
box.schema.index.rename(s.id, 0, 'primary')
p('rename', s.index[0].name, s.index.primary ~= nil, s.index.pk)
box.schema.index.alter(s.id, 1, {name = 'by_name', unique = true})
p('alter', s.index[1].name, s.index[1].unique, s.index.sk)
box.schema.index.drop(s.id, 1)
p('drop', s.index[1], s.index.by_name)
p('no space', pcall(box.schema.index.create, 9999, 'pk'))
p('no index', pcall(box.schema.index.drop, s.id, 7))
p('no space', pcall(box.schema.index.rename, 9999, 0, 'x'))
p('no index', pcall(box.schema.index.alter, s.id, 7, {name = 'y'}))
-- A space object already held shows a schema change made any way at once.
s:create_index('sk', {parts = {2, 'string'}})
s.index.primary:rename('pk')
p('held', s.index.pk ~= nil, s.index.primary, s.index[0].name)
s.index.sk:drop()
p('held', s.index.sk, s.index[1])
box.space._index:update({s.id, 0}, {{'=', 3, 'again'}})
p('held', s.index.again ~= nil, s.index.pk)
s:rename('t2')
p('held', s.name, box.space.t, box.space.t2 ~= nil)
os.exit(0)
"""


def test_box_schema_index_and_held_space_objects(tmp_path):
    same_output_on_both(tmp_path, "schema_index.lua", SCHEMA_INDEX, 12)


FORMAT_AND_SERIALIZERS = r"""
box.cfg{log_level = 1}
""" + LUA_PRINT_COUNTED + r"""
local json, yaml = require('json'), require('yaml')
-- A format entry may name its field by position and give its type by key.
box.schema.space.create('s', {format = {{'id', type = 'number'}, {'v', 'string'}, {name = 'w', type = 'integer'}}})
box.space.s:create_index('pk')
for _, f in ipairs(box.space.s:format()) do p(f.name, f.type) end
-- A user with rights on the space alone may read its format, as through _vspace.
box.schema.user.create('u')
box.schema.user.grant('u', 'read,write', 'space', 's')
p(box.session.su('u', function() return pcall(function() return #box.space.s:format() end) end))
-- A table's __serialize function gives what the serializers write: a box error its message.
local e = box.error.new({code = 5, reason = 'boom'})
p(yaml.encode({e}), json.encode({e}), yaml.encode(e))
local t = setmetatable({}, {__serialize = function() return {1, 2} end})
p(yaml.encode({x = t}), json.encode(t))
os.exit()
"""


def test_format_by_position_and_key_and_serializer_functions(tmp_path):
    same_output_on_both(tmp_path, "format.lua", FORMAT_AND_SERIALIZERS, 16)


SPACE_LIST = r"""
-- (pairs works on any table before box.cfg{}, when box refuses to be read)
local n = 0
for _ in pairs({a = 1, b = 2}) do n = n + 1 end
print('pairs before cfg', n)
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local function user_spaces()
    local names = {}
    for k, v in pairs(box.space) do
        if type(k) == 'string' and v.id > box.schema.SYSTEM_ID_MAX then names[#names + 1] = k .. '=' .. v.id end
    end
    table.sort(names)
    return table.concat(names, ' ')
end
print('before', user_spaces())
for _, name in ipairs({'a', 'b', 'c'}) do box.schema.space.create(name):create_index('pk') end
print('created', user_spaces())
local by_id, by_name = 0, 0
for k in pairs(box.space) do if type(k) == 'number' then by_id = by_id + 1 else by_name = by_name + 1 end end
print('by id and name', box.space[box.space.a.id] == box.space.a, by_id == by_name)
box.space.b:rename('bb')
print('renamed', user_spaces(), box.space.b)
box.space.c:create_index('sk', {parts = {1, 'unsigned'}})
print('index', box.space.c.index.sk ~= nil, #box.space.c.index)
-- What the metrics module's tests do to clean up.
for _, v in pairs(box.space) do
    if v.id > box.schema.SYSTEM_ID_MAX then v:drop() end
end
print('dropped', user_spaces(), box.space.a)
box.schema.space.create('again')
print('again', user_spaces())
-- Written straight into _space: box.space follows.
box.space._space:insert{600, 1, 'raw', 'memtx', 0, setmetatable({}, {__serialize = 'map'}), {}}
print('raw', user_spaces(), box.space.raw.id)
box.space._space:delete{600}
print('raw gone', user_spaces(), box.space.raw)
print('stat.net', type(box.stat.net), box.stat.net.thread, type(box.stat.net().SENT))
os.exit(0)
"""


def test_pairs_lists_box_space_as_2_6(tmp_path):
    """pairs(box.space) lists every space by id and name, following creates,
    renames, drops and writes to _space (the metrics module's cleanup loop);
    box.stat.net is a table one calls, with no `thread`."""
    lines = same_output_on_both(tmp_path, "space_list.lua", SPACE_LIST, 11)
    assert lines[2] == "created\ta=512 b=513 c=514"
    assert lines[6] == "dropped\t\tnil"


SPACE_OPTIONS = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local json = require('json')
local n = 0
local function create(opts)
    n = n + 1
    local ok, s = pcall(box.schema.space.create, 'o' .. n, opts)
    return ok and 'ok' or tostring(s)
end
-- 2.6's checks of the options.
for _, opts in ipairs({{temporary = 1}, {engine = 1}, {id = 'x'}, {field_count = 'x'}, {user = {}},
                       {format = 'x'}, {if_not_exists = 1}, {is_sync = 1}, {nope = 1}, {is_local = 'yes'}, 5}) do
    print('options', create(opts))
end
print('all options', create({engine = 'memtx', temporary = true, is_local = true, is_sync = false,
                             if_not_exists = false, id = 7000, field_count = 0, format = {}, user = 'admin'}))
-- is_local: replication group 1 in _space's flags.
local l = box.schema.space.create('local_one', {is_local = true})
print('is_local', l.is_local, box.space.local_one.is_local, json.encode(box.space._space:get(l.id)[6]))
print('not local', box.schema.space.create('plain').is_local)
print('group 2', pcall(box.space._space.insert, box.space._space, {600, 1, 'g2', 'memtx', 0, {group_id = 2}, {}}))
-- Formats as 2.6 stores them.
local function format_of(fmt)
    n = n + 1
    local ok, s = pcall(box.schema.space.create, 'f' .. n, {format = fmt})
    if not ok then return tostring(s) end
    local out = {}
    for i, f in ipairs(s:format()) do
        local keys = {}
        for k, v in pairs(f) do keys[#keys + 1] = tostring(k) .. '=' .. tostring(v) end
        table.sort(keys)
        out[i] = table.concat(keys, ',')
    end
    return table.concat(out, ' ; ')
end
for _, fmt in ipairs({{{'a'}}, {'a'}, {{name = 'a', scale = 'x', is_nullable = false}}, {{'a', 'unsigned'}},
                      {{name = 'a', 'unsigned'}}, {{name = 'a', type = 'string', 'x'}}, {{'a', 'string', type = 'unsigned'}},
                      {{type = 'string'}}, {{1, 'unsigned'}}, {{name = 'a', type = 5}},
                      {{name = 's', type = 'string', collation = 'unicode_ci'}},
                      {{name = 's', type = 'string', collation = 'nope'}}, {{name = 'n', type = 'number', [5] = 'x'}}}) do
    print('format', format_of(fmt))
end
-- The ddl module follows this internal counter.
local v = box.internal.schema_version()
box.schema.space.create('one_more')
print('schema_version', type(v), box.internal.schema_version() > v)
os.exit(0)
"""


def test_space_options_is_local_and_formats_as_2_6(tmp_path):
    """box.schema.space.create checks its options as 2.6 (types, unknown ones);
    is_local is kept (group_id 1) and shown; formats keep annotations, take
    collations by name and refuse what 2.6 refuses; box.internal.schema_version()
    (the ddl module's 1.6 suites pass here as on 2.6)."""
    lines = same_output_on_both(tmp_path, "space_options.lua", SPACE_OPTIONS, 29)
    assert "is_local\ttrue\ttrue\t{\"group_id\":1}" in lines
    assert "format\tis_nullable=false,name=a,scale=x,type=any" in lines


def test_internal_trigger_lists_as_2_6(tmp_path):
    """require('internal.trigger'): append, list, run in order, replace, remove,
    callable tables, and the usage and not-found errors with 2.6's places."""
    from pathlib import Path

    source = (Path(__file__).parent / "trigger_cases.lua").read_text()
    lines = same_output_on_both(tmp_path, "trigger_cases.lua", source, 19)
    assert "false\tbuiltin/internal.trigger.lua:44: on_x: trigger is not found" in lines


IDENTITY = r"""
local listen = 'storage:secret@127.0.0.1:' .. os.getenv('LISTEN'):match(':(%d+)$')
local ok, e = pcall(box.cfg, {work_dir = os.getenv('WORK'), listen = listen, log_level = 1,
                              instance_uuid = '8a274925-a26d-47fc-9e1b-af88ce939412',
                              replicaset_uuid = 'cbf06940-0790-498b-948d-042b62cf3d29'})
print('cfg', ok, e)
print(box.info.uuid, box.info.cluster.uuid, box.space._schema:get('cluster')[2], box.space._cluster:get(1)[2])
box.schema.user.grant('guest', 'super', nil, nil, {if_not_exists = true})
local fiber = require('fiber')
local f = fiber.create(function()
    -- The listen URI's credentials are not part of the address.
    local c = require('net.box').connect('127.0.0.1:' .. os.getenv('LISTEN'):match(':(%d+)$'))
    print('connected', c:ping(), c.peer_uuid)
    c:close()
end)
f:set_joinable(true)
f:join()
os.exit(0)
"""

IDENTITY_AGAIN = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
print('restart', box.info.uuid, box.info.cluster.uuid)
os.exit(0)
"""


def test_instance_and_replicaset_uuids_and_a_listen_uri_with_credentials_as_2_6(tmp_path, monkeypatch):
    """box.cfg{instance_uuid, replicaset_uuid} name a new instance (box.info,
    _schema's cluster row, _cluster) and are kept across restarts; listen takes
    a URI with login:password@ (vshard gives its replicas' URIs so)."""
    from conftest import free_port, scripts_in_turn_on_both

    monkeypatch.setenv("LISTEN", f"127.0.0.1:{free_port()}")
    tarantool, oncebox = scripts_in_turn_on_both(tmp_path, [("identity.lua", IDENTITY), ("again.lua", IDENTITY_AGAIN)])
    assert oncebox == tarantool
    assert tarantool[1].startswith("8a274925-a26d-47fc-9e1b-af88ce939412\tcbf06940-0790-498b-948d-042b62cf3d29")
    assert tarantool[2] == "connected\ttrue\t8a274925-a26d-47fc-9e1b-af88ce939412"
    assert tarantool[3] == "restart\t8a274925-a26d-47fc-9e1b-af88ce939412\tcbf06940-0790-498b-948d-042b62cf3d29"


LOG_TO_FILE = """
local fio = require('fio')
local sub = fio.pathjoin(os.getenv('WORK'), 'sub')
fio.mkdir(sub)
box.cfg{listen = os.getenv('LISTEN'), work_dir = sub, log = 'instance.log', log_level = 5}
require('log').info('a line for the file %d', 42)
local f = io.open(fio.pathjoin(sub, 'instance.log'))
local text = f:read('*a')
f:close()
print(box.cfg.log, text:match('main/%d+/[^ ]+ I> a line for the file 42') ~= nil)
os.exit(0)
"""


def test_box_cfg_log_writes_to_a_file_under_work_dir(tmp_path):
    """box.cfg{log = 'name'} sends log lines to that file, relative to work_dir,
    as 2.6 does (oncebox wrote them to standard error whatever log said)."""
    lines = same_output_on_both(tmp_path, "log_to_file.lua", LOG_TO_FILE, 1)
    assert lines == ["instance.log\ttrue"]


WAIT_BEFORE_CFG = r"""
local fiber = require('fiber')
local ro = fiber.create(function() box.ctl.wait_ro() print('ro waiter returns', type(box.space)) end)
local rw = fiber.create(function() box.ctl.wait_rw() print('rw waiter returns') end)
local timed = fiber.create(function() print('timed', pcall(box.ctl.wait_rw, 0.05)) end)
fiber.sleep(0.1)
print(ro:status(), rw:status(), timed:status())
box.cfg{}
while ro:status() ~= 'dead' or rw:status() ~= 'dead' do fiber.sleep(0.01) end
print(ro:status(), rw:status(), box.info.ro)
os.exit(0)
"""


def test_wait_ro_and_wait_rw_before_box_cfg_return_once_it_is_done(tmp_path):
    """Before box.cfg{} the instance is neither read-only nor writable: wait_ro and
    wait_rw both block (or time out) until box.cfg{} is done, then return, as 2.6's."""
    same_output_on_both(tmp_path, "wait_before_cfg.lua", WAIT_BEFORE_CFG, 5)


# log.cfg, log.level, log.log_format and box.cfg's log options, each shown by
# the other; the options set once; 2.6's checks and texts (positions stripped).
LOG_SETTINGS = r"""
-- (2.6 crashes in log_destroy at the exit of this script: nothing may wait in a buffer.)
io.stdout:setvbuf('no')
local log, json = require('log'), require('json')
local function p(...)
    local t = {...}
    for i = 1, select('#', ...) do t[i] = (tostring(t[i]):gsub('^builtin/log%.lua:%d+: ', '')) end
    print(table.concat(t, ' | '))
end
p(log.cfg.log, log.cfg.level, log.cfg.format, log.cfg.nonblock)
p(pcall(log.cfg, {log = 'syslog:', format = 'json'}))
p(pcall(box.cfg, {log = 'syslog:', log_format = 'json'}))
p(pcall(log.cfg, {level = 'nope'}))
p(pcall(log.cfg, {format = 'nope'}))
p(pcall(log.cfg, {nonblock = 1}))
log.cfg{log = '1.log', level = 6}
p(log.cfg.log, log.cfg.level, log.cfg.format)
log.cfg{format = 'json', level = 'verbose'}
local file = io.open('1.log')
while file:read() do end
log.verbose('json message')
p(json.decode(file:read()).message)
log.log_format('plain')
box.cfg{log = '1.log', log_level = 6}
p(box.cfg.log, box.cfg.log_level, box.cfg.log_format, log.cfg.level)
for _, level in ipairs({'fatal', 'syserror', 'crit', 'debug', 'info'}) do
    log.cfg{level = level}
    p(level, log.cfg.level, box.cfg.log_level)
end
p(pcall(box.cfg, {log_level = 4, log = '2.txt'}))
p(box.cfg.log_level, log.cfg.level, box.cfg.log)
p(pcall(box.cfg, {log_nonblock = true}))
p(pcall(log.cfg, {log = '3.log'}))
log.level(3)
log.log_format('json')
p(box.cfg.log_level, box.cfg.log_format, log.cfg.level, log.cfg.format)
box.cfg{log_level = 5, log_format = 'plain'}
p(box.cfg.log_level, box.cfg.log_format, log.cfg.level, log.cfg.format)
p(pcall(box.cfg, {log_format = 'json', log = 'syslog:identity:tarantool'}))
p(pcall(log.log_format, 'nope'))
p(pcall(log.level, 'nope'))
p(pcall(log.level, {}))
local function help() log.info('%s %s', 'one') end
xpcall(help, function(err) p(err:match('^[^:]+%.lua:') ~= nil, err:match('bad argument #3') ~= nil) end)
local t = {key = 'value', level = 48, pid = 1, file = 'f', message = 'm'}
log.info(t)
p(t.level, t.pid, t.file, t.message)
log.info(string.rep('a', 32000))
while file:read() do end
log.info(string.rep('b', 32000))
p(#file:read() < 20000)
os.rename('1.log', '1.log.old')
log.rotate()
-- 2.6 reopens the file in another thread: the new one is waited for.
local new, first
for _ = 1, 500 do
    new = new or io.open('1.log')
    first = new and new:read()
    if first then break end
    require('fiber').sleep(0.01)
end
p(first ~= nil and first:match('log file has been reopened') ~= nil)
os.exit(0)
"""


def test_log_settings_and_box_cfg_log_options_follow_each_other_as_2_6(tmp_path):
    """log.cfg{} sets the target once and the level and format at any time,
    log.level() and log.log_format() too, and box.cfg shows each, as 2.6's;
    box.cfg{} refuses a new log or log_nonblock (nothing applied) and json to
    syslog; 2.6's texts for bad values; a format error points at the caller; a
    logged table loses the line's own keys; lines stop at 16 KiB; log.rotate()
    reopens the file and says so."""
    # (2.6 aborts now and then in log_destroy as it exits, the output complete.)
    same_output_on_both(tmp_path, "log_settings.lua", LOG_SETTINGS, 28, tarantool_may_abort_at_exit=True)


def test_open_fio_and_popen_handles_at_exit_do_not_crash_the_state_close(tmp_path):
    """Handles still open when the process ends (by os.exit or at the script's
    end) are not finalized into freed native functions: the exit is clean
    (oncebox crashed in LuaJIT's final sweep)."""
    script = tmp_path / "open_at_exit.lua"
    script.write_text(
        "box.cfg{}\n"
        "local fio, popen = require('fio'), require('popen')\n"
        "handles = {}\n"
        "for i = 1, 50 do handles[i] = fio.open(arg[0]) handles[i]:read(10) end\n"
        "local ph = popen.shell('sleep 0.1', 'r')\n"
        "print('done')\n"
        "os.exit(0)\n")
    for _ in range(3):
        r = subprocess.run([ONCEBOX, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert (r.returncode, r.stdout) == (0, "done\n"), r.stderr


FROMMAP = r"""
box.cfg{log_level = 1}
""" + LUA_PRINT_COUNTED + r"""
local s = box.schema.space.create('t', {format = {{'id', 'unsigned'}, {'m', 'any'}, {'n', 'string', is_nullable = true}}})
s:create_index('pk')
s:create_index('path', {parts = {{2, 'unsigned', path = 'a.b', is_nullable = true}}, unique = false})
-- Fields left out are nils (trailing ones not there), then checked against the format.
p(s:frommap({id = 1}))
p(s:frommap({id = 1, n = 'x'}))
p(s:frommap({id = 1, m = {a = {b = 5}}, n = 'x'}))
p(s:frommap({id = 1, m = {a = {b = 'no'}}}))
p(s:frommap({id = 'x'}))
p(s:frommap({m = 'x'}))
p(s:frommap({id = 1, zz = 2}))
p(s:frommap({[1] = 5}))
-- {table = true}: the table the tuple is made of (a field left out is a hole).
local u = box.schema.space.create('u', {format = {{'id', 'unsigned'}, {'m', 'any', is_nullable = true}, {'n', 'string'}}})
u:create_index('pk')
local t = u:frommap({id = 1, n = 'x'}, {table = true})
p(type(t), t[1], t[2], t[3])
p(u:frommap({id = 1, n = 'x'}, {table = false}))
p(u:frommap({id = 1, m = {[1] = 1, [3] = 3}, n = 'x'}))
p(u:frommap({id = 1}))
p(pcall(s.frommap, s))
p(pcall(s.frommap, s, {id = 1}, {table = 1}))
p(pcall(s.frommap, s, {id = 1}, 5))
p(pcall(s.frommap, s, 5))
p(pcall(s.frommap, s, {id = 1}, {}, {}))
p(pcall(s.frommap, s, {id = 1}, nil))
s:drop()
p(s:frommap({id = 1}))
os.exit()
"""


def test_frommap_checks_the_format_and_gives_tables_as_2_6(tmp_path):
    same_output_on_both(tmp_path, "frommap.lua", FROMMAP, 19)
