"""Transaction triggers and smaller schema helpers, compared with real Tarantool
2.6 line for line.

box.on_commit / box.on_rollback: set, replaced, removed and listed with the
usual trigger arguments, refused outside a transaction and with bad arguments;
run in the order set, once the transaction commits or rolls back (box.commit,
box.rollback, box.atomic, a transaction a yield aborted), each given an
iterator over the transaction's statements (number, old tuple, new tuple,
space id), without the statements a savepoint rollback undid.

box.schema.user.password/enable/disable, box.schema.space.rename/format,
box.schema.func.call/reload, box.priv, os.setenv, tuple:slice and the tuple
methods as box.tuple functions, the key_def methods as module functions.
"""
from conftest import LUA_PRINT_COUNTED, run_script_on_both, same_output_on_both

TXN_TRIGGERS = LUA_PRINT_COUNTED + r"""
box.cfg{listen = os.getenv('LISTEN')}
io.stdout:setvbuf('no')
local s = box.schema.space.create('t') s:create_index('pk')
local u = box.schema.space.create('u') u:create_index('pk')
local json = require('json')
local function dump(tag) return function(it)
    local rows = {}
    for i, old, new, sid in it() do
        rows[#rows + 1] = {i, old and old:totable() or box.NULL, new and new:totable() or box.NULL,
                           sid == s.id and 't' or sid == u.id and 'u' or sid}
    end
    p(tag, json.encode(rows))
end end
box.begin()
s:insert{1, 'a'}
local f1 = dump('commit1')
p(box.on_commit(f1) == f1)
box.on_commit(dump('commit2'))
box.on_rollback(dump('never rolled back'))
u:replace{5}
s:replace{1, 'b'}
s:delete{1}
p('triggers', #box.on_commit(), #box.on_rollback())
box.commit()
p('after commit', box.is_in_txn())
box.begin() s:insert{2} box.on_rollback(dump('rollback')) box.on_commit(dump('never committed')) box.rollback()
p(s:get{2})
p(pcall(box.on_commit, function() end))
p(pcall(box.on_rollback, function() end))
box.begin() p(pcall(box.on_commit, 5)) p(pcall(box.on_commit, nil, function() end)) box.rollback()
box.begin()
local a, b = dump('A'), dump('B')
box.on_commit(a) box.on_commit(b, a) p('replaced', #box.on_commit())
box.on_commit(nil, b) p('removed', #box.on_commit())
s:insert{3}
box.commit()
box.begin() s:insert{4} local sp = box.savepoint() s:insert{5} box.on_commit(dump('savepoint')) box.rollback_to_savepoint(sp) box.commit()
box.begin() box.on_commit(dump('empty')) box.commit()
box.atomic(function() s:insert{7} box.on_commit(dump('atomic')) end)
p(pcall(box.atomic, function() s:insert{8} box.on_rollback(dump('atomic failed')) error('no') end))
box.begin() box.on_commit(function() p('first set') end) box.on_commit(function() p('second set') end) box.commit()
box.begin() s:insert{9} box.on_rollback(dump('yield aborted')) box.on_commit(dump('never after a yield'))
require('fiber').sleep(0)
p('after the yield')
p(pcall(box.commit))
p(s:get{9}, s:count())
os.exit(0)
"""


def test_on_commit_and_on_rollback(tmp_path):
    lines = same_output_on_both(tmp_path, "txn_triggers.lua", TXN_TRIGGERS, 24)
    # The first trigger saw the four statements, in order, with their spaces.
    assert lines[2] == (
        '2: commit1 | [[1,null,[1,"a"],"t"],[2,null,[5],"u"],[3,[1,"a"],[1,"b"],"t"],[4,[1,"b"],null,"t"]]'
    )


REQUEST_TRIGGERS = r"""
box.cfg{listen = os.getenv('LISTEN')}
local s = box.schema.space.create('t') s:create_index('pk')
box.schema.user.grant('guest', 'read,write,execute', 'universe')
events = {}
function left_open(k)
    box.begin()
    s:insert{k}
    box.on_rollback(function(it)
        for i, old, new in it() do table.insert(events, 'rolled back ' .. new[1]) end
    end)
end
local net_box = require('net.box')
local c = net_box.connect(box.cfg.listen)
print(pcall(c.call, c, 'left_open', {1}))
print(table.concat(events, ','), s:get{1})
os.exit(0)
"""


def test_a_request_that_leaves_its_transaction_open_runs_on_rollback(tmp_path):
    tarantool, oncebox = run_script_on_both(tmp_path, "request_triggers.lua", REQUEST_TRIGGERS)
    assert oncebox == tarantool
    assert oncebox[-1].startswith("rolled back 1"), oncebox


SCHEMA_HELPERS = LUA_PRINT_COUNTED + r"""
box.cfg{listen = os.getenv('LISTEN')}
local ks = {} for k, v in pairs(box.priv) do ks[#ks + 1] = k .. '=' .. v end table.sort(ks) p(table.concat(ks, ' '))
p(box.schema.user.password('secret'), box.schema.user.password(''))
box.schema.user.create('u1')
p(#box.space._priv:select{box.space._user.index.name:get{'u1'}[1]})
box.schema.user.disable('u1') p(#box.space._priv:select{box.space._user.index.name:get{'u1'}[1]})
box.schema.user.disable('u1') box.schema.user.enable('u1') box.schema.user.enable('u1')
p(#box.space._priv:select{box.space._user.index.name:get{'u1'}[1]})
p(pcall(box.schema.user.enable, 'nope'))
local s = box.schema.space.create('t', {format = {{'id', 'unsigned'}}}) s:create_index('pk')
p(pcall(box.schema.space.rename, 'x', 'y'))
p(pcall(box.schema.space.rename, s.id, 5))
box.schema.space.rename(s.id, 'renamed') p(box.space.renamed ~= nil, box.space.t == nil, s.name)
local function fields(format) local out = {} for i, f in ipairs(format) do out[i] = f.name .. ':' .. f.type end return table.concat(out, ' ') end
p(fields(box.schema.space.format(s.id)))
box.schema.space.format(s.id, {{'id', 'unsigned'}, {'x', 'string'}})
p(fields(s:format()))
p(pcall(box.schema.space.format, s.id, 'bad'))
p(pcall(box.schema.space.format, 999))
box.schema.func.create('double', {language = 'LUA', body = 'function(a) return a * 2 end'})
rawset(_G, 'twice', function(a, b) return a, b end)
box.schema.func.create('twice')
p(box.schema.func.call('double', 21))
p(box.schema.func.call('twice', 1, 2))
p(pcall(box.schema.func.call, 'nope'))
p(pcall(box.schema.func.reload, 'abc'))
p(pcall(box.schema.func.reload))
p(pcall(os.setenv, 'ONCEBOX_TEST_VAR'), os.getenv('ONCEBOX_TEST_VAR'))
os.setenv('ONCEBOX_TEST_VAR', 'set') p(os.getenv('ONCEBOX_TEST_VAR'))
os.setenv('ONCEBOX_TEST_VAR', nil) p(os.getenv('ONCEBOX_TEST_VAR'))
local t = box.tuple.new{'a', 'b', 'c', 'd', 'e'}
for _, args in ipairs{{1, 3}, {-1}, {1, -1}, {0}, {5}, {6}, {3, 2}, {-6}, {0, 0}, {}, {'x'}, {1.5}, {2, 10}, {1, 2, 3}, {-2, -1}, {4, 5}, {2, -4}} do
    p(pcall(t.slice, t, unpack(args, 1, table.maxn(args))))
end
p(box.tuple.totable(t)[2], box.tuple.bsize(t), box.tuple.find(t, 'c'), box.tuple.slice(t, 3), box.tuple.unpack(t, 4))
for _, name in ipairs{'bsize', 'find', 'findall', 'next', 'pairs', 'slice', 'tomap', 'totable', 'transform', 'unpack', 'update', 'upsert'} do
    local ok, err = pcall(box.tuple[name], {1, 2})
    p(name, ok, (tostring(err):gsub('^.-: Usage', 'Usage')))
end
local kd = require('key_def')
local def = kd.new({{fieldno = 2, type = 'unsigned'}})
p(kd.totable(def)[1].type, kd.extract_key(def, {1, 5})[1], kd.compare(def, {1, 2}, {1, 3}), kd.compare_with_key(def, {1, 2}, {2}))
p(#kd.totable(kd.merge(def, kd.new({{fieldno = 1, type = 'string'}}))))
for _, name in ipairs{'extract_key', 'compare', 'compare_with_key', 'merge', 'totable'} do p(name, pcall(kd[name], {}, {1}, {2})) end
p(pcall(kd.merge, def, {}))
os.exit(0)
"""


def test_schema_helpers_tuple_and_key_def_functions(tmp_path):
    same_output_on_both(tmp_path, "schema_helpers.lua", SCHEMA_HELPERS, 59)


PERSISTENT_FUNCTIONS = LUA_PRINT_COUNTED + r"""
box.cfg{listen = os.getenv('LISTEN')}
box.schema.user.grant('guest', 'read,write,execute', 'universe')
p(pcall(box.schema.func.create, 'bad', {body = 'not lua'}))
p(pcall(box.schema.func.create, 'notfn', {body = '42'}))
p(box.schema.func.exists('bad'))
p(pcall(box.schema.func.create, 'sum', {body = 'function(a, b) return a + b end'}))
p(pcall(box.schema.func.create, 'err', {body = [[function() error('boom') end]]}))
p(pcall(box.schema.func.create, 'sb', {is_sandboxed = true,
    body = [[function() return type(box), type(string.format), type(os), type(require), type(utf8) end]]}))
p(pcall(box.schema.func.create, 'nsb', {body = [[function() return type(box), type(os) end]]}))
p(pcall(box.schema.func.create, 'multi', {body = [[function(...) return ... end]]}))
p(pcall(box.schema.func.create, 'sql', {body = 'x', language = 'SQL_EXPR'}))
p(pcall(box.schema.func.create, 'c', {body = 'x', language = 'C'}))
rawset(_G, 'sum', function() return 'the global' end)
local c = require('net.box').connect(box.cfg.listen)
p(pcall(c.call, c, 'sum', {1, 2}))
p(pcall(c.call, c, 'err'))
p(pcall(c.call, c, 'sb'))
p(pcall(c.call, c, 'nsb'))
p(pcall(c.call, c, 'multi', {1, 2, 3}))
p(pcall(box.func.sum.call, box.func.sum, {3, 4}))
p(pcall(box.func.err.call, box.func.err))
p(box.schema.func.call('sum', 5, 6))
p(pcall(box.space._func.update, box.space._func, box.func.sum.id, {{'=', 6, 'function(a, b) return a * b end'}}))
box.schema.func.drop('sum')
p(pcall(c.call, c, 'sum', {1, 2}))
box.schema.func.create('sum', {body = 'function(a, b) return a * b end'})
p(pcall(c.call, c, 'sum', {3, 4}))
c:close()
os.exit(0)
"""


def test_persistent_lua_functions(tmp_path):
    lines = same_output_on_both(tmp_path, "persistent_functions.lua", PERSISTENT_FUNCTIONS, 21)
    assert "2: true | 3" in lines, lines


SETUID_FUNC_CALL = r"""
box.cfg{log_level = 1}
""" + LUA_PRINT_COUNTED + r"""
-- A setuid persistent function called through box.func runs with its owner's
-- rights, as a CALL of it does: what it calls is checked against the owner.
box.schema.func.create('inner', {language = 'LUA', body = 'function() return "inner ran" end'})
box.schema.user.grant('guest', 'read, write', 'space', '_func')
box.schema.user.grant('guest', 'create', 'function')
box.session.su('guest')
box.schema.func.create('outer', {language = 'LUA', setuid = true,
                                 body = 'function() return box.session.euid(), box.session.uid(), box.func.inner:call() end'})
box.schema.func.create('who', {language = 'LUA', setuid = true,
                               body = 'function() return box.session.euid(), box.session.uid() end'})
box.session.su('admin')
p(pcall(box.func.outer.call, box.func.outer))
p(box.func.who:call())
p(box.session.euid(), box.session.uid())
box.schema.user.grant('guest', 'execute', 'function', 'inner')
p(pcall(box.func.outer.call, box.func.outer))
p(box.session.euid(), box.session.uid())
os.exit(0)
"""


def test_a_setuid_function_called_from_lua_runs_as_its_owner(tmp_path):
    same_output_on_both(tmp_path, "setuid.lua", SETUID_FUNC_CALL, 5)
