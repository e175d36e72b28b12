"""Functional indexes (`create_index(name, {func = 'f', parts = ...})`: keys a
persistent, deterministic, sandboxed Lua function computes from each tuple),
compared with Tarantool 2.6 line for line.

The first script goes through 2.6's own functional index test (engine/func_index):
the definition checks (primary key, HASH, vinyl, function constraints, part
numbering, JSON paths), what a function may return (one key, an array of keys
with `is_multikey`, nothing for a tuple left out) and the errors for what it may
not, a failing function's error chain, unique and non-unique, multikey and
multipart indexes through inserts, replaces, updates and deletes (from Lua and
over IPROTO through net.box), collations, an index added on data and by `alter`,
the index object's `func` field and the `_index`/`_func_index` rows, a function
that is in use refused a drop, and a transaction whose `_func_index` row names
another function rolled back whole. The second script restarts on the same data
and reads and writes through the indexes again.
"""
from conftest import LUA_SHOW_SORTED, LUA_TRY, scripts_in_turn_on_both

SHOW = LUA_SHOW_SORTED + LUA_TRY + r"""
local function opts(sfunc, multikey)
    return {body = sfunc, is_deterministic = true, is_sandboxed = true, opts = multikey and {is_multikey = true} or nil}
end
"""

FIRST = r"""
local sock = os.getenv('WORK') .. '/iproto.sock'
box.cfg{work_dir = os.getenv('WORK'), listen = 'unix/:' .. sock, log_level = 1}
box.schema.user.grant('guest', 'read,write,execute', 'universe')
""" + SHOW + r"""
local s = box.schema.space.create('withdata')
local sum = [[function(tuple) return {tuple[1] + tuple[2]} end]]
local two = [[function(tuple) return {tuple[1] + tuple[2], 2 * tuple[1] + tuple[2]} end]]
box.schema.func.create('s_nonpersistent')
box.schema.func.create('s_ivaliddef1', {body = sum, is_deterministic = false, is_sandboxed = true})
box.schema.func.create('s_ivaliddef2', {body = sum, is_deterministic = true, is_sandboxed = false})
box.schema.func.create('s', opts(sum))
box.schema.func.create('ss', opts(two))

try('primary', function() return s:create_index('idx', {func = box.func.s.id, parts = {{1, 'unsigned'}}}) end)
s:create_index('pk')
try('no such fid', function() return s:create_index('idx', {func = 6666, parts = {{1, 'unsigned'}}}) end)
if s.index.idx ~= nil then s.index.idx:drop() end
try('no such name', function() return s:create_index('idx', {func = 'nosuch', parts = {{1, 'unsigned'}}}) end)
for _, name in ipairs({'s_nonpersistent', 's_ivaliddef1', 's_ivaliddef2'}) do
    try(name, function() return s:create_index('idx', {func = box.func[name].id, parts = {{1, 'unsigned'}}}) end)
end
try('gap', function() return s:create_index('idx', {func = 'ss', parts = {{1, 'unsigned'}, {3, 'unsigned'}}}) end)
try('not from 1', function() return s:create_index('idx', {func = 'ss', parts = {{2, 'unsigned'}, {3, 'unsigned'}}}) end)
try('json', function() return s:create_index('idx', {func = 'ss', parts = {{'[1]data', 'unsigned'}}}) end)
try('hash', function() return s:create_index('idx', {type = 'hash', func = 's', parts = {{1, 'unsigned'}}}) end)
try('bitset', function() return s:create_index('idx', {type = 'bitset', unique = false, func = 's', parts = {{1, 'unsigned'}}}) end)
local v = box.schema.space.create('vin', {engine = 'vinyl'})
v:create_index('pk')
try('vinyl', function() return v:create_index('idx', {func = 's', parts = {{1, 'unsigned'}}}) end)
v:drop()

local idx = s:create_index('idx', {unique = true, func = box.func.s.id, parts = {{1, 'unsigned'}}})
try('func field', function() return idx.func.fid == box.func.s.id, idx.func.name, idx.parts end)
try('rows', function() return box.space._index:get{s.id, idx.id}, box.space._func_index:get{s.id, idx.id} == nil end)
try('drop used', function() return box.schema.func.drop('s') end)
try('func_index alter', function() return box.space._func_index:replace{s.id, idx.id, box.func.s.id} end)
idx:drop()
try('func_index rows after drop', function() return box.space._func_index:select{s.id} end)
try('drop unused', function() return box.schema.func.drop('s') end)

local bad = {
    {'invalidreturn0', [[function(tuple) return "hello" end]], false, {{1, 'unsigned'}}},
    {'invalidreturn1', [[function(tuple) return {"hello"} end]], false, {{1, 'unsigned'}}},
    {'invalidreturn2', [[function(tuple) return {"hello", "world"}, {1, 2} end]], true, {{1, 'unsigned'}, {2, 'unsigned'}}},
    {'invalidreturn3', [[function(tuple) return {{"hello", "world"}, {1, 2}} end]], true, {{1, 'unsigned'}, {2, 'unsigned'}}},
    {'invalidreturn4', [[function(tuple) return {{"hello", "world"}, {1, 2}} end]], false, {{1, 'unsigned'}, {2, 'unsigned'}}},
    {'invalidreturn5', [[function(tuple) return "hello" end]], true, {{1, 'unsigned'}, {2, 'unsigned'}}},
    {'nothing', [[function(tuple) end]], false, {{1, 'unsigned'}}},
    {'nilkey', [[function(tuple) return {nil} end]], false, {{1, 'integer', is_nullable = true}}},
    {'runtimeerror', [[function(tuple) local json = require('json') return json.encode(tuple) end]], false, {{1, 'string'}}},
    {'raises', [[function(tuple) error('no key for ' .. tuple[1]) end]], false, {{1, 'string'}}},
}
for _, case in ipairs(bad) do
    box.schema.func.create(case[1], opts(case[2], case[3]))
    local i = s:create_index('idx', {unique = case[4][1].is_nullable == nil, func = case[1], parts = case[4]})
    try(case[1], function() return s:insert({1}) end)
    try(case[1] .. ' len', function() return s:len(), i:len() end)
    i:drop()
end
local i = s:create_index('idx', {func = 'raises', parts = {{1, 'string'}}})
local ok, e = pcall(s.insert, s, {7})
print('chain', e.code, e.type, e.message, e.prev.type, e.prev.message, e.prev.prev)
i:drop()
for _, v in pairs(box.func) do if v.is_persistent then box.schema.func.drop(v.name) end end
s:drop()

s = box.schema.space.create('withdata')
box.schema.func.create('extr', opts(sum))
s:create_index('pk')
s:insert({1, 2})
idx = s:create_index('idx', {unique = true, func = 'extr', parts = {{1, 'integer'}}})
try('dup', function() return s:insert({2, 1}) end)
try('get', function() return idx:get(3) end)
try('delete by func key', function() return idx:delete(3) end)
try('select', function() return s:select() end)
try('insert', function() return s:insert({2, 1}), idx:get(3), idx:get{3} end)
try('update moves', function() return s:update({2}, {{'=', 2, 10}}), idx:get(3), idx:get(12) end)
try('update by func key', function() return idx:update(12, {{'+', 2, 1}}), idx:select() end)
try('replace', function() return s:replace({2, 20}), idx:select() end)
try('upsert', function() return s:upsert({5, 5}, {{'+', 2, 1}}), s:upsert({5, 5}, {{'+', 2, 1}}), idx:select() end)
try('partial key', function() return idx:select({}, {iterator = 'GE'}), idx:select(10, {iterator = 'LT'}) end)
try('wrong key type', function() return idx:get('x') end)
try('count', function() return idx:len(), idx:count(), idx:count(22, {iterator = 'LE'}), idx:min(), idx:max() end)
s:drop()
box.schema.func.drop('extr')

s = box.schema.space.create('withdata')
box.schema.func.create('extr', opts([[function(tuple) return {{tuple[1] + tuple[2]}, {tuple[1] + tuple[2]}, {tuple[1]}} end]], true))
s:create_index('pk')
idx = s:create_index('idx', {unique = true, func = box.func.extr.id, parts = {{1, 'integer'}}})
try('mk insert', function() return s:insert({1, 2}), s:insert({3, 5}), s:insert({5, 3}) end)
try('mk insert dup', function() return s:insert({3, 5}) end)
try('mk select', function() return idx:select(), idx:get(8), idx:get(3), idx:get(1), idx:get(5), idx:len() end)
s:drop()
box.schema.func.drop('extr')

s = box.schema.space.create('withdata')
box.schema.func.create('extr', opts([[function(tuple) return {{600 + tuple[1], 600 + tuple[2]}, {500 + tuple[1], 500 + tuple[2]}} end]], true))
s:create_index('pk')
idx = s:create_index('idx', {unique = true, func = box.func.extr.id, parts = {{1, 'integer'}, {2, 'integer'}}})
s:insert({1, 2}) s:insert({2, 1}) s:insert({3, 3})
try('mk multipart', function() return idx:select({600}, {iterator = 'GE'}), idx:get({603, 603}), idx:select({503}, {iterator = 'LE'}) end)
try('mk multipart exact', function() return idx:get({603}) end)
s:drop()
box.schema.func.drop('extr')

s = box.schema.space.create('withdata')
box.schema.func.create('extr', opts([[function(tuple) return {{500 + tuple[1]}, {500 + tuple[2]}, {500 + tuple[2]}, {500 + tuple[2]}} end]], true))
s:create_index('pk')
idx = s:create_index('idx', {unique = false, func = box.func.extr.id, parts = {{1, 'integer'}}})
s:insert({1, 2}) s:insert({2, 1})
try('non-unique', function() return idx:select({501}), idx:select({502}) end)
try('non-unique replace', function() return s:replace({1, 3}), idx:select({501}), idx:select({502}), idx:select({503}) end)
try('non-unique get', function() return idx:get(501) end)

local a = box.schema.space.create('addr')
a:create_index('name', {parts = {1, 'string'}})
a:insert({"James", "SIS Building Lambeth London UK"})
a:insert({"Sherlock", "221B Baker St Marylebone London NW1 6XE UK"})
box.schema.func.create('addr_extractor', opts([[function(tuple)
    local address = string.split(tuple[2])
    local ret = {}
    for _, v in pairs(address) do table.insert(ret, {utf8.upper(v)}) end
    return ret
end]], true))
local ai = a:create_index('addr', {unique = false, func = box.func.addr_extractor.id, parts = {{1, 'string', collation = 'unicode_ci'}}})
try('collation', function() return ai:select('uk'), ai:select('Sis'), ai.parts end)

local p = box.schema.space.create('partial')
p:create_index('pk')
box.schema.func.create('odd', opts([[function(tuple) if tuple[1] % 2 == 1 then return {{tuple[1]}} else return {} end end]], true))
local pi = p:create_index('idx', {unique = true, func = box.func.odd.id, parts = {{1, 'integer'}}})
p:insert({1}) p:insert({2}) p:insert({3}) p:insert({4})
try('partial', function() return pi:select(), pi:len() end)

local m = box.schema.space.create('multiple')
box.schema.func.create('plus', opts(sum))
box.schema.func.create('minus', opts([[function(tuple) return {tuple[1] - tuple[2]} end]]))
m:create_index('pk')
local i1 = m:create_index('s_idx', {unique = true, func = box.func.plus.id, parts = {{1, 'integer'}}})
local i2 = m:create_index('sub_idx', {unique = true, func = box.func.minus.id, parts = {{1, 'integer'}}})
m:insert({4, 1})
try('multiple', function() return i1:get(5), i2:get(3) end)
i1:drop()
try('multiple after drop', function() return i2:get(3), box.space._func_index:select{m.id} end)

local named = box.schema.space.create('named', {format = {{'id', 'unsigned'}, {'first', 'string'}, {'last', 'string'}}})
named:create_index('pk')
box.schema.func.create('full_name', opts([[function(t) return {t.first .. ' ' .. t.last} end]]))
named:insert({1, 'Ada', 'Lovelace'})
local ni = named:create_index('full', {func = 'full_name', parts = {{1, 'string'}}})
named:insert({2, 'Alan', 'Turing'})
try('names', function() return ni:select(), ni:get('Alan Turing') end)
try('not on existing data', function()
    box.schema.func.create('fails_on_1', opts([[function(t) if t[1] == 1 then error('one') end return {t[1]} end]]))
    return named:create_index('f1', {func = 'fails_on_1', parts = {{1, 'unsigned'}}})
end)
try('after failed create', function() return named.index.f1, box.space._func_index:select{named.id} end)

box.schema.func.create('extr1', opts(sum))
box.schema.func.create('extr2', opts(sum))
local function mismatch()
    local t = box.schema.space.create('tx')
    t:create_index('pk')
    box.space._index:insert({t.id, 2, 'idx', 'tree', {unique = true, func = box.func.extr1.id}, {{0, 'integer'}}})
    box.space._func_index:insert({t.id, 2, box.func.extr2.id})
end
try('atomic mismatch', box.atomic, mismatch)
try('after rollback', function() return box.space.tx, box.is_in_txn() end)
try('atomic create', box.atomic, function()
    local t = box.schema.space.create('tx')
    t:create_index('pk')
    return t:create_index('idx', {unique = true, func = 'extr1', parts = {{1, 'integer'}}}).name
end)
box.space.tx:insert({1, 2})
try('after atomic create', function() return box.space.tx.index.idx:get({3}) end)

local al = box.schema.space.create('altered')
box.schema.func.create('second_abs', opts([[function(tuple) return {tuple[2] >= 0 and tuple[2] or -tuple[2]} end]]))
al:create_index('pk')
local sk = al:create_index('sk', {parts = {{2, 'integer'}}})
al:insert({1, -3})
try('alter to func', function() return sk:alter({func = 'second_abs', parts = {{1, 'unsigned'}}}) end)
try('after alter', function() return al.index.sk:get{3}, al.index.sk.func.name, al:insert({2, 4}) end)
try('after alter dup', function() return al:insert({3, -4}) end)

local c = require('net.box').connect('unix/:' .. sock)
local rs = c.space.withdata
try('iproto insert', function() return rs:insert({3, 4}), rs:insert({4, 4}), rs.index.idx:select({504}) end)
try('iproto replace', function() return rs:replace({3, 5}), s.index.idx:select({503}), s.index.idx:select({505}) end)
try('iproto update', function() return rs:update({4}, {{'=', 2, 6}}), s.index.idx:select({506}) end)
try('iproto delete', function() return rs:delete({3}), s.index.idx:select({505}), s.index.idx:select({503}) end)
try('iproto select', function() return rs.index.idx:select({501}) end)
try('iproto error', function() return c.space.partial:insert({'x'}) end)
c:close()
box.snapshot()
os.exit(0)
"""

SECOND = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
""" + SHOW + r"""
local s = box.space.withdata
try('after restart', function() return s.index.idx:select({501}), s.index.idx:select({502}), s.index.idx:select({506}) end)
try('restart drop used', function() return box.schema.func.drop('extr') end)
try('restart replace', function() return s:replace({1, 2}), s.index.idx:select({501}), s.index.idx:select({502}), s.index.idx:select({503}) end)
try('restart others', function()
    return box.space.addr.index.addr:select('london'), box.space.partial.index.idx:select(),
        box.space.named.index.full:select(), box.space.tx.index.idx:get(3), box.space.altered.index.sk:select()
end)
try('restart func field', function() return s.index.idx.func.name, box.space.multiple.index.sub_idx:get(3) end)
s.index.idx:drop()
try('drop after index drop', function() return box.schema.func.drop('extr'), box.func.extr end)
box.space.named:drop()
try('space drop', function() return box.space._func_index:select{}, box.schema.func.drop('full_name') end)
os.exit(0)
"""


def test_functional_indexes_as_2_6(tmp_path):
    tarantool, oncebox = scripts_in_turn_on_both(tmp_path, [("first.lua", FIRST), ("second.lua", SECOND)])
    mismatches = [(t, o) for t, o in zip(tarantool, oncebox) if t != o]
    assert not mismatches, mismatches[:5]
    assert len(tarantool) == len(oncebox) == 86, (len(tarantool), len(oncebox), tarantool[-3:])
