"""box.cfg's values, compared with real Tarantool 2.6 line for line: every
option 2.6 reports after box.cfg{} with its default (and pairs(box.cfg)
listing them), values set at start keeping their types (booleans stay
booleans), box.NULL restoring a default, an empty or box.NULL listen closing
the listener, and the type errors for listen and numeric options.
"""
from conftest import same_output_on_both

SCRIPT = r"""
box.cfg{read_only = false, log_format = 'plain', too_long_threshold = 1, feedback_enabled = false,
        readahead = 20000, log_level = 'info', custom_proc_title = 'x', listen = os.getenv('LISTEN')}
-- (memtx_dir, vinyl_dir and wal_dir report 2.6's '.', whatever oncebox's own layout)
local skip = {listen = true}
local keys = {}
for k in pairs(box.cfg) do
  if not skip[k] and not k:find('^idempotency_') then keys[#keys + 1] = k end
end
table.sort(keys)
for _, k in ipairs(keys) do print(k, type(box.cfg[k]), tostring(box.cfg[k])) end
box.cfg{feedback_enabled = true, readahead = box.NULL, log_level = 6}
for _, k in ipairs({'feedback_enabled', 'readahead', 'log_level'}) do print(k, type(box.cfg[k]), box.cfg[k]) end
print(pcall(box.cfg, {listen = ''}), box.cfg.listen, box.info.listen)
print(pcall(box.cfg, {listen = os.getenv('LISTEN')}), box.cfg.listen == os.getenv('LISTEN'))
print(pcall(box.cfg, {listen = box.NULL}), box.cfg.listen, box.info.listen)
print(pcall(box.cfg, {listen = {}}))
print(pcall(box.cfg, {listen = true}))
print(pcall(box.cfg, {memtx_memory = 'x'}))
print(pcall(box.cfg, {no_such_option = 1}))
os.exit(0)
"""


def test_box_cfg_reports_2_6_defaults_and_types(tmp_path):
    same_output_on_both(tmp_path, "cfg.lua", SCRIPT, 58)


INVALID_FIRST_CFG = r"""
-- A first box.cfg{} with an invalid value raises an error the caller can catch,
-- and configures nothing: a later box.cfg{} starts the instance.
print(pcall(box.cfg, {memtx_memory = 'x'}))
print(pcall(box.cfg, {instance_uuid = 'nope'}))
print(pcall(box.cfg, {replicaset_uuid = 'a-b-c'}))
-- The nil UUID is reserved (2.6's gh-4282).
print(pcall(box.cfg, {instance_uuid = '00000000-0000-0000-0000-000000000000'}))
print(pcall(box.cfg, {replicaset_uuid = '00000000-0000-0000-0000-000000000000'}))
print(pcall(box.cfg, {listen = 'not an address at all:::'}))
print(pcall(box.cfg, {listen = './relative.sock'}))
print(pcall(box.cfg, {wal_mode = 'bogus'}))
print(pcall(box.cfg, {unknown_option = 1}))
box.cfg{work_dir = os.getenv('WORK'), listen = os.getenv('LISTEN')}
print('configured', type(box.space), box.cfg.wal_mode)
print(pcall(box.cfg, {listen = 'nowhere'}))
os.exit(0)
"""


def test_invalid_first_cfg_values_raise_catchable_errors_as_2_6(tmp_path):
    """An invalid instance_uuid or replicaset_uuid (the nil UUID too), listen or
    wal_mode in the first box.cfg{} is an error pcall catches, with 2.6's message (it ended the script)."""
    lines = same_output_on_both(tmp_path, "invalid_cfg.lua", INVALID_FIRST_CFG, 11)
    assert lines[1] == "false\tIncorrect value for option 'instance_uuid': nope"
    assert lines[3] == "false\tIncorrect value for option 'instance_uuid': nil UUID is reserved"
    assert lines[9] == "configured\ttable\twrite"


LOG_NONBLOCK = r"""
-- log_nonblock = false given to the first box.cfg{} stays false (in box.cfg and
-- log.cfg), so giving it again later is no change; true is refused for a file log.
print(pcall(box.cfg, {log = 'first.log', log_nonblock = true}))
box.cfg{work_dir = os.getenv('WORK'), log = 'x.log', log_nonblock = false}
print(box.cfg.log_nonblock, require('log').cfg.nonblock)
print(pcall(box.cfg, {log_nonblock = false}))
print(pcall(box.cfg, {log_nonblock = true}))
print(box.cfg.log_nonblock)
os.exit(0)
"""


def test_log_nonblock_false_stays_false_as_2_6(tmp_path):
    lines = same_output_on_both(tmp_path, "log_nonblock.lua", LOG_NONBLOCK, 5)
    assert lines[1:3] == ["false\tfalse", "true"]
