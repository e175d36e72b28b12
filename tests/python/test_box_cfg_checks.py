"""box.cfg's checks compared with real Tarantool 2.6 (box_check_config and
each option's setter): values out of bounds refused at the first box.cfg{},
which then leaves the instance unconfigured; run-time bounds and options fixed
at start; '' meaning an option's default; the deprecated option names (and a
clash with the new name); work_dir moved to first, memtx_dir and wal_dir that
must exist, a read-only instance refusing to bootstrap; box.session before
box.cfg{}; log targets: a pipe and a syslog socket.
"""
import os
import re
import subprocess

from conftest import LUA_PRINT_ROW, ONCEBOX, same_output_on_both

FIRST_CFG = LUA_PRINT_ROW + r"""
local cases = {
    {memtx_memory = -1}, {memtx_memory = 2^60}, {memtx_min_tuple_size = 7}, {memtx_min_tuple_size = 1048281},
    {replication = '//guest@localhost:3301'}, {replication = {'localhost:3301', '//x'}},
    {replication_timeout = 0}, {replication_sync_lag = -1}, {replication_sync_timeout = 0},
    {replication_connect_timeout = -1}, {replication_connect_quorum = -1}, {replication_synchro_quorum = 0},
    {replication_synchro_timeout = 0}, {readahead = 1}, {checkpoint_count = 0}, {wal_max_size = 1},
    {sql_cache_size = -1}, {vinyl_memory = -1}, {vinyl_read_threads = 0}, {vinyl_write_threads = 1},
    {vinyl_page_size = 0}, {vinyl_page_size = 4 * 1024 * 1024, vinyl_range_size = 2 * 1024 * 1024},
    {vinyl_run_count_per_level = 0}, {vinyl_run_size_ratio = 1}, {vinyl_bloom_fpr = 0}, {vinyl_bloom_fpr = 1.1},
    {wal_mode = 'bad'}, {memtx_memory = 'x'}, {listen = '//!'}, {instance_uuid = 'uuid'},
    {slab_alloc_arena = 0.2, memtx_memory = 5}, {rows_per_wal = 5},
}
for _, c in ipairs(cases) do
    local keys = {}
    for k in pairs(c) do keys[#keys + 1] = k end
    table.sort(keys)
    p(table.concat(keys, ','), select(2, pcall(box.cfg, c)), type(box.cfg))
end
local ok, err = pcall(function() return box.space end)
p(ok, tostring(err):match('Please call box.cfg{} first') ~= nil)
p(box.session.id() ~= nil, box.session.user(), box.session.uid(), box.session.type(), box.session.peer())
p(pcall(box.session.su, 'admin'))
-- '' is an option's default.
box.cfg{wal_mode = '', memtx_memory = '', listen = '', slab_alloc_minimal = 32}
p(box.cfg.wal_mode, box.cfg.memtx_memory, box.cfg.listen, box.cfg.memtx_min_tuple_size, type(box.space))
os.exit(0)
"""


def test_a_refused_first_box_cfg_leaves_the_instance_unconfigured(tmp_path):
    same_output_on_both(tmp_path, "first_cfg.lua", FIRST_CFG, 36)


LOG_SETTING = LUA_PRINT_ROW + r"""
p(pcall(box.cfg, {OPTIONS}))
p(type(box.cfg))
os.exit(0)
"""


def test_bad_log_settings_are_refused(tmp_path):
    # One script each: 2.6 keeps a refused log setting's error for every later box.cfg{}.
    cases = ["log_nonblock = true", "log = 'a.log', log_nonblock = true", "log = ':'", "log = ':test:'",
             "log = 'syslog:xxx='", "log = 'syslog:identity=a,identity=b'", "log = 'syslog:facility=bad'"]
    for i, options in enumerate(cases):
        (tmp_path / str(i)).mkdir()
        source = LOG_SETTING.replace("OPTIONS", options)
        same_output_on_both(tmp_path / str(i), "log.lua", source, 2)


RUN_TIME = LUA_PRINT_ROW + r"""
box.cfg{log_level = 5}
local cases = {
    {replication_timeout = 0}, {replication_connect_timeout = 0}, {replication_sync_lag = -1},
    {replication_sync_timeout = 0}, {replication_connect_quorum = -1}, {readahead = 1}, {readahead = 2^31},
    {checkpoint_count = 0}, {memtx_memory = -1}, {memtx_memory = 1}, {memtx_memory = 2^60}, {net_msg_max = 1},
    {sql_cache_size = -1}, {replication_synchro_quorum = 32}, {replication_synchro_timeout = -1},
    {vinyl_memory = -1}, {vinyl_memory = 1}, {wal_mode = 'bad'}, {wal_mode = 'write'}, {wal_mode = ''},
    {vinyl_bloom_fpr = 0}, {vinyl_page_size = 0}, {memtx_min_tuple_size = 7}, {memtx_min_tuple_size = 16},
    {wal_max_size = 1}, {replication = '//x'}, {replication_anon = true}, {listen = '//!'},
    {too_long_threshold = ''}, {read_only = ''}, {net_msg_max = ''}, {worker_pool_threads = 2},
    {snapshot_count = 3}, {panic_on_wal_error = false},
}
for _, c in ipairs(cases) do
    local k, v = next(c)
    p(k, tostring(v), select(2, pcall(box.cfg, c)), tostring(box.cfg[k]))
end
p(box.cfg.checkpoint_count, box.cfg.force_recovery)
os.exit(0)
"""


def test_run_time_changes_are_checked_as_2_6_checks_them(tmp_path):
    same_output_on_both(tmp_path, "run_time.lua", RUN_TIME, 35)


def outcome(binary, tmp_path, source, prepare=None):
    """Runs `source` as a script in a fresh directory: the exit status and the
    last line on standard error without its timestamp and pid."""
    work = tmp_path / ("w-" + os.path.basename(binary))
    work.mkdir(parents=True)
    if prepare:
        prepare(work)
    script = work / "script.lua"
    script.write_text(source)
    r = subprocess.run([binary, str(script)], capture_output=True, text=True, timeout=60, cwd=work)
    lines = [line for line in r.stderr.splitlines() if " I> " not in line and " C> " not in line]
    last = re.sub(r"^.*\] main(/\d+/\S+)? F> ", "", lines[-1]) if lines else ""
    return r.returncode, last, r.stdout.splitlines()


def same_outcome(tmp_path, source, prepare=None):
    tarantool = outcome("tarantool", tmp_path, source, prepare)
    oncebox = outcome(ONCEBOX, tmp_path, source, prepare)
    assert tarantool == oncebox
    return tarantool


def test_work_dir_is_moved_to_and_storage_directories_must_exist(tmp_path):
    assert same_outcome(tmp_path / "a", "box.cfg{work_dir = 'missing'}") == (
        1, "can't chdir to `missing': No such file or directory", [])
    assert same_outcome(tmp_path / "b", "box.cfg{memtx_dir = 'missing'}") == (
        1, "can't initialize storage: error reading directory 'missing'", [])
    assert same_outcome(tmp_path / "c", "box.cfg{wal_dir = 'missing'}") == (
        1, "can't initialize storage: Can't open path: missing", [])
    # Relative paths are under work_dir, the process's directory from then on.
    moved = "box.cfg{work_dir = 'sub', memtx_dir = 'data'} print(require('fio').basename(require('fio').cwd())) os.exit(0)"
    prepare = lambda w: (w / "sub" / "data").mkdir(parents=True)  # noqa: E731
    assert same_outcome(tmp_path / "d", moved, prepare)[2] == ["sub"]
    # Missing, memtx_dir under work_dir fails.
    assert same_outcome(tmp_path / "e", moved, lambda w: (w / "sub").mkdir())[:2] == (
        1, "can't initialize storage: error reading directory 'data'")


def test_a_read_only_instance_does_not_bootstrap(tmp_path):
    assert same_outcome(tmp_path, "box.cfg{read_only = true}") == (
        1, "can't initialize storage: Trying to bootstrap a local read-only instance as master", [])


HUGE_TUPLE = """
box.cfg{memtx_max_tuple_size = 10 * 1024 * 1024, log_level = 1}
box.schema.space.create('test')
box.space.test:create_index('primary')
box.space.test:insert{1, string.rep('x', 1024 * 1024)}
os.exit(0)
"""


def test_a_recovered_tuple_past_memtx_max_tuple_size_stops_the_start(tmp_path):
    """Restarted with memtx_max_tuple_size lowered below a stored tuple, 2.6's
    recovery fails its allocation and stops (box-tap cfg.test.lua): the same
    here, with the same size; a limit that fits starts as usual."""
    def with_huge_tuple(work):
        (work / "huge.lua").write_text(HUGE_TUPLE)
        r = subprocess.run([binary_of[0], "huge.lua"], capture_output=True, text=True, timeout=60, cwd=work)
        assert r.returncode == 0, r.stderr

    binary_of = []
    outcomes = []
    for binary in ("tarantool", ONCEBOX):
        binary_of[:] = [binary]
        outcomes.append((
            outcome(binary, tmp_path / "low", "box.cfg{memtx_max_tuple_size = 10 * 1024}", with_huge_tuple)[:2],
            outcome(binary, tmp_path / "fits", "box.cfg{memtx_max_tuple_size = 2 * 1024 * 1024} "
                    "print(box.space.test:count()) os.exit(0)", with_huge_tuple)[::2],
        ))
    assert outcomes[0] == outcomes[1] == (
        (1, "can't initialize storage: Failed to allocate 1048597 bytes for tuple: tuple is too large. "
            "Check 'memtx_max_tuple_size' configuration option."),
        (0, ["1"]),
    )


PIPE = r"""
local fio = require('fio')
box.cfg{log = '|cat > ' .. fio.pathjoin(fio.cwd(), 'piped.txt')}
require('log').info('through the pipe')
local text = ''
for _ = 1, 100 do
    local f = io.open('piped.txt')
    text = f and f:read('*a') or ''
    if f then f:close() end
    if text:match('through the pipe') then break end
    require('fiber').sleep(0.02)
end
print(text:match('main/%d+/[^ ]+ I> through the pipe') ~= nil)
require('log').rotate()
os.exit(0)
"""


def test_log_lines_go_to_a_pipe(tmp_path):
    assert same_output_on_both(tmp_path, "pipe.lua", PIPE, 1) == ["true"]


SYSLOG = r"""
local socket = require('socket')
local fio = require('fio')
local path = fio.pathjoin(fio.cwd(), 'syslog.sock')
local server = socket('AF_UNIX', 'SOCK_DGRAM', 0)
server:bind('unix/', path)
box.cfg{log = 'syslog:server=unix:' .. path .. ',identity=myapp,facility=user'}
-- 2.6's start lines fill the socket's queue (10 datagrams here): it drops lines
-- it cannot send without blocking. Read them first, as 2.6's cfg.test.lua does.
while server:readable(0.05) do server:recv(1000) end
require('log').warn('careful %d', 5)
require('log').info('an info line')
local seen = {}
while server:readable(0.5) do
    local datagram = server:recv(1000)
    -- <PRI>Mmm dd hh:mm:ss IDENTITY[PID]: main/FID/NAME LEVEL> TEXT
    local pri, ident, pid, text = datagram:match('^<(%d+)>%a%a%a [ %d]%d %d%d:%d%d:%d%d (%a+)%[(%d+)%]: (.*)\n$')
    if text and text:match('careful') then
        seen[#seen + 1] = table.concat({pri, ident, tostring(tonumber(pid) == box.info.pid), (text:gsub('^main/%d+/%S+ ', ''))}, ' ')
    elseif text and text:match('an info line') then
        seen[#seen + 1] = table.concat({pri, ident, (text:gsub('^main/%d+/%S+ ', ''))}, ' ')
        break
    end
end
for _, line in ipairs(seen) do print(line) end
os.exit(0)
"""


def test_log_lines_go_to_syslog_as_2_6_formats_them(tmp_path):
    lines = same_output_on_both(tmp_path, "syslog.lua", SYSLOG, 2)
    assert lines[1] == "14 myapp I> an info line"


EXECUTE_LOADS = LUA_PRINT_ROW + r"""
local unconfigured, err = pcall(function() return box.space end)
p(type(box.cfg), unconfigured, tostring(err):match('Please call box.cfg{} first') ~= nil)
local ok, res = pcall(box.execute, 'SELECT 1 AS one')
p(ok, res and res.rows[1][1], type(box.cfg), type(box.space), box.cfg.wal_mode)
os.exit(0)
"""


def test_box_execute_before_box_cfg_configures_the_instance(tmp_path):
    lines = same_output_on_both(tmp_path, "execute.lua", EXECUTE_LOADS, 2)
    assert lines[1] == "true | 1 | table | table | write"


FROM_FIBERS = LUA_PRINT_ROW + r"""
local fiber = require('fiber')
-- A fiber started by the main chunk boots the instance.
local in_fiber
fiber.create(function() box.cfg{} in_fiber = type(box.space) end)
p('main after create', type(box.cfg), type(box.space))
-- Ten fibers run box.execute while the main chunk waits on a channel: one boots
-- (in 2.6 box.cfg{} makes the others wait), each gets its rows.
local results = fiber.channel(10)
for _ = 1, 10 do
    fiber.create(function() results:put(box.execute('SELECT 1 AS x').rows[1][1]) end)
end
local sum = 0
for _ = 1, 10 do sum = sum + results:get() end
p('executed', sum, fiber.self():id(), fiber.self():name())
-- (When the booting fiber goes on is the schedulers' own business.)
while in_fiber == nil do fiber.sleep(0.01) end
p('booted in a fiber', in_fiber)
os.exit(0)
"""


def test_a_first_box_cfg_from_a_fiber_boots_as_in_2_6(tmp_path):
    # Before, box was shown configured while nothing had booted; then a first
    # box.cfg{} from a fiber was refused.
    lines = same_output_on_both(tmp_path, "from_fibers.lua", FROM_FIBERS, 3)
    assert lines[0] == "main after create | table | table" and lines[2] == "booted in a fiber | table"


LATER_OPTIONS = r"""
-- Options of releases after 2.6.0 are unexpected there, before and after box.cfg{}.
local later = {election_mode = 'off', election_timeout = 5, memtx_use_mvcc_engine = false,
               wal_queue_max_size = 100}
local names = {}
for k in pairs(later) do names[#names + 1] = k end
table.sort(names)
for _, k in ipairs(names) do print(pcall(box.cfg, {[k] = later[k]})) end
box.cfg{log_level = 1}
for _, k in ipairs(names) do print(pcall(box.cfg, {[k] = later[k]}), box.cfg[k]) end
os.exit(0)
"""


def test_options_of_later_releases_are_unexpected_as_in_2_6_0(tmp_path):
    lines = same_output_on_both(tmp_path, "later_options.lua", LATER_OPTIONS, 8)
    assert lines[0] == "false\tIncorrect value for option 'election_mode': unexpected option", lines
