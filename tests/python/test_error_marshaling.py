"""Errors through net.box compared with real Tarantool 2.6: with the session
setting error_marshaling_enabled, a box.error object returned by a function
arrives as an error object (MP_ERROR, extension type 3) with its type, base
type, fields, trace and prev chain, nested in a table too; a raised one is rebuilt from the reply's error stack (IPROTO_ERROR) with the
same; box.func's call() checks the right to execute.
"""
from conftest import LUA_PRINT_ROW, same_output_on_both

SCRIPT = LUA_PRINT_ROW + r"""
box.cfg{listen = os.getenv('LISTEN')}
box.schema.user.grant('guest', 'super')
function forbidden() return 'ran' end
box.schema.func.create('forbidden')
box.session.su('guest')
box.schema.user.revoke('guest', 'super')
box.session.su('admin')
box.session.su('guest', function()
    local ok, err = pcall(box.func.forbidden.call, box.func.forbidden)
    p('func:call as guest', ok, tostring(err), err and err.type, err and err.access_type, err and err.object_name)
    access_denied = err
end)
box.schema.user.grant('guest', 'super')
function custom() return box.error.new({code = 1001, reason = 'R2', type = 'MyError'}) end
function stacked()
    local e1 = box.error.new({code = 1003, reason = 'R3', type = 'MyError2'})
    e1:set_prev(box.error.new({code = 1004, reason = 'R4'}))
    return e1
end
function denied() return access_denied end
function throw(name) box.error(_G[name]()) end
local function show(e)
    if type(e) ~= 'cdata' then return type(e) .. ' ' .. tostring(e) end
    local trace = type(e.trace) == 'table' and e.trace[1]
    return table.concat({tostring(e), tostring(e.type), tostring(e.base_type), tostring(e.code),
        tostring(e.custom_type), tostring(e.object_type), tostring(e.object_name), tostring(e.access_type),
        tostring(trace and type(trace.file) == 'string' and type(trace.line) == 'number'),
        e.prev and show(e.prev) or '-'}, ' / ')
end
local c = require('net.box').connect(box.info.listen)
p('plain', show(c:call('custom')))
c:eval('box.session.settings.error_marshaling_enabled = true')
for _, name in ipairs({'custom', 'stacked', 'denied'}) do
    p('returned', name, show(c:call(name)))
    local ok, err = pcall(c.call, c, 'throw', {name})
    p('raised', name, ok, show(err))
end
p('nested', show(c:eval('return {box.error.new({code = 5, reason = "in a table"})}')[1]))
c:eval('box.session.settings.error_marshaling_enabled = false')
p('off again', show(c:call('custom')))
os.exit(0)
"""


def test_errors_travel_through_net_box_as_2_6_marshals_them(tmp_path):
    lines = same_output_on_both(tmp_path, "marshaling.lua", SCRIPT, 10)
    assert lines[2].startswith("returned | custom | R2 / MyError / CustomError / 1001")
