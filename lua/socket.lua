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
        local s = wrap(h)
        local ok, err = pcall(l.handler, s, from)
        if not ok then require('log').error('socket.tcp_server handler: %s', tostring(err)) end
        s:close()
    end)
end

function socket.tcp_server(host, port, opts, timeout)
    local handler, prepare = opts, nil
    if type(opts) == 'table' then
        handler, prepare = opts.handler, opts.prepare
    end
    if type(handler) ~= 'function' then
        error('Usage: socket.tcp_server(host, port, handler | opts)', 2)
    end
    local l, code, text = internal.socket_listen(tostring(host), tonumber(port) or 0)
    if l == nil then
        errno(code)
        return nil, text
    end
    local server = setmetatable({_l = l}, server_mt)
    -- Listed until closed (as 2.6's accept loop fiber keeps it): dropping the server
    -- object does not stop it.
    listeners[l:id()] = {handler = handler, server = server}
    if prepare ~= nil then prepare(server) end
    return server, l:name()
end

function server_mt:name() return self._l:name() end
server_mt.getsockname = server_mt.name
function server_mt:close()
    listeners[self._l:id()] = nil
    return self._l:close()
end
function server_mt:setsockopt() return true end
function server_mt:nonblock(flag) return flag == nil or flag end
server_mt.__tostring = function(self)
    local n = self:name()
    return string.format('server %s:%d', n.host, n.port)
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
    if internal.fiber_can_yield() then
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

--------------------------------------------------------------------------------
-- socket(domain, type, protocol): a socket made by hand (src/lua/raw_socket.rs),
-- as 2.6's: non-blocking, each method one system call; read, readable, writable
-- and wait wait with iowait. A failure returns nil or false and keeps the errno
-- (sock:errno(), sock:error()).
--------------------------------------------------------------------------------

local DOMAINS = {AF_UNIX = 1, AF_LOCAL = 1, AF_INET = 2, AF_INET6 = 10, PF_UNIX = 1, PF_LOCAL = 1, PF_INET = 2,
                 PF_INET6 = 10}
local TYPES = {SOCK_STREAM = 1, SOCK_DGRAM = 2, SOCK_RAW = 3, SOCK_SEQPACKET = 5}
local PROTOCOLS = {ip = 0, icmp = 1, tcp = 6, udp = 17, ipv6 = 41, ['ipv6-icmp'] = 58, raw = 255}
local NAMES = {domain = {}, type = {}, protocol = {}}
for name, n in pairs(DOMAINS) do if name:sub(1, 3) == 'AF_' and name ~= 'AF_LOCAL' then NAMES.domain[n] = name end end
for name, n in pairs(TYPES) do NAMES.type[n] = name end
for name, n in pairs(PROTOCOLS) do NAMES.protocol[n] = name end
-- Options 2.6 knows by level, and those set by a boolean here.
local LEVELS = {SOL_SOCKET = true, IPPROTO_TCP = true}
local READ_CHUNK = 4096

local raw_mt = {}
raw_mt.__index = raw_mt

local function raw_check(self)
    if type(self) ~= 'table' or getmetatable(self) ~= raw_mt then error('Usage: socket:method()') end
    if self._h == nil or self._h:fd() == nil then error('attempt to use closed socket') end
    return self._h
end

-- Keeps a failure's errno (and the process's, as 2.6's errno()).
local function raw_failed(self, code, result)
    self._errno = code
    errno(code)
    return result
end

local function raw_new(h, domain, kind, protocol)
    return setmetatable({_h = h, _domain = domain, _type = kind, _protocol = protocol, _rbuf = ''}, raw_mt)
end

local function address(self, host, port)
    if host == nil then return nil end
    local t = {host = host, port = port, family = NAMES.domain[self._domain] or self._domain,
               type = NAMES.type[self._type] or self._type,
               protocol = NAMES.protocol[self._protocol] or self._protocol}
    return t
end

function raw_mt:errno() raw_check(self) return self._errno or 0 end
function raw_mt:error()
    raw_check(self)
    if self._errno == nil or self._errno == 0 then return nil end
    return errno.strerror(self._errno)
end
function raw_mt:fd() return raw_check(self):fd() end

function raw_mt:close()
    local h = raw_check(self)
    self._errno = nil
    return h:close()
end

-- A call that succeeds or fails at once: true, or false with the errno kept.
local function raw_call(self, name, ...)
    local h = raw_check(self)
    self._errno = nil
    local ok, code = h[name](h, ...)
    if ok == nil then return raw_failed(self, code, false) end
    return true
end

local SHUT = {R = 0, r = 0, W = 1, w = 1, RW = 2, rw = 2, SHUT_RD = 0, SHUT_WR = 1, SHUT_RDWR = 2}
function raw_mt:bind(host, port) return raw_call(self, 'bind', host, port or 0) end
function raw_mt:listen(backlog) return raw_call(self, 'listen', tonumber(backlog) or 128) end
function raw_mt:shutdown(how) return raw_call(self, 'shutdown', SHUT[how] or tonumber(how) or 2) end
-- sysconnect(host, port): true, or false (EINPROGRESS: a TCP connection is on
-- its way; writable() tells when it is made, SO_ERROR how).
function raw_mt:sysconnect(host, port) return raw_call(self, 'connect', host, port) end

function raw_mt:accept()
    local h = raw_check(self)
    self._errno = nil
    local client, code = h:accept()
    if client == nil then return raw_failed(self, code, nil) end
    return raw_new(client, self._domain, self._type, self._protocol)
end

function raw_mt:sendto(host, port, data)
    local h = raw_check(self)
    self._errno = nil
    local n, code = h:sendto(host, port, tostring(data))
    if n == nil then return raw_failed(self, code, nil) end
    return n
end

function raw_mt:recvfrom(size)
    local h = raw_check(self)
    self._errno = nil
    local data, a, b = h:recvfrom(tonumber(size) or 512)
    if data == nil then return raw_failed(self, a, nil) end
    return data, address(self, a, b)
end

-- send/syswrite: what one call writes (nil on a failure, EAGAIN when full).
function raw_mt:send(data)
    local h = raw_check(self)
    self._errno = nil
    local n, code = h:send(tostring(data))
    if n == nil then return raw_failed(self, code, nil) end
    return n
end
raw_mt.syswrite = raw_mt.send

-- recv/sysread: what is there now ('' at the end; nil, EAGAIN, when nothing yet).
function raw_mt:recv(size)
    local h = raw_check(self)
    self._errno = nil
    if #self._rbuf > 0 then
        local data = self._rbuf:sub(1, size or #self._rbuf)
        self._rbuf = self._rbuf:sub(#data + 1)
        return data
    end
    local data, code = h:recv(tonumber(size) or 512)
    if data == nil then return raw_failed(self, code, nil) end
    return data
end
raw_mt.sysread = raw_mt.recv

local WAIT_EVENTS = {R = 1, W = 2, RW = 3}

-- Waits up to `timeout` for `events` ('R', 'W', 'RW'); the ready ones ('' if none).
local function raw_wait(self, events, timeout)
    local h = raw_check(self)
    self._errno = nil
    local ready = socket.iowait(h:fd(), events, timeout)
    require('fiber').testcancel()
    return ready
end

function raw_mt:readable(timeout)
    if #self._rbuf > 0 then return true end
    return raw_wait(self, 'R', timeout) ~= ''
end
function raw_mt:writable(timeout) return raw_wait(self, 'W', timeout) ~= '' end
function raw_mt:wait(timeout)
    local ready = raw_wait(self, 'RW', timeout)
    return ready ~= '' and ready or nil
end

-- write(data[, timeout]): all of it, waiting while the socket is full; the bytes
-- written, or nil (ETIMEDOUT when the time ran out).
function raw_mt:write(data, timeout)
    local h = raw_check(self)
    self._errno = nil
    data = tostring(data)
    local deadline = require('fiber').clock() + (timeout or 1e9)
    local at = 1
    while at <= #data do
        local n, code = h:send(at == 1 and data or data:sub(at))
        if n ~= nil then
            at = at + n
        elseif code ~= errno.EAGAIN then
            return raw_failed(self, code, nil)
        elseif raw_wait(self, 'W', deadline - require('fiber').clock()) == '' then
            return raw_failed(self, errno.ETIMEDOUT, nil)
        end
    end
    return #data
end

-- read(size | delimiter | {chunk = n, delimiter = d}[, timeout]): as 2.6's,
-- through the socket's read buffer; '' at the end, nil on a failure or time-out.
function raw_mt:read(opts, timeout)
    local h = raw_check(self)
    self._errno = nil
    local chunk, delimiter
    if type(opts) == 'number' then chunk = opts
    elseif type(opts) == 'string' then delimiter = opts
    elseif type(opts) == 'table' then chunk, delimiter = opts.chunk or opts.size, opts.delimiter or opts.line
    else error('Usage: s:read(delimiter|chunk|{delimiter = x, chunk = x}, timeout)', 2) end
    local deadline = require('fiber').clock() + (timeout or 1e9)
    local function ready()
        local buf = self._rbuf
        local stop
        if delimiter ~= nil and delimiter ~= '' then
            local at = buf:find(delimiter, 1, true)
            if at then stop = at + #delimiter - 1 end
        end
        if chunk ~= nil and #buf >= chunk and (stop == nil or stop > chunk) then stop = chunk end
        return stop
    end
    while true do
        local stop = ready()
        if stop then
            local data = self._rbuf:sub(1, stop)
            self._rbuf = self._rbuf:sub(stop + 1)
            return data
        end
        local data, code = h:recv(READ_CHUNK)
        if data == '' then
            -- The end: what is buffered, then ''.
            local rest = self._rbuf
            self._rbuf = ''
            return rest
        elseif data ~= nil then
            self._rbuf = self._rbuf .. data
        elseif code ~= errno.EAGAIN then
            return raw_failed(self, code, nil)
        elseif raw_wait(self, 'R', deadline - require('fiber').clock()) == '' then
            return raw_failed(self, errno.ETIMEDOUT, nil)
        end
    end
end

function raw_mt:nonblock(on)
    local h = raw_check(self)
    return (h:nonblock(on))
end

function raw_mt:name()
    local h = raw_check(self)
    local host, port = h:name()
    return address(self, host, port)
end

function raw_mt:peer()
    local h = raw_check(self)
    local host, port = h:peer()
    return address(self, host, port)
end

local function option_name(level, name)
    if not LEVELS[level] then error('Unknown socket option level: ' .. tostring(level)) end
    return name
end

function raw_mt:setsockopt(level, name, value)
    local h = raw_check(self)
    self._errno = nil
    local ok, code = h:option(option_name(level, name), value == true or (tonumber(value) or 0) ~= 0)
    if ok == nil then
        if code == errno.ENOPROTOOPT then error('Unknown socket option name: ' .. tostring(name)) end
        return raw_failed(self, code, false)
    end
    return true
end

function raw_mt:getsockopt(level, name)
    local h = raw_check(self)
    self._errno = nil
    local v, code = h:option(option_name(level, name), nil)
    if v == nil then
        if code == errno.ENOPROTOOPT then error('Unknown socket option name: ' .. tostring(name)) end
        return raw_failed(self, code, nil)
    end
    return v
end

raw_mt.__tostring = function(self)
    if self._h == nil or self._h:fd() == nil then return 'closed socket' end
    local parts = {'fd ' .. self._h:fd()}
    local function text(a) return a.host == 'unix/' and ('unix/:' .. tostring(a.port)) or (a.host .. ':' .. a.port) end
    local name, peer = self:name(), self:peer()
    if name then parts[#parts + 1] = 'aka ' .. text(name) end
    if peer then parts[#parts + 1] = 'peer ' .. text(peer) end
    return table.concat(parts, ', ')
end

local function constant(value, names)
    if type(value) == 'number' then return value end
    return names[value]
end

setmetatable(socket, {
    __call = function(_, domain, kind, protocol)
        local d, t = constant(domain, DOMAINS), constant(kind, TYPES)
        if d == nil or t == nil or protocol == nil then
            errno(errno.EINVAL)
            return nil
        end
        local p = constant(protocol, PROTOCOLS)
        if p == nil then
            errno(errno.EPROTOTYPE)
            return nil
        end
        local h, code = internal.raw_socket_open(d, t, p)
        if h == nil then
            errno(code)
            return nil
        end
        return raw_new(h, d, t, p)
    end,
})

package.loaded.socket = socket
