"""The console as `tarantoolctl connect` uses it: `require('console').eval(line)` over
EVAL, rendering YAML as Tarantool 2.6 does (compared with the real one), and the real
`tarantoolctl connect` against oncebox."""
import os
import pty
import select
import shutil
import subprocess
import time

import pytest

from conftest import ADMIN_PASSWORD, ONCEBOX, same_output_on_both, start_oncebox, start_tarantool
from iproto_raw import EVAL, Raw

SETUP = "s = box.schema.space.create('t') s:create_index('pk') s:insert{1, 'Alice', 55} s:insert{2, [[it's]], {a = 1}}"

LINES = [
    "return true", "1, 'two', {3}", "box.space.t:select{}", "box.space.t:get{1}", "", "nil", "{a = 1}",
    "{b = {1, 2}}", "{}", "'yes'", "'1'", "'null'", "'a: b'", "1.5", "box.NULL", "error('x')", "x = ",
    "{1, {2, 3}, {k = 'v'}}", "'multi\\nline'", "-5", "2^64", "box.tuple.new{1, 'a b', true, 0.5}",
    "local a = 1", "string.rep('x', 3)", "{'', ' lead', 'tab\\t'}", "box.space.t:insert{1, 'dup'}",
    "{true, false}", "'Alice'", "box.space.nope:select{}", "box.error(box.error.NO_SUCH_USER, 'who')",
    "string.rep('word ', 40)", "{k = string.rep('long value ', 12)}", "box.space.t:get{1}\n1, 'two'",
    "require('json').encode({1, 'a', {b = true}, box.NULL, 1.5, 'q\"'})", "require('json').decode('[1, \"x\", null]')",
    "require('json').encode(box.space.t:get{1})",
    # Tables met more than once (shared or cyclic): anchors and aliases.
    "t = {1} return {a = t}, {b = t}", "t = {1} return t, t", "t = {} return {t, t}", "t = {1} return {t, t}",
    "t = {k = 1} return {t, t}", "local a = {} a[1] = a return a", "t = {k = 'v'} return {x = t}, t",
    "t = {1} return {setmetatable({t}, {__serialize = 'seq'}), t}", "local t = {1} return require('yaml').encode({t, t})",
    # A value the YAML writer fails on: the console says so.
    "setmetatable({}, {__serialize = function() error('no way', 0) end})",
]


@pytest.fixture(scope="module")
def servers():
    real, ours = start_tarantool(), start_oncebox()
    for inst in (real, ours):
        c = Raw(inst.host, inst.port)
        assert c.auth("admin", ADMIN_PASSWORD)[0][0] == 0
        assert c.request(EVAL, {0x27: SETUP, 0x21: []})[0][0] == 0
        c.close()
    yield real, ours
    real.stop()
    ours.stop()


def console_eval(inst, line):
    c = Raw(inst.host, inst.port)
    c.auth("admin", ADMIN_PASSWORD)
    h, b, _ = c.request(EVAL, {0x27: 'return require("console").eval(...)', 0x21: [line + "\n"]})
    c.close()
    assert h[0] == 0, b
    return b[0x30][0]


@pytest.mark.parametrize("line", LINES)
def test_console_eval_matches_tarantool(servers, line):
    real, ours = servers
    assert console_eval(ours, line) == console_eval(real, line)


def test_tarantoolctl_connect(servers):
    if not shutil.which("tarantoolctl"):
        pytest.skip("tarantoolctl is not installed")
    real, ours = servers
    # Piped input reaches the server as one chunk, as with the real tarantoolctl.
    script = "return box.space.t:get{1}, 'two', box.space.t:count(), box.space.nope\n"
    outs = []
    for inst in (real, ours):
        out = subprocess.run(["tarantoolctl", "connect", f"admin:{ADMIN_PASSWORD}@{inst.host}:{inst.port}"],
                             input=script, capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        outs.append(out.stdout.replace(str(inst.port), "PORT"))
    assert outs[1] == outs[0]
    assert "[1, 'Alice', 55]" in outs[1]


PIPED_SCRIPTS = [
    # (script, exit code): piped stdin is sent as one chunk; an error exits with 3.
    ("local a = 1 + 1\nreturn a, box.space._space:count() > 0, {x = 1}, nil\n", 0),
    ("x = 5\nerror('boom')\n", 3),
    ("box.error(box.error.NO_SUCH_USER, 'who')\n", 3),
    ("return box.space.t:insert{1, 'dup'}\n", 3),
    ("box.space._space:count() > 0\n", 0),  # a lone expression is retried as `return ...`
    ("box.space._space:count() > 0\n1 + 1\n", 3),  # not in a chunk of several lines
]


@pytest.mark.parametrize("script,code", PIPED_SCRIPTS)
def test_tarantoolctl_connect_piped_script(servers, script, code):
    """Exit code, YAML on stdout and the error on stderr match the real server's."""
    if not shutil.which("tarantoolctl"):
        pytest.skip("tarantoolctl is not installed")
    results = []
    for inst in servers:
        out = subprocess.run(["tarantoolctl", "connect", f"admin:{ADMIN_PASSWORD}@{inst.host}:{inst.port}"],
                             input=script, capture_output=True, text=True, timeout=30)
        results.append((out.returncode, out.stdout, out.stderr.replace(str(inst.port), "PORT")))
    assert results[1] == results[0]
    assert results[1][0] == code
    assert (results[1][1].startswith("---\n") if code == 0 else "Error while executing remote command" in results[1][2])


INTERACTIVE_LINES = ["box.space._space:count() > 0", "1 + 1", "error('x')", "box.error(box.error.NO_SUCH_USER, 'who')",
                     "local t = {1, 'a', {b = true}}", "{1, 'a', {b = true}}", "box.space.t:get{1}",
                     "box.space.t:insert{1, 'dup'}",
                     # Over IPROTO the server's console.eval runs the line: `\\q` there
                     # quits no console of the server's, and the client goes on.
                     "\\help", "\\q", "2 + 2"]


def interactive_transcript(inst, lines):
    """Runs `tarantoolctl connect` on a pseudo-terminal, one line at a time, as a person would."""
    prompt = f"{inst.host}:{inst.port}> ".encode()

    def read_prompt(fd):
        buf = b""
        deadline = time.time() + 15
        while not buf.endswith(prompt) and time.time() < deadline:
            if select.select([fd], [], [], 0.1)[0]:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                buf += chunk
        return buf

    pid, fd = pty.fork()
    if pid == 0:
        os.execvp("tarantoolctl", ["tarantoolctl", "connect", f"admin:{ADMIN_PASSWORD}@{inst.host}:{inst.port}"])
    try:
        answers = [read_prompt(fd)]
        for line in lines:
            os.write(fd, line.encode() + b"\n")
            answers.append(read_prompt(fd))
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(fd)
    return [a.decode().replace(str(inst.port), "PORT") for a in answers]


def test_tarantoolctl_connect_interactive(servers):
    """Line by line on a terminal: every answer (YAML and errors) is the real server's."""
    if not shutil.which("tarantoolctl"):
        pytest.skip("tarantoolctl is not installed")
    real, ours = servers
    expected = interactive_transcript(real, INTERACTIVE_LINES)
    got = interactive_transcript(ours, INTERACTIVE_LINES)
    assert got == expected
    assert len(got) == len(INTERACTIVE_LINES) + 1 and got[0].startswith("connected to 127.0.0.1:PORT")
    assert "---\r\n- 2\r\n...\r\n" in got[2]
    assert "- error: User 'who' is not found\r\n" in got[4]
    assert "- [1, 'Alice', 55]\r\n" in got[7]


CONSOLE_SERVER = r"""
box.cfg{}
local console, socket, fio = require('console'), require('socket'), require('fio')
local function show(t) local ks = {} for k, v in pairs(t) do ks[#ks+1] = k .. '=' .. tostring(v) end table.sort(ks) return table.concat(ks, ' ') end
local s = console.listen('127.0.0.1:0')
local name = s:name()
print(type(s), show(name):gsub('port=%d+', 'port=N'), name.port > 0)
local u = console.listen('unix/:./c.sock')
print(show(u:name()), fio.path.exists('./c.sock'))
local c = socket.tcp_connect('127.0.0.1', name.port)
print(c:read{chunk = 128}:match('^Tarantool .*console') ~= nil)
c:write('1 + 1\n') print(c:read('\n...\n'))
print(s:close(), u:close())
print(socket.tcp_connect('127.0.0.1', name.port), socket.tcp_connect('unix/', './c.sock'), fio.path.exists('./c.sock'))
for _, f in ipairs({s.name, s.close}) do
    local ok, err = pcall(f, s)
    print(ok, tostring(err):match('attempt to use closed socket$'))
end
c:write('2 + 2\n') print(c:read('\n...\n'))
os.exit(0)
"""


def test_console_listen_returns_a_server_to_name_and_close(tmp_path):
    """console.listen gives 2.6's socket server: name() tells the bound address
    (port 0 gets a free one; a Unix socket's path), close() stops accepting and
    removes a Unix socket's file while the sessions go on, and a closed one
    refuses name() and close() again."""
    same_output_on_both(tmp_path, "console_server.lua", CONSOLE_SERVER, 15)


LUA_OUTPUT = r"""
box.cfg{}
local console, socket = require('console'), require('socket')
local s = console.listen('127.0.0.1:0')
local c = socket.tcp_connect('127.0.0.1', s:name().port)
c:read{chunk = 128}
local function ev(line, eos) c:write(line .. '\n') print(string.format('%-40s => %q', line, c:read(eos))) end
ev('\\set output lua', ';')
for _, l in ipairs({'1', '1, 2', '"a\\nb"', '{1, 2, 3}', '{a = 1}', '{a = {b = {1, 2}}}', 'nil', 'box.NULL', '1.5',
  'true', '{["x y"] = 1}', '1/0', '0/0', '-0.0', '2^53', '1e100', '123456789012345678LL', '12345678901234567890ULL',
  'box.tuple.new{1, "a"}', 'error("boom")', 'x = ', 'print', '{}', '{{}}', '"it\'s"', [["\t\0\1é\127\\"]],
  [["a'b\"c"]], '"\\xef\\xbb\\xbf"', '{1, nil, 3}', '{[1] = 1, [3] = 3}', '{[1.5] = 1}', '{[true] = 1}', '{["and"] = 1}',
  '{_x = 2}', '{["9a"] = 3}', '{["1"] = 1}', '{[-1] = 1}', '{[0] = "a", [1] = "b"}', '{[2] = "x"}', '{[{1}] = 2}',
  'setmetatable({}, {__serialize = function() return "s" end})', 'setmetatable({1, 2}, {__serialize = "map"})',
  'require("uuid").NULL', 'require("decimal").new(1.5)', 'local a = 1', 't = {1} return {t, t}',
  'u = {} u[1] = u return u', 'box.error.new(box.error.ILLEGAL_PARAMS, "bad")',
  'box.error(box.error.ILLEGAL_PARAMS, "bad")', 'nil, 1', '{a = box.tuple.new{1, {2}}}', '{f = print}',
  '\\set output lua,foo', '\\set outpu lua', '\\set', '\\bogus', '\\set output', '\\set language', '\\set output xml',
  'require("console").delimiter()'}) do ev(l, ';') end
ev('\\set output lua,block', ';')
for _, l in ipairs({'{1, 2, {a = 1}}', '{a = {b = 2}}', '1, 2', '{}', '{{}}', '{a = {}}', '"x"', '{1, nil, 3}',
  't = {1} return {t, {t}}', 'box.error(box.error.ILLEGAL_PARAMS, "bad")', '{{a = {1}}, 2}'}) do ev(l, ';') end
ev('\\set output lua,line', ';')
ev('{1, {2}}', ';')
-- A statement delimiter: lines are gathered until one ends with it.
ev('\\set delimiter !', ';')
c:write('x = 1\n')
ev('return x + 1!', ';')
ev('require("console").delimiter()!', ';')
ev('require("console").delimiter("")!', ';')
ev('\\set output yaml', '...\n')
ev('box.NULL', '...\n')
ev('require("console").get_default_output()', '...\n')
os.exit(0)
"""


def test_console_lua_output_and_delimiter_on_the_text_console(tmp_path):
    """`\\set output lua[,block]` writes values as 2.6's Lua formatter does (quoting,
    escapes, keys, numbers, repeated tables, errors, `;` ending each reply), the
    `\\set` errors are 2.6's, and `\\set delimiter` gathers lines until one ends
    with it (2.6's clients set one as they connect)."""
    lines = same_output_on_both(tmp_path, "console_lua_output.lua", LUA_OUTPUT, 133)
    assert '{["x y"] = 1}                            => "{[\\"x y\\"] = 1};"' in lines
    assert 'return x + 1!                            => "2;"' in lines


def test_console_output_is_per_session_over_iproto(servers):
    """tarantoolctl's console.eval over IPROTO: `\\set output lua` holds for that
    session only, as 2.6 keeps it with the session."""
    real, ours = servers
    for inst in (real, ours):
        one, two = Raw(inst.host, inst.port), Raw(inst.host, inst.port)
        for c in (one, two):
            c.auth("admin", ADMIN_PASSWORD)

        def ev(c, line):
            h, b, _ = c.request(EVAL, {0x27: 'return require("console").eval(...)', 0x21: [line]})
            assert h[0] == 0, b
            return b[0x30][0]
        assert ev(one, "\\set output lua,block") == "true;"
        assert ev(one, "{1, 'a'}") == '{\n  1,\n  "a"\n};'
        assert ev(two, "{1, 'a'}") == "---\n- - 1\n  - a\n...\n"
        assert ev(one, "\\set output yaml") == "---\n- true\n...\n"
        # The default output is what a console.connect client asks for: no session's.
        one.request(EVAL, {0x27: "require('console').set_default_output('lua')", 0x21: []})
        three = Raw(inst.host, inst.port)
        three.auth("admin", ADMIN_PASSWORD)
        assert ev(two, "1") == ev(three, "1") == "---\n- 1\n...\n"
        three.close()
        one.request(EVAL, {0x27: "require('console').set_default_output('yaml')", 0x21: []})
        # (2.6 names the line of its console.lua that raised.)
        assert "console.delimiter(): need existing console'\n...\n" in ev(one, "\\set delimiter ;")
        one.close()
        two.close()


BEFORE_CFG = r"""
local console, socket, fio = require('console'), require('socket'), require('fio')
local s = console.listen('unix/:./pre.sock')
local function show(t) local ks = {} for k, v in pairs(t) do ks[#ks+1] = k .. '=' .. tostring(v) end table.sort(ks) return table.concat(ks, ' ') end
print(show(s:name()), fio.path.exists('./pre.sock'))
local function client()
    local c = socket.tcp_connect('unix/', './pre.sock')
    print(c ~= nil and c:read{chunk = 128}:match('^Tarantool .*console') ~= nil)
    return c
end
local function ev(c, line, eos) c:write(line .. '\n') print(string.format('%-30s => %q', line, c:read(eos))) end
-- Served before box.cfg.
local early = client()
ev(early, '1 + 1', '...\n')
ev(early, '\\set output lua', ';')
ev(early, '{1, "a"}', ';')
ev(early, 'type(box.cfg)', ';')
box.cfg{}
-- The connection made before goes on, and a new one is served as any console.
ev(early, 'box.space._space ~= nil', ';')
ev(early, 'box.space._space:get{280}[3]', ';')
local late = client()
ev(late, 'box.space._space:get{280}[3]', '...\n')
ev(late, '\\set output lua,block', ';')
ev(late, '{1, {2}}', ';')
print(s:close(), fio.path.exists('./pre.sock'), socket.tcp_connect('unix/', './pre.sock'))
ev(early, '"still here"', ';')
os.exit(0)
"""


def test_console_listen_before_box_cfg(tmp_path):
    """A console listened on before box.cfg answers at once; its connections go
    on after box.cfg, new ones are served too, and close() removes the socket
    file, as in 2.6."""
    lines = same_output_on_both(tmp_path, "console_before_cfg.lua", BEFORE_CFG, 25)
    assert 'box.space._space:get{280}[3]   => "\\"_space\\";"' in lines


CONSOLE_STATE = r"""
local console, socket, fiber, yaml = require('console'), require('socket'), require('fiber'), require('yaml')
local s = console.listen('127.0.0.1:0')
local c = socket.tcp_connect('127.0.0.1', s:name().port)
c:read{chunk = 128}
c:write("require('fiber').id()\n")
local fid = yaml.decode(c:read('\n...\n'))[1]
local f = fiber.find(fid)
print('fiber', f ~= nil, f and f:status())
local state = f.storage.console
local peer, name = state.client:peer(), state.client:name()
print('client', peer.host, peer.family, peer.type, peer.protocol, name.port == s:name().port)
c:write("require('console').delimiter(';')\n") c:read('\n...\n')
print('delimiter', state.delimiter)
c:write("require('console').delimiter('');\n") c:read('\n...\n')
print('delimiter', state.delimiter, 'prompt', state.prompt, 'running', state.running)
c:write("require('fiber').id()\n")
print('same fiber', yaml.decode(c:read('\n...\n'))[1] == fid)
c:close()
fiber.sleep(0.1)
print('after close', fiber.find(fid) ~= nil)
os.exit(0)
"""


def test_a_console_fiber_keeps_its_state_in_fiber_storage(tmp_path):
    """The fiber serving a console client keeps the console's state as 2.6's does
    (app-tap console.test.lua reads it): `fiber.find(id).storage.console` holds the
    client socket, the delimiter, the prompt, for the client's whole session."""
    lines = same_output_on_both(tmp_path, "console_state.lua", CONSOLE_STATE, 6)
    assert "delimiter\t;" in lines


TWO_CLIENTS = r"""
local console, socket = require('console'), require('socket')
local s = console.listen('127.0.0.1:0')
local a = socket.tcp_connect('127.0.0.1', s:name().port) a:read{chunk = 128}
local b = socket.tcp_connect('127.0.0.1', s:name().port) b:read{chunk = 128}
local function ask(c, line)
    c:write(line .. '\n')
    return (c:read({delimiter = {'...\n', ';'}, timeout = 2}) or 'nil'):gsub('\n', ' ')
end
print('a', ask(a, '\\set output lua'))
print('b', ask(b, '1 + 1'))
print('a', ask(a, "require('console').delimiter('$$')"))
print('b', ask(b, '2 + 2'))
print('a', ask(a, '3 + 3$$'))
os.exit(0)
"""


def test_clients_of_a_console_served_before_box_cfg_have_settings_of_their_own(tmp_path):
    """Each client of a console listened on before box.cfg has its own output
    format and delimiter, as in 2.6 (they shared the server session's)."""
    lines = same_output_on_both(tmp_path, "two_clients.lua", TWO_CLIENTS, 5)
    assert lines[1] == "b\t--- - 2 ... \t3", lines


SERVER_CONSOLE_FIBER = r"""
local console, socket, fiber, yaml = require('console'), require('socket'), require('fiber'), require('yaml')
box.cfg{work_dir = os.getenv('WORK'), log = 'server.log'}
box.schema.space.create('t'):create_index('pk')
local s = console.listen('127.0.0.1:0')
local c = socket.tcp_connect('127.0.0.1', s:name().port)
c:read{chunk = 128}
local function ask(text)
    c:write(text .. '\n')
    return c:read('\n...\n')
end
local function line(text)
    print(string.format('%-70s => %s', text, (ask(text):gsub('\n', ' '))))
end
local fid = yaml.decode(ask("require('fiber').id()"))[1]
line("require('fiber').self():name() == 'console/' .. box.session.peer()")
line("require('fiber').self().storage.x = 5")
ask("first_fid = " .. fid)
line("require('fiber').self().storage.x, require('fiber').id() == first_fid")
-- A transaction is aborted by the wait for the next line, and nothing of it stays.
line("box.begin() box.space.t:insert{1}")
line("box.space.t:insert{2}")
line("box.commit()")
line("box.space.t:select()")
line("box.session.su('guest')")
line("box.session.user()")
line("box.session.su('admin')")
line("box.session.user(), require('fiber').self().storage.console ~= nil")
local f = fiber.find(yaml.decode(ask("require('fiber').id()"))[1])
local state = f.storage.console
local peer, name = state.client:peer(), state.client:name()
print('client', peer.host, peer.family, peer.type, peer.protocol, name.port == s:name().port,
      state.client:fd() == nil)
line("require('console').delimiter(';')")
print('delimiter', state.delimiter)
line("require('console').delimiter('');")
c:close()
fiber.sleep(0.2)
print('after close', f:status())
-- A line that cancels its console fiber gets its reply, then the session ends.
local c2 = socket.tcp_connect('127.0.0.1', s:name().port)
c2:read{chunk = 128}
c2:write("require('fiber').kill(require('fiber').id())\n")
print('kill', (c2:read('\n...\n'):gsub('\n', ' ')))
c2:write("1 + 1\n")
print('after kill', c2:read({delimiter = '\n...\n', timeout = 2}) == '')
os.exit(0)
"""


def test_the_server_console_runs_a_session_in_one_fiber(tmp_path):
    """The server's console runs a client's lines in one fiber, as 2.6 does: named
    console/<peer>, its storage and id going on from line to line, the console's
    state in `storage.console` (the client socket's addresses, the delimiter), a
    transaction aborted by the wait for the next line, gone when the client goes;
    a line that cancels it ends the session after its reply."""
    lines = same_output_on_both(tmp_path, "server_console_fiber.lua", SERVER_CONSOLE_FIBER, 18)
    assert any(line.startswith("box.space.t:select()") and "=> --- - [] ..." in line for line in lines), lines


PUSHES = r"""
local console, socket, fiber = require('console'), require('socket'), require('fiber')
local function run(c)
    -- A line that pushes: the push, then the reply.
    local function ev(line, eos, pushes)
        c:write(line .. '\n')
        for _ = 0, pushes or 0 do print(string.format('%-40s => %q', line, c:read(eos))) end
    end
    ev('box.session.push(200)', '...\n', 1)
    ev('box.session.push({a = 1}) return 5', '...\n', 1)
    ev('\\set output lua', ';')
    ev('box.session.push(200)', ';', 1)
    ev('\\set output lua,block', ';')
    ev('box.session.push({1}) return 2', ';', 1)
    ev('\\set output lua', ';')
    -- A push goes out at once, not with the reply of the line that made it.
    c:write('box.session.push("push") require("fiber").sleep(0.3) return "res"\n')
    local t0 = fiber.clock()
    print(string.format('%q', c:read(';')), fiber.clock() - t0 < 0.25)
    print(string.format('%q', c:read(';')))
    ev('\\set output yaml', '...\n')
end
-- Served from Lua (before box.cfg), then by the server's console.
local early = console.listen('127.0.0.1:0')
local c = socket.tcp_connect('127.0.0.1', early:name().port)
c:read{chunk = 128}
run(c)
box.cfg{}
local s = console.listen('127.0.0.1:0')
c = socket.tcp_connect('127.0.0.1', s:name().port)
c:read{chunk = 128}
run(c)
os.exit(0)
"""


def test_session_push_on_the_text_console(tmp_path):
    """box.session.push on a text console writes the value as 2.6 does: a YAML
    document tagged !push!, or '-- Push' and the Lua text; at once, before the
    line's reply."""
    lines = same_output_on_both(tmp_path, "console_push.lua", PUSHES, 70)
    assert lines.count('\\"push\\";"\ttrue') == 2, lines


def test_the_console_server_takes_only_a_socket_a_console_gave_up(tmp_path):
    """The internal hand-over at box.cfg adopts a listening socket only if Lua's
    console server detached it: a descriptor named by number is not taken on trust."""
    script = tmp_path / "adopt.lua"
    script.write_text(
        "box.cfg{}\n"
        "print(pcall(box.internal.call_op, 'console_listen', '127.0.0.1:0', 1))\n"
        "print(io.stdout ~= nil)\n"
        "os.exit(0)\n")
    out = subprocess.run([ONCEBOX, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("false") and "not a detached listening socket" in lines[0], out.stdout
    assert lines[-1] == "true", out.stdout


HELP_AND_QUIT = r"""
local console, socket = require('console'), require('socket')
local function connect(server)
    local c = socket.tcp_connect('127.0.0.1', server:name().port)
    c:read{chunk = 128}
    return c
end
-- Everything the console sends until it closes the connection.
local function rest(c)
    local got = {}
    while true do
        local chunk = c:read{chunk = 4096, timeout = 5}
        if chunk == nil or chunk == '' then break end
        got[#got + 1] = chunk
    end
    return table.concat(got)
end
local function ev(c, line) c:write(line .. '\n') return c:read('...\n') end
local function run(server, stage)
    local c = connect(server)
    for _, line in ipairs({'\\', '\\h', '\\help me', 'help()', 'help("x")[1] == help()[1]', 'type(help), #help',
                           'type(tutorial), tutorial[1] == help[1]', 'tutorial("start") == tutorial(1)',
                           'tutorial(1) ~= tutorial("next")', '(pcall(tutorial, {}))', 'tutorial(-5) == tutorial(1)',
                           '\\help x y', '\\foo bar', 'package.loaded.help.help == help'}) do
        print(stage, string.format('%-30s => %q', line, ev(c, line)))
    end
    -- \quit: nothing more is answered, and the connection is closed.
    c:write('\\quit\nreturn "after quit"\n')
    print(stage, 'quit', string.format('%q', rest(c)))
    -- A reply the console owes is sent before it closes.
    c = connect(server)
    local owed = type(box.cfg) == 'table' and 'box.space.t:replace{1, "%s"}' or 'return "%s"'
    c:write(string.format(owed, stage) .. '\n\\q\n')
    print(stage, 'owed', string.format('%q', rest(c)))
    -- console.eval('\\q') inside a line: the line's reply, then the close.
    c = connect(server)
    c:write('require("console").eval("\\\\q")\nreturn 1\n')
    print(stage, 'eval', string.format('%q', rest(c)))
    c = connect(server)
    print(stage, 'still serving', string.format('%q', ev(c, '1 + 1')))
end
-- Served from Lua (before box.cfg), then by the server's console.
run(console.listen('127.0.0.1:0'), 'before cfg')
box.cfg{}
box.schema.space.create('t'):create_index('pk')
run(console.listen('127.0.0.1:0'), 'after cfg')
os.exit(0)
"""


def test_console_help_tutorial_and_quit(tmp_path):
    """`\\`, `\\h` and `\\help` show 2.6's help screen (help() as a global list
    holding it, tutorial() stepping through screens); `\\quit`/`\\q`, and
    console.eval('\\q') inside a line, end the console session as in 2.6: what
    it owes is sent, later lines are not answered, and the connection closes;
    before box.cfg and after."""
    lines = same_output_on_both(tmp_path, "console_help_quit.lua", HELP_AND_QUIT, 240)
    assert "- [1, 'after cfg']\\" in lines, "the reply owed before \\q"
    assert 'after cfg\tquit\t""' in lines, "nothing after \\quit"


CONSOLE_SESSIONS = r"""
local console, socket, fiber = require('console'), require('socket'), require('fiber')
local log = {}
local function note(...) log[#log + 1] = table.concat({...}, ' ') end
local function peer_kind() local p = box.session.peer() return p and (p:match('^unix') and 'unix' or 'tcp') or 'nil' end
local on_connect = box.session.on_connect(function()
    note('connect', box.session.user(), box.session.type(), peer_kind(), tostring(box.session.fd() > 0))
end)
local on_auth = box.session.on_auth(function(user, ok) note('auth', box.session.user(), user, tostring(ok)) end)
local on_disconnect = box.session.on_disconnect(function() note('disconnect', box.session.user()) end)
local function settle() for _ = 1, 20 do fiber.sleep(0.01) end end
local function session(server)
    local c = socket.tcp_connect(server.host, server.port)
    c:read{chunk = 128}
    c:write('box.session.type(), box.session.user()\n')
    print(string.format('%q', c:read('...\n')))
    c:close()
    settle()
end
box.cfg{log_level = 1}
-- A console session is admin's from the start: on_connect sees admin, then
-- on_auth runs with ('admin', true); both over TCP and a Unix socket (named
-- with 2.6's console:// scheme).
local tcp = console.listen('127.0.0.1:0')
session(tcp:name())
local unix = console.listen('console://unix/:./c.sock')
session({host = 'unix/', port = './c.sock'})
-- An on_auth trigger that fails closes the session before its first line.
local failing = box.session.on_auth(function() error('Authorization error') end)
local c = socket.tcp_connect('127.0.0.1', tcp:name().port)
c:read{chunk = 128}
print(string.format('%q', c:read{chunk = 1024, timeout = 5} or 'nil'))
c:close()
settle()
box.session.on_auth(nil, failing)
-- shutdown() stops accepting; the address is still told, and close() is due.
print(tcp:shutdown(), tcp:name().port > 0, socket.tcp_connect('127.0.0.1', tcp:name().port))
print(tcp:close(), unix:close())
box.session.on_connect(nil, on_connect)
box.session.on_auth(nil, on_auth)
box.session.on_disconnect(nil, on_disconnect)
for _, line in ipairs(log) do print(line) end
os.exit(0)
"""


def test_console_sessions_are_admins_with_connect_and_auth_triggers(tmp_path):
    """As 2.6's: a console session is admin's from the start (on_connect sees
    admin and its peer), on_auth runs with ('admin', true) and, failing, closes
    the session; console:// URIs listen; shutdown() stops accepting."""
    lines = same_output_on_both(tmp_path, "console_sessions.lua", CONSOLE_SESSIONS, 20)
    assert "connect admin console tcp true" in lines and "connect admin console unix true" in lines, lines
    assert lines.count("auth admin admin true") == 2 and lines[-1] == "connect admin console tcp true", lines
