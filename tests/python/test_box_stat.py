"""box.stat(), compared with real Tarantool 2.6: the keys and their
{total, rps} shape, what each Lua operation adds (insert, replace, select,
get, update, delete, upsert, a failing insert as an ERROR, operations of a
transaction, rolled back or not), what IPROTO requests add (CALL, EVAL,
SELECT, REPLACE, INSERT, errors), rates over the last seconds, and
box.stat.reset(); box.stat.net(): its keys and shape, a connection counted
in total and current until closed, requests and bytes both ways, rates.
"""
from conftest import same_output_on_both

SCRIPT = r"""
box.cfg{listen = os.getenv('LISTEN')}
local function show(t) local ks = {} for k, v in pairs(t) do ks[#ks+1] = k .. '=' .. (type(v) == 'table' and ('{' .. show(v) .. '}') or tostring(v)) end table.sort(ks) return table.concat(ks, ' ') end
local first = box.stat()
local names = {} for k, v in pairs(first) do names[#names+1] = k .. ':' .. type(v.total) .. ':' .. type(v.rps) end table.sort(names) print(table.concat(names, ' '))

local s = box.schema.space.create('t') s:create_index('pk')
local before = box.stat()
s:insert{1} s:insert{2} s:replace{3} s:select{} s:get{1} s:update({1}, {{'=', 2, 'x'}}) s:delete{2} s:upsert({5}, {{'+', 2, 1}})
pcall(s.insert, s, {1})
box.begin() s:replace{9} box.commit()
box.begin() s:replace{10} box.rollback()
local after = box.stat()
local d = {} for k, v in pairs(after) do d[#d+1] = k .. '+' .. (v.total - before[k].total) end table.sort(d) print(table.concat(d, ' '))
print(type(box.stat.reset))
box.schema.user.grant('guest', 'execute,read,write', 'universe', nil, {if_not_exists = true})
local c = require('net.box').connect(os.getenv('LISTEN'))
rawset(_G, 'f', function() return 1 end)
local b2 = box.stat()
c:call('f') c:eval('return 1') c.space.t:select{} c.space.t:replace{20} pcall(c.call, c, 'nosuch') pcall(c.space.t.insert, c.space.t, {20})
local a2 = box.stat()
-- (ERROR left out here: 2.6 also counts the errors this same process's net.box raises)
local d = {} for k, v in pairs(a2) do if k ~= 'ERROR' then d[#d+1] = k .. '+' .. (v.total - b2[k].total) end end table.sort(d) print(table.concat(d, ' '))
print(a2.ERROR.total - b2.ERROR.total >= 2)
-- rates: operations a second over the last five seconds
for _ = 1, 500 do box.space.t:get{1} end
require('fiber').sleep(1.5)
print(box.stat().SELECT.rps > 0, box.stat().UPSERT.rps)
box.stat.reset()
print(box.stat().INSERT.total, box.stat().SELECT.total)
os.exit(0)
"""


def test_box_stat_counts_operations_as_2_6_does(tmp_path):
    same_output_on_both(tmp_path, "stat.lua", SCRIPT, 7)


NET = r"""
box.cfg{listen = os.getenv('LISTEN')}
box.schema.user.grant('guest', 'execute', 'universe', nil, {if_not_exists = true})
local function keys(t) local ks = {} for k, v in pairs(t) do local sub = {} for kk, vv in pairs(v) do sub[#sub+1] = kk .. ':' .. type(vv) end table.sort(sub) ks[#ks+1] = k .. '{' .. table.concat(sub, ',') .. '}' end table.sort(ks) return table.concat(ks, ' ') end
print(keys(box.stat.net()))
local n0 = box.stat.net()
local c = require('net.box').connect(os.getenv('LISTEN'))
for _ = 1, 20 do c:eval('return 1') end
local n1 = box.stat.net()
print(n1.CONNECTIONS.total - n0.CONNECTIONS.total, n1.CONNECTIONS.current - n0.CONNECTIONS.current)
print(n1.REQUESTS.total - n0.REQUESTS.total >= 20, n1.SENT.total > n0.SENT.total, n1.RECEIVED.total > n0.RECEIVED.total)
c:close()
require('fiber').sleep(0.2)
local n2 = box.stat.net()
print(n2.CONNECTIONS.current - n0.CONNECTIONS.current, n2.REQUESTS.current)
require('fiber').sleep(1.2)
print(box.stat.net().REQUESTS.rps > 0, box.stat.net().RECEIVED.rps > 0)
os.exit(0)
"""


def test_box_stat_net_counts_connections_requests_and_bytes(tmp_path):
    same_output_on_both(tmp_path, "stat_net.lua", NET, 5)
