"""box.info() and its callable items compared with real Tarantool 2.6: box.info()
holds 2.6's keys with their types (it had five), box.info.gc() (the last
checkpoint), box.info.sql(), box.info.vinyl() and box.stat.vinyl() (2.6's
figures for an unused vinyl engine), box.info.replication_anon(), box.info.memory,
box.info.package; and box.info() for a user without read access to
_schema (connection pools call it as their user).
"""
from conftest import same_output_on_both

SCRIPT = r"""
box.cfg{}
local function shape(v, depth)
    if type(v) ~= 'table' then return type(v) end
    local k = {}
    for x, y in pairs(v) do k[#k + 1] = tostring(x) .. '=' .. (depth > 0 and shape(y, depth - 1) or type(y)) end
    table.sort(k)
    return '{' .. table.concat(k, ',') .. '}'
end
print(shape(box.info(), 0))
print(shape(box.info, 0))
for _, k in ipairs({'gc', 'sql', 'vinyl', 'replication_anon', 'memory'}) do print(k, type(box.info[k]), shape(box.info[k](), k == 'gc' and 0 or 2)) end
print(shape(box.stat.vinyl(), 2))
print(box.info.package, box.info().replication_anon.count)
local s = box.schema.space.create('t') s:create_index('pk') s:replace{1}
local gc = box.info.gc()
print(gc.signature <= box.info.signature, gc.checkpoints[1].signature == gc.signature, gc.checkpoint_is_in_progress, #gc.consumers, #gc.checkpoints)
print(require('yaml').encode(box.info.vinyl()) == require('yaml').encode(box.stat.vinyl()))
print(box.info.vinyl().regulator.dump_watermark, box.info.sql().cache.size)
os.exit(0)
"""


def test_box_info_as_2_6(tmp_path):
    same_output_on_both(tmp_path, "info", SCRIPT, 12)


AS_USER = r"""
box.cfg{listen = os.getenv('LISTEN')}
box.schema.user.create('u', {password = 'p'})
box.schema.user.grant('u', 'execute', 'universe')
rawset(_G, 'info', function() local i = box.info() return i.ro, i.status, type(i.cluster.uuid), box.info.cluster.uuid == box.space._schema:get{'cluster'}[2] end)
local c = require('net.box').connect(os.getenv('LISTEN'), {user = 'u', password = 'p'})
print(pcall(c.eval, c, "local i = box.info() return i.ro, i.status, type(i.cluster.uuid)"))
print(info())
os.exit(0)
"""


def test_box_info_needs_no_read_access_as_2_6(tmp_path):
    same_output_on_both(tmp_path, "info_as_user", AS_USER, 2)
