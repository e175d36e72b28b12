-- net.box {reconnect_after = ...}: a connection to a peer that is down, goes away
-- and comes back, compared with Tarantool 2.6 (test_netbox.py). The peer is
-- another instance of the same executable (arg[-1]), started and killed here.
box.cfg{listen = os.getenv('LISTEN') or '127.0.0.1:0', work_dir = os.getenv('WORK') or '.', log_level = 1}
local net_box = require('net.box')
local fiber = require('fiber')
local popen = require('popen')
local socket = require('socket')
local fio = require('fio')

local function p(...)
    local t = {}
    for i = 1, select('#', ...) do t[i] = tostring((select(i, ...))) end
    print(table.concat(t, ' | '))
end

-- Waits until `cond()` holds (at most 10 s); whether it did.
local function wait_for(cond)
    local deadline = fiber.clock() + 10
    while not cond() do
        if fiber.clock() > deadline then return false end
        fiber.sleep(0.01)
    end
    return true
end

local probe = socket.tcp_server('127.0.0.1', 0, function() end)
local port = probe:name().port
probe:close()
local uri = '127.0.0.1:' .. port

local peer_dir = fio.pathjoin(fio.cwd(), 'peer')
fio.mkdir(peer_dir)
local peer_script = fio.pathjoin(peer_dir, 'peer.lua')
local f = io.open(peer_script, 'w')
-- (The peer listens only once whoami is there: a call right after a connect works.)
f:write(string.format([[
box.cfg{work_dir = %q, log_level = 1}
box.schema.user.grant('guest', 'super', nil, nil, {if_not_exists = true})
rawset(_G, 'whoami', function() return 'peer' end)
box.cfg{listen = %q}
]], peer_dir, uri))
f:close()

local peer
local function start_peer() peer = popen.new({arg[-1], peer_script}) end
local function kill_peer() peer:kill() peer:wait() peer:close() peer = nil end

local events = {}
local c = net_box.connect(uri, {reconnect_after = 0.1, wait_connected = false})
c:on_connect(function(conn) events[#events + 1] = 'on_connect ' .. conn.state end)
c:on_disconnect(function(conn) events[#events + 1] = 'on_disconnect ' .. conn.state end)
p('down: at once', c.state)
p('down: reconnecting', wait_for(function() return c.state == 'error_reconnect' end), c.error)
p('down: is_connected', c:is_connected(), 'wait_connected', c:wait_connected(0.05))
p('down: wait_state', c:wait_state('active', 0.05), c:wait_state({error_reconnect = true}, 0.05))
p('down: ping', c:ping({timeout = 0.05}))
local ok, err = pcall(c.call, c, 'whoami', {}, {timeout = 0.05})
p('down: call', ok, err and err.code, err and err.message)
-- A request without a time-out waits for the connection.
local waited = {}
fiber.create(function() waited[#waited + 1] = c:call('whoami') end)
fiber.sleep(0.2)
p('down: waiting call', #waited)
start_peer()
p('up: connected', c:wait_connected(10), c.state, c.error)
p('up: waiting call got', wait_for(function() return #waited == 1 end), waited[1])
p('up: call', c:call('whoami'), c:ping())
p('events', table.concat(events, ', '))

-- The peer goes away: the connection notices without a request, and comes back.
events = {}
kill_peer()
-- (The reason is the peer's going, or the first try to connect again failing.)
local gone = {['Peer closed'] = 'gone', ['Connection refused'] = 'gone'}
p('gone: noticed', wait_for(function() return c.state == 'error_reconnect' end), gone[c.error])
ok, err = pcall(c.eval, c, 'return 1', {}, {timeout = 0.05})
p('gone: eval', ok, err and err.code, err and gone[err.message])
start_peer()
p('back: connected', c:wait_connected(10), c.state)
p('back: call', c:call('whoami'))
p('events', table.concat(events, ', '))

-- A request in flight when the peer goes fails; the connection comes back after.
local res = {}
fiber.create(function() res[1] = {pcall(c.eval, c, 'require("fiber").sleep(10)')} end)
fiber.sleep(0.1)
kill_peer()
p('in flight', wait_for(function() return res[1] ~= nil end), res[1] and res[1][1], res[1] and res[1][2] and res[1][2].message)
start_peer()
p('again', c:wait_connected(10), c:call('whoami'))

-- close() stops reconnecting.
kill_peer()
wait_for(function() return c.state == 'error_reconnect' end)
c:close()
p('closed', c.state, c.error)
start_peer()
fiber.sleep(0.3)
p('closed stays', c.state, c:is_connected())

-- Without reconnect_after the peer going away is final, noticed without a request.
local plain = net_box.connect(uri)
local plain_events = {}
plain:on_disconnect(function(conn) plain_events[#plain_events + 1] = 'on_disconnect ' .. conn.state end)
p('plain', plain.state, plain:call('whoami'))
kill_peer()
p('plain: noticed', wait_for(function() return plain.state ~= 'active' end), plain.state, plain.error)
p('plain: events', table.concat(plain_events, ', '))
start_peer()
fiber.sleep(0.3)
p('plain: stays', plain.state, plain:wait_connected(0.05))

-- connect() with reconnect_after waits for the peer (here at most wait_connected seconds).
kill_peer()
local t0 = fiber.clock()
local w = net_box.connect(uri, {reconnect_after = 0.05, wait_connected = 0.3})
p('bounded wait', w.state, w.error, fiber.clock() - t0 >= 0.25)
start_peer()
p('bounded wait: later', w:wait_connected(10), w:call('whoami'))
w:close()
kill_peer()

-- A reconnecting connection nobody holds any more is collected: its fiber ends.
local function fibers()
    local n = 0
    for _ in pairs(fiber.info()) do n = n + 1 end
    return n
end
local function collect()
    for _ = 1, 5 do
        collectgarbage('collect')
        fiber.sleep(0.1)
    end
end
collect()
local before = fibers()
local dropped = net_box.connect(uri, {reconnect_after = 0.05, wait_connected = false})
wait_for(function() return dropped.state == 'error_reconnect' end)
p('dropped: reconnecting fibers', fibers() - before)
dropped = nil
collect()
p('dropped: collected fibers', fibers() - before)
os.exit(0)
