"""box.session.on_access_denied, box.ctl.on_schema_init, box.ctl.clear_synchro_queue
and box.schema.upgrade, compared with real Tarantool 2.6 line for line:
access-denied triggers (newest first, with the access, object type and name) for
box operations in Lua under box.session.su and for IPROTO select, replace, CALL of
a function without rights, a denied box operation inside a CALL, and EVAL; a failing
trigger leaves the error as it was; schema-init triggers set before the first
box.cfg{} run in it (newest first), set later they do not. And which right a user
without it is refused first (so which trigger runs, and the message) for schema
changes, truncate, drop, count, len and random, and what a user with write on a
space may do as 2.6 allows it (truncate it; grant, with if_not_exists, what it has).
"""
from conftest import LUA_PRINT_COUNTED, same_output_on_both

PRINT_HELPER = LUA_PRINT_COUNTED

# A fresh instance with user u1 (no rights beyond public) and a space sp.
PRELUDE = r"""
box.cfg{log_level=1}
""" + PRINT_HELPER + r"""box.schema.user.create('u1')
box.schema.space.create('sp'):create_index('pk')
"""

SCRIPT = r"""
box.ctl.on_schema_init(function() print('schema_init', box.space._space ~= nil, box.space._index ~= nil) end)
local second = box.ctl.on_schema_init(function() print('second schema_init') end)
print('schema_init triggers', #box.ctl.on_schema_init(), type(second))
box.cfg{listen = os.getenv('LISTEN')}
""" + PRINT_HELPER + r"""
p('late schema_init', pcall(box.ctl.on_schema_init, function() print('never') end) and 'set')
p('upgrade', pcall(box.schema.upgrade))
p('clear_synchro_queue', pcall(box.ctl.clear_synchro_queue))
box.schema.user.create('u1', {password = 'pw'})
box.schema.func.create('allowed')
box.schema.user.grant('u1', 'execute', 'function', 'allowed')
box.schema.func.create('forbidden')
rawset(_G, 'allowed', function() return box.space.sp:select() end)
rawset(_G, 'forbidden', function() return 1 end)
box.schema.space.create('sp')
box.space.sp:create_index('pk')
box.schema.space.create('ro')
box.space.ro:create_index('pk')
box.schema.user.grant('u1', 'write', 'space', 'sp')
box.schema.user.grant('u1', 'read', 'space', 'ro')
box.schema.space.create('true'):create_index('pk')
box.schema.user.grant('u1', 'write', 'space', 'true')
local t1 = box.session.on_access_denied(function(op, otype, name) p('first', op, otype, name, type(name)) end)
box.session.on_access_denied(function(op, otype, name) p('second', op, otype, name) end)
p(#box.session.on_access_denied(), type(t1))
box.session.su('u1', function() p(pcall(box.space.sp.select, box.space.sp)) end)
box.session.su('u1', function() p(pcall(box.space.ro.insert, box.space.ro, {1})) end)
box.session.su('u1', function() p(pcall(box.space.sp.get, box.space.sp, 1)) end)
local c = require('net.box').connect(os.getenv('LISTEN'), {user = 'u1', password = 'pw'})
p(pcall(c.space.sp.select, c.space.sp))
p(pcall(c.call, c, 'forbidden'))
p(pcall(c.call, c, 'allowed'))
p(pcall(c.eval, c, 'return 1'))
p(pcall(c.space.ro.replace, c.space.ro, {2}))
p(pcall(c.space.sp.replace, c.space.sp, {2}))
p(pcall(c.space['true'].select, c.space['true']))
c:close()
box.session.on_access_denied(nil, t1)
box.session.on_access_denied(function() error('trigger fails') end)
box.session.su('u1', function() p(pcall(box.space.ro.delete, box.space.ro, 1)) end)
p(#box.session.on_access_denied())
os.exit(0)
"""


def test_access_denied_and_schema_init_triggers_as_2_6(tmp_path):
    same_output_on_both(tmp_path, "access_denied", SCRIPT, 37)


DENIED = PRELUDE + r"""
box.session.on_access_denied(function(op, otype, name) p('denied', op, otype, name) end)
box.session.su('u1', function() p(pcall(box.schema.space.create, 'x')) end)
box.session.su('u1', function() p(pcall(box.schema.user.create, 'u2')) end)
box.session.su('u1', function() p(pcall(box.schema.user.grant, 'u1', 'read', 'space', 'sp')) end)
box.session.su('u1', function() p(pcall(box.space.sp.truncate, box.space.sp)) end)
box.session.su('u1', function() p(pcall(box.space.sp.drop, box.space.sp)) end)
box.session.su('u1', function() p(pcall(box.space.sp.count, box.space.sp)) end)
box.session.su('u1', function() p(pcall(box.space.sp.len, box.space.sp)) end)
box.session.su('u1', function() p(pcall(box.space.sp.index.pk.count, box.space.sp.index.pk)) end)
box.session.su('u1', function() p(pcall(box.space.sp.index.pk.random, box.space.sp.index.pk, 1)) end)
box.session.su('u1', function() p(pcall(function() return box.space._space:select() end)) end)
box.session.su('u1', function() p(pcall(box.schema.sequence.create, 's')) end)
box.schema.user.create('u3')
p(box.space._user.index.name:get{'u3'}[1])
os.exit(0)
"""

ALLOWED = PRELUDE + r"""
box.space.sp:insert{1}
box.schema.user.grant('u1', 'write', 'space', 'sp')
box.session.su('u1', function() p(pcall(box.space.sp.truncate, box.space.sp)) end)
p(box.space.sp:len())
box.schema.user.grant('u1', 'read', 'space', 'sp')
box.session.su('u1', function() p(pcall(box.space.sp.count, box.space.sp), pcall(box.space.sp.len, box.space.sp)) end)
box.session.su('u1', function() p(pcall(box.schema.user.grant, 'u1', 'read', 'space', 'sp')) end)
box.session.su('u1', function() p(pcall(box.schema.user.grant, 'u1', 'read', 'space', 'sp', {if_not_exists=true})) end)
p(box.space._vpriv ~= nil, box.space._vuser ~= nil)
os.exit(0)
"""


def test_the_right_refused_first_is_2_6s(tmp_path):
    same_output_on_both(tmp_path, "denied_first", DENIED, 23)


def test_a_writer_truncates_and_a_reader_counts_as_in_2_6(tmp_path):
    same_output_on_both(tmp_path, "allowed", ALLOWED, 6)


PRINCIPALS = PRELUDE + r"""
box.schema.user.grant('u1', 'read', 'space', 'sp')
box.schema.role.create('r1')
box.session.on_access_denied(function(op, otype, name) p('denied', op, otype, name) end)
box.session.su('u1', function() p(pcall(box.schema.user.revoke, 'u1', 'read', 'space', 'sp')) end)
box.session.su('u1', function() p(pcall(box.schema.user.revoke, 'u1', 'write', 'space', 'sp')) end)
box.session.su('u1', function() p(pcall(box.schema.user.grant, 'u1', 'r1')) end)
box.session.su('u1', function() p(pcall(box.schema.user.drop, 'u1')) end)
box.session.su('u1', function() p(pcall(box.schema.role.create, 'r2')) end)
box.session.su('u1', function() p(pcall(box.schema.func.create, 'f')) end)
box.session.su('u1', function() p(pcall(box.space.sp.create_index, box.space.sp, 'sk')) end)
box.session.su('u1', function() p(pcall(box.space.sp.rename, box.space.sp, 'sp2')) end)
box.session.su('u1', function() p(pcall(box.space.sp.bsize, box.space.sp)) end)
box.session.su('u1', function() p(pcall(box.space.sp.index.pk.bsize, box.space.sp.index.pk)) end)
box.session.su('u1', function() p(pcall(box.space.sp.auto_increment, box.space.sp, {'a'})) end)
box.session.su('u1', function() p(pcall(box.schema.user.passwd, 'pw')) end)
box.schema.user.grant('u1', 'create', 'space')
box.session.su('u1', function() p(pcall(box.schema.space.create, 'mine')) end)
box.session.su('u1', function() p(pcall(function() return box.space.mine:create_index('pk').id end)) end)
box.session.su('u1', function() p(pcall(function() return box.space.mine:insert{1} end)) end)
box.session.su('u1', function() p(pcall(function() return box.space.mine:truncate() end)) end)
box.session.su('u1', function() p(pcall(function() return box.space.mine:drop() end)) end)

p(pcall(box.schema.role.drop, 'super'))
p(pcall(box.schema.user.drop, 'guest'))
p(pcall(box.schema.role.drop, 'public'))
p(pcall(box.schema.user.drop, 'admin'))
box.session.su('u1', function() p(pcall(box.schema.user.exists, 'u1')) p(pcall(box.schema.role.exists, 'r1')) p(pcall(box.schema.role.exists, 'public')) p(pcall(box.schema.user.exists, 'admin')) end)
os.exit(0)
"""


def test_grants_drops_and_visibility_of_users_as_in_2_6(tmp_path):
    same_output_on_both(tmp_path, "principals", PRINCIPALS, 32)
