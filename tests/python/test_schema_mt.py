"""box.schema.space_mt, index_mt, memtx_index_mt and vinyl_index_mt compared
with real Tarantool 2.6: modules extend every space or index through them, an
engine's own methods stay its indexes', and a method set on one object's own
metatable extends that object alone; a vinyl space keeps its engine's name, and
a space's engine cannot change.
"""
from conftest import LUA_PRINT_ROW, same_output_on_both

SCRIPT = LUA_PRINT_ROW + r"""
box.cfg{}
local m = box.schema.create_space('m', {engine = 'memtx'})
local v = box.schema.create_space('v', {engine = 'vinyl'})
local m_pk, m_sk = m:create_index('pk'), m:create_index('sk')
local v_pk = v:create_index('pk')
p(getmetatable(m).__index == getmetatable(v).__index, getmetatable(m) == getmetatable(v))
p(getmetatable(m_pk).__index == getmetatable(m_sk).__index, getmetatable(m_pk) == getmetatable(m_sk),
  getmetatable(m_pk).__index == getmetatable(v_pk).__index)
function box.schema.space_mt.twice(space, x) return space.name .. x .. x end
p(m:twice('a'), v:twice('b'))
function box.schema.index_mt.common(index) return 'common ' .. index.name end
function box.schema.memtx_index_mt.only_memtx(index) return 'memtx ' .. index.name end
function box.schema.vinyl_index_mt.only_vinyl(index) return 'vinyl ' .. index.name end
p(m_sk:common(), v_pk:common(), m_pk:only_memtx(), v_pk:only_vinyl())
p(box.schema.index_mt.only_memtx, v_pk.only_memtx, m_pk.only_vinyl)
p(box.schema.memtx_index_mt.common == box.schema.index_mt.common)
getmetatable(m).mine = function() return 'mine' end
p(m.mine(), v.mine, m.twice ~= nil, m:select()[1])
getmetatable(m_pk).mine = function() return 'pk own' end
p(m_pk.mine(), m_sk.mine, m_pk:select()[1], #m_pk:select())
m:insert{1}
p(m_pk:get{1}[1], m:get{1}[1], box.space.m.index.pk:only_memtx())
p(v.engine, m.engine)
p(pcall(box.space._space.update, box.space._space, {v.id}, {{'=', 4, 'memtx'}}))
os.exit(0)
"""


def test_space_and_index_methods_are_extended_as_in_2_6(tmp_path):
    same_output_on_both(tmp_path, "schema_mt.lua", SCRIPT, 11)
