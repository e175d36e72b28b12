"""Console sessions line by line, as Tarantool's own test-run drives them: the
same lines on a text console of Tarantool 2.6 and of oncebox, the same YAML
replies (the checks come from 2.6's test/box suite: access_misc,
access_escalation)."""
from conftest import console_transcripts_on_both

SU_AND_DROPS = [
    "session = box.session",
    "box.schema.user.create('testus')",
    "s = box.schema.space.create('admin_space')",
    "index = s:create_index('primary', {type = 'hash', parts = {1, 'unsigned'}})",
    "s:insert({1})",
    "box.schema.user.grant('testus', 'read', 'space', 'admin_space')",
    # su without a function: the session's user for its later lines.
    "session.su('testus')",
    "session.user(), session.effective_user()",
    "s:select(1)",
    "s:insert({3})",
    "s:drop()",
    "session.su('admin')",
    "session.user()",
    "s:insert({3})",
    # A role is no user to act as; roles and users by their kind (2.6's role.test.lua).
    "box.schema.role.create('iddqd')",
    "box.session.su('iddqd')",
    "box.session.user()",
    "box.schema.user.grant('testus', 'execute', 'role', 'testus')",
    "box.schema.role.revoke('iddqd', 'iddqd')",
    "box.schema.role.revoke('testus', 'iddqd')",
    "box.schema.role.create('a') box.schema.role.create('b') box.schema.role.grant('b', 'a')",
    "box.schema.role.info('b')",
    "box.schema.role.drop('a')",
    "box.schema.role.info('b')",
    "box.schema.role.drop('b')",
    # Dropping what is gone.
    "t = box.schema.space.create('test')",
    "t:drop()",
    "t:drop()",
    "box.schema.space.drop(t.id)",
    "box.schema.space.drop(t.id, 'test')",
    "box.schema.space.drop(t.id, 'test', {if_exists = true})",
    "box.schema.space.drop('x')",
    # net.box's connect called as a method; its methods called with '.'; upsert's result.
    "net = require('net.box')",
    "c = net:connect(os.getenv('LISTEN'))",
    "c:ping()",
    "c:close()",
    "c = net.connect(os.getenv('LISTEN'))",
    "c:ping()",
    "c.eval('return true')",
    "c.ping()",
    "c.call_16('f')",
    "net.self.eval('return true')",
    "net.self:eval('return 1')",
    "u = box.schema.space.create('u')",
    "_ = u:create_index('pk')",
    "c:reload_schema()",
    "c.space.u:upsert({1, 2}, {{'+', 2, 1}})",
    "c.space.u:upsert({1, 2}, {{'+', 2, 1}})",
    "c.space.u:select{}",
    "c:close()",
    # A space's and an index's own metatable's __pairs (gh-4770); pairs() meets a space's own fields.
    "getmetatable(u).__pairs == u.pairs, getmetatable(u.index.pk).__pairs == u.index.pk.pairs",
    "keys = {} for k in pairs(u) do keys[k] = true end return keys.name, keys.id, keys.engine",
    # A collation id that does not exist.
    "box.space._space:insert{12345, 1, 'c', 'memtx', 0, setmetatable({}, {__serialize = 'map'}), "
    "{{name = 'f1', type = 'string'}, {name = 'f2', type = 'string', collation = 666}}}",
    "box.space._index:insert{u.id, 1, 'sk', 'tree', {unique = true}, {{field = 0, type = 'string', collation = 666}}}",
    # box.info (2.6's test/box/info.test.lua).
    "string.match(box.info.uptime, '^[1-9][0-9]*$') ~= nil",
    "box.info.server.id == box.info.id, box.info.server.uuid == box.info.uuid, box.info.ro == box.info.server.ro",
    "box.info().server.lsn == box.info.lsn",
    "box.info().server ~= nil, rawget(box.info(), 'server')",
    "box.ctl.wait_ro('abc')",
    "box.ctl.wait_rw({})",
    "box.ctl.wait_rw('1')",
    # A net.box space's connection; net.box.self's eval of an expression.
    "c = net.connect(os.getenv('LISTEN'))",
    "c.space.u.connection == c",
    "c:close()",
    "net.self:eval('1 + 1')",
    "net.self:eval('invalid expression')",
    # fiber.cond's and msgpack's argument checks (2.6's test/app fiber_cond, msgpack).
    "cond = require('fiber').cond()",
    "cond.wait()", "cond.wait('1')", "cond:wait('1')", "cond:wait(-1)", "cond.signal()", "cond.broadcast(1)",
    "cond:wait(0.01)",
    "msgpack = require('msgpack') buf = require('buffer').ibuf()",
    "msgpack.encode('test', buf.buf)",
    "msgpack.encode('test', nil)",
    "msgpack.decode_unchecked('test', 0)", "msgpack.decode_unchecked('test', 5)", "msgpack.decode('test', 5)",
    "msgpack.encode('test', buf)",
]


LONG_FLOWS = [
    # Catalogue rows (their maps in the order 2.6 writes them).
    "box.space._space:select(280)",
    "box.space._index:select(280)",
    "box.space._space:select(272, {iterator = 'LE', limit = 3})",
    "t = box.tuple.new{1, string.rep('abc ', 30), {2, string.rep('x', 70)}, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}",
    "t",
    "{t, {k = t}}",
    "tostring(t)",
    "setmetatable({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, "
    "26, 27, 28, 29, 30, 31, 32, 33, 34, 35}, {__serialize = 'seq'})",
    "{key = setmetatable({string.rep('word ', 20), string.rep('y', 90), 'z'}, {__serialize = 'seq'})}",
]


def test_long_flow_collections_break_at_the_width_as_2_6(tmp_path):
    """A flow collection (a tuple, a 'seq' table) longer than the line breaks
    before an item past column 80, indented to its level, as libyaml; a tuple's
    maps keep their order; tostring of a tuple stays on one line."""
    tarantool, oncebox = console_transcripts_on_both(tmp_path, LONG_FLOWS)
    assert oncebox == tarantool
    assert tarantool[0].count("\n") > 4 and "\n        'type': 'unsigned'}" in tarantool[0]


def test_su_drops_and_connect_on_the_console_as_2_6(tmp_path):
    tarantool, oncebox = console_transcripts_on_both(tmp_path, SU_AND_DROPS)
    assert oncebox == tarantool
    assert tarantool[7] == "---\n- testus\n- testus\n...\n"
    assert tarantool[9] == "---\n- error: Write access to space 'admin_space' is denied for user 'testus'\n...\n"
    assert tarantool[27] == "---\n- error: Space 'test' does not exist\n...\n"


def test_su_over_iproto_lasts_for_the_connection_as_2_6():
    """box.session.su(user) in an EVAL: the connection's later requests run as
    that user (2.6 resets the session's credentials)."""
    from conftest import ADMIN_PASSWORD, start_oncebox, start_tarantool
    from iproto_raw import EVAL, Raw
    outcomes = []
    for start in (start_tarantool, start_oncebox):
        inst = start()
        try:
            c = Raw(inst.host, inst.port)
            c.auth("admin", ADMIN_PASSWORD)
            steps = []
            for expr in ("box.schema.user.create('su_iproto', {if_not_exists = true})",
                         "box.schema.user.grant('su_iproto', 'execute', 'universe', nil, {if_not_exists = true})",
                         "box.session.su('su_iproto')", "return box.session.user()",
                         "return box.space._user:count()", "box.session.su('admin')"):
                h, b, _ = c.request(EVAL, {0x27: expr, 0x21: []})
                steps.append((h[0], b.get(0x30), b.get(0x31)))
            c.close()
            outcomes.append(steps)
        finally:
            inst.stop()
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][3] == (0, ["su_iproto"], None)


CALLS = [
    "box.schema.user.grant('guest', 'execute', 'universe')",
    "conn = require('net.box').connect(box.cfg.listen)",
    "function f_none() end",
    "function f_nils() return nil, nil end",
    "function f_scalars() return 1, 'a', true end",
    "function f_array() return {1, 2, 3} end",
    "function f_map_first() return {{k1 = 'v1'}, 2, 3} end",
    "function f_arrays() return {{1}, {2, 3}, 4} end",
    "function f_tuples() return {box.tuple.new(1), box.tuple.new{2, 3}} end",
    "function f_map() return {k = 1} end",
    "function f_empty() return {} end",
    "function f_sparse() return setmetatable({[1] = 1, [20] = 1}, {__serialize = 'array'}) end",
    "function f_holes() local t = {} t[5] = 5 t[20] = 1 return setmetatable(t, {__serialize = 'seq'}) end",
    "conn:call_16('f_none')", "conn:call_16('f_nils')", "conn:call_16('f_scalars')", "conn:call_16('f_array')",
    "conn:call_16('f_map_first')", "conn:call_16('f_arrays')", "conn:call_16('f_tuples')", "conn:call_16('f_map')",
    "conn:call_16('f_empty')", "conn:call('f_sparse')", "conn:call_16('f_sparse')", "conn:call('f_holes')",
    "f_sparse()", "require('json').encode(f_sparse())", "#require('msgpack').encode(f_holes())",
    "conn:eval_16('return ...', 1, 2)",
    "c16 = require('net.box').connect(box.cfg.listen, {call_16 = true})",
    "c16:call('f_array')",
    "c16:close()",
    # A request body is a map whatever msgpack.cfg says of sparse arrays.
    "require('msgpack').cfg{encode_sparse_safe = 50}",
    "conn:call('f_array')",
    "conn:eval('return 1')",
    "require('msgpack').cfg{encode_sparse_safe = 10}",
    "conn:close()",
]


def test_call_16_and_sparse_arrays_as_2_6(tmp_path):
    """net.box's call_16 and eval_16 (call.test.lua): a returned table is one
    tuple unless its first member is an array or a tuple; an array-hinted table
    is as long as its greatest key; msgpack.cfg leaves request bodies maps."""
    tarantool, oncebox = console_transcripts_on_both(tmp_path, CALLS)
    assert oncebox == tarantool
    assert tarantool[17] == "---\n- - [{'k1': 'v1'}, 2, 3]\n...\n"


SHARED_TABLES = [
    "msgpack = require('msgpack')",
    "t = msgpack.decode(msgpack.encode({1, 2}))",
    "{t, t}",
    "m = msgpack.decode(msgpack.encode({a = 1}))",
    "{m, m, {m}}",
    "s = setmetatable({1, 2}, {__serialize = 'seq'})",
    "{s, {x = s}}",
    "h = setmetatable({a = 1}, {__serialize = function() return {9} end})",
    "{h, h}",
    "b = {1} k = {b, b}",
    "k",
    "{[b] = 1, b}",
    "c = {} c.self = c",
    "c",
]


def test_shared_tables_get_anchors_in_flow_style_too_as_2_6(tmp_path):
    """A table a reply holds twice is written once with an anchor, then as its
    alias: also a flow-style one (decoded from msgpack, or 'seq' / 'map'
    hinted), as 2.6 wrote the one result ten fibers took from a net.box future
    (net.box_methods_gh-3107); a __serialize function's results are new
    tables; an alias as a key stands apart from its colon."""
    tarantool, oncebox = console_transcripts_on_both(tmp_path, SHARED_TABLES)
    assert oncebox == tarantool
    assert tarantool[2] == "---\n- - &0 [1, 2]\n  - *0\n...\n"


GRANT_RIGHTS = [
    # role.test.lua: only an object's owner grants on it; public is everyone's to grant.
    "box.schema.user.create('john') box.schema.user.create('grantee') box.schema.role.create('role')",
    "_ = box.schema.space.create('test')",
    "box.schema.user.grant('john', 'read,write,execute', 'universe')",
    "box.session.su('john')",
    "box.schema.user.grant('grantee', 'role')",
    "box.schema.user.grant('grantee', 'read', 'space', 'test')",
    "box.schema.user.grant('grantee', 'public')",
    "box.schema.user.revoke('grantee', 'public')",
    "box.schema.user.grant('grantee', 'read', 'universe')",
    "box.session.su('admin')",
    "box.space._priv:replace{1, 0, 'universe', 0, 0}",
    "box.space._priv:replace{1, 777, 'universe', 0, 1}",
    "box.space._priv:replace{1, 0, 'space', 9999, 1}",
    "box.schema.role.exists(3), box.schema.user.exists(1), box.schema.role.exists(1)",
    "box.schema.user.exists(3.5)",
    # A user's objects go with it.
    "box.schema.user.create('maker') box.schema.user.grant('maker', 'read,write,create', 'universe')",
    "box.session.su('maker') s = box.schema.space.create('made') box.schema.func.create('made_fn') "
    "box.schema.sequence.create('made_seq') box.session.su('admin')",
    "box.schema.user.drop('maker')",
    "box.space.made, box.space._func.index.name:get{'made_fn'}, box.sequence.made_seq",
    # access_misc.test.lua: dropping what is not yours, or a user with objects.
    "box.schema.user.create('testuser') box.schema.user.grant('testuser', 'read,write', 'space', '_user')",
    "box.schema.func.create('admin_fn')",
    "box.session.su('testuser')",
    "box.space._user:delete(2)",
    "box.space._user:delete(box.space._user.index.name:get{'testuser'}[1])",
    "box.session.su('admin')",
    "box.schema.user.grant('testuser', 'read,write', 'space', '_func')",
    "box.session.su('testuser')",
    "box.space._func:delete(box.space._func.index.name:get{'admin_fn'}[1])",
    "box.session.su('admin')",
    "box.schema.user.grant('testuser', 'execute', 'function', 'admin_fn')",
    "box.space._func:delete(box.space._func.index.name:get{'admin_fn'}[1])",
    "box.schema.func.drop('admin_fn')",
    "box.schema.func.drop('admin_fn')",
    "box.schema.func.drop(12345)",
    "box.space._user:delete(box.space._user.index.name:get{'testuser'}[1])",
    "box.schema.user.drop('testuser')",
    # A grantor has objects too, until its grants go (those it gave the user it made).
    "box.schema.user.create('giver') box.schema.user.grant('giver', 'read,write,create', 'universe')",
    "box.session.su('giver', box.schema.user.create, 'taker')",
    "box.space._priv:select{box.space._user.index.name:get{'taker'}[1]}",
    "box.schema.user.drop('giver')",
    "box.schema.user.drop('taker') box.schema.user.drop('giver')",
    # A sequence a space uses stays whole.
    "sq = box.schema.sequence.create('sq') t = box.schema.space.create('t') _ = t:create_index('pk', {sequence = 'sq'})",
    "box.schema.user.grant('grantee', 'read', 'sequence', 'sq')",
    "box.schema.sequence.drop('sq')",
    "box.schema.user.info('grantee')",
]


def test_grants_and_drops_need_the_rights_2_6_asks(tmp_path):
    """Granting on an object takes owning it (everyone may grant public, only
    admin on the universe); revoking someone else's grant takes the revoke right;
    a grant row with no privileges, an unknown grantee or object is refused;
    dropping a user drops what it owns; a user with objects, a system role, a
    function with grants or a sequence in use are not dropped (role.test.lua,
    access_misc.test.lua)."""
    tarantool, oncebox = console_transcripts_on_both(tmp_path, GRANT_RIGHTS)
    assert oncebox == tarantool
    assert tarantool[4] == "---\n- error: Grant access to role 'role' is denied for user 'john'\n...\n"
    assert tarantool[7] == "---\n- error: Revoke access to role 'public' is denied for user 'john'\n...\n"


SYSVIEWS = [
    # access_sysview.test.lua: what guest sees of the catalogue through the views.
    "box.schema.user.create('viewer') box.schema.role.create('viewers') box.schema.user.grant('viewer', 'viewers')",
    "s = box.schema.space.create('shown') _ = s:create_index('pk') box.schema.func.create('fn')",
    "_ = box.schema.sequence.create('seq')",
    # Rows of oncebox's own _idempotency (space 500) left out.
    "function counts() local function n(v) local c = 0 for _, t in v:pairs() do if t[1] ~= 500 then c = c + 1 end "
    "end return c end return n(box.space._vspace), n(box.space._vindex), #box.space._vuser:select{}, "
    "#box.space._vpriv:select{}, #box.space._vfunc:select{}, #box.space._vsequence:select{} end",
    "box.session.su('viewer', counts)",
    "box.schema.user.grant('viewer', 'write', 'universe')",
    "box.session.su('viewer', counts)",
    "box.schema.user.revoke('viewer', 'write', 'universe') box.schema.user.grant('viewer', 'execute', 'universe')",
    "box.session.su('viewer', counts)",
    "box.schema.user.revoke('viewer', 'execute', 'universe')",
    "box.schema.user.grant('viewer', 'execute', 'space', 'shown')",
    "box.session.su('viewer', counts)",
    "box.schema.user.grant('viewer', 'alter', 'space')",
    "box.session.su('viewer', counts)",
    "box.schema.user.revoke('viewer', 'alter', 'space') box.schema.user.grant('viewer', 'read', 'space', '_user')",
    "box.session.su('viewer', counts)",
    "box.schema.user.grant('viewer', 'usage', 'sequence', 'seq')",
    "box.session.su('viewer', counts)",
]


def test_system_views_show_what_2_6_shows(tmp_path):
    """A user sees every row of the views with read, write, drop or alter on the
    universe (execute too for _vfunc and _vsequence) or on the object type; a
    user or role it holds shows only if it is public, itself or its own; execute
    on a space shows nothing of it (access_sysview.test.lua)."""
    tarantool, oncebox = console_transcripts_on_both(tmp_path, SYSVIEWS)
    assert oncebox == tarantool
    assert tarantool[4] != tarantool[6]


VIEW_COUNTS_AND_COLLATION_RIGHTS = [
    "v = box.space._vspace",
    "v.index.primary:len()",
    "v:len()",
    "v.index.primary:random(48)",
    "v:count() > 20, v.index[1]:count(1) > 0, box.space._vuser:count()",
    "box.schema.user.grant('guest', 'read,write', 'space', '_collation')",
    "box.session.su('guest', box.internal.collation.create, 'guest0', 'ICU', 'ru-RU')",
    "box.internal.collation.create('mine', 'ICU', 'ru-RU')",
    "box.session.su('guest', box.internal.collation.drop, 'mine')",
    "box.internal.collation.drop('mine')",
]


def test_view_sizes_and_collation_rights_as_2_6(tmp_path):
    """A system view's index has no size and no random(); count() counts the
    rows it shows. Creating or dropping a collation takes the right to
    (access_sysview.test.lua)."""
    tarantool, oncebox = console_transcripts_on_both(tmp_path, VIEW_COUNTS_AND_COLLATION_RIGHTS)
    assert oncebox == tarantool
    assert "Create access to collation 'guest0' is denied for user 'guest'" in tarantool[6]
