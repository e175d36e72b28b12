"""box.session.exists, peer, fd and sync, fiber's module-level cancel / wakeup /
set_joinable / join / top_enable / top_disable, and a space's enabled, is_sync,
is_local and ck_constraint fields, compared with real Tarantool 2.6 line for line:
in the script, in CALL and EVAL over IPROTO (a peer's address, a socket, the
request's sync), after the connection closed, and with 2.6's argument errors.
"""
from conftest import same_output_on_both

SCRIPT = r"""
box.cfg{listen = os.getenv('LISTEN')}
local fiber = require('fiber')
local function p(...)
    local t = {}
    for i = 1, select('#', ...) do t[i] = tostring((select(i, ...))) end
    print(select('#', ...) .. ': ' .. table.concat(t, ' | '))
end
p(box.session.sync(), box.session.exists(), box.session.exists(box.session.id()), box.session.exists(12345),
  box.session.fd(), box.session.peer())
p(pcall(box.session.peer, 12345))
p(pcall(box.session.fd, 12345))
p(pcall(box.session.peer, 'x'))
p(pcall(box.session.fd, 'x'))
p(pcall(box.session.exists, 'x'))
box.schema.user.grant('guest', 'execute', 'universe')
rawset(_G, 'info', function()
    local peer = box.session.peer()
    return box.session.sync(), peer ~= nil and peer:match('^127%.0%.0%.1:%d+$') ~= nil, box.session.fd() > 0,
        box.session.exists(box.session.id()), box.session.peer(box.session.id()) == peer,
        box.session.type()
end)
local c = require('net.box').connect(os.getenv('LISTEN'))
local first = {c:call('info')}
local second = {c:call('info')}
p(second[1] - first[1], unpack(first, 2))
p(c:eval('return box.session.sync() > 0'))
local id = c:eval('return box.session.id()')
p(box.session.exists(id), box.session.peer(id) ~= nil, box.session.fd(id) > 0)
c:close()
fiber.sleep(0.05)
p(box.session.exists(id), pcall(box.session.peer, id))
local s = box.schema.space.create('t')
p(s.is_local, s.is_sync, s.temporary, s.engine, s.enabled, type(s.ck_constraint))
s:create_index('pk')
p(box.space.t.enabled)
local sync_space = box.schema.space.create('sy', {is_sync = true})
p(sync_space.is_sync, sync_space.is_local)
local f = fiber.new(function() fiber.sleep(0.01) return 5 end)
f:set_joinable(true)
p(pcall(fiber.join, f))
local g = fiber.create(function() fiber.sleep(10) end)
p(pcall(fiber.cancel, g), g:status())
fiber.yield()
p(g:status())
local h = fiber.create(function() fiber.sleep(10) p('woken') end)
p(pcall(fiber.wakeup, h))
fiber.yield()
p(pcall(fiber.set_joinable, h, true))
p(pcall(fiber.top_enable), pcall(fiber.top_disable))
p(pcall(fiber.cancel, 99999))
os.exit(0)
"""


def test_session_fiber_and_space_fields_as_2_6(tmp_path):
    same_output_on_both(tmp_path, "session", SCRIPT, 21)
