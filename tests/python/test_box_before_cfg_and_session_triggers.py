"""What Lua modules written for Tarantool 2.6 rely on, compared with 2.6 line for line.

tarantool/queue, for one, tells a configured instance from an unconfigured one by
`type(box.cfg)` and `rawget(box, 'space')`, sets `box.session.on_disconnect`
before `box.cfg{}`, drops spaces from that trigger (which 2.6 runs as admin for a
guest session), `su`s back to admin from a user, matches remote errors with
`err:match()` and stores `uuid.bin()` (host byte order in 2.6); tarantool/checks
names `struct tt_uuid` when it loads, luatest `pid_t`.
"""
from conftest import run_script_on_both

BEFORE_CFG = r"""
local keys = {}
for k, v in pairs(box) do keys[#keys + 1] = k .. ':' .. type(v) end
table.sort(keys)
print(table.concat(keys, ' '))
print(type(box.cfg), rawget(box, 'space'), rawget(box, 'info'))
for _, k in ipairs({'space', 'info', 'schema', 'stat', 'once', 'begin'}) do
    local ok, e = pcall(function() return box[k] end)
    print(k, ok, tostring(e):match('Please call box.cfg{} first'))
end
print(type(box.session), type(box.tuple.new), type(box.error.new), box.NULL == nil)
local disconnected = {}
box.session.on_disconnect(function() table.insert(disconnected, box.session.user()) end)
box.cfg{listen = os.getenv('LISTEN'), work_dir = os.getenv('WORK'), log_level = 1}
print(type(box.cfg), type(rawget(box, 'space')), box.info.ro)
local c = require('net.box').connect(os.getenv('LISTEN'))
c:ping()
c:close()
require('fiber').sleep(0.2)
print('disconnect trigger set before box.cfg ran for', table.concat(disconnected, ','))
os.exit(0)
"""

SESSIONS = r"""
box.cfg{listen = os.getenv('LISTEN'), work_dir = os.getenv('WORK'), log_level = 1}
box.schema.user.grant('guest', 'execute', 'universe')
local s = box.schema.space.create('t')
s:create_index('pk')
box.session.on_connect(function() print('connect', box.session.user(), box.session.effective_user()) end)
box.session.on_disconnect(function()
    print('disconnect', box.session.user(), box.session.effective_user(), box.session.uid(), box.session.euid())
    -- Admin's rights: the space goes.
    print('drop from the trigger', pcall(function() box.space.t:drop() end))
end)
function bad() error('Invalid UUID format.') end
local c = require('net.box').connect(os.getenv('LISTEN'))
local ok, err = c:ping(), select(2, pcall(c.call, c, 'bad'))
print('remote error matched', err:match('Invalid UUID format.'), box.error.new({code = 1, reason = 'abc'}):match('b(.)'))
c:close()
require('fiber').sleep(0.2)
print('space after the trigger', box.space.t)
box.schema.user.create('u1')
box.session.su('u1')
print('as u1', box.session.user(), pcall(box.space._user.get, box.space._user, 1))
box.session.su('admin')
print('back to', box.session.user())
print(pcall(box.session.su, 'nobody'))
local uuid = require('uuid')
local u = uuid.fromstr('ae28b3a4-3e5b-4ee2-a2b5-7f8a4e2a4c0d')
local function hex(b) return (b:gsub('.', function(ch) return string.format('%02x', ch:byte()) end)) end
print(hex(u:bin()), hex(u:bin('l')), hex(u:bin('h')), hex(u:bin('host')), hex(u:bin('b')), hex(u:bin('n')),
      hex(u:bin('network')))
print(uuid.frombin(u:bin()), uuid.frombin(u:bin('b'), 'b'), uuid.frombin(u:bin('n'), 'network'), #uuid.bin('b'))
for _, bad in ipairs({'just-for-fun', '', 5}) do print(pcall(uuid.frombin, bad)) end
print(pcall(uuid.fromstr, 5), uuid.fromstr('nope'))
-- fiber.time() and fiber.clock() are the event loop's time: the same until the
-- loop turns (expirationd compares its task's start_time with fiber.time()).
local fiber = require('fiber')
local before, sum = fiber.time(), 0
for i = 1, 3e6 do sum = sum + i end
print('loop time', before == fiber.time(), fiber.clock() == fiber.clock(), fiber.time64() == fiber.time64())
fiber.sleep(0.01)
print('after a sleep', fiber.time() > before)
-- Modules name 2.6's C type of a uuid (tarantool/checks does, at load) and the C
-- types 2.6 declares for itself (luatest's fork and kill use pid_t).
for _, ctype in ipairs({'struct tt_uuid', 'pid_t', 'uid_t', 'gid_t', 'time_t', 'ssize_t'}) do
    print(ctype, pcall(require('ffi').typeof, ctype))
end
os.exit(0)
"""


UUIDS = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local ffi, uuid, msgpack, json, yaml = require('ffi'), require('uuid'), require('msgpack'), require('json'), require('yaml')
local u = uuid.fromstr('ae28b3a4-3e5b-4ee2-a2b5-7f8a4e2a4c0d')
print(type(u), ffi.istype('struct tt_uuid', u), ffi.istype(ffi.typeof('struct tt_uuid'), uuid.new()), tostring(u))
print(u.time_low, u.time_mid, u.time_hi_and_version, u.clock_seq_hi_and_reserved, u.node[5], ffi.sizeof(u))
local back = msgpack.decode(msgpack.encode(u))
print(type(back), back == u, back, uuid.NULL:isnil(), u:isnil(), u == uuid.NULL, u ~= 5)
print(json.encode({u}), yaml.encode({u}))
local s = box.schema.space.create('u', {format = {{'id', 'uuid'}, {'v', 'any'}}})
s:create_index('pk', {parts = {{'id', 'uuid'}}})
s:insert{u, 1}
s:insert{uuid.fromstr('00000000-0000-0000-0000-000000000001'), 2}
local got = s:get(u)
print(type(got[1]), got[1] == u, #s:select(), s:select()[1][1], box.tuple.new{u}[1] == u)
print(pcall(s.insert, s, {'not a uuid', 3}))
os.exit(0)
"""


def test_uuids_are_struct_tt_uuid_cdata_as_in_tarantool(tmp_path):
    """A uuid is 2.6's `struct tt_uuid` cdata (checks('uuid') and ffi.istype take it),
    through msgpack, JSON, YAML, a uuid index and tuples alike."""
    tarantool, oncebox = run_script_on_both(tmp_path, "uuids.lua", UUIDS)
    assert tarantool == oncebox
    assert tarantool[0] == "cdata\ttrue\ttrue\tae28b3a4-3e5b-4ee2-a2b5-7f8a4e2a4c0d"


def test_box_before_its_cfg_is_as_in_tarantool(tmp_path):
    tarantool, oncebox = run_script_on_both(tmp_path, "before_cfg.lua", BEFORE_CFG)
    assert tarantool == oncebox
    assert tarantool[1].startswith("function\tnil\tnil")
    assert tarantool[-1] == "disconnect trigger set before box.cfg ran for\tguest"


def test_session_triggers_su_error_match_and_uuid_bytes_as_in_tarantool(tmp_path):
    tarantool, oncebox = run_script_on_both(tmp_path, "sessions.lua", SESSIONS)
    assert tarantool == oncebox
    assert "disconnect\tguest\tadmin\t0\t1" in tarantool
    assert "space after the trigger\tnil" in tarantool
    assert any(line.startswith("a4b328ae5b3ee24e") for line in tarantool)
