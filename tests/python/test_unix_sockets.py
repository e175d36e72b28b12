"""Unix sockets, compared with real Tarantool 2.6 line for line: box.cfg
listen on `unix/:/path` and on a bare path (box.info.listen shows
"unix/:(socket)"), net.box connecting through `unix/:/path`, a bare path and
`login@unix/:/path` (and failing on a missing socket as 2.6 does),
socket.tcp_connect('unix/', path) with its peer and name, errno after a failed
connect, and the admin console served on a Unix socket.
"""
from conftest import same_output_on_both

SCRIPT = r"""
local WORK = os.getenv('WORK')
local function rel(v) return (tostring(v):gsub(WORK:gsub('%p', '%%%0'), '<work>')) end
local function show(t)
  if type(t) ~= 'table' then return tostring(t) end
  local keys = {}
  for k, v in pairs(t) do keys[#keys + 1] = k .. '=' .. rel(v) end
  table.sort(keys)
  return table.concat(keys, ' ')
end
box.cfg{listen = WORK .. '/a.sock'}
print(box.info.listen)
box.cfg{listen = 'unix/:' .. WORK .. '/b.sock'}
print(box.info.listen)
box.schema.user.grant('guest', 'execute', 'universe', nil, {if_not_exists = true})
local net_box = require('net.box')
for _, uri in ipairs({'unix/:' .. WORK .. '/b.sock', WORK .. '/b.sock', 'guest@unix/:' .. WORK .. '/b.sock',
                      'unix/:' .. WORK .. '/none.sock'}) do
  local c = net_box.connect(uri)
  print(c.state, c.error, c.state == 'active' and c:eval('return 1 + 1') or nil, c.host, rel(c.port))
  c:close()
end
local socket, errno = require('socket'), require('errno')
local s = socket.tcp_connect('unix/', WORK .. '/b.sock')
print(s ~= nil, #s:read(128))
print(show(s:peer()))
print(show(s:name()))
s:close()
print(socket.tcp_connect('unix/', WORK .. '/none.sock'), errno() == errno.ENOENT, errno.strerror())
require('console').listen('unix/:' .. WORK .. '/c.sock')
local console = socket.tcp_connect('unix/', WORK .. '/c.sock')
print((console:read(128):gsub('%s+$', '')))
console:write('1 + 1\n')
print(console:read('...\n'))
os.exit(0)
"""


def test_unix_sockets_for_listen_net_box_socket_and_console(tmp_path):
    same_output_on_both(tmp_path, "unix.lua", SCRIPT, 16)


LISTEN_OFF = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local socket = require('socket')
local path = os.getenv('WORK') .. '/off.sock'
local tcp = os.getenv('LISTEN')
local refused = {0, 0}
for _ = 1, 30 do
    box.cfg{listen = 'unix/:' .. path}
    local s = socket.tcp_connect('unix/', path)
    if s then s:close() end
    box.cfg{listen = ''}
    s = socket.tcp_connect('unix/', path)
    if s == nil then refused[1] = refused[1] + 1 else s:close() end
    box.cfg{listen = tcp}
    box.cfg{listen = ''}
    s = socket.tcp_connect(tcp:match('^(.*):'), tonumber(tcp:match(':(%d+)$')))
    if s == nil then refused[2] = refused[2] + 1 else s:close() end
end
print('refused after listen off', refused[1], refused[2])
os.exit(0)
"""


def test_a_connect_after_listen_is_turned_off_is_refused_as_2_6(tmp_path):
    """box.cfg{listen = ''} returns once the socket is closed (the listener
    closed a moment later, so a connect right after it could still be taken)."""
    assert same_output_on_both(tmp_path, "off.lua", LISTEN_OFF, 1) == ["refused after listen off\t30\t30"]
