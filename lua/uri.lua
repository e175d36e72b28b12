-- uri: Tarantool's URI module. uri.parse(s) splits a URI into scheme, login,
-- password, host, service, path, query and fragment (plus ipv4, ipv6 or unix
-- naming the kind of host), following RFC 3986 with Tarantool's additions: a
-- bare port ("3301"), a service instead of a port ("host:http"), URIs without
-- a scheme, and Unix sockets ("unix/:/path", "/path", "login@/path"). It
-- returns nil for what is not a URI. uri.format(t[, write_password]) puts the
-- parts back together, the password only when asked.
--
-- Written from the grammar's rules: URIs people write parse as in 2.6. 2.6's
-- generated parser also accepts some odd strings in ways of its own ("x:/"
-- gets a scheme there); those are not copied.

local uri = {}

-- Longest host and service accepted (2.6 refuses 1025 and 256 bytes).
local MAX_HOST = 1024
local MAX_SERVICE = 255
local UNIX_HOST = 'unix/'

-- Character classes of RFC 3986, as Lua patterns.
local UNRESERVED = '%w%-_~%.'
local SUB_DELIMS = "!%$&'%(%)%*%+,;="

-- Whether `s` is made of `chars` and percent escapes ('%%', '%' and one or two
-- hex digits, '%u' and four).
local function made_of(s, chars)
    local i = 1
    while i <= #s do
        local c = s:sub(i, i)
        if c == '%' then
            local rest = s:sub(i + 1)
            local escape = rest:match('^%%') or rest:match('^u%x%x%x%x') or rest:match('^%x%x?')
            if escape == nil then
                return false
            end
            i = i + 1 + #escape
        elseif c:find('^[' .. chars .. ']$') then
            i = i + 1
        else
            return false
        end
    end
    return true
end

-- userinfo's login and password, a host's name: unreserved, escapes, sub-delims.
local NAME_CHARS = UNRESERVED .. SUB_DELIMS
-- A path segment's characters (pchar; Tarantool adds '|').
local SEGMENT_CHARS = NAME_CHARS .. '@:|'
-- A Unix socket path's segments: no ':' or '|'.
local SOCKET_CHARS = NAME_CHARS .. '@'

local function is_name(s) return #s > 0 and made_of(s, NAME_CHARS) end

-- "/" segments, each of `chars` (empty ones allowed unless `nonempty`).
local function is_path(s, chars, nonempty)
    if s:sub(1, 1) ~= '/' then
        return false
    end
    for segment in s:sub(2):gmatch('([^/]*)/?') do
        if (nonempty and segment == '' and s:sub(-1) ~= '/') or not made_of(segment, chars) then
            return false
        end
    end
    return true
end

-- A Unix socket path: "/" segments of socket characters, none empty, or "." before them.
local function is_socket_path(s)
    local absolute = s:sub(1, 1) == '.' and s:sub(2) or s
    if absolute == '' or absolute:sub(1, 1) ~= '/' then
        return false
    end
    for segment in absolute:gmatch('/([^/]*)') do
        if segment == '' or not made_of(segment, SOCKET_CHARS) then
            return false
        end
    end
    return true
end

-- An absolute path as RFC 3986 has it: "/" alone, or not beginning with "//".
local function is_path_absolute(s)
    return s == '/' or (s:sub(1, 2) ~= '//' and is_path(s, SEGMENT_CHARS))
end

local function is_ipv4(s)
    local parts = { s:match('^(%d%d?%d?)%.(%d%d?%d?)%.(%d%d?%d?)%.(%d%d?%d?)$') }
    return #parts == 4
end

-- Inside the brackets: up to 9 groups of 1-4 lowercase hex digits (some
-- empty) split by ':', or '::ffff:' and an IPv4 address.
local function is_ipv6(s)
    local tail = s:match('^::ffff:(.*)$')
    if tail and is_ipv4(tail) then
        return true
    end
    if not s:find(':', 1, true) then
        return false
    end
    local groups = 0
    for group in (s .. ':'):gmatch('([^:]*):') do
        groups = groups + 1
        if not group:match('^[0-9a-f]?[0-9a-f]?[0-9a-f]?[0-9a-f]?$') then
            return false
        end
    end
    return groups <= 9
end

-- login[:password], or nil.
local function userinfo(s)
    local login, password = s:match('^([^:]*):(.*)$')
    login = login or s
    if not is_name(login) or (password ~= nil and password ~= '' and not made_of(password, NAME_CHARS)) then
        return nil
    end
    return login, password
end

-- A Unix socket's address into `result`: host 'unix/', the path as its service.
local function set_unix(result, path)
    result.host, result.service, result.unix = UNIX_HOST, path, path
    return result
end

-- host[:service][/path] into `result`, or nil.
local function authority_and_path(result, s)
    local host, rest
    if s:sub(1, 1) == '[' then
        local inside, after = s:match('^%[([^%]]*)%](.*)$')
        if inside == nil or not is_ipv6(inside) then
            return nil
        end
        host, rest, result.ipv6 = inside, after, inside
    else
        host, rest = s:match('^([^:/]*)(.*)$')
        if not is_name(host) then
            return nil
        end
        if is_ipv4(host) then
            result.ipv4 = host
        end
    end
    result.host = host
    if rest:sub(1, 1) == ':' then
        local service, after = rest:match('^:([^/]*)(.*)$')
        if not (service:match('^%d+$') or service:match('^%a*$')) then
            return nil
        end
        if service ~= '' then
            result.service = service
        end
        rest = after
    end
    if rest ~= '' then
        if not is_path(rest, SEGMENT_CHARS) then
            return nil
        end
        result.path = rest
    end
    return result
end

-- The parts of `s` before its query and fragment, into `result`, or nil.
local function hierarchy(result, s)
    local scheme, after = s:match('^(%a[%w%+%-%.]*)://(.*)$')
    if scheme then
        result.scheme, s = scheme, after
    end
    local info, rest = s:match('^([^@/]*)@(.*)$')
    if info then
        local login, password = userinfo(info)
        if login == nil then
            return nil
        end
        result.login, result.password, s = login, password, rest
    end
    local socket = s:match('^unix/:(.*)$')
    socket = socket and (socket:match('^(.*):$') or socket)
    if socket and is_socket_path(socket) then
        return set_unix(result, socket)
    end
    if s:sub(1, 1) == '/' and scheme == nil then
        return is_path_absolute(s) and set_unix(result, s) or nil
    end
    return authority_and_path(result, s)
end

function uri.parse(s)
    if s == nil then
        error('Usage: uri.parse(string)')
    end
    s = tostring(s)
    if s == '' then
        return nil
    end
    if s:match('^%d+$') then
        return #s <= MAX_SERVICE and { service = s } or nil
    end
    local result = {}
    -- The fragment (after the first '#'), then the query (after the first '?').
    for _, part in ipairs({ { 'fragment', '^([^#]*)#(.*)$' }, { 'query', '^([^?]*)%?(.*)$' } }) do
        local before, value = s:match(part[2])
        if before then
            if not made_of(value, SEGMENT_CHARS .. '/?') then
                return nil
            end
            s, result[part[1]] = before, value
        end
    end
    if s ~= '' and hierarchy(result, s) == nil then
        return nil
    end
    if (result.host and #result.host > MAX_HOST) or (result.service and #result.service > MAX_SERVICE) then
        return nil
    end
    return result
end

-- Non-empty parts only, as 2.6 writes them.
local function part(value)
    value = value ~= nil and tostring(value) or ''
    return value ~= '' and value or nil
end

function uri.format(t, write_password)
    local out = {}
    local scheme, host, service = part(t.scheme), part(t.host), part(t.service)
    if scheme then
        table.insert(out, scheme .. '://')
    end
    if host then
        local login, password = part(t.login), part(t.password)
        if login then
            table.insert(out, login)
            if password and write_password then
                table.insert(out, ':' .. password)
            end
            table.insert(out, '@')
        end
        table.insert(out, host)
        if service then
            table.insert(out, ':' .. service)
        end
    end
    local path, query, fragment = part(t.path), part(t.query), part(t.fragment)
    if path then
        table.insert(out, path)
    end
    if query then
        table.insert(out, '?' .. query)
    end
    if fragment then
        table.insert(out, '#' .. fragment)
    end
    return table.concat(out)
end

package.loaded.uri = uri
