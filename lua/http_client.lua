-- http.client: Tarantool 2.6's HTTP client (plain HTTP/1.1), over the socket module,
-- so a request waits in its fiber and the server goes on serving. What a server sees
-- and what a caller gets follow 2.6 (libcurl underneath there): the request headers
-- and their order (see request_text), one connection per request; a response
-- table with status, reason ('Ok' below 400, 'Unknown' from 400), lower-case headers
-- (repeated ones joined with ',' or, for the single-valued kind, the first), body (none
-- when empty), proto and cookies; failures as statuses: 408 for a timeout, 595 when the
-- host cannot be resolved or reached, 444 when the server sends nothing.
-- Not here: https (no TLS: refused with an error), keep-alive, proxies, redirects
-- (2.6 does not follow them either by default), and the TLS and keepalive options.

local type = type -- the builtin, not the one user code sees (box.lua)
local socket = require('socket')
local uri = require('uri')
local fiber = require('fiber')

local DEFAULT_TIMEOUT = 365 * 86400
local MAX_HEADER_BYTES = 1024 * 1024

-- Headers a response may carry once: a repeat keeps the first (as 2.6).
local single_valued = {
    ['age'] = true, ['authorization'] = true, ['content-length'] = true, ['content-type'] = true,
    ['etag'] = true, ['expires'] = true, ['from'] = true, ['host'] = true,
    ['if-modified-since'] = true, ['if-unmodified-since'] = true, ['last-modified'] = true,
    ['location'] = true, ['max-forwards'] = true, ['proxy-authorization'] = true,
    ['referer'] = true, ['retry-after'] = true, ['user-agent'] = true,
}

-- Methods that send no body: every other one sends one, empty when none is given (as 2.6).
local bodiless_methods = {GET = true, HEAD = true}

local function failure(status, reason)
    return {status = status, reason = reason}
end

local function has_header(headers, name)
    for k in pairs(headers) do
        if string.lower(k) == name then return true end
    end
    return false
end

-- The request as 2.6 sends it. libcurl writes Host, then Accept unless the header list
-- has one, then the list (2.6 puts there the length of a non-empty body, the caller's
-- headers, Accept for POST and PUT, and `Connection: close`), then, for a request with
-- a body, its own Content-Length (an empty body's) and Content-Type unless listed.
local function request_text(method, target, host_header, body, headers)
    local list = {}
    if body ~= nil and body ~= '' then table.insert(list, 'Content-Length: ' .. #body) end
    for k, v in pairs(headers) do table.insert(list, k .. ': ' .. tostring(v)) end
    local has_accept = has_header(headers, 'accept')
    if (method == 'POST' or method == 'PUT') and not has_accept then
        table.insert(list, 'Accept: */*')
        has_accept = true
    end
    table.insert(list, 'Connection: close')
    local lines = {method .. ' ' .. target .. ' HTTP/1.1', 'Host: ' .. host_header}
    if not has_accept then table.insert(lines, 'Accept: */*') end
    for _, line in ipairs(list) do table.insert(lines, line) end
    if body == '' then table.insert(lines, 'Content-Length: 0') end
    if body ~= nil and not has_header(headers, 'content-type') then
        table.insert(lines, 'Content-Type: application/x-www-form-urlencoded')
    end
    return table.concat(lines, '\r\n') .. '\r\n\r\n' .. (body or '')
end

-- 'name=value; attr; attr' -> name, {value, {attr, attr}}
local function parse_cookie(text)
    local parts = {}
    for part in string.gmatch(text, '[^;]+') do
        table.insert(parts, (string.gsub(part, '^%s*(.-)%s*$', '%1')))
    end
    local name, value = string.match(parts[1] or '', '^([^=]+)=(.*)$')
    if name == nil then return nil end
    return name, {value, {unpack(parts, 2)}}
end

local function parse_head(head)
    local status_line, rest = string.match(head, '^([^\r\n]*)\r?\n(.*)$')
    status_line = status_line or head
    local major, minor, status = string.match(status_line, '^HTTP/(%d+)%.(%d+)%s+(%d%d%d)')
    if status == nil then return nil end
    local headers, cookies = {}, nil
    for line in string.gmatch(rest or '', '[^\r\n]+') do
        local name, value = string.match(line, '^([^:]+):%s*(.-)%s*$')
        if name ~= nil then
            name = string.lower(name)
            local seen = headers[name]
            if seen == nil then
                headers[name] = {value}
            else
                table.insert(seen, value)
            end
            if name == 'set-cookie' then
                local cname, cookie = parse_cookie(value)
                if cname ~= nil then
                    cookies = cookies or {}
                    cookies[cname] = cookie
                end
            end
        end
    end
    for name, values in pairs(headers) do
        headers[name] = single_valued[name] and values[1] or table.concat(values, ',')
    end
    return tonumber(status), headers, {tonumber(major), tonumber(minor)}, cookies
end

-- Reads a chunked body; nil on timeout or a malformed chunk.
local function read_chunked(sock, remaining)
    local parts = {}
    while true do
        local size_line = sock:read('\r\n', remaining())
        if size_line == nil or size_line == '' then return nil end
        local size = tonumber(string.match(size_line, '^%s*(%x+)'), 16)
        if size == nil then return nil end
        if size == 0 then
            -- Trailers, up to the empty line.
            repeat
                local line = sock:read('\r\n', remaining())
                if line == nil then return nil end
            until line == '\r\n' or line == ''
            return table.concat(parts)
        end
        local data = sock:read(size + 2, remaining())
        if data == nil or #data < size then return nil end
        table.insert(parts, string.sub(data, 1, size))
    end
end

local function read_to_end(sock, remaining)
    local parts = {}
    while true do
        if remaining() <= 0 then return nil end
        local data = sock:recv(65536)
        if data == nil then return nil end
        if data == '' then return table.concat(parts) end
        table.insert(parts, data)
    end
end

local function perform(stat, method, url, body, opts)
    local u = uri.parse(url)
    if u == nil or u.host == nil then return failure(595, "URL using bad/illegal format or missing URL") end
    local scheme = string.lower(u.scheme or 'http')
    if scheme == 'https' then
        error('http.client: https is not supported by oncebox (no TLS); use http', 0)
    elseif scheme ~= 'http' then
        error('SystemError curl: Unsupported protocol: Invalid argument', 0)
    end
    local port = tonumber(u.service) or 80
    local timeout = tonumber(opts.timeout) or DEFAULT_TIMEOUT
    local deadline = fiber.clock() + timeout
    local function remaining() return deadline - fiber.clock() end
    local headers = opts.headers or {}
    if bodiless_methods[method] then
        body = nil
    elseif body == nil then
        body = ''
    end
    if body ~= nil then body = tostring(body) end

    -- Resolved once: the connection goes to the address found (the Host header keeps the name).
    local addresses = socket.getaddrinfo(u.host, port)
    if addresses == nil or addresses[1] == nil then return failure(595, "Couldn't resolve host name") end
    local sock = socket.tcp_connect(addresses[1].host, port, remaining())
    if sock == nil then return failure(595, "Couldn't connect to server") end
    stat.sockets_added = stat.sockets_added + 1
    local target = (u.path or '/') .. (u.query and ('?' .. u.query) or '')
    if string.sub(target, 1, 1) ~= '/' then target = '/' .. target end
    local host_header = u.service and (u.host .. ':' .. u.service) or u.host
    local function finish(r)
        sock:close()
        stat.sockets_deleted = stat.sockets_deleted + 1
        return r
    end
    if sock:write(request_text(method, target, host_header, body, headers), remaining()) == nil then
        return finish(failure(595, 'Failed sending data to the peer'))
    end
    local head = sock:read({delimiter = '\r\n\r\n', chunk = MAX_HEADER_BYTES}, remaining())
    if head == nil then
        if remaining() <= 0 then return finish(failure(408, 'Timeout was reached')) end
        return finish(failure(444, 'Server returned nothing (no headers, no data)'))
    end
    if head == '' then return finish(failure(444, 'Server returned nothing (no headers, no data)')) end
    local status, response_headers, proto, cookies = parse_head(head)
    if status == nil then return finish(failure(595, 'Unsupported protocol')) end
    local response_body
    if method == 'HEAD' or status == 204 or status == 304 or status < 200 then
        response_body = ''
    elseif string.find(string.lower(response_headers['transfer-encoding'] or ''), 'chunked', 1, true) then
        response_body = read_chunked(sock, remaining)
    elseif response_headers['content-length'] ~= nil then
        local length = tonumber(response_headers['content-length']) or 0
        response_body = length > 0 and sock:read(length, remaining()) or ''
        if response_body ~= nil and #response_body < length then response_body = nil end
    else
        response_body = read_to_end(sock, remaining)
    end
    if response_body == nil then
        if remaining() <= 0 then return finish(failure(408, 'Timeout was reached')) end
        return finish(failure(595, 'Transferred a partial file'))
    end
    local r = {
        status = status,
        reason = status < 400 and 'Ok' or 'Unknown',
        headers = response_headers,
        proto = proto,
        cookies = cookies,
    }
    if response_body ~= '' then r.body = response_body end
    return finish(r)
end

local client_mt

local function new(opts)
    opts = opts or {}
    local stat = {active_requests = 0, sockets_added = 0, sockets_deleted = 0, total_requests = 0,
                  http_200_responses = 0, http_other_responses = 0, failed_requests = 0}
    return setmetatable({max_connections = opts.max_connections or 5, _stat = stat}, client_mt)
end

local function check_self(self, method)
    if type(self) ~= 'table' then
        error(string.format('Use client:%s(...) instead of client.%s(...):', method, method), 2)
    end
end

local methods = {}

function methods.request(self, method, url, body, opts)
    if method == nil or url == nil then error('request(method, url[, body, [options]])') end
    local stat = self._stat
    stat.active_requests = stat.active_requests + 1
    stat.total_requests = stat.total_requests + 1
    local ok, r = pcall(perform, stat, string.upper(tostring(method)), tostring(url), body, opts or {})
    stat.active_requests = stat.active_requests - 1
    if not ok then
        stat.failed_requests = stat.failed_requests + 1
        error(r, 2)
    end
    if r.status == 200 then
        stat.http_200_responses = stat.http_200_responses + 1
    elseif r.headers ~= nil then
        stat.http_other_responses = stat.http_other_responses + 1
    else
        stat.failed_requests = stat.failed_requests + 1
    end
    return r
end

for _, name in ipairs({'get', 'options', 'head', 'delete', 'trace', 'connect'}) do
    local method = string.upper(name)
    methods[name] = function(self, url, options)
        check_self(self, name)
        return self:request(method, url, nil, options)
    end
end

for _, name in ipairs({'post', 'put', 'patch'}) do
    local method = string.upper(name)
    methods[name] = function(self, url, body, options)
        check_self(self, name)
        return self:request(method, url, body, options)
    end
end

function methods.stat(self)
    local copy = {}
    for k, v in pairs(self._stat) do copy[k] = v end
    return copy
end

client_mt = {__index = methods}

local default = new()
local http_client = {new = new}
for _, name in ipairs({'get', 'delete', 'trace', 'options', 'head', 'connect', 'post', 'put', 'patch', 'request'}) do
    http_client[name] = function(...) return default[name](default, ...) end
end

package.loaded['http.client'] = http_client
