"""Schema and data API misuse from Lua, compared with Tarantool 2.6 line for line.

Options checked as 2.6 checks them (create_index, alter, user, role and function
creation), 2.6's index part forms (a part given as {field, type} pairs is not
nullable, whatever the format says), its messages for unknown types in formats
and parts, unknown iterator names, select's offset and limit taken as uint32,
grants checked against the object type, and the usage errors of update and
upsert. Error positions (the `file:line:` of a Lua error) are left out.
"""
from conftest import same_output_on_both

# show(label, f, ...): pcall(f, ...) as one line: label, ok, the first result's
# type and text (tables as JSON, an error's `file:line: ` prefixes left out).
LUA_SHOW = r"""
local function show(label, ...) local r = {pcall(...)} local v = r[2]
  if type(v) == 'table' then local ok, j = pcall(require('json').encode, v) v = ok and j or tostring(v) end
  local m, n = tostring(v), 1
  while n > 0 do m, n = m:gsub('^[%w/_.]+%.lua:%d+: ', '') end
  print(label, r[1], type(r[2]), m) end
"""

# Each script's start: box.cfg in its own work directory, then show().
HEADER = "\nbox.cfg{work_dir = os.getenv('WORK'), log_level = 1}\n" + LUA_SHOW

SCRIPT = HEADER + r"""local s = box.schema.space.create('t', {format = {{'id', 'unsigned'}, {'v', 'any', is_nullable = true}}})
s:create_index('pk')
s:create_index('sk', {parts = {2, 'unsigned'}, unique = false})
s:insert{1, 5}
s:insert{2, 6}
local pk, sk = s.index.pk, s.index.sk
show('sel1', pk.select, pk, 'x')
show('sel2', pk.select, pk, {1}, {iterator = 'BOGUS'})
show('sel3', pk.select, pk, {1}, {iterator = 99})
show('sel4', pk.select, pk, {1}, {limit = 'x'})
show('sel5', pk.select, pk, {1}, {offset = -1})
show('sel6', pk.select, pk, {1}, 5)
show('sel7', pk.select, pk, {1, 2})
show('sel8', sk.select, sk, {'a'})
show('sel9', pk.select, pk, nil, {iterator = 'GT', limit = 1})
show('get1', pk.get, pk)
show('get2', sk.get, sk, {5})
show('get3', pk.get, pk, {1, 2})
show('min1', pk.min, pk, 'x')
show('max1', pk.max, pk, {1, 2})
show('cnt1', pk.count, pk, {1}, {iterator = 'BOGUS'})
show('cnt2', sk.count, sk, 'x')
show('rnd1', pk.random, pk, 'x')
show('rnd2', pk.random, pk)
show('pairs1', function() return pk:pairs({1}, {iterator = 'BOGUS'}) end)
show('pairs2', function() return pk:pairs('x') end)
show('len1', s.len, s, 5)
show('count1', s.count, s, {1}, {iterator = 'LE'})
show('del1', s.delete, s, {1, 2})
show('del2', sk.delete, sk, {5})
show('ins1', s.insert, s, {'x'})
show('ins2', s.insert, s, {})
show('ins3', s.insert, s, {1, 5})
show('rep1', s.replace, s, {3, 'str'})
show('upd1', s.update, s, {2}, {{'=', 1, 9}})
show('upd2', s.update, s, {2}, {{'=', 'nofield', 9}})
show('upd3', s.update, s, {2}, {{'=', 'v', 'x'}})
show('ups1', s.upsert, s, {2}, {{'+', 2, 1}})
show('cs1', box.schema.space.create, 't')
show('cs2', box.schema.space.create, 'u', {bogus = 1})
show('cs3', box.schema.space.create, 'u', {engine = 'bogus'})
show('cs4', box.schema.space.create, 'u', {format = 5})
show('cs5', box.schema.space.create, 'u', {format = {{'a', 'bogus'}}})
show('cs6', box.schema.space.create, 5)
show('cs7', box.schema.space.create, 'u', {id = 'x'})
show('cs8', box.schema.space.create, 'u', {field_count = -1})
show('ci1', s.create_index, s, 'pk')
show('ci2', s.create_index, s, 'x', {type = 'bogus'})
show('ci3', s.create_index, s, 'x', {parts = {9, 'unsigned'}})
show('ci4', s.create_index, s, 'x', {parts = {'nofield'}})
show('ci5', s.create_index, s, 'x', {parts = {2, 'bogus'}})
show('ci6', s.create_index, s, 'x', {bogus = 1})
show('ci7', s.create_index, s, 'x', {type = 'hash', unique = false})
show('ci8', s.create_index, s, 'x', {parts = {{field = 2, type = 'unsigned', bogus = 1}}})
show('ci9', s.create_index, s, 'x', {parts = {2}, unique = 'yes'})
show('ci10', s.create_index, s, 'x', {type = 'bitset', parts = {2, 'unsigned'}, unique = true})
show('ci11', s.create_index, s, 5)
show('alt1', pk.alter, pk, {bogus = 1})
show('alt2', s.alter, s, {bogus = 1})
show('fmt1', s.format, s, {{'a'}})
show('fmt2', s.format, s, {{name = 'id', type = 'string'}})
show('fmt3', s.format, s, 5)
show('drop1', function() return box.space.nonexist:drop() end)
show('grant1', box.schema.user.grant, 'nouser', 'read', 'space', 't')
show('grant2', box.schema.user.grant, 'guest', 'bogus', 'space', 't')
show('grant3', box.schema.user.grant, 'guest', 'read', 'space', 'nospace')
show('grant4', box.schema.user.grant, 'guest', 'read', 'bogus', 't')
show('uc1', box.schema.user.create, 'guest')
show('uc2', box.schema.user.create, 'u1', {bogus = 1})
show('uc3', box.schema.user.create, 'u1', {password = 5})
show('seq1', box.schema.sequence.create, 's', {bogus = 1})
show('seq2', box.schema.sequence.create, 's', {min = 10, max = 5})
show('seq3', box.schema.sequence.create, 's', {start = 100, max = 5})
show('fn1', box.schema.func.create, 'f', {bogus = 1})
show('fn2', box.schema.func.create, 'f', {language = 'bogus'})
show('tuple1', box.tuple.new, 5)
show('tuple2', function() return box.tuple.new{1}:update({{'=', 5, 1}}) end)
show('tuple3', function() return box.tuple.new{1}[0] end)
show('begin1', function() box.begin() box.begin() end)
box.rollback()
show('commit1', box.commit)
show('sp1', box.savepoint)
show('rb1', box.rollback_to_savepoint, 5)
show('atomic1', box.atomic, 5)
local s2 = box.schema.space.create('t2')
s2:create_index('pk')
local function show2(label, ...) local r = {pcall(...)} print(label, r[1], tostring(r[2])) end
show2('f1', s2.format, s2, {{name = 'a', type = 'bogus'}})
show2('f2', box.space._space.update, box.space._space, {s2.id}, {{'=', 7, {{name = 'a', type = 'bogus'}}}})
show2('f3', box.space._space.insert, box.space._space, {600, 1, 'x', 'memtx', 0, setmetatable({}, {__serialize='map'}), {{name = 'a', type = 'bogus'}}})
show2('f4', box.space._space.insert, box.space._space, {601, 1, 'y', 'memtx', 0, setmetatable({}, {__serialize='map'}), {{type = 'unsigned'}}})
show2('f5', box.space._space.insert, box.space._space, {602, 1, 'z', 'memtx', 0, setmetatable({}, {__serialize='map'}), {{name = 'a', is_nullable = 'x'}}})
show2('f6', box.space._space.insert, box.space._space, {603, 1, 'w', 'memtx', 0, setmetatable({}, {__serialize='map'}), {{name = 'a', type = 5}}})
show2('f7', box.space._space.update, box.space._space, {s2.id}, {{'=', 7, {{type = 'unsigned'}}}})
show2('i1', box.space._index.insert, box.space._index, {s2.id, 5, 'i', 'tree', {unique = true}, {{0, 'bogus'}}})
show2('i2', box.space._index.insert, box.space._index, {s2.id, 5, 'i', 'tree', {unique = true}, {{field = 0, type = 'bogus'}}})
show2('i3', s2.create_index, s2, 'x', {parts = {{1, 'bogus'}}})
show2('i4', s2.create_index, s2, 'x', {parts = {{field = 1, type = 'bogus'}}})
show2('i5', s2.create_index, s2, 'x', {parts = {{field = 1, type = 'unsigned', is_nullable = true}, {2, 'bogus'}}})
local s3 = box.schema.space.create('t3', {format = {{'id', 'unsigned'}, {'v', 'any', is_nullable = true}}})
s3:create_index('pk')
print((select(1, pcall(s3.create_index, s3, 'b', {type = 'bitset', parts = {2, 'unsigned'}}))))
print((select(1, pcall(s3.create_index, s3, 'h', {type = 'hash', parts = {2, 'unsigned'}}))))
print((select(1, pcall(s3.create_index, s3, 't', {type = 'tree', parts = {2, 'unsigned'}, unique = false}))))
if s3.index.t then print(s3.index.t.parts[1].is_nullable) end
print(pcall(s3.insert, s3, {1}))
print(pcall(box.space._index.insert, box.space._index, {s3.id, 7, 'b2', 'bitset', {unique = false}, {{1, 'unsigned'}}}))
os.exit(0)
"""


def test_schema_and_data_api_misuse_matches_tarantool(tmp_path):
    tarantool = same_output_on_both(tmp_path, "api_misuse.lua", SCRIPT, 95)
    assert "sel2\tfalse\tcdata\tUnknown iterator type 'BOGUS'" in tarantool
    assert "ci6\tfalse\tcdata\tIllegal parameters, unexpected option 'bogus'" in tarantool
    assert "grant2\tfalse\tcdata\tUnsupported space privilege 'bogus'" in tarantool
    assert "f1\tfalse\tCan't modify space 't2': field 1 has unknown field type" in tarantool
    assert "ups1\tfalse\tcdata\tTuple field 2 required by space format is missing" in tarantool


SCRIPT2 = HEADER + r"""show('cfg1', box.cfg, {bogus_opt = 1})
show('cfg2', box.cfg, {listen = {}})
show('cfg3', box.cfg, {memtx_memory = 'x'})
show('cfg4', box.cfg, {read_only = 'yes'})
show('cfg5', box.cfg, {log_level = 'x'})
show('cfg6', box.cfg, {readahead = -1})
show('cfg7', box.cfg, {checkpoint_count = 0})
show('cfg8', box.cfg, {net_msg_max = 1})
show('cfg9', box.cfg, {too_long_threshold = 'x'})
show('cfg10', box.cfg, {wal_mode = 'bogus'})
show('cfg11', box.cfg, {memtx_dir = '/tmp'})
show('cfg12', box.cfg, {replication_timeout = -1})
show('cfg13', box.cfg, {custom_proc_title = 5})
show('cfg14', box.cfg, 5)
local s = box.schema.space.create('t')
s:create_index('pk')
s:insert{1, 'a', {1, 2}}
local t = s:get(1)
show('tup1', t.update, t, 5)
show('tup2', t.find, t)
show('tup3', t.totable, t, 'x')
show('tup4', t.unpack, t, 5, 1)
show('tup5', t.transform, t, 0, 1)
show('tup6', t.transform, t, 10, 1)
show('tup7', t.tomap, t, 5)
show('tup8', function() return t['nofield'] end)
show('tup9', box.tuple.new, {function() end})
show('tup10', box.tuple.new, {1, 2}, {3})
show('tup11', t.slice, t)
show('tup12', t.upsert, t, {{'+', 1, 'x'}})
show('seq1', function() return box.schema.sequence.create('q'):next() end)
show('seq2', function() return box.sequence.q:set('x') end)
show('seq3', function() return box.sequence.q:alter({bogus = 1}) end)
show('seq4', function() return box.sequence.q:alter({min = 100}) end)
show('ses1', box.session.su, 'nouser')
show('ses2', box.session.push)
show('ses3', box.session.exists, 'x')
show('ses4', box.session.peer, 'x')
show('ses5', box.session.on_connect, 5)
show('trg1', s.on_replace, s, 5)
show('trg2', s.before_replace, s, function() end, 5)
show('at1', box.atomic, function() error('boom') end)
show('at2', box.atomic, function() box.commit() end)
show('at3', function() box.begin() local r = {pcall(box.begin)} box.rollback() return unpack(r) end)
show('rbs1', function() box.begin() local sp = box.savepoint() box.commit() return box.rollback_to_savepoint(sp) end)
show('idx1', s.index.pk.rename, s.index.pk, 5)
show('idx2', s.rename, s, 5)
show('idx3', s.index.pk.drop, s.index.pk)
show('sp5', box.space._space.delete, box.space._space, {s.id})
show('len1', function() return box.space._space:len() > 0 end)
show('bsize1', s.bsize, s)
show('drop1', function() s:drop() return s:select{} end)
local f = box.schema.space.create('fm', {format = {{'a', 'unsigned'}, {'b', 'string'}}})
f:create_index('pk')
local ft = f:insert{1, 'x', 'extra', 7}
local function keys(m) local out = {} for k, v in pairs(m) do out[#out + 1] = tostring(k) .. '=' .. tostring(v) end table.sort(out) return table.concat(out, ' ') end
print('tomap1', keys(ft:tomap()))
print('tomap2', keys(ft:tomap({names_only = true})))
show('tomap3', ft.tomap, ft, {names_only = 'x'})
show('tomap4', ft.tomap, ft, {}, 5)
show('tot1', ft.totable, ft, 0)
show('tot2', ft.totable, ft, 1, 0)
show('unp1', function() return select('#', ft:unpack(2, 3)) end)
show('btt1', box.tuple.totable, ft, 2)
show('push1', box.session.push, 1, 5)
show('push2', box.session.push)
show('push3', box.session.push, 1)
os.exit(0)
"""


def test_cfg_tuple_and_session_misuse_matches_tarantool(tmp_path):
    """box.cfg after the start (a static option refused even when it was left at its
    default), tuple methods' arguments (tomap's names_only leaves unnamed fields
    out), box.session.push's usage and a script's session, renames, a dropped space."""
    tarantool = same_output_on_both(tmp_path, "api_misuse2.lua", SCRIPT2, 59)
    assert "cfg11\tfalse\tcdata\tCan't set option 'memtx_dir' dynamically" in tarantool
    assert "tup3\tfalse\tstring\tattempt to compare string with number" in tarantool
    assert "tomap2\ta=1 b=x" in tarantool
    assert "push3\ttrue\tnil\tnil" in tarantool


SCRIPT3 = HEADER + r"""local fiber, json, msgpack, yaml = require('fiber'), require('json'), require('msgpack'), require('yaml')
show('fb1', fiber.create, 5)
show('fb2', fiber.new)
show('fb3', fiber.sleep, 'x')
show('fb4', fiber.find, 'x')
show('fb5', function() local f = fiber.create(function() end) return f:name(5) end)
show('fb6', function() local f = fiber.new(function() end) f:set_joinable(true) return f:join(), f:join() end)
show('fb7', function() return fiber.channel(-1) end)
show('fb8', function() local c = fiber.channel(1) return c:put(1, 'x') end)
show('fb9', function() return fiber.cond():wait('x') end)
show('fb10', function() return fiber.self():cancel() end)
show('js1', json.decode, '{bad')
show('js2', json.decode, 5)
show('js3', json.encode, {[true] = 1})
show('js4', json.decode, '[1,2')
show('js5', json.encode, function() end)
show('js6', json.decode, '"\\uZZZZ"')
show('js7', json.decode, '1e999')
show('js8', json.encode, 0/0)
show('mp1', msgpack.decode, 'x')
show('mp2', msgpack.decode, '\x91')
show('mp3', msgpack.decode, 5)
show('mp4', msgpack.decode, '\x01', 5)
show('mp5', msgpack.encode, function() end)
show('ym2', yaml.decode, 5)
show('ym3', yaml.encode, function() end)
show('str1', string.split, 'a,b', '')
show('str2', string.rjust, 'a', 'x')
show('str3', string.hex, 5)
show('str4', string.fromhex, 'zz')
show('tbl1', table.copy, 5)
show('tbl2', table.deepcopy, nil)
show('clk1', require('clock').sleep)
show('dig1', require('digest').sha256, 5)
show('dig2', require('digest').base64_decode, nil)
show('uuid1', require('uuid').fromstr, 'x')
show('uuid2', require('uuid').frombin, 'x')
show('dec1', function() return require('decimal').new('x') end)
show('dec2', function() return require('decimal').new(1) / 0 end)
show('log1', require('log').info, '%d', 'x')
show('err1', box.error, 'x')
show('err2', box.error, {code = 'x'})
show('err3', box.error.new, 99999)
show('err4', box.error.new, {reason = 5})
show('err5', box.error, 1, 2, 3)
show('fio2', require('fio').open, '/tmp', {'O_BOGUS'})
show('nb1', require('net.box').connect, 'bogus:uri:x')
show('csv1', require('csv').load, 5)
show('err6', box.error.new, {})
show('err7', box.error, box.error.ILLEGAL_PARAMS)
show('err8', box.error.new, 'MyType', 'oops %d', 5)
show('err9', function() local e = box.error.new('MyType', 'x') return e.type, e.code end)
show('err10', box.error.new, 'MyType')
show('err11', box.error.new, box.error.NO_SUCH_SPACE, 'zz')
show('fb11', function() local c = fiber.channel('2') return c:put(1, '0') end)
show('fb12', function() return fiber.cond():wait(-1) end)
os.exit(0)
"""


def test_module_misuse_matches_tarantool(tmp_path):
    """fiber, channels and conditions, json, msgpack, yaml, string and table
    helpers, digest, uuid, decimal, box.error's argument forms (2.6's
    luaT_error_create, with every 2.6 error code's description), net.box."""
    tarantool = same_output_on_both(tmp_path, "api_misuse3.lua", SCRIPT3, 55)
    assert "err1\tfalse\tstring\tbox.error(): bad arguments" in tarantool
    assert "fb7\tfalse\tstring\tfiber.channel(size): negative size" in tarantool
    assert "js3\tfalse\tstring\ttable key must be a number or string" in tarantool


SCRIPT4 = r"""
box.cfg{listen = '127.0.0.1:0', log_level = 1}
""" + LUA_SHOW + r"""box.schema.user.grant('guest', 'read,write,execute', 'universe')
local s = box.schema.space.create('t')
s:create_index('pk')
local nb = require('net.box')
local uri = box.info.listen
local c = nb.connect(uri)
show('c1', c.call, c, 5)
show('c2', c.call, c, 'nofn')
show('c3', c.call, c, 'box.info', 5)
show('c4', c.eval, c, 5)
show('c5', c.eval, c, 'return (')
show('c6', function() return c.space.nonexist end)
show('c7', function() return c.space.t:insert(5) end)
show('c8', function() return c.space.t:select(nil, {iterator = 'BOGUS'}) end)
show('c9', function() return c.space.t:select({}, {limit = 'x'}) end)
show('c10', function() return c.space.t:get({1, 2}) end)
show('c11', function() return c.space.t:update({1}, 5) end)
show('c12', c.call, c, 'box.info', {}, {timeout = 'x'})
show('c14', function() return c:ping({timeout = -1}) end)
show('c15', function() return c.space.t.index.pk:count('x') end)
show('c16', function() return c.space.t.index.nope end)
show('c17', c.execute, c, 5)
show('c18', c.execute, c, 'SELEKT')
show('c19', function() return nb.connect(uri, {user = 'nouser'}):ping() end)
show('c20', function() local x = nb.connect(uri, {user = 'nouser'}) return x.state, tostring(x.error) end)
show('c13', function()
  local info = c:call('box.info')
  local keys = {} for k in pairs(info) do keys[#keys + 1] = k end table.sort(keys)
  return table.concat(keys, ','), info.cluster.uuid ~= info.uuid, info.listen == box.info.listen
end)
local yaml = require('yaml')
print('vclock', (yaml.encode(box.info.vclock):gsub('%d+}', 'N}')))
local r = box.info.replication
local rk = {} for k in pairs(r[1]) do rk[#rk + 1] = k end table.sort(rk)
print('replication', getmetatable(r).__serialize, next(r), table.concat(rk, ','), (yaml.encode(r):match('^%-%-%-\n1:\n')))
show('c21', function() c:close() return c:ping() end)
show('c22', function() return c:call('box.info') end)
show('c23', function() c:close() return c.state end)
show('c25', function() return nb.connect('127.0.0.1:1'):ping() end)
show('c26', function() local x = nb.connect('127.0.0.1:1') return x.state, tostring(x.error) end)
os.exit(0)
"""


def test_netbox_misuse_and_box_info_shapes_match_tarantool(tmp_path):
    """The instance's own net.box against itself: what it sends for numbers and
    wrong types (2.6's encoders: a number as a function name or expression is its
    text, as execute's argument a statement id; tuples and operations must be
    tables; iterators checked, limit and offset read as uint32), call and eval
    argument usage, time-outs; box.info()'s keys, and vclock and replication as
    maps keyed by replica id."""
    tarantool = same_output_on_both(tmp_path, "api_misuse4.lua", SCRIPT4, 31)
    assert "c1\tfalse\tcdata\tProcedure '5' is not defined" in tarantool
    assert "c17\tfalse\tcdata\tPrepared statement with id 5 does not exist" in tarantool


# Vinyl spaces keep their rows as memtx ones do here, but take only what 2.6's
# vinyl takes: TREE indexes of scalar parts, no temporary flag, no transaction
# that also uses memtx spaces.
SCRIPT5 = HEADER + r"""show('tmp', box.schema.space.create, 'vt', {engine = 'vinyl', temporary = true})
local s = box.schema.space.create('v', {engine = 'vinyl', format = {{'a', 'unsigned'}, {'b', 'any'},
    {'c', 'array'}, {'d', 'map'}, {'e', 'scalar', is_nullable = true}}})
show('hash', s.create_index, s, 'h', {type = 'hash'})
show('bitset', s.create_index, s, 'b', {type = 'bitset', parts = {1, 'unsigned'}, unique = false})
show('rtree', s.create_index, s, 'r', {type = 'rtree', parts = {3, 'array'}, unique = false})
show('pk', function() return s:create_index('pk').name end)
show('any', s.create_index, s, 'x1', {parts = {2, 'any'}})
show('arr', s.create_index, s, 'x2', {parts = {3, 'array'}})
show('map', s.create_index, s, 'x3', {parts = {4, 'map'}})
show('nul', function() return s:create_index('x4', {parts = {{5, 'scalar', is_nullable = true}}}).name end)
show('mk', function() return s:create_index('x5', {parts = {{field = 3, type = 'unsigned', path = '[*]'}},
                                                     unique = false}).name end)
show('alter', s.index.pk.alter, s.index.pk, {type = 'hash'})
show('hash2', s.create_index, s, 'h2', {type = 'HASH', parts = {5, 'scalar'}})
show('ins', function() return s:insert{1, 'x', {1, 2}, setmetatable({}, {__serialize = 'map'})} end)
show('engine', function() return s.engine, s.index.pk.type end)
-- A transaction keeps to one engine, reads included; system views take no part.
local m = box.schema.space.create('m')
m:create_index('pk')
show('cross', box.atomic, function() m:insert{1} s:insert{1} end)
show('cross2', box.atomic, function() s:replace{2} m:insert{2} end)
show('read', box.atomic, function() s:get{1} m:get{1} end)
show('readsel', box.atomic, function() m:select{} s:select{} end)
show('vformat', box.atomic, function() s:replace{3} return #s:format() end)
show('vspace', box.atomic, function() s:replace{4} return box.space._vspace:get{s.id}[3] end)
show('space', box.atomic, function() s:replace{5} return box.space._space:get{s.id}[3] end)
show('len', box.atomic, function() s:replace{6} return m:len() end)
show('count', box.atomic, function() s:replace{7} return m:count() end)
show('mixed', box.atomic, function() s:replace{8} s:replace{9} return s:count() end)
show('memtx', box.atomic, function() m:replace{8} m:replace{9} return m:count() end)
show('single', function() s:replace{10} m:replace{10} return s:len() + m:len() end)
show('trig', function() m:on_replace(function() s:replace{11} end) m:replace{12} end)
show('rows', function() return s:len(), m:len() end)
os.exit(0)
"""


def test_vinyl_index_rules_match_tarantool(tmp_path):
    tarantool = same_output_on_both(tmp_path, "api_misuse5.lua", SCRIPT5, 28)
    assert "Unsupported index type supplied for index 'h' in space 'v'" in tarantool[1]


# A method called with a dot names the call to make, as 2.6's check_space_arg and
# check_index_arg do (the message with its builtin/box/schema.lua position).
SCRIPT6 = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local s = box.schema.space.create('t')
s:create_index('pk')
s:insert{1}
local function show(label, ...) local r = {pcall(...)} print(label, r[1], type(r[2]), tostring(r[2])) end
for _, name in ipairs({'insert', 'replace', 'put', 'update', 'upsert', 'delete', 'truncate', 'format', 'drop',
    'rename', 'create_index', 'len', 'bsize', 'count', 'get', 'select', 'pairs', 'frommap', 'auto_increment'}) do
  show(name, s[name], {1})
end
show('noarg', s.insert)
show('number', s.insert, 5)
show('frommap', s.frommap, s)
local pk = s.index.pk
for _, name in ipairs({'select', 'get', 'pairs', 'count', 'min', 'max', 'random', 'len', 'bsize', 'update',
    'delete', 'alter', 'drop', 'rename', 'stat', 'compact'}) do
  show('ix.' .. name, pk[name], {1})
end
show('ok', function() return s:get{1}[1], pk:get{1}[1], s.index.pk:count() end)
print(s:len())
os.exit(0)
"""


def test_dot_calls_name_the_method_call_as_26(tmp_path):
    tarantool = same_output_on_both(tmp_path, "api_misuse6.lua", SCRIPT6, 40)
    assert tarantool[0] == "insert\tfalse\tstring\tbuiltin/box/schema.lua:1291: Use space:insert(...) instead of space.insert(...)"


# A role may not be granted where it would make a loop of roles (2.6's role_check),
# through box.schema or a _priv row written directly.
SCRIPT7 = HEADER + r"""for _, n in ipairs({'a', 'b', 'c'}) do box.schema.role.create(n) end
box.schema.user.create('u')
local function id(name) return box.space._user.index.name:get{name}[1] end
show('self', box.schema.role.grant, 'a', 'a')
show('ab', box.schema.role.grant, 'a', 'b')
show('bc', box.schema.role.grant, 'b', 'c')
show('ca', box.schema.role.grant, 'c', 'a')
show('cb', box.schema.role.grant, 'c', 'b')
show('ua', box.schema.user.grant, 'u', 'a')
show('uc', box.schema.user.grant, 'u', 'c')
show('raw', function() return box.space._priv:insert{1, id('c'), 'role', id('a'), 4} end)
show('public', box.schema.role.grant, 'public', 'a')
show('apublic', box.schema.role.grant, 'a', 'public')
show('super', box.schema.role.grant, 'super', 'a')
show('revoke', box.schema.role.revoke, 'a', 'b')
show('ca2', box.schema.role.grant, 'c', 'a')
show('info', box.schema.role.info, 'c')
os.exit(0)
"""


def test_role_loops_are_refused_as_26(tmp_path):
    tarantool = same_output_on_both(tmp_path, "api_misuse7.lua", SCRIPT7, 14)
    assert "Granting role 'a' to role 'c' would create a loop" in tarantool[3]


# Names of spaces, indexes, fields, users, roles, functions and sequences: 2.6's
# identifier check (not empty, printable) and its 65000-byte limit, with the
# error each object's create or alter gives.
SCRIPT8 = HEADER + r"""local long = string.rep('x', 65001)
for _, case in ipairs({{'empty', ''}, {'long', long}, {'ctl', 'a\1b'}, {'nl', 'a\nb'}, {'sep', 'a\u{2028}'},
                       {'sp', 'a b'}, {'utf', 'таблица'}}) do
  local label, name = case[1], case[2]
  show('space.' .. label, function() return box.schema.space.create(name).name end)
  show('user.' .. label, box.schema.user.create, name)
  show('role.' .. label, box.schema.role.create, name)
  show('func.' .. label, box.schema.func.create, name)
  show('seq.' .. label, function() return box.schema.sequence.create(name).name end)
end
local s = box.schema.space.create('t')
for _, case in ipairs({{'empty', ''}, {'long', long}, {'ctl', 'a\1b'}, {'utf', 'индекс'}}) do
  show('index.' .. case[1], function() return s:create_index(case[2]).name end)
end
show('rename.empty', s.rename, s, '')
show('rename.long', s.rename, s, long)
show('rename.ctl', s.rename, s, 'a\1b')
show('fmt.empty', s.format, s, {{name = ''}})
show('fmt.ctl', s.format, s, {{name = 'a\1b'}})
show('fmt.long', s.format, s, {{name = long}})
show('fmt.coll', s.format, s, {{name = 'id', type = 'unsigned', collation = 'unicode'}})
show('fmt.default', s.format, s, {{name = 'id', type = 'unsigned', default = 5}})
show('fmt.ok', function() s:format({{name = 'id', type = 'unsigned'}, {name = 'v', type = 'string', collation = 'unicode', default = 'x'}})
                              return s:format()[2].collation end)
show('raw', function() return box.space._user:insert{99, 1, 'a\1', 'user', setmetatable({}, {__serialize = 'map'})} end)
os.exit(0)
"""


def test_object_names_are_checked_as_26(tmp_path):
    tarantool = same_output_on_both(tmp_path, "api_misuse8.lua", SCRIPT8, 59)
    assert "Invalid identifier '' (expected printable symbols only or it is too long)" in tarantool[0]
