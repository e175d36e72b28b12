"""Sequences compared with Tarantool 2.6 line for line: box.schema.sequence
create/alter/drop with their options, defaults and errors; next, current, set, reset;
wrapping and overflow both ways; create_index{sequence = true | name} filling the key on
INSERT and REPLACE from Lua and over IPROTO (net.box), explicit keys moving the
sequence on; the generated sequence dropped with its space; and, after a restart,
sequences and links that carry on where they were.
"""

from conftest import LUA_PRINT_ROW, same_output_on_both, scripts_in_turn_on_both

SCRIPT = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1, listen = os.getenv('LISTEN')}
""" + LUA_PRINT_ROW + r"""
local s = box.schema.sequence.create('s1')
p('create', s.name, s.id, s.step, s.min, s.max, s.start, s.cycle, s.cache, s.uid)
p('next', s:next(), s:next(), box.sequence.s1:next())
p('current', pcall(s.current, s))
p('set', s:set(100), s:next(), s:current())
p('reset', s:reset(), s:next())
p('not started', pcall(function() s:reset() return s:current() end))
p('exists', pcall(box.schema.sequence.create, 's1'))
p('if_not_exists', box.schema.sequence.create('s1', {if_not_exists = true}).id)
local c = box.schema.sequence.create('c', {start = 5, min = 1, max = 7, step = 2, cycle = true})
p('cycle', c:next(), c:next(), c:next(), c:next())
local o = box.schema.sequence.create('o', {max = 2})
p('overflow', o:next(), o:next(), pcall(o.next, o))
local d = box.schema.sequence.create('d', {step = -1, min = -2, max = 0, start = 0})
p('down', d:next(), d:next(), d:next(), pcall(d.next, d))
p('bad opts', pcall(box.schema.sequence.create, 'b', {start = 10, max = 5}))
p('bad step', pcall(box.schema.sequence.create, 'b', {step = 0}))
p('bad opt', pcall(box.schema.sequence.create, 'b', {bogus = 1}))
s:alter({step = 10})
p('alter', s.step, s:next(), s:next())
s:alter({name = 's2'})
p('rename', box.sequence.s1, box.sequence.s2.name)
p('_sequence', box.space._sequence:get(box.sequence.s2.id))
p('_sequence_data', box.space._sequence_data:get(box.sequence.s2.id))
box.sequence.s2:drop()
p('dropped', box.sequence.s2, box.space._sequence:get(1), box.space._sequence_data:get(1))
p('no such', pcall(box.schema.sequence.drop, 'zzz'))
-- sequences on indexes
local t = box.schema.space.create('t')
t:create_index('pk', {sequence = true})
p('auto', t:insert{box.NULL, 'a'}, t:insert{nil, 'b'}, t:insert{10, 'c'}, t:insert{box.NULL, 'd'})
p('replace', t:replace{box.NULL, 'e'}, t:replace{5, 'f'}, t:insert{box.NULL, 'g'})
p('seq name', box.sequence.t_seq ~= nil, box.sequence.t_seq:current())
p('_space_sequence', box.space._space_sequence:get(t.id))
p('index.sequence', t.index.pk.sequence_id == box.sequence.t_seq.id, t.index.pk.sequence_fieldno)
local u = box.schema.space.create('u')
local us = box.schema.sequence.create('us')
u:create_index('pk', {sequence = 'us'})
p('named', u:insert{box.NULL}, u:insert{box.NULL}, us:current())
p('drop seq in use', pcall(us.drop, us))
p('str pk', pcall(function() local v = box.schema.space.create('v') v:create_index('pk', {parts = {1, 'string'}, sequence = true}) end))
t:drop()
p('space drop drops generated', box.sequence.t_seq)
box.schema.user.grant('guest', 'super')
local w = box.schema.space.create('w')
w:create_index('pk', {sequence = true})
local conn = require('net.box').connect(box.info.listen)
p('iproto', conn.space.w:insert{box.NULL, 'x'}, conn.space.w:insert{box.NULL, 'y'}, conn.space.w:replace{box.NULL, 'z'})
conn:close()
os.exit(0)
"""

BEFORE_RESTART = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local t = box.schema.space.create('t')
t:create_index('pk', {sequence = true})
local s = box.schema.sequence.create('counter', {start = 100, step = 10})
print(t:insert{box.NULL, 'a'}, t:insert{box.NULL, 'b'}, s:next(), s:next())
os.exit(0)
"""

AFTER_RESTART = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
print(box.space.t:insert{box.NULL, 'c'}, box.sequence.t_seq:current(), box.sequence.counter:next(),
      box.space.t.index.pk.sequence_fieldno)
os.exit(0)
"""


def test_sequences_behave_as_in_tarantool(tmp_path):
    same_output_on_both(tmp_path, "sequences.lua", SCRIPT, 30)


def test_sequences_and_their_links_survive_a_restart(tmp_path):
    tarantool, oncebox = scripts_in_turn_on_both(tmp_path, (("before.lua", BEFORE_RESTART), ("after.lua", AFTER_RESTART)))
    assert tarantool == oncebox
    assert tarantool == ["[1, 'a']\t[2, 'b']\t100\t110", "[3, 'c']\t3LL\t120\t1"]


PRIVILEGES = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1, listen = os.getenv('LISTEN')}
""" + LUA_PRINT_ROW + r"""
box.schema.user.create('u', {password = 'p'})
local t = box.schema.space.create('t')
t:create_index('pk', {sequence = true})
box.schema.sequence.create('q', {start = 7})
box.schema.user.grant('u', 'read,write', 'space', 't')
box.schema.user.grant('u', 'execute', 'universe')
local c = require('net.box').connect(box.info.listen, {user = 'u', password = 'p'})
local function try(name, f) p(name, pcall(f)) end
-- A write into the space fills its key from the sequence without any right on it.
try('insert nil id', function() return c.space.t:insert{box.NULL, 'a'} end)
try('replace nil id', function() return c.space.t:replace{box.NULL, 'b'} end)
-- The sequence object is there for anyone; using it needs write access to it.
try('definition', function() return c:eval("return box.sequence.q.name, box.sequence.q.start, box.sequence.q.id") end)
for _, m in ipairs({'next', 'current', 'reset'}) do
    try(m, function() return c:eval("return box.sequence.q:" .. m .. "()") end)
end
try('set', function() return c:eval("return box.sequence.q:set(5)") end)
try('the space sequence', function() return c:eval("return box.sequence.t_seq:next()") end)
box.schema.user.grant('u', 'read', 'sequence', 'q')
try('next with read', function() return c:eval("return box.sequence.q:next()") end)
box.schema.user.grant('u', 'write', 'sequence', 'q')
try('next with write', function() return c:eval("return box.sequence.q:next()") end)
try('current with write', function() return c:eval("return box.sequence.q:current()") end)
try('set with write', function() return c:eval("box.sequence.q:set(20) return box.sequence.q:next()") end)
try('reset with write', function() return c:eval("box.sequence.q:reset() return box.sequence.q:next()") end)
try('others still refused', function() return c:eval("return box.sequence.t_seq:current()") end)
box.schema.user.grant('u', 'write', 'sequence')
try('every sequence', function() return c:eval("return box.sequence.t_seq:next()") end)
try('create', function() return c:eval("return box.schema.sequence.create('z').id") end)
-- The owner needs no grant.
box.schema.user.grant('u', 'read,write', 'space', '_sequence')
box.schema.user.grant('u', 'read,write', 'space', '_sequence_data')
box.schema.user.create('v', {password = 'p'})
box.schema.user.grant('v', 'execute', 'universe')
box.schema.user.grant('v', 'read,write', 'space', '_sequence')
box.schema.user.grant('v', 'read,write', 'space', '_sequence_data')
box.schema.user.grant('v', 'create', 'sequence')
local cv = require('net.box').connect(box.info.listen, {user = 'v', password = 'p'})
p('owner', pcall(function() return cv:eval("box.schema.sequence.create('mine') return box.sequence.mine:next(), box.sequence.mine:current()") end))
p('granted on every sequence', pcall(function() return c:eval("return box.sequence.mine:next()") end))
os.exit(0)
"""


def test_sequence_privileges_as_in_tarantool(tmp_path):
    """next, current, set and reset need write access to the sequence (its owner has
    it); a space's key filled from its sequence needs none; box.sequence's
    definitions are readable by anyone."""
    same_output_on_both(tmp_path, "sequence_privileges.lua", PRIVILEGES, 18)
