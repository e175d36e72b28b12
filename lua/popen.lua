-- popen: Tarantool 2.6's module for child processes with piped standard streams,
-- over box.internal.popen (src/lua/popen.rs, src/children/).
--
-- popen.new(argv[, opts]) and popen.shell(command[, mode]) return a handle:
-- ph:read(), ph:write(), ph:shutdown(), ph:signal(), ph:terminate(), ph:kill(),
-- ph:wait(), ph:info(), ph:close(), and the fields pid, command, opts, status,
-- stdin, stdout and stderr. Arguments, results and error messages are 2.6's.
-- Reads and writes wait with socket.iowait (a fiber waits, the server goes on);
-- wait() is told of the child's end by the reaper, which reaps every child as
-- tarantool's event loop does.

local type = type -- the builtin, not the one user code sees (box.lua)
local internal = box.internal
local sys = internal.popen
local fiber = require('fiber')

local popen = {}

popen.opts = {INHERIT = 'inherit', DEVNULL = 'devnull', CLOSE = 'close', PIPE = 'pipe'}
popen.state = {ALIVE = 'alive', EXITED = 'exited', SIGNALED = 'signaled'}
popen.stream = {OPEN = 'open', CLOSED = 'closed'}
popen.signal = {
    SIGHUP = 1, SIGINT = 2, SIGQUIT = 3, SIGILL = 4, SIGTRAP = 5, SIGABRT = 6, SIGIOT = 6, SIGBUS = 7,
    SIGFPE = 8, SIGKILL = 9, SIGUSR1 = 10, SIGSEGV = 11, SIGUSR2 = 12, SIGPIPE = 13, SIGALRM = 14,
    SIGTERM = 15, SIGSTKFLT = 16, SIGCHLD = 17, SIGCONT = 18, SIGSTOP = 19, SIGTSTP = 20, SIGTTIN = 21,
    SIGTTOU = 22, SIGURG = 23, SIGXCPU = 24, SIGXFSZ = 25, SIGVTALRM = 26, SIGPROF = 27, SIGWINCH = 28,
    SIGIO = 29, SIGPOLL = 29, SIGPWR = 30, SIGSYS = 31,
}
-- The name 2.6 shows for a signal that has two.
local signal_names = {}
for name, signo in pairs(popen.signal) do signal_names[signo] = name end
signal_names[6], signal_names[29] = 'SIGIOT', 'SIGPOLL'

local READ_CHUNK = 4096
local STREAMS = {'stdin', 'stdout', 'stderr'}
local NO_TIMEOUT = 100 * 365 * 86400

local function raise(etype, message, errno)
    error(internal.make_error(nil, message, etype, errno and {errno = errno}), 0)
end
local function illegal(message) raise('IllegalParams', message) end
local function failed(etype, message, errno)
    return nil, internal.make_error(nil, message, etype, errno and {errno = errno})
end

-- Lua's type name as 2.6's parameter errors say it.
local function got(v, present)
    if not present then return 'no value' end
    return type(v)
end

local function wrong(fn, param, expected, v, present)
    illegal(string.format('popen.%s: wrong parameter "%s": expected %s, got %s', fn, param, expected,
                          got(v, present)))
end

-- A stream option: any prefix of a mode's name names it (2.6 compares that many bytes).
local MODES = {'inherit', 'devnull', 'close', 'pipe'}
local function stream_mode(name, v)
    if v == nil then return 'inherit' end
    if type(v) ~= 'string' then wrong('new', 'opts.' .. name, 'string or nil', v, true) end
    for _, mode in ipairs(MODES) do
        if mode:sub(1, #v) == v then return mode end
    end
    illegal(string.format('popen.new: wrong parameter "opts.%s": expected popen.opts.<...> constant, got %s',
                          name, v))
end

local FLAGS = {
    {'shell', false}, {'setsid', false}, {'close_fds', true}, {'restore_signals', true},
    {'group_signal', false}, {'keep_child', false},
}

local function parse_opts(opts)
    local parsed = {}
    for _, name in ipairs(STREAMS) do parsed[name] = stream_mode(name, opts[name]) end
    local env = opts.env
    if env ~= nil then
        if type(env) ~= 'table' then wrong('new', 'opts.env', 'table or nil', env, true) end
        local entries = {}
        for k, v in pairs(env) do
            if type(k) ~= 'string' or type(v) ~= 'string' then
                illegal('popen.new: wrong parameter "opts.env": expected {[<string>] = <string>, ...}, ' ..
                        'got a non-string key or value')
            end
            entries[#entries + 1] = k .. '=' .. v
        end
        env = entries
    end
    for _, flag in ipairs(FLAGS) do
        local name, default = flag[1], flag[2]
        local v = opts[name]
        if v == nil then v = default end
        if type(v) ~= 'boolean' then wrong('new', 'opts.' .. name, 'boolean or nil', opts[name], true) end
        parsed[name] = v
    end
    return parsed, env
end

-- The command line as 2.6 shows it: words with a space in single quotes.
local function command_line(argv)
    local words = {}
    for i, arg in ipairs(argv) do
        words[i] = arg:find(' ', 1, true) and ("'" .. arg .. "'") or arg
    end
    return table.concat(words, ' ')
end

-- Handles: a userdata (tostring shows `userdata: 0x...`, as 2.6's) whose state is here.
local states = setmetatable({}, {__mode = 'k'})
local methods = {}
local handle_mt, closed_mt

local function state_of(ph, usage)
    local s = type(ph) == 'userdata' and states[ph]
    if not s then illegal(usage) end
    return s
end

local function open_state(ph, usage)
    local s = state_of(ph, usage)
    if s.closed then illegal('popen: attempt to operate on a closed handle') end
    return s
end

-- The child's end, once the reaper has seen it.
local function refresh(s)
    if s.ended == nil then
        local state, code = sys.wait(s.pid, false)
        if state ~= nil then s.ended = {state = state, code = code} end
    end
    return s.ended
end

local function status_of(s)
    local e = refresh(s)
    if e == nil then return {state = 'alive'} end
    if e.state == 'exited' then return {state = 'exited', exit_code = e.code} end
    return {state = 'signaled', signo = e.code, signame = signal_names[e.code] or 'unknown'}
end

local function stream_state(s, i)
    if s.opts[STREAMS[i]] ~= 'pipe' then return nil end
    return s.fds[i] ~= nil and 'open' or 'closed'
end

local function info_of(s)
    local t = {command = s.command, opts = table.copy(s.opts), status = status_of(s)}
    if s.ended == nil then t.pid = s.pid end
    for i, name in ipairs(STREAMS) do t[name] = stream_state(s, i) end
    return t
end

local function close_fd(s, i)
    if s.fds[i] ~= nil then
        sys.close(s.fds[i])
        s.fds[i] = nil
    end
end

local ESRCH = 3

-- Sends `signo` to the child (its group with group_signal); nil and the error if it is gone.
local function send_signal(s, signo)
    local ok, errno = false, ESRCH
    if refresh(s) == nil then
        local sent, _, code = sys.signal(s.pid, signo, s.opts.group_signal)
        ok, errno = sent, code
    end
    if ok then return true end
    if errno == ESRCH then
        return failed('SystemError',
                      string.format('Attempt to send a signal %d to a process that does not exist anymore', signo), ESRCH)
    end
    local op = s.opts.group_signal and 'killpg' or 'kill'
    return failed('SystemError', string.format('Unable to %s %d signo %d', op, s.pid, signo), errno)
end

-- Closes the handle: the child is killed unless keep_child, the pipes are closed.
local function release(s)
    if s.closed then return end
    s.closed = true
    -- 2.6 shows a closed handle's metatable under another name.
    s.mt.__metatable = 'popen_handle_closed'
    if not s.opts.keep_child and refresh(s) == nil then
        sys.signal(s.pid, popen.signal.SIGKILL, s.opts.group_signal)
    end
    for i = 1, 3 do close_fd(s, i) end
    sys.forget(s.pid)
end

-- Waits until `fd` is ready (`events` 'R' or 'W') or the deadline passes; false then.
local function ready(fd, events, deadline)
    local left = deadline - fiber.clock()
    if left <= 0 then return false end
    local got_events = require('socket').iowait(fd, events, left)
    fiber.testcancel()
    return got_events ~= '' or deadline - fiber.clock() > 0
end

local function timeout_of(opts, usage)
    local timeout = opts.timeout
    if timeout == nil then return NO_TIMEOUT end
    if type(timeout) ~= 'number' or timeout < 0 then illegal(usage) end
    return timeout
end

local READ_USAGE = 'Bad params, use: ph:read([{stdout = <boolean>, stderr = <boolean>, timeout = <number>}])'
function methods.read(ph, opts)
    local s = open_state(ph, READ_USAGE)
    if opts == nil then opts = {} end
    if type(opts) ~= 'table' then illegal(READ_USAGE) end
    for _, k in ipairs({'stdout', 'stderr'}) do
        if opts[k] ~= nil and type(opts[k]) ~= 'boolean' then illegal(READ_USAGE) end
    end
    local timeout = timeout_of(opts, READ_USAGE)
    if opts.stdout and opts.stderr then
        illegal('popen: reading from both stdout and stderr at one call is not supported')
    end
    local i = opts.stderr and 3 or 2
    if s.opts[STREAMS[i]] ~= 'pipe' then illegal('popen: handle does not support the requested IO operation') end
    local deadline = fiber.clock() + timeout
    while true do
        local fd = s.fds[i]
        if fd == nil then illegal('popen: attempt to operate on a closed file descriptor') end
        local data, text, errno = sys.read(fd, READ_CHUNK)
        if data then return data end
        if data == nil then
            return failed('SocketError', string.format('read(%d), called on fd %d', READ_CHUNK, fd), errno)
        end
        if not ready(fd, 'R', deadline) then return failed('TimedOut', 'timed out', 110) end
    end
end

local WRITE_USAGE = 'Bad params, use: ph:write(str[, {timeout = <number>}])'
function methods.write(ph, data, opts)
    local s = state_of(ph, WRITE_USAGE)
    if type(data) ~= 'string' then illegal(WRITE_USAGE) end
    if opts ~= nil and type(opts) ~= 'table' then illegal(WRITE_USAGE) end
    local timeout = timeout_of(opts or {}, WRITE_USAGE)
    if s.closed then illegal('popen: attempt to operate on a closed handle') end
    if s.opts.stdin ~= 'pipe' then illegal('popen: handle does not support the requested IO operation') end
    local deadline = fiber.clock() + timeout
    if data == '' then
        -- As in 2.6, an empty write never completes.
        while fiber.clock() < deadline do fiber.sleep(deadline - fiber.clock()) fiber.testcancel() end
        return failed('TimedOut', 'timed out', 110)
    end
    local at = 1
    while true do
        local fd = s.fds[1]
        if fd == nil then illegal('popen: attempt to operate on a closed file descriptor') end
        local n, _, errno = sys.write(fd, at == 1 and data or data:sub(at))
        if n == nil then
            return failed('SocketError', string.format('write(%d), called on fd %d', #data - at + 1, fd), errno)
        end
        at = at + n
        if at > #data then return true end
        if n == 0 and not ready(fd, 'W', deadline) then return failed('TimedOut', 'timed out', 110) end
    end
end

local SHUTDOWN_USAGE = 'Bad params, use: ph:shutdown({stdin = <boolean>, stdout = <boolean>, stderr = <boolean>})'
function methods.shutdown(ph, opts)
    local s = open_state(ph, SHUTDOWN_USAGE)
    if opts == nil then opts = {} end
    if type(opts) ~= 'table' then illegal(SHUTDOWN_USAGE) end
    local any = false
    for _, name in ipairs(STREAMS) do
        if opts[name] ~= nil and type(opts[name]) ~= 'boolean' then illegal(SHUTDOWN_USAGE) end
        any = any or opts[name] == true
    end
    if not any then illegal('popen: neither stdin, stdout nor stderr is set') end
    for _, name in ipairs(STREAMS) do
        if opts[name] and s.opts[name] ~= 'pipe' then
            illegal('popen: handle does not support the requested IO operation')
        end
    end
    for i, name in ipairs(STREAMS) do
        if opts[name] then close_fd(s, i) end
    end
    return true
end

local SIGNAL_USAGE = 'Bad params, use: ph:signal(signo)'
function methods.signal(ph, signo)
    local s = state_of(ph, SIGNAL_USAGE)
    signo = tonumber(signo)
    if signo == nil then illegal(SIGNAL_USAGE) end
    if s.closed then illegal('popen: attempt to operate on a closed handle') end
    return send_signal(s, signo)
end

function methods.terminate(ph)
    return send_signal(open_state(ph, 'Bad params, use: ph:terminate()'), popen.signal.SIGTERM)
end

function methods.kill(ph)
    return send_signal(open_state(ph, 'Bad params, use: ph:kill()'), popen.signal.SIGKILL)
end

-- Waits for the child's end and returns its status.
function methods.wait(ph)
    local s = open_state(ph, 'Bad params, use: ph:wait()')
    while refresh(s) == nil do
        local waits, state, code = false, nil, nil
        if internal.fiber_can_yield() then
            -- Without an event loop to tell it (before box.cfg), it polls below.
            waits, state, code = pcall(sys.wait, s.pid, true)
        end
        if waits then
            if state == nil and code ~= nil then
                -- A ticket: the reaper delivers `<state> <status>`.
                local _, ok, outcome = internal.socket_await(code, nil)
                if ok and outcome then
                    local st, c = outcome:match('^(%a+) (%-?%d+)$')
                    s.ended = {state = st, code = tonumber(c)}
                end
            end
        else
            -- (Polling is a scheduling point too: reap here.)
            fiber.sleep(0.005)
            sys.reap()
        end
        fiber.testcancel()
    end
    return status_of(s)
end

function methods.info(ph)
    return info_of(open_state(ph, 'Bad params, use: ph:info()'))
end

function methods.close(ph)
    local s = state_of(ph, 'Bad params, use: ph:close()')
    release(s)
    return true
end

local function serialize(ph)
    local s = state_of(ph, 'Bad params, use: __serialize(ph)')
    if s.closed then return '<closed popen handle>' end
    return info_of(s)
end

-- (Not while the state closes at exit: as 2.6, which never runs finalizers
-- then, the children are left alone, and native functions are going.)
local function gc(ph)
    if box.internal.closing then return end
    local s = type(ph) == 'userdata' and states[ph]
    if s then release(s) end
end

local FIELDS = {
    pid = function(s) return refresh(s) == nil and s.pid or nil end,
    command = function(s) return s.command end,
    opts = function(s) return table.copy(s.opts) end,
    status = status_of,
    stdin = function(s) return stream_state(s, 1) end,
    stdout = function(s) return stream_state(s, 2) end,
    stderr = function(s) return stream_state(s, 3) end,
}

local INDEX_USAGE = 'Bad params, use __index(ph, <string>)'
local function index(ph, key)
    local s = state_of(ph, INDEX_USAGE)
    if type(key) ~= 'string' then illegal(INDEX_USAGE) end
    local m = methods[key]
    if m ~= nil then return m end
    if key == '__metatable' then return s.closed and 'popen_handle_closed' or 'popen_handle' end
    if key == '__serialize' then return serialize end
    if key == '__gc' then return gc end
    if key == '__index' then return index end
    if s.closed then illegal('Attempt to index a closed popen handle') end
    local field = FIELDS[key]
    return field and field(s)
end

local function new_handle(s)
    local ph = newproxy(true)
    local mt = getmetatable(ph)
    mt.__index = index
    mt.__gc = gc
    mt.__serialize = serialize
    mt.__metatable = 'popen_handle'
    s.mt = mt
    states[ph] = s
    return ph
end

-- (Arguments are told by their type: box.NULL, a NULL cdata, is no nil here.)
function popen.new(...)
    local argv, opts = ...
    if type(argv) ~= 'table' then wrong('new', 'argv', 'table', argv, select('#', ...) > 0) end
    if type(opts) ~= 'nil' and type(opts) ~= 'table' then wrong('new', 'opts', 'table or nil', opts, true) end
    local parsed, env = parse_opts(opts or {})
    local args = {}
    for i, arg in ipairs(argv) do
        if type(arg) ~= 'string' then wrong('new', 'argv[' .. i .. ']', 'string', arg, true) end
        args[i] = arg
    end
    if #args == 0 then illegal('popen.new: wrong parameter "argv": expected a non-empty table') end
    if parsed.group_signal and not parsed.setsid then illegal('popen: group signal without setting sid') end
    local program = args[1]
    if parsed.shell then
        table.insert(args, 1, '-c')
        table.insert(args, 1, 'sh')
        program = '/bin/sh'
    end
    local pid, a, b, c = sys.spawn(program, args, env, {parsed.stdin, parsed.stdout, parsed.stderr}, parsed)
    if pid == nil then return failed('SystemError', a, b) end
    local fds = {}
    for i, fd in ipairs({a, b, c}) do
        if fd >= 0 then fds[i] = fd end
    end
    return new_handle({pid = pid, fds = fds, opts = parsed, command = command_line(args)})
end

function popen.shell(...)
    local command, mode = ...
    if type(command) ~= 'string' then wrong('shell', 'command', 'string', command, select('#', ...) > 0) end
    if type(mode) ~= 'nil' and type(mode) ~= 'string' then wrong('shell', 'mode', 'string or nil', mode, true) end
    local opts = {shell = true, setsid = true, group_signal = true}
    for ch in (mode or ''):gmatch('.') do
        if ch == 'r' then opts.stdout = 'pipe'
        elseif ch == 'w' then opts.stdin = 'pipe'
        elseif ch == 'R' then opts.stderr = 'pipe'
        else
            illegal(string.format('popen.shell: wrong parameter "mode": expected \'r\', \'w\', \'R\' or its ' ..
                                  'combination, got %s', mode))
        end
    end
    return popen.new({command}, opts)
end

package.loaded.popen = popen
return popen
