-- Tuples net.box returns carry their space's field names (t.name, t:tomap()), a
-- schema reload renames them in the same space object; compared with Tarantool 2.6
-- (test_netbox.py).
box.cfg{listen = os.getenv('LISTEN') or '127.0.0.1:0', work_dir = os.getenv('WORK') or '.', log_level = 1}
box.schema.user.grant('guest', 'super', nil, nil, {if_not_exists = true})
local named = box.schema.space.create('named', {format = {{name = 'id'}, {name = 'abc', type = 'unsigned'}}})
named:create_index('pk')
named:insert{1, 1}
box.schema.space.create('plain'):create_index('pk')
box.space.plain:insert{1, 'x'}
-- A map's keys in a fixed order (table order differs between the LuaJIT builds).
local function sorted(map)
    local keys = {}
    for k, v in pairs(map) do keys[#keys + 1] = tostring(k) .. '=' .. tostring(v) end
    table.sort(keys)
    return table.concat(keys, ' ')
end
local fiber = require('fiber')
local f = fiber.create(function()
    local c = require('net.box').connect(box.info.listen)
    local s = c.space.named
    print('field', s:get{1}.id, s:get{1}.abc, s:get{1}.nope, s:get{1}[2])
    print('get', sorted(s:get{1}:tomap()), sorted(s:get{1}:tomap({names_only = true})))
    print('writes', sorted(s:insert{2, 3}:tomap()), sorted(s:replace{2, 14}:tomap()),
          sorted(s:update(1, {{'+', 2, 10}}):tomap()), sorted(s:delete{2}:tomap()))
    print('reads', sorted(s:select()[1]:tomap()), sorted(s.index.pk:min():tomap()), sorted(s.index.pk:max():tomap()))
    print('longer', sorted(s:insert{3, 4, 'extra'}:tomap()))
    print('plain', sorted(c.space.plain:get{1}:tomap()), c.space.plain:get{1}.id)
    print('call', type(c:call('box.space.named:get', {{1}})))
    named:format({{name = 'id2'}, {name = 'abc2'}})
    print('stale', sorted(s:get{1}:tomap()))
    c:reload_schema()
    print('reloaded', c.space.named == s, sorted(s:get{1}:tomap()), s:get{1}.id2, s:get{1}.id)
    c:close()
end)
f:set_joinable(true)
print(f:join())
os.exit(0)
