-- box.session.push messages reach a net.box caller as they come (on_push, and
-- a future's pairs), compared with Tarantool 2.6 (test_netbox.py).
box.cfg{listen = os.getenv('LISTEN') or '127.0.0.1:0', work_dir = os.getenv('WORK') or '.', log_level = 1}
box.schema.user.grant('guest', 'super', nil, nil, {if_not_exists = true})
local fiber = require('fiber')
-- The function waits until the caller has seen its first push: only a push
-- delivered as it comes lets it finish.
seen = fiber.channel(1)
function streamer(n)
    for i = 1, n do
        box.session.push({i, 'msg'})
        if i == 1 and not seen:get(2) then return 'first push not seen' end
    end
    return 'done'
end
local f = fiber.create(function()
    local c = require('net.box').connect(box.info.listen)
    local got = {}
    local r = c:call('streamer', {3}, {on_push = function(ctx, msg)
        got[#got + 1] = ctx .. ':' .. require('json').encode(msg)
        if #got == 1 then seen:put(true) end
    end, on_push_ctx = 'ctx', timeout = 5})
    print('on_push', r, table.concat(got, ' '))
    local fut = c:call('streamer', {2}, {is_async = true})
    local items = {}
    for i, msg in fut:pairs(5) do
        items[#items + 1] = i .. '=' .. require('json').encode(msg)
        if i == 1 then seen:put(true) end
    end
    print('pairs', table.concat(items, ' '))
    print('result', fut:result()[1])
    -- a time-out while pushes come
    function slow() box.session.push('p') fiber.sleep(0.5) return 'late' end
    local got2 = {}
    print('timeout', pcall(c.call, c, 'slow', {}, {timeout = 0.1, on_push = function(_, m) got2[#got2 + 1] = m end}))
    print('pushes before timeout', table.concat(got2, ','))
    fiber.sleep(0.6) -- (oncebox's net.box sends a connection's requests one at a time)
    local fut2 = c:call('slow', {}, {is_async = true})
    local t = {}
    for i, m in fut2:pairs(0.1) do t[#t + 1] = tostring(i) .. '=' .. tostring(m) end
    print('pairs timeout', table.concat(t, ' '))
    fiber.sleep(0.6)
    print('ping', c:ping())
end)
f:set_joinable(true)
print(f:join())
os.exit(0)
