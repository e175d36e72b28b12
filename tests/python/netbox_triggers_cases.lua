-- net.box connection triggers (on_connect, on_disconnect, on_schema_reload) and
-- {wait_connected = false}, compared with Tarantool 2.6 (test_netbox.py).
box.cfg{listen = os.getenv('LISTEN') or '127.0.0.1:0', work_dir = os.getenv('WORK') or '.', log_level = 1}
local net_box = require('net.box')
local fiber = require('fiber')
box.schema.user.grant('guest', 'super', nil, nil, {if_not_exists = true})
local log = {}
local f = fiber.create(function()
    local c = net_box.connect(box.info.listen, {wait_connected = false, reconnect_after = 0.1})
    log[#log + 1] = 'state after connect ' .. c.state
    local function on_c(conn) log[#log + 1] = 'on_connect ' .. tostring(conn == c) .. ' ' .. conn.state end
    local function on_d(conn) log[#log + 1] = 'on_disconnect ' .. tostring(conn == c) .. ' ' .. conn.state end
    local function on_s(conn) log[#log + 1] = 'on_schema_reload ' .. tostring(conn == c) end
    print('set', c:on_connect(on_c), c:on_disconnect(on_d), c:on_schema_reload(on_s))
    print('list', #c:on_connect(), c:on_connect()[1] == on_c)
    print('wait', c:wait_connected(1), c.state)
    fiber.sleep(0.1)
    print('ping', c:ping())
    c:ping()
    fiber.sleep(0.1)
    print(pcall(c.on_connect, c, 1))
    c:close()
    fiber.sleep(0.1)
    print('closed', c.state)
    local c2 = net_box.connect(box.info.listen)
    local got = {}
    c2:on_connect(function() got[#got + 1] = 'late on_connect' end)
    fiber.sleep(0.1)
    print('default wait', #got)
    c2:on_disconnect(function() got[#got + 1] = 'c2 on_disconnect' end)
    c2:close()
    print('c2', table.concat(got, ', '))
end)
f:set_joinable(true)
f:join()
for _, l in ipairs(log) do print(l) end
os.exit(0)
