"""box.cfg's checks compared with real Tarantool 2.6 (box_check_config and
each option's setter): values out of bounds refused at the first box.cfg{},
which then leaves the instance unconfigured; run-time bounds and options fixed
at start; '' meaning an option's default; the deprecated option names (and a
clash with the new name); box.session before box.cfg{}.
"""
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
