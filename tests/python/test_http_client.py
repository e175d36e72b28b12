"""http.client compared with real Tarantool 2.6 line for line: the script serves HTTP
itself (socket.tcp_server, in a fiber) and requests it with http.client, so each
request must wait in its fiber while the server fiber answers. Compared: what the
server receives (request line, headers and their order, bodies; GET, HEAD, DELETE,
OPTIONS, POST, PUT, PATCH, with and without a body, caller's headers, a query string),
and the response table (status, reason, lower-case headers with repeats joined,
body, proto, cookies) for Content-Length, chunked and read-to-close bodies, 2xx-5xx
statuses, 204 and HEAD without a body; a timeout (408), a refused connection and an
unknown host (595), a server that closes without answering (444); client objects,
their usage errors and stat().
"""
from conftest import same_output_on_both

SCRIPT = r"""
box.cfg{log_level = 1}
local socket = require('socket')
local fiber = require('fiber')
local http = require('http.client')
local json = require('json')
local got = {}
local server = socket.tcp_server('127.0.0.1', 0, function(s)
    local head = s:read('\r\n\r\n', 5)
    if head == nil or head == '' then return end
    local len = tonumber(head:lower():match('content%-length: *(%d+)')) or 0
    local body = len > 0 and s:read(len, 5) or ''
    table.insert(got, head .. body)
    local path = head:match('^%S+ (%S+)')
    if path == '/chunked' then
        s:write('HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\nX-Multi: a\r\nX-Multi: b\r\n'
            .. 'Set-Cookie: id=1; Path=/; HttpOnly\r\nSet-Cookie: theme=dark\r\nContent-Type: text/plain\r\n'
            .. 'Content-Type: ignored/second\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n')
    elseif path == '/close' then
        s:write('HTTP/1.1 200 OK\r\nX-Until: close\r\n\r\nread until the server closes')
    elseif path:match('^/status/') then
        local code = path:match('^/status/(%d+)')
        s:write('HTTP/1.1 ' .. code .. ' Whatever\r\nContent-Length: 4\r\n\r\nbody')
    elseif path == '/empty' then
        s:write('HTTP/1.1 204 No Content\r\n\r\n')
    elseif path == '/slow' then
        fiber.sleep(1)
    elseif path == '/nothing' then
        return
    else
        s:write('HTTP/1.1 200 OK\r\nContent-Length: ' .. #body .. '\r\nX-Path: ' .. path .. '\r\n\r\n' .. body)
    end
end)
local port = server:name().port
local base = 'http://127.0.0.1:' .. port
local function show(name, r)
    local keys = {}
    for k in pairs(r) do table.insert(keys, k) end
    table.sort(keys)
    local hk = {}
    for k, v in pairs(r.headers or {}) do table.insert(hk, k .. '=' .. tostring(v)) end
    table.sort(hk)
    local cookies = {}
    for k, v in pairs(r.cookies or {}) do table.insert(cookies, k .. '=' .. v[1] .. '[' .. table.concat(v[2], ',') .. ']') end
    table.sort(cookies)
    print(name, table.concat(keys, ','), r.status, r.reason, r.body, table.concat(hk, ';'),
          r.proto and table.concat(r.proto, '.'), table.concat(cookies, ';'))
end
local function clean(text) return (string.gsub(tostring(text), 'builtin/http.client.lua:%d+:', 'builtin/http.client.lua:N:')) end
show('get', http.get(base .. '/plain?a=1&b=two'))
show('get headers', http.get(base .. '/h', {headers = {['X-Test'] = 'yes'}}))
show('get accept', http.get(base .. '/accept', {headers = {Accept = 'application/json'}}))
show('post', http.post(base .. '/post', 'data=1', {headers = {['Content-Type'] = 'text/plain'}}))
show('post form', http.post(base .. '/form', 'a=1&b=2'))
show('post nil', http.post(base .. '/post-nil'))
show('post empty', http.post(base .. '/post-empty', ''))
show('put', http.put(base .. '/put', 'x'))
show('patch', http.patch(base .. '/patch', '{"p":1}', {headers = {['Content-Type'] = 'application/json'}}))
show('request', http.request('PUT', base .. '/request', 'y'))
show('head', http.head(base .. '/head'))
show('delete', http.delete(base .. '/del'))
show('options', http.options(base .. '/opt'))
show('chunked', http.get(base .. '/chunked'))
show('close', http.get(base .. '/close'))
show('empty', http.get(base .. '/empty'))
for _, code in ipairs({200, 201, 301, 302, 400, 404, 500, 503}) do
    show('status', http.get(base .. '/status/' .. code))
end
show('timeout', http.get(base .. '/slow', {timeout = 0.3}))
show('nothing', http.get(base .. '/nothing'))
show('refused', http.get('http://127.0.0.1:1/x'))
show('unknown host', http.get('http://no-such-host.invalid/x'))
print('usage', clean(select(2, pcall(http.get))))
print('usage', clean(select(2, pcall(http.request, 'GET'))))
local c = http.new({max_connections = 2})
show('client', c:get(base .. '/client'))
print('client usage', clean(select(2, pcall(c.get, base))))
local stat = c:stat()
local sk = {}
for k, v in pairs(stat) do table.insert(sk, k .. '=' .. v) end
table.sort(sk)
print('stat', table.concat(sk, ' '))
for _, g in ipairs(got) do print((string.gsub(g:gsub('\r\n', '|'), ':' .. port, ':PORT'))) end
os.exit(0)
"""


def test_http_client_matches_2_6(tmp_path):
    same_output_on_both(tmp_path, "http_client.lua", SCRIPT, 60)
