"""console.connect: a console (a text console session's line, or console.start
with the on_start/on_client_disconnect hooks tarantoolctl uses) connected to
another instance, by its IPROTO port or its text console, compared with real
Tarantool 2.6 (ports and source positions aside)."""
import re

from conftest import run_script_on_both


def normalised(lines):
    """Lines with addresses' ports and builtin source positions made alike."""
    out = []
    for line in lines:
        line = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", line)
        out.append(re.sub(r"console\.lua:\d+:", "console.lua:N:", line))
    return out


FROM_A_TEXT_CONSOLE = r"""
box.cfg{listen = os.getenv('LISTEN'), log_level = 1}
box.schema.user.grant('guest', 'super', nil, nil, {if_not_exists = true})
local console, socket = require('console'), require('socket')
local s = console.listen('127.0.0.1:0')
local c = socket.tcp_connect('127.0.0.1', s:name().port)
c:read{chunk = 128}
local iproto, text = os.getenv('LISTEN'), '127.0.0.1:' .. s:name().port
local function ev(line, eos)
    c:write(line .. '\n')
    print(string.format('%-45s => %q', line, c:read(eos or '...\n')))
end
print(pcall(console.connect, iproto))
ev('box.session.type()')
-- To the instance's IPROTO port: lines run there, in a binary session.
ev(string.format("require('console').connect('%s')", iproto))
ev('box.session.type()')
ev('1 + 1')
ev('error("remote boom")')
ev('\\set output lua', ';')
ev('box.session.type()', ';')
ev('\\set output yaml')
-- `~.` leaves the remote console (nothing is answered).
c:write('~.\n')
ev('box.session.type()')
-- To a text console: its pushes come through.
ev(string.format("require('console').connect('%s')", text))
ev('box.session.type()')
ev('box.session.push(5) return 6')
print(string.format('%q', c:read('...\n')))
c:write('~.\n')
for _, args in ipairs({"'127.0.0.1:1'", '', "'nonsense'", "'baduser:pw@" .. iproto .. "'"}) do
    ev(string.format("require('console').connect(%s)", args))
end
ev('box.session.type()')
-- `~.` on a console connected nowhere ends the session.
c:write('~.\n')
print(string.format('%q', c:read{chunk = 10, timeout = 5}))
os.exit(0)
"""


def test_console_connect_from_a_text_console(tmp_path):
    tarantool, oncebox = run_script_on_both(tmp_path, "connect_text.lua", FROM_A_TEXT_CONSOLE)
    assert normalised(oncebox) == normalised(tarantool)
    text = "\n".join(tarantool)
    assert "- binary\\" in tarantool and "--- 5\\" in tarantool, text
    assert "- error: Connection is not established\\" in tarantool, text


FROM_CONSOLE_START = r"""
box.cfg{listen = os.getenv('LISTEN'), log_level = 1}
box.schema.user.grant('guest', 'super', nil, nil, {if_not_exists = true})
local console = require('console')
print(pcall(console.on_start, 5))
print(pcall(console.ac, true))
print(pcall(console.eos), pcall(console.eos, 'x'))
-- As tarantoolctl connect: connect from on_start, stop when the remote goes.
console.on_start(function(self)
    local ok, err = pcall(console.connect, os.getenv('LISTEN'))
    if not ok then self:print(err) self.running = false end
end)
console.on_client_disconnect(function(self) print('disconnected') self.running = false end)
console.start()
print('again', pcall(console.start))
console.on_start(function(self) self:print('started') self.running = false end)
print('once more', pcall(console.start))
os.exit(0)
"""


def test_console_start_connected_from_on_start(tmp_path):
    tarantool, oncebox = run_script_on_both(
        tmp_path, "connect_start.lua", FROM_CONSOLE_START,
        stdin_text="1 + 1\nbox.session.type()\nfunction f()\nreturn 5 end\nf()\n",
    )
    assert normalised(oncebox) == normalised(tarantool)
    assert "127.0.0.1:PORT> box.session.type()" in normalised(tarantool)
