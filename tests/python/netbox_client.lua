-- Tarantool 2.6's own net.box as a client of the server at arg[1] (host:port).
-- Prints "ok" and exits 0 when every check holds; exits 1 with the failing check.
local net = require('net.box')
local uri = arg[1]
local password = arg[2]

local function check(cond, what)
    -- NB_TRACE=1 lists every check as it runs.
    if os.getenv('NB_TRACE') then io.stderr:write('check: ' .. what .. '\n') end
    if not cond then
        io.stderr:write('FAILED: ' .. what .. '\n')
        os.exit(1)
    end
end

-- Guest: connects, loads the schema it may see, pings.
local guest = net.connect(uri)
check(guest:is_connected(), 'guest connects: ' .. tostring(guest.error))
check(guest:ping(), 'guest ping')
check(guest.space._vspace ~= nil, 'guest sees _vspace')
check(guest.space._space == nil, 'guest does not see _space')
local ok, err = pcall(function() return guest:eval('return 1') end)
check(not ok and err.code == 42, 'guest eval is denied: ' .. tostring(err))
guest:close()

-- Bad password: the connection goes to the error state with 2.6's message.
local bad = net.connect(uri, {user = 'admin', password = 'nope'})
check(not bad:is_connected(), 'bad password refused')
check(tostring(bad.error):find("Incorrect password supplied for user 'admin'"), 'bad password message: ' .. tostring(bad.error))

-- Admin: DDL through the system spaces, then CRUD by name.
local c = net.connect(uri, {user = 'admin', password = password})
check(c:is_connected(), 'admin connects: ' .. tostring(c.error))
local EMPTY_MAP = setmetatable({}, {__serialize = 'map'})
c.space._space:insert{512, 1, 'tester', 'memtx', 0, EMPTY_MAP, {
    {name = 'id', type = 'unsigned'}, {name = 'name', type = 'string'},
    {name = 'age', type = 'unsigned', is_nullable = true}}}
c.space._index:insert{512, 0, 'primary', 'tree', {unique = true}, {{0, 'unsigned'}}}
c.space._index:insert{512, 1, 'by_name', 'tree', {unique = false}, {{field = 1, type = 'string', collation = 2}}}
-- The schema version moved: the next request reloads the schema.
check(c:ping(), 'ping after DDL')
local deadline = os.time() + 5
while c.space.tester == nil and os.time() < deadline do require('fiber').sleep(0.01) c:ping() end
local t = c.space.tester
check(t ~= nil, 'net.box sees the new space')
check(t.index.by_name ~= nil, 'net.box sees the secondary index')

check(t:insert{1, 'Alice', 30}[2] == 'Alice', 'insert')
check(t:replace{2, 'bob'}[1] == 2, 'replace')
ok, err = pcall(t.insert, t, {1, 'dup'})
check(not ok and err.code == 3, 'duplicate insert: ' .. tostring(err))
check(err.message == "Duplicate key exists in unique index 'primary' in space 'tester'", 'duplicate message')
check(t:get(1)[3] == 30, 'get')
-- count() is a CALL of box.space.tester.index.primary:count; eval and call run Lua.
check(t.index.primary:count() == 2, 'count: ' .. tostring(t.index.primary:count()))
check(t.index.by_name:count('ALICE') == 1, 'index count')
check(c:eval('return 1 + ...', {2}) == 3, 'eval')
c:eval('function double(x) return x * 2, box.space.tester:get{1} end')
local d, row = c:call('double', {21})
check(d == 42 and row[2] == 'Alice', 'call returns values and tuples')
check(t.index.by_name:select('ALICE')[1][1] == 1, 'collated secondary select')
check(#t:select({}, {iterator = 'GE'}) == 2, 'select all GE')
check(#t:select({}, {limit = 1}) == 1, 'limit')
check(t:select({2}, {iterator = 'LT'})[1][1] == 1, 'LT')
check(t.index.primary:min()[1] == 1 and t.index.primary:max()[1] == 2, 'min/max')
-- net.box sends field names with index_base 1.
check(t:update(1, {{'+', 'age', 5}, {'=', 'name', 'Alicia'}})[3] == 35, 'update by field name')
check(t:update(1, {{'-', 3, 1}})[3] == 34, 'update by number')
check(t:update(99, {{'+', 3, 1}}) == nil, 'update of a missing key')
t:upsert({3, 'Carol', 1}, {{'+', 3, 1}})
t:upsert({3, 'Carol', 1}, {{'+', 3, 1}})
check(t:get(3)[3] == 2, 'upsert')
check(t:delete(3)[1] == 3, 'delete')
check(t:delete(3) == nil, 'delete missing')
ok, err = pcall(t.insert, t, {'x', 'y'})
check(not ok and err.code == 23, 'field type error: ' .. tostring(err))
ok, err = pcall(function() return c:call('no_such_function') end)
check(not ok and err.code == 33, 'unknown function: ' .. tostring(err))
ok, err = pcall(function() return c.space._vspace:insert{1} end)
check(not ok and err.code == 113, 'view is read-only: ' .. tostring(err))

-- More of call and eval: several values, tuples, nothing; errors keep their code and type.
c:eval('function many(...) return ... end')
local a, b2, c3 = c:call('many', {1, 'two', {3}})
check(a == 1 and b2 == 'two' and c3[1] == 3, 'call returns several values')
check(select('#', c:call('many')) == 0, 'call returns nothing')
check(c:eval('return box.space.tester:get{1}')[2] == 'Alicia', 'eval returns a tuple')
check(c:call('box.space.tester:count') == 2, 'call of a space method')
ok, err = pcall(c.eval, c, "box.error{code = 4242, reason = 'custom'}")
check(not ok and err.code == 4242 and err.message == 'custom', 'custom error: ' .. tostring(err))
ok, err = pcall(c.eval, c, "error('boom')")
check(not ok and err.type == 'LuajitError' and err.message == 'eval:1: boom', 'Lua error: ' .. tostring(err))
ok, err = pcall(c.eval, c, "box.error(box.error.NO_SUCH_USER, 'who')")
check(not ok and err.type == 'ClientError' and err.message == "User 'who' is not found", 'error type: ' .. tostring(err))
check(c:ping(), 'usable after errors')

-- Asynchronous requests: several in flight on one connection, each answered with its own result.
local futures = {}
for i = 1, 50 do futures[i] = c:call('many', {i, tostring(i)}, {is_async = true}) end
for i = 1, 50 do
    local res = futures[i]:wait_result(5)
    check(res ~= nil and res[1] == i and res[2] == tostring(i), 'async call ' .. i)
end
local f = c.space.tester:select({}, {is_async = true})
check(#f:wait_result(5) == 2, 'async select')

-- close(), then requests fail; a new connection (wait_connected) sees the same data.
c:close()
check(not c:is_connected(), 'closed')
ok, err = pcall(c.ping, c)
check(not ok or err == false, 'ping after close fails')
local c2 = net.connect(uri, {user = 'admin', password = password, wait_connected = false})
check(c2:wait_connected(5), 'wait_connected: ' .. tostring(c2.error))
check(c2.space.tester:get(1)[2] == 'Alicia', 'a new connection sees the data')
check(c2.space.tester.index.by_name ~= nil, 'a new connection loads the schema')
c2:close()

-- The socket drops under net.box: with reconnect_after it reconnects, authenticates and
-- loads the schema again. The drop is made by a proxy in this script.
local socket = require('socket')
local fiber = require('fiber')
local host, port = uri:match('^(.+):(%d+)$')
local open = {}
local accepted = 0
local proxy = socket.tcp_server('127.0.0.1', 0, function(client)
    accepted = accepted + 1
    local up = socket.tcp_connect(host, tonumber(port))
    if up == nil then client:close() return end
    table.insert(open, client)
    table.insert(open, up)
    local function pump(from, to)
        pcall(function()
            while from:readable() do
                local data = from:sysread(65536)
                if data == nil or data == '' or to:write(data) == nil then break end
            end
        end)
        pcall(from.shutdown, from, socket.SHUT_RDWR)
        pcall(to.shutdown, to, socket.SHUT_RDWR)
    end
    local done = fiber.channel(1)
    fiber.create(function() pump(up, client) done:put(true) end)
    pump(client, up)
    done:get()
    up:close()
end)
local proxy_port = proxy:name().port
local r = net.connect('127.0.0.1:' .. proxy_port, {user = 'admin', password = password, reconnect_after = 0.05})
check(r:is_connected(), 'connects through the proxy: ' .. tostring(r.error))
check(r.space.tester:get(2)[2] == 'bob', 'works through the proxy')
for round = 1, 2 do
    local before = accepted
    for _, s in ipairs(open) do pcall(s.shutdown, s, socket.SHUT_RDWR) end
    open = {}
    deadline = fiber.clock() + 10
    while not (accepted > before and r:is_connected()) and fiber.clock() < deadline do fiber.sleep(0.01) end
    check(accepted > before, 'net.box reconnected (round ' .. round .. ')')
    check(r:wait_connected(5), 'connected again (round ' .. round .. '): ' .. tostring(r.error))
    check(r:eval('return box.session.user()') == 'admin', 'authenticated again (round ' .. round .. ')')
    check(r.space.tester.index.by_name:select('bob')[1][1] == 2, 'usable again (round ' .. round .. ')')
end
r:close()
proxy:close()
print('ok')
os.exit(0)
