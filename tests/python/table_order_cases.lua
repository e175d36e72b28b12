-- The order Lua tables iterate in (pairs, next, and the YAML, JSON and msgpack
-- maps made from them), compared with Tarantool 2.6 (test_table_order.py): a
-- string key's place in a table follows from a hash of its bytes there, with no
-- per-process seed, and from how the table was made and grew.
box.cfg{work_dir = os.getenv('WORK') or '.', log_level = 1, listen = 'unix/:' .. (os.getenv('WORK') or '.') .. '/order.sock'}
box.schema.user.grant('guest', 'super', nil, nil, {if_not_exists = true})
local json, yaml, msgpack, digest = require('json'), require('yaml'), require('msgpack'), require('digest')

local function keys(t)
    local r = {}
    local k = next(t)
    while k ~= nil do r[#r + 1] = tostring(k) k = next(t, k) end
    return table.concat(r, ',')
end
local function hex(s) return digest.base64_encode(s) end

-- Constructors, and tables grown key by key.
print(keys({name = 'a', type = 'b', collation = 1}))
print(keys({xx = 10, yy = 15}))
print(keys({k = 'v1', alpha = 1, beta = 2, gamma = 3, delta = 4, epsilon = 5}))
local grown = {}
for i = 1, 60 do grown['key' .. i] = i end
print(keys(grown))
for i = 1, 60, 3 do grown['key' .. i] = nil end
for i = 61, 80 do grown['k' .. i] = i end
print(keys(grown))
-- Short keys of bytes over 0x7f (2.6 hashes them as signed chars).
local short, words = {}, {'é', 'ü', 'ε', '日本', 'я', 'ß', 'x', '\xff', '\x80\x81', 'id', 'status'}
for i, w in ipairs(words) do short[w] = i end
local order = {}
for _, i in pairs(short) do order[#order + 1] = i end
print(table.concat(order, ','))
print(keys({1, 2, 3, [20] = 1, x = 1, [1.5] = 2, [true] = 3, [-1] = 4}))
local sparse = {} sparse[1] = 1 sparse[20] = 1
print(keys(sparse), keys({[1] = 1, [20] = 1}))

-- Encoders walk the same order.
print(json.encode({b = 1, a = 2, c = {z = 1, y = 2, x = {3, 4}}, [5] = 'five'}))
print(yaml.encode({host = 'localhost', port = 3301, user = 'guest', opts = {timeout = 1, reconnect_after = 0.1}}))
print(hex(msgpack.encode({id = 1, status = 'new', payload = {a = 1, b = 2}})))
-- Decoders make their tables as 2.6's: msgpack.decode sized for the members,
-- a tuple's fields grown key by key (2.6 reads them through msgpackffi).
local map_1_20 = msgpack.encode(sparse)
print(hex(map_1_20), keys((msgpack.decode(map_1_20))), keys(json.decode('{"b":1,"a":2,"zz":3,"1":4}')))
local t = box.tuple.new(7, sparse)
print(hex(msgpack.encode(t)), keys(t[2]), keys(t:totable()[2]), keys(select(2, t:unpack())))

-- box.tuple.new of one table (and space:frommap) makes a sparse field an array
-- with nils; of several values, a map.
print(hex(msgpack.encode(box.tuple.new({{[1] = 1, [20] = 1}}))))
print(hex(msgpack.encode(box.tuple.new(1, {[1] = 1, [20] = 1}))))
local s = box.schema.space.create('t', {format = {{'id', 'unsigned'}, {'m', 'any'}, {'name', 'string', is_nullable = true}}})
s:create_index('pk', {sequence = true})
s:create_index('sk', {parts = {{3, 'string', collation = 'unicode_ci', is_nullable = true}}, unique = false})
print(hex(msgpack.encode((s:frommap({id = 1, m = {[1] = 1, [20] = 1}})))))
s:create_index('jk', {parts = {{2, 'unsigned', path = 'a.b'}}, unique = false})

-- Schema objects: an index's fields and its parts', locally and through net.box.
for _, name in ipairs({'pk', 'sk', 'jk'}) do
    local ix = s.index[name]
    local parts = {}
    for i, p in ipairs(ix.parts) do parts[i] = keys(p) end
    print(name, keys(ix), table.concat(parts, ';'))
end
print(yaml.encode(s.index.sk.parts))
local c = require('net.box').connect('unix/:' .. (os.getenv('WORK') or '.') .. '/order.sock')
for _, name in ipairs({'pk', 'sk'}) do
    local ix = c.space.t.index[name]
    local parts = {}
    for i, p in ipairs(ix.parts) do parts[i] = keys(p) end
    print('remote', name, table.concat(parts, ';'))
end
function return_sparse() local r = {} r[1] = 1 r[20] = 1 return r end
local r = c:call_16('return_sparse')
print(hex(msgpack.encode(r[1])), keys(r[1][1]), yaml.encode(r))
c:close()

-- What the console prints most: box.info, box.cfg, box.stat and friends (their keys;
-- the values are each server's own).
print('info', keys(box.info()))
print('memory', keys(box.info.memory()), 'gc', keys(box.info.gc()), 'replica', keys(box.info.replication[1]))
print('cfg', keys(box.cfg))
print('stat', keys(box.stat()), keys(box.stat().SELECT))
print('net', keys(box.stat.net()), keys(box.stat.net().CONNECTIONS))
print('slab', keys(box.slab.info()), 'runtime', keys(box.runtime.info()))
local fiber = require('fiber')
local me = fiber.info()[fiber.id()]
print('fiber', keys(me), keys(me.memory), keys(fiber.info({bt = false})[fiber.id()]),
      getmetatable(fiber.info()).__serialize)
os.exit(0)
