-- Tarantool 2.6's own net.box as a client of the server at arg[1] (host:port).
-- Prints "ok" and exits 0 when every check holds; exits 1 with the failing check.
local net = require('net.box')
local uri = arg[1]
local password = arg[2]

local function check(cond, what)
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
c:close()
print('ok')
os.exit(0)
