-- net.box: a client for other Tarantool-protocol servers (Tarantool or oncebox),
-- with the API of Tarantool 2.6's net.box: connect, ping, call, eval, close,
-- conn.space.<name>:select/get/insert/replace/update/upsert/delete and index methods.
--
-- oncebox's addition: every write, call and eval takes {idempotent_token = T}; the
-- token travels in header key 0x0c, so a retry after a lost reply is answered
-- from the first outcome by an oncebox server (see protocol-docs/idempotency-guide.md).
--
-- From a fiber a request waits for its reply by yielding (other requests are
-- served meanwhile, so a connection to this very instance works); where nothing
-- may yield (a trigger, a tokened call) it blocks until the reply.

local internal = box.internal
local net_box = {}

local T = {SELECT = 1, INSERT = 2, REPLACE = 3, UPDATE = 4, DELETE = 5, CALL_16 = 6, AUTH = 7, EVAL = 8,
           UPSERT = 9, CALL = 10, PING = 64}
local K = {SPACE_ID = 0x10, INDEX_ID = 0x11, LIMIT = 0x12, OFFSET = 0x13, ITERATOR = 0x14, KEY = 0x20,
           INDEX_BASE = 0x15, TUPLE = 0x21, FUNCTION_NAME = 0x22, USER_NAME = 0x23, EXPR = 0x27, OPS = 0x28, DATA = 0x30,
           ERROR_24 = 0x31, ERROR = 0x52}
local ITERATORS = {EQ = 0, REQ = 1, ALL = 2, LT = 3, LE = 4, GE = 5, GT = 6, BITS_ALL_SET = 7,
                   BITS_ANY_SET = 8, BITS_ALL_NOT_SET = 9, OVERLAPS = 10, NEIGHBOR = 11}
local ER_NO_CONNECTION = 77

local function seq(t) return setmetatable(t or {}, {__serialize = 'seq'}) end

-- A port (a number, or a string of digits: on localhost) or a URI as `uri.parse`
-- reads it: host, port, login, password.
local function parse_uri(address)
    if type(address) == 'number' then return 'localhost', address end
    local parts = require('uri').parse(tostring(address))
    if parts == nil or parts.service == nil then
        error('usage: connect(uri[, opts] | host, port[, opts])', 3)
    end
    local host = parts.host
    if host == nil or host == '*' then host = 'localhost' end
    return host, tonumber(parts.service) or parts.service, parts.login, parts.password
end

local function no_connection(reason)
    box.error({code = ER_NO_CONNECTION, reason = reason or 'Connection is not established'})
end

-- A remote error raised here as the box.error it was on the server.
local function raise_remote(code, body)
    local message = body and body[K.ERROR_24] or 'Unknown error'
    local e = box.error.new({code = code - 0x8000, reason = message})
    local stack = body and body[K.ERROR] and body[K.ERROR][0]
    if stack and stack[1] and stack[1][0] then
        rawset(e, 'type', stack[1][0])
        -- As 2.6 rebuilds it: only a ClientError (and its kin) has a code.
        if stack[1][0] == 'LuajitError' then rawset(e, 'code', nil) end
    end
    error(e, 3)
end

local conn_mt = {}
conn_mt.__index = conn_mt

-- Fibers waiting for replies, by ticket; the server delivers each reply here.
local await_reply, deliver_reply
function internal.netbox_deliver(ticket, ok, code, body)
    if deliver_reply ~= nil then deliver_reply(ticket, ok, code, body) end
end

-- Sends a request and yields until its reply: code, body (or raises the transport error).
local function yielding_request(h, ty, body, token, timeout)
    if await_reply == nil then await_reply, deliver_reply = internal.ticket_waiters() end
    local ticket = h:submit(ty, body, token, timeout)
    -- On time-out the connection stays: the late reply is skipped when it comes.
    local done, ok, code, reply = await_reply(ticket, timeout)
    if not done then return nil end
    if not ok then error(code, 0) end
    return code, reply
end

function conn_mt:_request(ty, body, opts)
    if self.state ~= 'active' then no_connection(self.error) end
    local token = opts and opts.idempotent_token
    local timeout = (opts and opts.timeout) or self.opts.timeout
    local ok, code, reply
    if internal.fiber_can_yield() then
        ok, code, reply = pcall(yielding_request, self._h, ty, body, token, timeout)
    elseif self.to_self then
        -- Blocking here would stop the very server that has to answer.
        box.error({code = ER_NO_CONNECTION,
                   reason = 'net.box to the same instance cannot block: call it from a fiber, outside a tokened call'})
    else
        ok, code, reply = pcall(self._h.request, self._h, ty, body, token, timeout)
    end
    if ok and code == nil then box.error(box.error.TIMEOUT) end
    if not ok then
        self.state, self.error = 'error', tostring(code)
        no_connection(self.error)
    end
    if code >= 0x8000 then raise_remote(code, reply) end
    return reply and reply[K.DATA]
end

function conn_mt:ping(opts)
    if self.state ~= 'active' then return false end
    return (pcall(self._request, self, T.PING, nil, opts))
end

function conn_mt:call(name, args, opts)
    local data = self:_request(T.CALL, {[K.FUNCTION_NAME] = name, [K.TUPLE] = seq(args)}, opts)
    return unpack(data or {}, 1, data and table.maxn(data) or 0)
end

function conn_mt:eval(expr, args, opts)
    local data = self:_request(T.EVAL, {[K.EXPR] = expr, [K.TUPLE] = seq(args)}, opts)
    return unpack(data or {}, 1, data and table.maxn(data) or 0)
end

function conn_mt:is_connected() return self.state == 'active' end
function conn_mt:wait_connected() return self.state == 'active' end
function conn_mt:wait_state(state) return self.state == state end

function conn_mt:close()
    if self._h then self._h:close() end
    self.state = 'closed'
end

local function key_of(key)
    if key == nil then return seq() end
    if type(key) ~= 'table' then return seq({key}) end
    return key
end

-- Rows become box.tuple objects (plain tables before box.cfg{}, when there are none).
local function tuples(data)
    local out = {}
    for i, row in ipairs(data or {}) do
        local ok, t = pcall(box.tuple.new, row)
        out[i] = ok and t or row
    end
    return out
end

local index_mt = {}
index_mt.__index = index_mt

function index_mt:select(key, opts)
    opts = opts or {}
    local iterator = opts.iterator or 'EQ'
    if type(iterator) == 'string' then iterator = ITERATORS[string.upper(iterator)] end
    local body = {[K.SPACE_ID] = self.space_id, [K.INDEX_ID] = self.id, [K.ITERATOR] = iterator or 0,
                  [K.KEY] = key_of(key), [K.LIMIT] = opts.limit or 0xFFFFFFFF, [K.OFFSET] = opts.offset or 0}
    return tuples(self._conn:_request(T.SELECT, body, opts))
end

function index_mt:get(key, opts)
    local rows = self:select(key, {limit = 2, timeout = opts and opts.timeout})
    if #rows > 1 then box.error(box.error.MORE_THAN_ONE_TUPLE) end
    return rows[1]
end

function index_mt:min(key, opts) return self:select(key, {iterator = 'GE', limit = 1, timeout = opts and opts.timeout})[1] end
function index_mt:max(key, opts) return self:select(key, {iterator = 'LE', limit = 1, timeout = opts and opts.timeout})[1] end

function index_mt:count(key, opts)
    return self._conn:eval('local s, i, k = ... return box.space[s].index[i]:count(k)',
                           {self.space_id, self.id, key_of(key)}, opts)
end

function index_mt:update(key, ops, opts)
    -- Field numbers in Lua are 1-based, as net.box sends them (IPROTO_INDEX_BASE = 1).
    local body = {[K.SPACE_ID] = self.space_id, [K.INDEX_ID] = self.id, [K.KEY] = key_of(key), [K.TUPLE] = seq(ops),
                  [K.INDEX_BASE] = 1}
    return tuples(self._conn:_request(T.UPDATE, body, opts))[1]
end

function index_mt:delete(key, opts)
    local body = {[K.SPACE_ID] = self.space_id, [K.INDEX_ID] = self.id, [K.KEY] = key_of(key)}
    return tuples(self._conn:_request(T.DELETE, body, opts))[1]
end

local space_mt = {}
space_mt.__index = space_mt

local function write(space, ty, tuple, opts)
    local body = {[K.SPACE_ID] = space.id, [K.TUPLE] = tuple}
    return tuples(space._conn:_request(ty, body, opts))[1]
end

function space_mt:insert(tuple, opts) return write(self, T.INSERT, tuple, opts) end
function space_mt:replace(tuple, opts) return write(self, T.REPLACE, tuple, opts) end
function space_mt:upsert(tuple, ops, opts)
    self._conn:_request(T.UPSERT, {[K.SPACE_ID] = self.id, [K.TUPLE] = tuple, [K.OPS] = seq(ops), [K.INDEX_BASE] = 1},
                        opts)
    return nil
end
function space_mt:select(key, opts) return self.index[0]:select(key, opts) end
function space_mt:get(key, opts) return self.index[0]:get(key, opts) end
function space_mt:update(key, ops, opts) return self.index[0]:update(key, ops, opts) end
function space_mt:delete(key, opts) return self.index[0]:delete(key, opts) end
function space_mt:count(key, opts) return self.index[0]:count(key, opts) end
function space_mt:len(opts) return self.index[0]:count(nil, opts) end

-- Reads the server's _vspace and _vindex: conn.space[name|id], space.index[name|id].
function conn_mt:reload_schema()
    local spaces = self:_request(T.SELECT, {[K.SPACE_ID] = 281, [K.INDEX_ID] = 0, [K.ITERATOR] = ITERATORS.ALL,
                                           [K.KEY] = seq(), [K.LIMIT] = 0xFFFFFFFF, [K.OFFSET] = 0})
    local indexes = self:_request(T.SELECT, {[K.SPACE_ID] = 289, [K.INDEX_ID] = 0, [K.ITERATOR] = ITERATORS.ALL,
                                            [K.KEY] = seq(), [K.LIMIT] = 0xFFFFFFFF, [K.OFFSET] = 0})
    local space = {}
    for _, row in ipairs(spaces or {}) do
        local s = setmetatable({id = row[1], name = row[3], engine = row[4], _conn = self, index = {}}, space_mt)
        space[s.id], space[s.name] = s, s
    end
    for _, row in ipairs(indexes or {}) do
        local s = space[row[1]]
        if s then
            local ix = setmetatable({space_id = row[1], id = row[2], name = row[3], type = string.upper(row[4]),
                                     unique = type(row[5]) == 'table' and row[5].unique, _conn = self}, index_mt)
            s.index[ix.id], s.index[ix.name] = ix, ix
        end
    end
    self.space = space
    return true
end

function net_box.connect(uri, opts, ...)
    if type(opts) == 'number' or type(opts) == 'string' then
        -- connect(host, port[, opts])
        uri, opts = tostring(uri) .. ':' .. tostring(opts), ...
    end
    opts = opts or {}
    local host, port, user, password = parse_uri(uri)
    user = opts.user or user
    password = opts.password or password or ''
    local self = setmetatable({host = host, port = port, opts = opts, state = 'initial', space = {}}, conn_mt)
    if type(port) == 'number' and (port < 0 or port > 65535 or port % 1 ~= 0) then
        self.state, self.error = 'error', 'Connection refused'
        return self
    end
    local h, reason = internal.netbox_connect(host, tostring(port), opts.connect_timeout or opts.timeout or 10)
    if h == nil then
        self.state, self.error = 'error', reason
        return self
    end
    self._h, self.state = h, 'active'
    local peer = string.match(h:greeting(), '(%x+%-%x+%-%x+%-%x+%-%x+)%s*$')
    self.peer_uuid = peer
    local mine_ok, mine = pcall(function() return box.info.uuid end)
    self.to_self = mine_ok and peer ~= nil and peer == mine
    if user ~= nil and user ~= 'guest' then
        local body = {[K.USER_NAME] = user, [K.TUPLE] = seq({'chap-sha1', h:scramble(password)})}
        local aok, err = pcall(self._request, self, T.AUTH, body)
        if not aok then
            self:close()
            self.state, self.error = 'error', type(err) == 'table' and err.message or tostring(err)
            return self
        end
    end
    local sok, err = pcall(self.reload_schema, self)
    if not sok then self.state, self.error = 'error', type(err) == 'table' and err.message or tostring(err) end
    return self
end
net_box.new = net_box.connect

net_box.self = {
    ping = function() return true end,
    call = function(_, name, args)
        local fn = loadstring('return ' .. name)()
        return fn(unpack(args or {}))
    end,
    eval = function(_, expr, args) return loadstring(expr)(unpack(args or {})) end,
    is_connected = function() return true end,
    wait_connected = function() return true end,
    close = function() end,
    space = box.space,
    state = 'active',
}

package.loaded['net.box'] = net_box
