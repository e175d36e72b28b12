-- index:count over net.box: a CALL of the index's count method with the key and
-- the options (iterator), as 2.6 sends it; compared with Tarantool 2.6 (test_netbox.py).
box.cfg{listen = os.getenv('LISTEN') or '127.0.0.1:0', work_dir = os.getenv('WORK') or '.', log_level = 1}
box.schema.user.grant('guest', 'super', nil, nil, {if_not_exists = true})
local s = box.schema.space.create('test')
s:create_index('pk')
s:create_index('by_group', {parts = {2, 'unsigned'}, unique = false})
for i = 1, 5 do s:replace{i, i % 2} end
local fiber = require('fiber')
local f = fiber.create(function()
    local c = require('net.box').connect(box.info.listen)
    local pk, by_group = c.space.test.index.pk, c.space.test.index.by_group
    print('eq', pk:count(3), pk:count({3}), pk:count())
    print('iterator', pk:count(3, {iterator = 'GE'}), pk:count({2}, {iterator = 'LT'}), pk:count(nil, {iterator = 'ALL'}))
    print('secondary', by_group:count(1), by_group:count(0), by_group:count(1, {iterator = 'GT'}))
    local future = pk:count({4}, {is_async = true})
    print('async', future:wait_result(5))
    print('timeout', pk:count(2, {timeout = 5, iterator = 'LE'}))
    c:close()
end)
f:set_joinable(true)
print(f:join())
os.exit(0)
