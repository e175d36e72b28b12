-- oncebox's net.box {idempotent_token = ...} option against a remote oncebox (REMOTE).
box.cfg{work_dir = os.getenv('WORK')}
local json = require('json')
local net = require('net.box')
local c = net.connect(os.getenv('REMOTE'), {user = 'admin', password = 'pw'})
local out = {}
local function put(k, v) out[#out + 1] = {k, v} end
c:eval([[box.schema.space.create('acc', {if_not_exists = true}):create_index('pk', {if_not_exists = true})
         box.space.acc:replace{1, 0}
         function credit(id, n) return box.space.acc:update(id, {{'+', 2, n}}) end]])
c:reload_schema()
-- The same payment sent twice with one token (a retry after a lost reply) is applied once.
put('first', c:call('credit', {1, 10}, {idempotent_token = 'pay-1'}))
put('retry', c:call('credit', {1, 10}, {idempotent_token = 'pay-1'}))
put('other', c:call('credit', {1, 5}, {idempotent_token = 'pay-2'}))
put('plain', c:call('credit', {1, 1}))
put('replace1', c.space.acc:replace({7, 'x'}, {idempotent_token = 'r-1'}):totable())
put('replace2', c.space.acc:replace({7, 'x'}, {idempotent_token = 'r-1'}):totable())
local ok, e = pcall(c.space.acc.replace, c.space.acc, {7, 'changed'}, {idempotent_token = 'r-1'})
put('mismatch', {ok, e.code})
put('update', c.space.acc:update(1, {{'+', 2, 100}}, {idempotent_token = 'u-1'}):totable())
put('update_retry', c.space.acc:update(1, {{'+', 2, 100}}, {idempotent_token = 'u-1'}):totable())
put('eval', {c:eval('box.space.acc:update(1, {{"+", 2, 1000}}) return box.space.acc:get(1)[2]', {}, {idempotent_token = 'e-1'})})
put('eval_retry', {c:eval('box.space.acc:update(1, {{"+", 2, 1000}}) return box.space.acc:get(1)[2]', {}, {idempotent_token = 'e-1'})})
put('final', c.space.acc:get(1):totable())
print(json.encode(out))
