-- socket(domain, type, protocol): sockets made by hand (src/lua/raw_socket.rs),
-- as 2.6's: non-blocking, each method one system call; read, readable, writable
-- and wait wait with socket.iowait. A failure returns nil or false and keeps the
-- errno (sock:errno(), sock:error()). Loaded after socket.lua, whose module table
-- it makes callable.

local type = type -- the builtin, not the one user code sees (box.lua)
local internal = box.internal
local errno = require('errno')
local socket = package.loaded.socket

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

