-- socket: Tarantool's TCP socket module over box.internal.socket_* (src/lua/socket.rs).
--
-- socket.tcp_connect(host, port[, timeout]), socket.tcp_server(host, port, handler
-- or {handler = fn, prepare = fn, name = ...}[, timeout]), socket.getaddrinfo(host,
-- port). A socket reads and writes from a fiber without stopping the server: the
-- fiber waits on a fiber.cond while an I/O thread does the work; where nothing may
-- yield (a trigger, a tokened call) the same work is waited for in place. Failures
-- return nil (sock:error() and sock:errno() tell; a failed connect sets errno), as in 2.6.
-- Connecting waits in place (loopback and LAN peers answer at once).

local type = type -- the builtin, not the one user code sees (box.lua)
local internal = box.internal
local errno = require('errno')

local socket = {}
local sock_mt = {}
sock_mt.__index = sock_mt
local server_mt = {}
server_mt.__index = server_mt

-- I/O in flight, by ticket; the TX thread delivers each outcome here.
local await_io, deliver_io = internal.ticket_waiters()
-- (popen waits for a child's end through the same tickets.)
internal.socket_await = await_io
function internal.socket_deliver(ticket, ok, a, b)
    deliver_io(ticket, ok, a, b)
end

local function wrap(h)
    return setmetatable({_h = h}, sock_mt)
end

-- Runs one read or write job: from a fiber it waits for the I/O thread; elsewhere in place.
local function io(self, kind, ...)
    local h = self._h
    if not h:is_open() then
        errno(errno.EBADF)
        h:set_error(errno.EBADF, 'Bad file descriptor')
        return nil
    end
    local ok, a, b
    if internal.fiber_can_yield() then
        local ticket = kind == 'write' and h:submit_write(...) or h:submit_read(kind, ...)
        -- The I/O thread keeps the time (a read that times out leaves what it read buffered).
        local _
        _, ok, a, b = await_io(ticket, nil)
    elseif kind == 'write' then
        ok, a, b = h:write_now(...)
    else
        ok, a, b = h:read_now(kind, ...)
    end
    if ok then return a end
    -- As in 2.6, the socket keeps the error (sock:errno()); the global errno is left alone.
    h:set_error(a, b)
    return nil
end

local function check(self, method)
    if getmetatable(self) ~= sock_mt then
        error(string.format('Usage: socket:%s()', method), 3)
    end
end

-- sock:read(limit | delimiter | {chunk = n, delimiter = d}[, timeout]): exactly `limit`
-- bytes, or up to and including the delimiter; what is left at end of stream ('' when
-- nothing); nil on timeout or error.
function sock_mt:read(opts, timeout)
    check(self, 'read')
    if type(opts) == 'number' then
        return io(self, 'size', opts, nil, timeout)
    elseif type(opts) == 'string' then
        return io(self, 'delimiter', opts, nil, timeout)
    elseif type(opts) == 'table' then
        local chunk = opts.chunk or opts.size
        if opts.delimiter ~= nil then
            return io(self, 'delimiter', opts.delimiter, chunk, timeout)
        elseif chunk ~= nil then
            return io(self, 'size', chunk, nil, timeout)
        end
    end
    error('Usage: socket:read(delimiter|chunk|{delimiter = x, chunk = x}, timeout)', 2)
end

-- sock:recv(size): whatever has arrived, at most `size` bytes ('' at end of stream).
function sock_mt:recv(size)
    check(self, 'recv')
    return io(self, 'any', size or 512, nil, nil)
end
sock_mt.sysread = sock_mt.recv

-- sock:write(data[, timeout]): the number of bytes written, or nil.
function sock_mt:write(data, timeout)
    check(self, 'write')
    data = tostring(data)
    local h = self._h
    if h:is_open() then
        -- What the socket takes at once is written without a yield, as in 2.6.
        local sent, code, text = h:write_direct(data)
        if sent == nil then
            h:set_error(code, text)
            return nil
        end
        if sent == #data then return sent end
        if io(self, 'write', string.sub(data, sent + 1), timeout) == nil then return nil end
        return #data
    end
    if io(self, 'write', data, timeout) == nil then return nil end
    return #data
end
sock_mt.send = sock_mt.write
sock_mt.syswrite = sock_mt.write

function sock_mt:close()
    check(self, 'close')
    return self._h:close()
end
function sock_mt:shutdown(how) return self._h:shutdown(how) end
function sock_mt:peer() return self._h:peer() end
function sock_mt:name() return self._h:name() end
sock_mt.getpeername = sock_mt.peer
sock_mt.getsockname = sock_mt.name
function sock_mt:fd() return self._h:fd() end
function sock_mt:error() return self._h:error() end
function sock_mt:errno() return self._h:errno() end
-- The I/O threads do the waiting: a socket is as good as non-blocking to its fiber.
function sock_mt:nonblock(flag)
    if flag == nil then return true end
    return flag
end
function sock_mt:setsockopt() return true end
function sock_mt:detach() end
function sock_mt:readable() return self._h:is_open() end
function sock_mt:writable() return self._h:is_open() end
sock_mt.__tostring = function(self)
    local name, peer = self:name(), self:peer()
    if name == nil then return 'fd -1' end
    return string.format('fd %d, aka %s:%d, peer %s:%d', self:fd(), name.host, name.port,
                         peer and peer.host or '', peer and peer.port or 0)
end

function socket.tcp_connect(host, port, timeout)
    if port == nil then error('Usage: socket.tcp_connect(host, port[, timeout])', 2) end
    local h, code = internal.socket_connect(tostring(host), tostring(port), timeout)
    if h == nil then
        -- 2.6 returns nil alone and sets errno.
        errno(code)
        return nil
    end
    return wrap(h)
end

-- Listeners, by id: an accepted connection's handler runs in a fiber of its own.
local listeners = {}
function internal.socket_accepted(id, h, from)
    local l = listeners[id]
    if l == nil then
        h:close()
        return
    end
    local fiber = require('fiber')
    fiber.new(function()
        -- Named as 2.6 names a handler: the server's name and the peer's address.
        if from ~= nil then
            fiber.name(string.format('%s/%s:%s', l.name, from.host, from.port), {truncate = true})
        end
        local s = wrap(h)
        local ok, err = pcall(l.handler, s, from)
        if not ok then require('log').error('socket.tcp_server handler: %s', tostring(err)) end
        s:close()
    end)
end

-- Closes every server (before the process hands over to one started in the
-- background, which listens on their addresses again).
function internal.socket_close_listeners()
    local open = {}
    for _, l in pairs(listeners) do open[#open + 1] = l.server end
    for _, server in ipairs(open) do server:close() end
end

function socket.tcp_server(host, port, opts, timeout)
    local handler, prepare = opts, nil
    if type(opts) == 'table' then
        handler, prepare = opts.handler, opts.prepare
    end
    if type(handler) ~= 'function' then
        error('Usage: socket.tcp_server(host, port, handler | opts)', 2)
    end
    -- Host 'unix/' listens on the Unix socket at path `port`.
    local l, code, text = internal.socket_listen(tostring(host), tostring(port or 0))
    if l == nil then
        errno(code)
        return nil, text
    end
    local server = setmetatable({_l = l}, server_mt)
    -- Listed until closed (as 2.6's accept loop fiber keeps it): dropping the server
    -- object does not stop it.
    local name = type(opts) == 'table' and opts.name or 'server'
    listeners[l:id()] = {handler = handler, server = server, name = name}
    if prepare ~= nil then prepare(server) end
    -- 2.6's accept loop is a fiber named after the address asked for; it logs
    -- when it starts and stops, and keeps a script without box.cfg{} running.
    -- Here a thread accepts, and the fiber stands for the loop.
    local fiber = require('fiber')
    server._closed = fiber.cond()
    local loop_name = string.format('%s/%s:%s', name, host, port)
    fiber.create(function()
        fiber.name(loop_name, {truncate = true})
        local log = require('log')
        log.info('started')
        local id = l:id()
        while listeners[id] ~= nil and not listeners[id].detached do server._closed:wait() end
        log.info('stopped')
    end)
    return server, l:name()
end

function server_mt:name()
    if self._shut_name ~= nil then return self._shut_name end
    return self._l:name()
end
server_mt.getsockname = server_mt.name
-- Stops accepting, as a listening socket's shutdown does; the address is still
-- told and the server is closed later.
function server_mt:shutdown()
    if self._shut_name == nil then
        self._shut_name = self._l:name()
        listeners[self._l:id()] = nil
        if self._closed ~= nil then self._closed:broadcast() end
        self._l:close()
    end
    return true
end
function server_mt:close()
    if self._shut_name ~= nil then
        self._shut_name = nil
        return true
    end
    listeners[self._l:id()] = nil
    if self._closed ~= nil then self._closed:broadcast() end
    return self._l:close()
end
-- Stops accepting and gives up the listening socket's descriptor, still listening
-- (for the console server that takes over a console served from Lua).
function server_mt:detach()
    if self._shut_name ~= nil then return nil end
    -- Connections accepted before the descriptor went, and not yet handed over,
    -- are still served here (their handler is kept; it would close them else).
    local l = listeners[self._l:id()]
    if l ~= nil then l.detached = true end
    if self._closed ~= nil then self._closed:broadcast() end
    return self._l:detach()
end
function server_mt:setsockopt() return true end
function server_mt:nonblock(flag) return flag == nil or flag end
server_mt.__tostring = function(self)
    local n = self:name()
    return string.format('server %s:%s', n.host, n.port)
end

-- socket.iowait(fd, events[, timeout]): waits until the descriptor is ready for
-- `events` (1 | 'r' | 2 | 'w' | 3 | 'rw', either case) and returns the ready ones
-- in the form given ('' or 0 when the time runs out). A nil fd and nil events
-- just sleep, as in 2.6. A fiber waits while a helper thread polls.
local IOWAIT_USAGE = "Usage: iowait(fd, 1 | 'r' | 2 | 'w' | 3 | 'rw' [, timeout])"
function socket.iowait(fd, events, timeout)
    if select('#', fd, events, timeout) < 2 and events == nil then error(IOWAIT_USAGE, 2) end
    fd = fd or -1
    if fd < 0 then
        if events ~= nil then error(IOWAIT_USAGE, 2) end
        require('fiber').sleep(timeout or 1e9)
        return
    end
    local mask = events
    if type(events) == 'string' then
        mask = 0
        for ch in events:gmatch('.') do
            if ch == 'r' or ch == 'R' then mask = bit.bor(mask, 1)
            elseif ch == 'w' or ch == 'W' then mask = bit.bor(mask, 2)
            else error(IOWAIT_USAGE, 2) end
        end
    end
    if type(mask) ~= 'number' or mask < 1 or mask > 3 then error(IOWAIT_USAGE, 2) end
    local ready
    local waits, ticket = false, nil
    -- Before box.cfg{} the fibers that drain a descriptor may be this very
    -- thread's: a helper's report could come after the pipe filled, so the
    -- descriptor is polled in place between them, as 2.6's loop polls it.
    if internal.fiber_can_yield() and not internal.fiber_loop_unbound() then
        -- A helper thread polls; the fiber waits for its outcome.
        waits, ticket = pcall(internal.socket_iowait, fd, mask, timeout, false)
    end
    if waits then
        local _, ok, bytes = await_io(ticket, nil)
        ready = ok and bytes:byte(1) or 0
    else
        -- Where a fiber cannot wait on a thread (a script's main chunk, or before
        -- box.cfg{}): poll without waiting, and let other fibers run in between,
        -- polling again after each round of them (as 2.6's event loop checks the
        -- descriptors between rounds: a fiber writing to a pipe this one reads
        -- yields, and never finds it full), or after a pause when none is ready.
        local fiber = require('fiber')
        local deadline = timeout and fiber.clock() + timeout
        repeat
            ready = internal.socket_iowait(fd, mask, 0, true) or 0
            if ready ~= 0 or (deadline and fiber.clock() >= deadline) then break end
            if internal.fiber_others_ready() then fiber.yield() else fiber.sleep(0.005) end
        until false
    end
    if type(events) == 'string' then return ({'', 'R', 'W', 'RW'})[ready + 1] end
    return ready
end

function socket.getaddrinfo(host, port)
    local list, code, text = internal.socket_getaddrinfo(tostring(host), tonumber(port) or 0)
    if list == nil then
        errno(code)
        return nil, text
    end
    return list
end

-- The standard input as a socket that only reads (for console.start()): its
-- reads wait in an I/O thread, so the server goes on while a fiber waits for a line.
function internal.stdin_socket()
    local h, _, text = internal.socket_stdin()
    if h == nil then return nil, text end
    return wrap(h)
end

package.loaded.socket = socket
