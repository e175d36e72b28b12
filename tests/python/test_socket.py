"""The `socket` module against Tarantool 2.6: the same script (an echo tcp_server, a
tcp_connect client, every read form, timeouts, errors, fibers running while one waits
on a socket, the server's close) prints the same on both."""
import os
import subprocess
import textwrap

import pytest

from conftest import ONCEBOX, free_port, run_script_on_both

SCRIPT = textwrap.dedent(r"""
local socket = require('socket')
local fiber = require('fiber')
local errno = require('errno')
box.cfg{listen = os.getenv('LISTEN'), work_dir = os.getenv('WORK'), log_level = 1}
local out = {}
local function say(...) local t = {} for i = 1, select('#', ...) do t[#t+1] = tostring((select(i, ...))) end print(table.concat(t, ' ')) end
local server, name = socket.tcp_server('127.0.0.1', 0, function(s, from)
    say('handler from', from.host, type(from.port), from.family)
    while true do
        local line = s:read('\n', 5)
        if line == nil or line == '' then say('handler eof', line) break end
        if line == 'quit\n' then s:write('bye\n') break end
        s:write('echo:' .. line)
    end
end)
say('server', type(server), server ~= nil)
local port = server:name().port
say('name', server:name().host, server:name().family, type(port))
local c = socket.tcp_connect('127.0.0.1', port)
say('connected', c ~= nil, c:peer().host, c:peer().port == port)
say('write', c:write('hello\nwor'))
say('read1', c:read('\n'))
c:write('ld\n')
say('read2', c:read({delimiter = '\n'}))
c:write('abcdef\n')
say('read3', c:read(3), c:read(2), c:read('\n'))
say('timeout', c:read('\n', 0.1), c:errno() == errno.ETIMEDOUT, errno() == errno.ETIMEDOUT)
c:write('quit\n')
say('bye', c:read('\n'))
say('eof', c:read(10))
say('close', c:close())
local bad, err = socket.tcp_connect('127.0.0.1', 1)
say('refused', bad, errno() == errno.ECONNREFUSED)
-- other fibers run while one waits on a socket
local c2 = socket.tcp_connect('127.0.0.1', port)
local got = {}
fiber.create(function() got[#got+1] = 'reader waits' local l = c2:read('\n') got[#got+1] = 'reader got ' .. l end)
got[#got+1] = 'main goes on'
c2:write('x\n')
fiber.sleep(0.2)
say(table.concat(got, '; '))
c2:close()
say('server close', server:close())
fiber.sleep(0.1)
say('after close', socket.tcp_connect('127.0.0.1', port))
local ai = socket.getaddrinfo('127.0.0.1', 80)
say('addrinfo', #ai > 0, ai[1].host, ai[1].port)
os.exit(0)
""")


def test_socket_script_matches_tarantool(tmp_path):
    real, ours = run_script_on_both(tmp_path, "socket.lua", SCRIPT)
    assert ours == real
    assert "reader waits; main goes on; reader got echo:x" in ours


def test_a_call_reads_a_socket_while_the_server_answers_others(tmp_path):
    """A CALL whose fiber waits on a socket does not hold up other requests."""
    import tarantool
    script = textwrap.dedent(r"""
        local socket = require('socket')
        local fiber = require('fiber')
        box.cfg{listen = os.getenv('LISTEN'), work_dir = os.getenv('WORK'), log_level = 1}
        box.schema.user.grant('guest', 'super', nil, nil, {if_not_exists = true})
        local server = socket.tcp_server('127.0.0.1', 0, function(s)
            fiber.sleep(1.0)
            s:write('late answer\n')
        end)
        function ask()
            local c = socket.tcp_connect('127.0.0.1', server:name().port)
            local line = c:read('\n', 10)
            c:close()
            return line
        end
    """)
    for binary in ("tarantool", ONCEBOX):
        work = tmp_path / os.path.basename(binary)
        work.mkdir()
        port = free_port()
        env = dict(os.environ, WORK=str(work), LISTEN=f"127.0.0.1:{port}")
        (work / "serve.lua").write_text(script)
        proc = subprocess.Popen([binary, "serve.lua"], cwd=work, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            from conftest import wait_port
            import threading
            import time
            wait_port(port, proc)
            # The script goes on after box.cfg opens the port: wait until ask() exists.
            deadline = time.time() + 10
            while True:
                try:
                    probe = tarantool.connect("127.0.0.1", port)
                    if probe.eval("return ask ~= nil").data == [True]:
                        probe.close()
                        break
                    probe.close()
                except tarantool.error.Error:
                    pass
                assert time.time() < deadline, (binary, "the script did not define ask()")
                time.sleep(0.05)
            slow = tarantool.connect("127.0.0.1", port)
            fast = tarantool.connect("127.0.0.1", port)
            result = {}
            t = threading.Thread(target=lambda: result.setdefault("ask", slow.call("ask").data))
            t.start()
            time.sleep(0.1)
            assert fast.ping(notime=True) == "Success"
            assert fast.eval("return 1 + 1").data == [2]
            assert t.is_alive() and "ask" not in result, (binary, "others were answered while ask() waited")
            t.join(timeout=10)
            assert result["ask"] == ["late answer\n"], binary
            slow.close()
            fast.close()
        finally:
            proc.kill()
            proc.wait()


IOWAIT_SCRIPT = r"""
local socket, fiber, ffi = require('socket'), require('fiber'), require('ffi')
pcall(ffi.cdef, 'int pipe(int fds[2]); long write(int fd, const void *buf, size_t n);')
local function run()
    local fds = ffi.new('int[2]')
    ffi.C.pipe(fds)
    print('nothing to read', socket.iowait(fds[0], 'R', 0.05), socket.iowait(fds[0], 1, 0.05))
    -- A zero timeout does not wait.
    local t0 = fiber.clock()
    print('zero timeout', socket.iowait(fds[0], 'R', 0), socket.iowait(fds[1], 'W', 0))
    print('writable', socket.iowait(fds[1], 'W', 0.05), socket.iowait(fds[1], 'rw', 0.05), socket.iowait(fds[1], 3, 0.05))
    fiber.create(function() fiber.sleep(0.05) ffi.C.write(fds[1], 'x', 1) end)
    local started = fiber.clock()
    print('readable once written', socket.iowait(fds[0], 'r', 5), fiber.clock() - started < 2)
    print(pcall(socket.iowait, fds[0], 'x'))
    print(pcall(socket.iowait, fds[0], 0))
    local t = fiber.clock()
    socket.iowait(nil, nil, 0.05)
    print('slept', fiber.clock() - t >= 0.04)
end
-- In the main chunk before box.cfg{}, then in a fiber after it.
run()
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local done = fiber.channel(1)
fiber.create(function() run() done:put(true) end)
done:get()
os.exit(0)
"""


def test_iowait_as_2_6(tmp_path):
    """socket.iowait (luatest's output capture waits on its pipes with it): events as
    'R'/'W'/'RW' or 1/2/3 and the answer in the same form, a time-out, a write by
    another fiber waking the wait, a nil fd sleeping, 2.6's usage error."""
    tarantool, oncebox = run_script_on_both(tmp_path, "iowait.lua", IOWAIT_SCRIPT)
    assert tarantool == oncebox
    assert tarantool.count("readable once written\tR\ttrue") == 2


RAW_SCRIPT = r"""
local socket = require('socket')
local errno = require('errno')
local fiber = require('fiber')
local function show(v)
    if type(v) ~= 'table' then return tostring(v) end
    local keys = {} for k in pairs(v) do keys[#keys+1] = k end table.sort(keys)
    local out = {} for _, k in ipairs(keys) do out[#out+1] = k .. '=' .. show(v[k]) end
    return '{' .. table.concat(out, ', ') .. '}'
end
local function p(label, ...)
    local t = {} for i = 1, select('#', ...) do t[i] = show((select(i, ...))) end
    print(((label .. '\t' .. table.concat(t, ' | ')):gsub('lua:%d+:', 'lua:N:')))
end
-- UDP, as the metrics module's graphite exporter sends.
local u = socket('AF_INET', 'SOCK_DGRAM', 'udp')
p('udp', type(u), (tostring(u):gsub('%d+', 'N')))
p('fresh errno', u:errno(), u:error())
p('bind', u:bind('127.0.0.1', 0), u:errno())
local name = u:name()
p('name', name.host, name.family, name.type, name.protocol, type(name.port))
p('recvfrom empty', u:recvfrom(10), u:errno() == errno.EAGAIN, u:error())
local c = socket('AF_INET', 'SOCK_DGRAM', 'udp')
p('sendto', c:sendto('127.0.0.1', name.port, 'hello world'))
p('readable', u:readable(1))
local msg, from = u:recvfrom(5)
p('recvfrom', msg, from.host, from.family, type(from.port))
p('rest of the datagram is gone', u:recvfrom(50))
p('readable timeout', u:readable(0.05))
p('close', u:close(), c:close())
p('close again', pcall(u.close, u))
p('bad names', socket('AF_BAD', 'SOCK_DGRAM', 'udp'), socket('AF_INET', 'SOCK_BAD', 'udp'),
  socket('AF_INET', 'SOCK_DGRAM', 'nope'), errno() == errno.EPROTOTYPE, socket('AF_INET', 'SOCK_DGRAM'),
  errno() == errno.EINVAL)
p('other forms', socket('AF_INET6', 'SOCK_DGRAM', 'udp') ~= nil, socket('PF_INET', 'SOCK_STREAM', 'tcp') ~= nil,
  socket('AF_UNIX', 'SOCK_STREAM', 0) ~= nil, socket(2, 2, 17) ~= nil)
-- TCP set up call by call.
local l = socket('AF_INET', 'SOCK_STREAM', 'tcp')
p('reuse', l:setsockopt('SOL_SOCKET', 'SO_REUSEADDR', true), l:getsockopt('SOL_SOCKET', 'SO_REUSEADDR'))
p('tcp bind', l:bind('127.0.0.1', 0))
p('listen', l:listen(128))
local port = l:name().port
p('accept none', l:accept())
local cl = socket('AF_INET', 'SOCK_STREAM', 'tcp')
p('connect', cl:sysconnect('127.0.0.1', port), cl:errno() == errno.EINPROGRESS)
p('writable', cl:writable(1), cl:errno())
p('l readable', l:readable(1))
local s = l:accept()
p('accepted', type(s), s:peer().host, s:name().port == port, s:peer().type, s:peer().protocol)
p('tostring', (tostring(s):gsub('%d+', 'N')))
p('write', cl:write('abc\n'))
p('send', cl:send('def'))
p('read line', s:read('\n', 1))
p('read 3', s:read(3, 1))
p('recv none', s:recv(10))
p('read timeout', s:read(1, 0.05), s:errno() == errno.ETIMEDOUT, s:error())
cl:write('hello\nworld')
p('read forms', s:read({chunk = 3}, 1), s:read('\n', 1), s:read({delimiter = 'x', chunk = 10}, 0.05))
cl:shutdown(1)
p('read eof', s:read(10, 1), s:read(10, 1))
p('nonblock', s:nonblock(), s:nonblock(false), s:nonblock(), s:nonblock(true))
p('fd', type(s:fd()))
p('options', s:getsockopt('SOL_SOCKET', 'SO_TYPE'), s:getsockopt('IPPROTO_TCP', 'TCP_NODELAY'),
  s:setsockopt('IPPROTO_TCP', 'TCP_NODELAY', true), s:getsockopt('IPPROTO_TCP', 'TCP_NODELAY'))
p('bad option', pcall(s.setsockopt, s, 'SOL_SOCKET', 'SO_NOPE', 1))
local r = socket('AF_INET', 'SOCK_STREAM', 'tcp')
p('connect refused', r:sysconnect('127.0.0.1', 1), r:writable(1), r:errno(),
  r:getsockopt('SOL_SOCKET', 'SO_ERROR'))
p('sysread syswrite', s:sysread(10), s:syswrite('x'))
local u2 = socket('AF_INET', 'SOCK_DGRAM', 'udp')
p('udp connect', u2:sysconnect('127.0.0.1', 9), u2:peer().port, u2:send('x'))
p('wait', s:wait(0.01))
-- A fiber reading waits while the others go on, until the data comes.
local c2 = socket('AF_INET', 'SOCK_STREAM', 'tcp')
c2:sysconnect('127.0.0.1', port)
l:readable(1)
local s2 = l:accept()
local got
fiber.create(function() got = s2:read('!', 2) end)
fiber.sleep(0.05)
p('fiber still waiting', got)
c2:write('done!')
fiber.sleep(0.05)
p('fiber got', got)
l:close() s:close() cl:close() r:close() u2:close() c2:close() s2:close()
p('after close', pcall(s.fd, s))
os.exit(0)
"""


def test_sockets_made_by_hand_as_2_6(tmp_path):
    """socket(domain, type, protocol): UDP bind/sendto/recvfrom (a datagram's rest
    dropped), TCP bind/listen/accept/sysconnect/read/write/recv/send, readable,
    writable, wait, options, nonblock, errno and error, names and tostring, 2.6's
    failures; non-blocking, each call one system call, waits through iowait."""
    tarantool, oncebox = run_script_on_both(tmp_path, "raw_socket.lua", RAW_SCRIPT)
    assert oncebox == tarantool
    assert "recvfrom\thello | 127.0.0.1 | AF_INET | number" in tarantool
    assert len(tarantool) == 44
    assert "fiber got\tdone!" in tarantool


UNIX_SERVER = r"""
local socket, fio = require('socket'), require('fio')
local srv = socket.tcp_server('unix/', './x.sock', function(s, from)
    s:write('hello ' .. from.host .. ' [' .. tostring(from.port) .. '] ' .. tostring(from.family) .. '\n')
    s:write('got ' .. tostring(s:read('\n')))
end)
print(srv ~= nil, fio.path.exists('./x.sock'))
local n = srv:name() print(n.host, n.port, n.family, n.type, n.protocol)
local c = socket.tcp_connect('unix/', './x.sock')
print(c ~= nil, c:read('\n'))
c:write('abc\n')
print(c:read(7))
print(srv:close(), fio.path.exists('./x.sock'), socket.tcp_connect('unix/', './x.sock'))
os.exit(0)
"""


def test_tcp_server_on_a_unix_socket(tmp_path):
    """socket.tcp_server('unix/', path, handler) as 2.6: the socket file, the
    server's name, the client's address as the handler gets it, close() removing
    the file."""
    real, ours = run_script_on_both(tmp_path, "unix_server.lua", UNIX_SERVER)
    assert ours == real
    assert ours[0] == "true\ttrue" and ours[-1] == "true\tfalse\tnil", ours
