-- box: Tarantool's Lua API over oncebox's engine.
--
-- Everything that touches data goes through box.internal.op(name, ...), which
-- the server binds for the duration of each request; it returns `true, result`
-- or `false, error`. Schema changes are writes to the system spaces, exactly
-- as Tarantool's own box.schema does, so Lua and IPROTO DDL agree.

local type = type -- the builtin, not the one user code sees (box.lua)
box = box or {}
box.internal = box.internal or {}
local internal = box.internal

local MAP = {__serialize = 'map'}
local function map(t) return setmetatable(t or {}, MAP) end

--------------------------------------------------------------------------------
-- box.error
--------------------------------------------------------------------------------

local error_mt = {}
error_mt.__index = error_mt
-- The server recognises box.error objects by this marker (a plain table raised
-- with error() is a LuajitError, as in 2.6).
error_mt.__box_error = true
error_mt.__tostring = function(e) return e.message end
-- As 2.6's error cdata: `e .. '!'` and `'>' .. e` concatenate the message.
error_mt.__concat = function(a, b) return tostring(a) .. tostring(b) end

-- In 2.6 tuples and box.error objects are cdata; here a tuple is userdata and an
-- error a table. Code written for 2.6 tells them by type(v) == 'cdata' (luatest's
-- comparator calls :totable() on such a value, so `t.assert_equals(space:get(1),
-- {1, 'a'})` passes; the errors module wraps such an error in its own object):
-- the type() user code sees answers 'cdata' for both. Installed once every
-- built-in module has taken the builtin for itself (`local type = type` at its
-- top), so oncebox's own code sees what they are.
-- Other objects of oncebox's that are tables where 2.6's are `struct <name> &`
-- cdata (key_def's): metatable -> {ctypes = the ffi types they pass for, ref = the
-- reference type ffi.typeof gives}; the type() and ffi functions below treat them
-- as they treat errors.
local lookalikes = {}
function internal.register_cdata_lookalike(mt, name)
    local ffi = require('ffi')
    pcall(ffi.cdef, 'struct ' .. name .. ';')
    local ctypes = {}
    for _, form in ipairs({'struct %s', 'const struct %s', 'struct %s &', 'const struct %s &'}) do
        ctypes[tostring(ffi.typeof(string.format(form, name)))] = true
    end
    lookalikes[mt] = {ctypes = ctypes, ref = ffi.typeof(string.format('struct %s &', name))}
end

function internal.install_cdata_aware_type()
    local builtin_type = type
    local raw_metatable = debug.getmetatable
    local tuple_mt = raw_metatable(box.tuple.new({}))
    _G.type = function(v)
        local t = builtin_type(v)
        if t == 'userdata' then
            if raw_metatable(v) == tuple_mt then return 'cdata' end
        elseif t == 'table' then
            local mt = raw_metatable(v)
            if mt == error_mt or (mt ~= nil and lookalikes[mt] ~= nil) then return 'cdata' end
            -- A fiber object, userdata in 2.6.
            if mt ~= nil and rawget(mt, '__fiber') == true then return 'userdata' end
        end
        return t
    end
    -- pairs(box.space) walks every space, as in 2.6 (box.space finds them on demand);
    -- one dropped meanwhile (say by the loop, under its other key) is passed over.
    -- (box.space taken now: before box.cfg{} a script's `box` refuses to be read.)
    local builtin_pairs = pairs
    local spaces = rawget(box, 'space')
    local function next_space(listing, k)
        local v
        repeat k, v = next(listing, k) until k == nil or spaces[k] == v
        return k, v
    end
    _G.pairs = function(t)
        if t == spaces and internal.op ~= nil then return next_space, internal.space_listing(), nil end
        return builtin_pairs(t)
    end
    -- 2.6's errors are `const struct error &` cdata, and code tells them by ffi:
    -- tarantool/checks' checks('error') is ffi.istype('struct error', v). The ffi
    -- sees an oncebox error (a table) as that type: `struct error` is declared
    -- (opaque), ffi.istype of it (or of its reference or const form) holds for an
    -- error, and ffi.typeof(error) is 2.6's `const struct error &`.
    local ffi = require('ffi')
    pcall(ffi.cdef, 'struct error;')
    local error_ctype, error_ref_ctype = ffi.typeof('struct error'), ffi.typeof('const struct error &')
    local error_ctypes = {[tostring(error_ctype)] = true, [tostring(ffi.typeof('const struct error'))] = true,
                          [tostring(ffi.typeof('struct error &'))] = true, [tostring(error_ref_ctype)] = true}
    local builtin_istype, builtin_typeof = ffi.istype, ffi.typeof
    ffi.istype = function(ct, v)
        local mt = builtin_type(v) == 'table' and raw_metatable(v)
        local ctypes = mt == error_mt and error_ctypes or (mt and lookalikes[mt] and lookalikes[mt].ctypes)
        if ctypes then
            local ok, c = pcall(builtin_typeof, ct)
            -- (A bad type is reported where the caller is, as by ffi itself.)
            if not ok then error(c, 2) end
            return ctypes[tostring(c)] == true
        end
        return builtin_istype(ct, v)
    end
    ffi.typeof = function(v, ...)
        local mt = builtin_type(v) == 'table' and raw_metatable(v)
        if mt == error_mt then return error_ref_ctype end
        if mt and lookalikes[mt] then return lookalikes[mt].ref end
        return builtin_typeof(v, ...)
    end
end
-- Returned as a value (CALL, EVAL, console), an error is its message, as in 2.6.
error_mt.__serialize = function(e) return e.message end
function error_mt.unpack(e)
    return {code = e.code, message = e.message, type = e.type, custom_type = e.custom_type,
            base_type = e.base_type, errno = e.errno, trace = e.trace or {}, prev = e.prev}
end

-- The Lua frame `level` above the caller, as 2.6's error trace: {{file = ..., line = ...}}.
local function trace_at(level)
    local source, line = box.internal.frame(level + 1)
    -- Raised straight from a C function (pcall(box.error, ...)): 2.6 names it [C],
    -- line -1 as an unsigned 32-bit number.
    if source == '=[C]' then return {{file = '[C]', line = 4294967295}} end
    if source == nil or line == nil then return nil end
    local file = string.gsub(source, '^[@=]', '')
    return {{file = file, line = line}}
end
function error_mt.raise(e) error(e, 2) end
-- string.match on the message (2.6 keeps it for Tarantool 1.6's string errors).
function error_mt.match(e, ...) return string.match(e.message, ...) end
function error_mt.set_prev(e, prev)
    if prev ~= nil and getmetatable(prev) ~= error_mt then
        error("Usage: error1:set_prev(error2)", 2)
    end
    local p = prev
    while p ~= nil do
        if rawequal(p, e) then error("Cycles are not allowed", 2) end
        p = rawget(p, 'prev')
    end
    rawset(e, 'prev', prev)
end

-- box.error.<NAME>: 2.6's error codes by name, and their descriptions (lua/errcodes.lua,
-- loaded before this file).
local ERRCODES = internal.errcodes
local codes = {}
for i, entry in ipairs(ERRCODES) do
    if entry[1] then codes[entry[1]] = i - 1 end
end

internal.error_codes = codes

local make_error
make_error = function(code, message, etype, extra)
    local e = setmetatable({code = code, message = message, type = etype or 'ClientError',
                            base_type = etype or 'ClientError'}, error_mt)
    if extra then for k, v in pairs(extra) do e[k] = v end end
    -- An engine error's cause comes as a plain table: an error object too.
    local prev = rawget(e, 'prev')
    if type(prev) == 'table' and getmetatable(prev) == nil then
        rawset(e, 'prev', make_error(prev.code, prev.message, prev.type, prev))
    end
    return e
end
internal.make_error = make_error

-- An MP_ERROR payload ({[0] = {entry, ...}}, each entry {[0] = type, file, line,
-- message, errno, code, fields}) as a box.error object and its prev chain, as
-- 2.6's error_unpack makes it.
function internal.error_from_stack(payload)
    local stack = type(payload) == 'table' and payload[0]
    if type(stack) ~= 'table' then return nil end
    local first, last
    for _, entry in ipairs(stack) do
        if type(entry) ~= 'table' then return nil end
        local fields = type(entry[6]) == 'table' and entry[6] or {}
        local base = type(entry[0]) == 'string' and entry[0] or 'ClientError'
        local e = make_error(tonumber(entry[5]) or 0, tostring(entry[3] or ''), base)
        for k, v in pairs(fields) do
            if type(k) == 'string' then e[k] = v end
        end
        if base == 'CustomError' and type(fields.custom_type) == 'string' then e.type = fields.custom_type end
        e.trace = {{file = tostring(entry[1] or ''), line = tonumber(entry[2]) or 0}}
        if last then rawset(last, 'prev', e) else first = e end
        last = e
    end
    return first
end

-- A code's description, as 2.6's tnt_errcode_desc.
local function error_description(code)
    local entry = ERRCODES[code + 1]
    return entry and entry[2] or 'Unknown error'
end

-- Internal errors: the message is given in full.
-- box.error.last(): the last error set in each fiber (its coroutine; the main
-- thread has none), by a failed box operation, box.error() or box.error.set().
local last_errors = setmetatable({}, {__mode = 'k'})
local MAIN_THREAD = {}
local function set_last_error(e)
    last_errors[coroutine.running() or MAIN_THREAD] = e
    return e
end

local function raise(code, fmt, ...)
    error(set_last_error(make_error(code, string.format(fmt, ...))), 3)
end

-- Tarantool's trigger convention on `list`: (nil, nil) returns a copy of the list;
-- (fn) adds fn; (fn, old) puts fn where old was; (nil, old) removes old.
local function set_trigger(list, new, old)
    if new == nil and old == nil then
        local copy = {}
        for i, t in ipairs(list) do copy[i] = t end
        return copy
    end
    -- 2.6 raises these two as plain strings.
    if (new ~= nil and type(new) ~= 'function') or (old ~= nil and type(old) ~= 'function') then
        error('trigger reset: incorrect arguments', 0)
    end
    if old ~= nil then
        local found = false
        for i, t in ipairs(list) do
            if t == old then
                if new ~= nil then list[i] = new else table.remove(list, i) end
                found = true
                break
            end
        end
        if not found then error('trigger reset: Trigger is not found', 0) end
    else
        table.insert(list, new)
    end
    return new
end

-- A new error object from box.error's or box.error.new's arguments, as 2.6's
-- luaT_error_create reads them: (code[, format arguments]), (custom type, reason[,
-- format arguments]) or a table {code =, reason =, type =}; nil for anything else
-- (and for a description wanting arguments none were given for).
local function create_error(...)
    local n, first = select('#', ...), ...
    local code, custom_type, reason = 0, nil, nil
    if n >= 1 and (type(first) == 'number' or type(first) == 'string') then
        local args_from = 2
        if type(first) == 'number' then
            code = first
            reason = error_description(first)
        else
            custom_type, reason, args_from = first, select(2, ...), 3
            if type(reason) ~= 'string' then return nil end
        end
        if n >= args_from then
            reason = string.format((string.gsub(reason, '%%u', '%%d')), select(args_from, ...))
        elseif reason:find('%', 1, true) then
            return nil
        end
    elseif n == 1 and type(first) == 'table' then
        code = tonumber(first.code) or 0
        reason = first.reason
        reason = (type(reason) == 'string' or type(reason) == 'number') and tostring(reason) or ''
        local t = first.type
        if type(t) == 'string' or type(t) == 'number' then custom_type = tostring(t) end
    else
        return nil
    end
    -- A custom error's type is its own name; its base type says it is custom.
    if custom_type ~= nil then
        return make_error(code, reason, 'CustomError', {custom_type = custom_type, type = custom_type})
    end
    return make_error(code, reason)
end

box.error = setmetatable({}, {
    __call = function(_, ...)
        local n, first = select('#', ...), ...
        -- No arguments: the last error again, if there is one.
        if n == 0 then
            local last = box.error.last()
            if last == nil then return end
            error(last, 2)
        end
        local e = first
        if not (n == 1 and type(first) == 'table' and getmetatable(first) == error_mt) then
            e = create_error(...)
            if e == nil then error('box.error(): bad arguments', 0) end
        end
        if rawget(e, 'trace') == nil then rawset(e, 'trace', trace_at(2)) end
        error(set_last_error(e), 2)
    end,
})
function box.error.last() return last_errors[coroutine.running() or MAIN_THREAD] end
function box.error.clear() set_last_error(nil) end
function box.error.set(e)
    if getmetatable(e) ~= error_mt then error('Usage: box.error.set(error)', 2) end
    set_last_error(e)
end
function box.error.new(...)
    local e = select('#', ...) > 0 and create_error(...) or nil
    if e == nil then error('Usage: box.error.new(code, args) or box.error.new(type, args)', 0) end
    rawset(e, 'trace', trace_at(2))
    return e
end
function box.error.raise(e) error(e, 2) end
function box.error.is(e) return getmetatable(e) == error_mt end
for name, code in pairs(codes) do box.error[name] = code end

-- The numbers box.internal.op also takes for its common operations (filled from
-- Rust, dispatch.rs's OP_CODES): a number crosses into Rust more cheaply than a string.
internal.op_codes = {}
local op_codes = internal.op_codes

-- Calls into the engine; a failure is raised as a box.error at the caller's caller.
-- `_session_settings` (id 380) is answered by box.lua (see session settings below).
local SESSION_SETTINGS_ID = 380
local session_settings_op

-- What box.session answers before box.cfg{}, as 2.6's does: the script's own
-- session, admin's.
local UNCONFIGURED_OPS = {
    session_id = function() return 1 end,
    uid = function() return 1 end,
    user_name = function(uid) return uid == 1 and 'admin' or nil end,
    session_exists = function(id) return id == nil or id == 1 end,
    session_peer = function() return nil end,
}

-- Each space's engine by id (filled with its object), and whether any is vinyl:
-- a transaction then keeps to one engine, as in 2.6 (see box.begin below).
local space_engines, any_vinyl = {}, false
-- The operations 2.6 begins a statement in its transaction's engine for.
local TXN_STATEMENT_OPS = {get = true, select = true, insert = true, replace = true, update = true, upsert = true,
                           delete = true}

-- A key or tuple msgpack cannot encode, raised as 2.6 raises it: memtx reads
-- encode their key in Lua (msgpackffi), everything else in C.
local FFI_READS = {get = true, select = true, count = true}
local function unencodable(name, space_id, message)
    local lua_type = string.match(message, "^unsupported Lua type '(.*)'$")
    if lua_type ~= nil and FFI_READS[name] and space_engines[space_id] ~= 'vinyl' then
        error("builtin/msgpackffi.lua:292: can not encode Lua type: '" .. lua_type .. "'", 0)
    end
    error(internal.encode_failure(message), 0)
end

local function op(name, ...)
    if any_vinyl and TXN_STATEMENT_OPS[name] then internal.check_txn_engine(space_engines[...]) end
    if internal.op == nil then
        local unconfigured = UNCONFIGURED_OPS[name]
        if unconfigured ~= nil then return unconfigured(...) end
        error(make_error(0, 'Please call box.cfg{} first'), 3)
    end
    if (...) == SESSION_SETTINGS_ID and session_settings_op ~= nil then
        local handled, res = session_settings_op(name, ...)
        if handled then return res end
    end
    local ok, res = internal.op(op_codes[name] or name, ...)
    if not ok then
        if res.unencodable then unencodable(name, (...), res.message) end
        if res.code == 42 and res.access_type ~= nil then internal.access_denied(res) end
        error(set_last_error(make_error(res.code, res.message, res.type, res)), 3)
    end
    return res
end
internal.call_op = op

--------------------------------------------------------------------------------
-- box.space and indexes
--------------------------------------------------------------------------------

local iterators = {EQ = 0, REQ = 1, ALL = 2, LT = 3, LE = 4, GE = 5, GT = 6,
                   BITS_ALL_SET = 7, BITS_ANY_SET = 8, BITS_ALL_NOT_SET = 9, OVERLAPS = 10, NEIGHBOR = 11}
box.index = {}
for k, v in pairs(iterators) do box.index[k] = v end

local function iterator_code(opts, key)
    local it = opts
    if type(opts) == 'table' then it = opts.iterator end
    if not it then
        return (key == nil or (type(key) == 'table' and #key == 0)) and 2 or 0
    end
    if type(it) == 'number' then return it end
    -- As 2.6's check_iterator_type: a name, or ER_ITERATOR_TYPE.
    local c = type(it) == 'string' and iterators[string.upper(it)] or nil
    if c == nil then raise(72, "Unknown iterator type '%s'", tostring(it)) end
    return c
end

local space_cache = {version = -1, by_id = {}, by_name = {}}
local make_space

local fill_space

-- Space objects are kept per id and refreshed in place when the schema changes,
-- so a script holding `s = box.schema.space.create(...)` sees indexes created later.
-- Refills every space object made so far when the schema changed since.
local function refresh_spaces()
    -- The server keeps internal.schema current while the engine is bound (internal.op).
    local version = internal.op ~= nil and internal.schema or op('schema_version')
    if version ~= space_cache.version then
        local by_id = space_cache.by_id
        space_cache = {version = version, by_id = {}, by_name = {}}
        for id, obj in pairs(by_id) do
            local info = op('space', id)
            if info ~= nil then
                fill_space(obj, info)
                space_cache.by_id[id] = obj
                space_cache.by_name[info.name] = obj
            end
        end
    end
end

local function lookup_space(k)
    refresh_spaces()
    local cached = space_cache.by_id[k] or space_cache.by_name[k]
    if cached then return cached end
    local info = op('space', k)
    if info == nil then return nil end
    local s = make_space(info)
    space_cache.by_id[info.id] = s
    space_cache.by_name[info.name] = s
    return s
end

-- box.internal.schema_version(): 2.6's count of schema changes, internal there
-- but read by the ddl module, whose cache follows it (0 before box.cfg{}).
function internal.schema_version()
    if internal.op == nil then return 0 end
    return op('schema_version')
end

box.space = setmetatable({}, {
    __index = function(_, k) return lookup_space(k) end,
    __serialize = 'map',
})

-- Every space by id and by name, as 2.6's box.space holds them: what
-- pairs(box.space) walks (LuaJIT has no __pairs, so the pairs user code sees
-- takes it, see install_cdata_aware_type). Made when asked, so DDL costs nothing.
local function space_listing()
    local listing = {}
    for _, id in ipairs(op('space_ids')) do
        local s = lookup_space(id)
        if s ~= nil then
            listing[id] = s
            listing[s.name] = s
        end
    end
    return listing
end
internal.space_listing = space_listing

-- Tarantool's C functions return no value, not nil, when there is no tuple.
local function maybe(v)
    if v ~= nil then return v end
end

local index_methods = {}
index_methods.__index = index_methods

-- space:on_replace(fn [, old]): triggers called as fn(old, new, space_name, request)
-- after each row a statement changes; an error undoes the statement.
local replace_triggers = {}

-- What a trigger raised, as 2.6 passes it on: error() with a string comes out as a LuajitError.
local function trigger_error(err)
    if type(err) == 'string' then return make_error(nil, err, 'LuajitError') end
    return err
end

local function run_replace_triggers(space_id, request, mark)
    local list = replace_triggers[space_id]
    if list == nil or #list == 0 then return end
    local name = box.space[space_id] and box.space[space_id].name
    local yields = internal.fiber_yields()
    local ok, err = pcall(function()
        for _, change in ipairs(op('changes_since', mark, space_id)) do
            -- Newest first, as 2.6 runs a trigger list.
            for i = #list, 1, -1 do list[i](change[1], change[2], name, request) end
        end
    end)
    if ok and internal.fiber_yields() ~= yields and not box.is_in_txn() then
        -- As in 2.6, a trigger that yields aborts its statement's transaction (inside
        -- box.begin the yield has aborted the whole transaction already).
        ok, err = false, internal.make_error(154, 'Transaction has been aborted by a fiber yield')
    end
    if not ok then
        op('txn_rollback', mark)
        error(trigger_error(err), 0)
    end
end
internal.run_replace_triggers = run_replace_triggers

-- Runs `body` as one statement of `space_id`, then the space's on_replace triggers
-- on what it changed; `body` returns the statement's result and the request the
-- triggers see (nil when nothing was written). A failure undoes the statement and
-- what its triggers did. Outside box.begin the statement and its triggers are one
-- transaction, so that a trigger that yields aborts the statement (the yield would
-- otherwise commit it).
local function statement(space_id, body)
    local implicit = not box.is_in_txn()
    if implicit then box.begin() end
    local mark = op('txn_mark')
    local ok, r, request = pcall(body)
    if ok and request ~= nil then
        local fired, err = pcall(run_replace_triggers, space_id, request, mark)
        if not fired then ok, r = false, err end
    end
    if not ok then
        op('txn_rollback', mark)
        if implicit then box.rollback() end
        error(r, 0)
    end
    if implicit then box.commit() end
    return r
end

-- Runs a Lua write, then the space's on_replace triggers if it has any.
local function triggered(space_id, request, fn, ...)
    if replace_triggers[space_id] == nil then return fn(...) end
    local args = {n = select('#', ...), ...}
    return statement(space_id, function() return fn(unpack(args, 1, args.n)), request end)
end

-- space:before_replace(fn [, old]): triggers called as fn(old, new, space_name,
-- request) before a row changes, newest first, each given the tuple the one before
-- returned. What the last returns decides, as in 2.6: `new` itself (or no value)
-- lets the request run as sent; another tuple is written instead (a REPLACE; its
-- primary key must be the old row's); nil deletes the old row (a DELETE); `old`
-- itself does nothing. UPDATE and DELETE of a missing key run no trigger.
local before_triggers = {}

-- The primary key of `tuple` in `space`.
local function primary_key_of(space, tuple)
    local key = {}
    for i, part in ipairs(space.index[0].parts) do key[i] = tuple[part.fieldno] end
    return key
end

internal.primary_key_of = primary_key_of

local function same_key(a, b)
    for i = 1, #a do
        if a[i] ~= b[i] then return false end
    end
    return true
end

-- Runs the triggers of `space` on a row's old and new tuples; returns what they decided.
local function run_before_triggers(space, list, request, old, new)
    local result = new
    for i = #list, 1, -1 do
        local n, r = (function(...) return select('#', ...), (...) end)(list[i](old, result, space.name, request))
        if n > 0 then
            if r == nil then
                result = nil
            elseif box.tuple.is(r) then
                result = r
            else
                raise(53, 'Invalid return value of space:before_replace trigger: expected tuple or nil, got %s',
                      type(r))
            end
        end
    end
    return result
end

-- A write to a space with before_replace triggers: the row's old and new tuples,
-- the triggers, then the request as they rewrote it (and its on_replace triggers).
-- `a` is the tuple (INSERT, REPLACE, UPSERT) or the key (UPDATE, DELETE); `b` the
-- operations (UPDATE, UPSERT).
local function before_replaced(space_id, index_id, request, a, b)
    local list = before_triggers[space_id]
    local space = box.space[space_id]
    local run = {
        INSERT = function() return op('insert', space_id, a) end,
        REPLACE = function() return op('replace', space_id, a) end,
        UPDATE = function() return op('update', space_id, index_id, a, b) end,
        UPSERT = function() return op('upsert', space_id, a, b) end,
        DELETE = function() return op('delete', space_id, index_id, a) end,
    }
    return statement(space_id, function()
        local old, new
        if request == 'UPDATE' or request == 'DELETE' then
            old = op('get', space_id, index_id, a)
            if old == nil then return end
            -- As in 2.6, a new tuple has no field names.
            if request == 'UPDATE' then new = op('tuple_new', old:update(b)) end
        else
            -- As in 2.6, without the space's field names.
            new = op('tuple_new', a)
            old = op('get', space_id, 0, primary_key_of(space, new))
            if request == 'UPSERT' and old ~= nil then new = op('tuple_new', old:upsert(b)) end
        end
        local fired, result = pcall(run_before_triggers, space, list, request, old, new)
        if not fired then error(trigger_error(result), 0) end
        if rawequal(result, new) then
            return run[request](), request
        elseif rawequal(result, old) then
            return nil, nil
        elseif result == nil then
            return op('delete', space_id, 0, primary_key_of(space, old)), 'DELETE'
        end
        if old ~= nil and not same_key(primary_key_of(space, old), primary_key_of(space, result)) then
            raise(94, "Attempt to modify a tuple field which is part of index '%s' in space '%s'",
                  space.index[0].name, space.name)
        end
        return op('replace', space_id, result), 'REPLACE'
    end)
end

-- An IPROTO write to a space with before_replace triggers (the executor's way in).
-- Operations number fields from `index_base` (IPROTO's default 0), Lua from 1.
function internal.iproto_before_replaced(space_id, index_id, request, a, b, index_base)
    if type(b) == 'table' and index_base == 0 then
        for _, o in ipairs(b) do
            if type(o) == 'table' and type(o[2]) == 'number' and o[2] >= 0 then o[2] = o[2] + 1 end
        end
    end
    return before_replaced(space_id, index_id, request, a, b)
end

-- A Lua write: through the before_replace triggers if the space has any.
-- After a write to a system space (a schema change), space objects already handed
-- out show it at once, as in 2.6 (`s.index.pk:rename('x')` then `s.index.x`).
-- A fiber that writes without yielding keeps every statement it committed (its
-- undo entry, the tuple it replaced, its log entry) until it yields: a loop of a
-- million writes would hold a million. Every FLUSH_EVERY writes outside a
-- transaction they are let go: without a WAL at once, with one by a yield that
-- sends them to it (2.6 yields for the WAL at every such write).
local after_write
do
    local FLUSH_EVERY = 1024
    local unflushed = 0
    local function flush_point()
        unflushed = 0
        if box.is_in_txn() or not internal.fiber_may_commit() then return end
        local pending = op('txn_mark')
        if pending < FLUSH_EVERY then
            unflushed = pending
        elseif not op('commit_pending') then
            require('fiber').yield()
        end
    end

    function after_write(space_id, ...)
        if space_id < 512 then refresh_spaces() end
        unflushed = unflushed + 1
        if unflushed >= FLUSH_EVERY then flush_point() end
        return ...
    end
end

local function written(space_id, index_id, request, fn, a, b, ...)
    if before_triggers[space_id] ~= nil then
        return after_write(space_id, before_replaced(space_id, index_id, request, a, b))
    end
    return after_write(space_id, triggered(space_id, request, fn, ...))
end

-- A number as 2.6's FFI calls take it for a `uint32_t` argument (truncated,
-- modulo 2^32); anything else is refused as LuaJIT refuses it.
local function ffi_uint32(v, argno, fname)
    if type(v) == 'cdata' then v = tonumber(v) end
    if type(v) ~= 'number' then
        error(string.format("bad argument #%d to '%s' (cannot convert '%s' to 'unsigned int')", argno, fname,
                            type(v)), 2)
    end
    v = v >= 0 and math.floor(v) or math.ceil(v)
    return v % 4294967296
end

function index_methods:select(key, opts)
    opts = opts or {}
    local it = iterator_code(opts, key)
    local offset = opts.offset ~= nil and ffi_uint32(opts.offset, 4, 'box_select') or 0
    local limit = opts.limit ~= nil and ffi_uint32(opts.limit, 5, 'box_select') or 4294967295
    return op('select', self.space_id, self.id, key, it, offset, limit)
end
-- As 2.6: what an index type cannot do is an error naming the index and the call.
local function check_feature(index, feature, types)
    if not types[index.type] then
        local space = box.space[index.space_id]
        raise(112, "Index '%s' (%s) of space '%s' (%s) does not support %s", index.name, index.type,
              space and space.name or '', space and space.engine or 'memtx', feature)
    end
end
local ORDERED = {TREE = true}
-- As 2.6: a system view's index does not count its entries nor pick one at random.
local function check_not_view(index, feature)
    if space_engines[index.space_id] == 'sysview' then
        local space = box.space[index.space_id]
        raise(112, "Index '%s' (%s) of space '%s' (sysview) does not support %s", index.name, index.type,
              space and space.name or '', feature)
    end
end
function index_methods:random(seed)
    check_not_view(self, 'random()')
    check_feature(self, 'random()', {TREE = true, HASH = true})
    -- As 2.6: without a seed, math.random()'s fraction, which the FFI call truncates to 0.
    seed = seed == nil and 0 or ffi_uint32(seed, 3, 'box_index_random')
    local n = op('len', self.space_id, self.id)
    if n == 0 then return nil end
    return self:select({}, {limit = 1, offset = seed % n})[1]
end
function index_methods:get(key) return maybe(op('get', self.space_id, self.id, key)) end
function index_methods:min(key)
    check_feature(self, 'min()', ORDERED)
    return maybe(op('select', self.space_id, self.id, key, 5, 0, 1)[1])
end
function index_methods:max(key)
    check_feature(self, 'max()', ORDERED)
    return maybe(op('select', self.space_id, self.id, key, 4, 0, 1)[1])
end
function index_methods:count(key, opts)
    if any_vinyl then internal.check_txn_engine(space_engines[self.space_id]) end
    -- A view counts the rows it shows.
    if space_engines[self.space_id] == 'sysview' then return #self:select(key, opts) end
    if key == nil and opts == nil then return op('len', self.space_id, self.id) end
    local it = iterator_code(opts or {}, key)
    if it == iterators.ALL then
        -- As 2.6: ALL counts every entry whatever the key (still checked against the index).
        op('select', self.space_id, self.id, key, it, 0, 0)
        return op('len', self.space_id, self.id)
    end
    -- (_session_settings's rows are made by box.lua; limit and offset count for
    -- nothing, as in 2.6.)
    if self.space_id == SESSION_SETTINGS_ID then return #self:select(key, {iterator = it}) end
    return op('count', self.space_id, self.id, key, it)
end
index_methods.len = function(self)
    check_not_view(self, 'size()')
    return op('len', self.space_id, self.id)
end
-- An estimate of the index structure's own memory (not the tuples').
function index_methods:bsize() return op('index_bsize', self.space_id, self.id) end
-- A memtx index has no statistics of its own and nothing to compact, as in 2.6.
function index_methods:stat() return {} end
function index_methods:compact() end
-- As in Tarantool, a luafun iterator: `for _, t in s:pairs()` and `s:pairs():map(f):totable()`.
-- Options other than the iterator are ignored, as 2.6 ignores them.
--
-- A TREE index is read as the loop goes, in chunks (PAIRS_FIRST_CHUNK tuples,
-- doubling up to PAIRS_MAX_CHUNK), so a loop that stops early reads little. What a chunk read ahead may be stale once any index changes (the
-- loop's body wrote, or a fiber did while it yielded): the iterator then reads
-- on from after the last tuple it gave, a tuple at a time at first, and so sees
-- what 2.6's TREE iterator sees (no deleted tuple, a new one ahead, an updated
-- one as it is now). Other indexes are read whole first.
do
    local PAIRS_FIRST_CHUNK, PAIRS_MAX_CHUNK = 2, 1024
    -- uint32_t *: the count of index entry changes on this thread (engine/index.rs).
    local entry_changes

    local function is_resumable(index)
        -- (_session_settings's rows are made by session_setting_rows, whole.)
        if index.type ~= 'TREE' or index.func ~= nil or index.space_id == SESSION_SETTINGS_ID then return false end
        for _, part in ipairs(index.parts or {}) do
            if type(part.path) == 'string' and part.path:find('[*]', 1, true) then return false end
        end
        return true
    end

    -- Reads the chunk after the last tuple given (from the start before the first).
    local function pairs_read_on(p, size)
        p.seen = entry_changes[0]
        local chunk = op('select', p.space_id, p.index_id, p.key, p.iterator, 0, size, p.last)
        p.chunk, p.at, p.count, p.ended = chunk, 0, #chunk, #chunk < size
        p.size = math.min(size * 2, PAIRS_MAX_CHUNK)
    end

    local function pairs_next(p)
        if entry_changes[0] ~= p.seen then
            pairs_read_on(p, 1)
        elseif p.at >= p.count then
            if p.ended then return nil end
            pairs_read_on(p, p.size)
        end
        local at = p.at + 1
        local t = p.chunk[at]
        if t == nil then return nil end
        p.at, p.last, p.given = at, t, p.given + 1
        return p.given, t
    end

    function index_methods:pairs(key, opts)
        local it = iterator_code(opts or {}, key)
        local fun = package.loaded.fun
        if not is_resumable(self) then
            return fun.iter(op('select', self.space_id, self.id, key, it, 0, 4294967295))
        end
        if entry_changes == nil then
            entry_changes = require('ffi').cast('const uint32_t *', op('entry_changes_address'))
        end
        -- The key as it is now (2.6 copies it too): the loop may change the table.
        if type(key) == 'table' then
            local copy = {}
            for k, v in pairs(key) do copy[k] = v end
            key = copy
        end
        local p = {space_id = self.space_id, index_id = self.id, key = key, iterator = it, given = 0}
        -- The first chunk now: a bad key or iterator is an error of this call, as in 2.6.
        pairs_read_on(p, PAIRS_FIRST_CHUNK)
        return fun.wrap(pairs_next, p, 0)
    end
end
index_methods.__call = index_methods.pairs

-- box.schema.index_mt (these methods), memtx_index_mt and vinyl_index_mt, as
-- 2.6 has them: a method set on index_mt is set on both engines' too; one set on
-- an engine's is that engine's indexes' own.
local memtx_index_mt, vinyl_index_mt = {}, {}
local function replicate_index_method(t, k, v)
    memtx_index_mt[k], vinyl_index_mt[k] = v, v
    rawset(t, k, v)
end

-- A space's or index's own metatable, looking `lookup` up (2.6's
-- wrap_schema_object_mt): once a method is set on the metatable itself, it is
-- looked up there first, so that it extends that one object.
local function object_mt(lookup, mt)
    mt.__index = lookup
    setmetatable(mt, {__newindex = function(self, k, v)
        getmetatable(self).__newindex = nil
        mt.__index = function(object, key)
            local own = rawget(mt, key)
            if own ~= nil then return own end
            if type(lookup) == 'function' then return lookup(object, key) end
            return lookup[key]
        end
        rawset(mt, k, v)
    end})
    return mt
end

for k, v in pairs(index_methods) do memtx_index_mt[k], vinyl_index_mt[k] = v, v end
memtx_index_mt.__index, vinyl_index_mt.__index = memtx_index_mt, vinyl_index_mt
setmetatable(index_methods, {__newindex = replicate_index_method})
-- 2.6's C functions take a table or a tuple for a tuple, a key or operations,
-- and raise their usage (a plain string) for anything else.
local function is_table_or_tuple(v)
    return type(v) == 'table' or internal.native.is_tuple(v)
end
local function check_update_ops(ops)
    if not is_table_or_tuple(ops) then error('Usage index:update(key, ops)', 0) end
end
function index_methods:update(key, ops)
    check_update_ops(ops)
    local id = self.space_id
    return maybe(written(id, self.id, 'UPDATE', op, key, ops, 'update', id, self.id, key, ops))
end
function index_methods:delete(key)
    local id = self.space_id
    return maybe(written(id, self.id, 'DELETE', op, key, nil, 'delete', id, self.id, key))
end
-- A functional index's `func` option as the function id _index keeps: a name is
-- looked up, as 2.6's func_id_by_name does; an id must name a function too.
local function index_func_id(func)
    local row
    if type(func) == 'string' then row = box.space._func.index.name:get(func) else row = box.space._func:get{func} end
    if row == nil then box.error(box.error.NO_SUCH_FUNCTION, tostring(func)) end
    return row[1]
end

-- Forgets the _func_index rows of a space's indexes (of index `iid` only, if given).
local function drop_func_index_rows(space_id, iid)
    local key = iid == nil and {space_id} or {space_id, iid}
    for _, row in ipairs(box.space._func_index:select(key)) do box.space._func_index:delete{row[1], row[2]} end
end

function index_methods:drop() box.schema.index.drop(self.space_id, self.id) end
function index_methods:rename(name) box.schema.index.rename(self.space_id, self.id, name) end

local space_methods = {}
space_methods.__index = function(s, k)
    local m = space_methods[k]
    if m ~= nil then return m end
    if k == 'engine' then
        local row = box.space._space:get(s.id)
        return row ~= nil and row[4] or 'memtx'
    end
    -- Read from the space's _space flags when asked (2.6 keeps them as fields).
    if k == 'is_sync' or k == 'is_local' then
        local row = box.space._space:get(s.id)
        local flags = row ~= nil and row[6] or {}
        if k == 'is_sync' then return flags.is_sync == true end
        return flags.group_id == 1
    end
    return nil
end

-- A space's trigger setter: `lists` holds each space's list, `flag` the op that
-- tells the executor whether IPROTO writes to the space must run them.
local function space_trigger(lists, flag)
    return function(self, new, old)
        local list = lists[self.id] or {}
        local r = set_trigger(list, new, old)
        if new ~= nil or old ~= nil then
            lists[self.id] = #list > 0 and list or nil
            op(flag, self.id, #list > 0)
        end
        return r
    end
end
space_methods.on_replace = space_trigger(replace_triggers, 'set_replace_triggers')
space_methods.before_replace = space_trigger(before_triggers, 'set_before_replace_triggers')

function space_methods:insert(t) return maybe(written(self.id, 0, 'INSERT', op, t, nil, 'insert', self.id, t)) end
function space_methods:replace(t)
    return maybe(written(self.id, 0, 'REPLACE', op, t, nil, 'replace', self.id, t))
end
space_methods.put = space_methods.replace
function space_methods:update(key, ops)
    check_update_ops(ops)
    return maybe(written(self.id, 0, 'UPDATE', op, key, ops, 'update', self.id, 0, key, ops))
end
do
    -- An UPSERT returns no tuple, unless a before_replace trigger made the request
    -- a REPLACE or DELETE: op's result is dropped (by one function, not a closure
    -- made for each call).
    local function upsert_op(...) op(...) end
    function space_methods:upsert(t, ops)
        if not (is_table_or_tuple(t) and is_table_or_tuple(ops)) then
            error('Usage space:upsert(tuple_key, ops)', 0)
        end
        return maybe(written(self.id, 0, 'UPSERT', upsert_op, t, ops, 'upsert', self.id, t, ops))
    end
end
function space_methods:delete(key)
    return maybe(written(self.id, 0, 'DELETE', op, key, nil, 'delete', self.id, 0, key))
end
function space_methods:get(key) return maybe(op('get', self.id, 0, key)) end
function space_methods:select(key, opts)
    if self.index[0] == nil then
        -- As 2.6: a dropped space's object names the space as missing.
        if box.space[self.id] == nil then raise(36, "Space '%s' does not exist", self.name) end
        raise(35, "No index #0 is defined in space '%s'", self.name)
    end
    return self.index[0]:select(key, opts)
end
function space_methods:pairs(key, opts)
    -- A space with no index yet has no rows to walk (2.6 returns an empty iterator).
    if self.index[0] == nil then return package.loaded.fun.iter({}) end
    return self.index[0]:pairs(key, opts)
end
space_methods.__call = space_methods.pairs
function space_methods:count(key, opts)
    if any_vinyl then internal.check_txn_engine(space_engines[self.id]) end
    if key == nil and opts == nil and space_engines[self.id] ~= 'sysview' then return op('len', self.id) end
    -- With no index yet, nothing matches (as in 2.6).
    if self.index[0] == nil then return 0 end
    return self.index[0]:count(key, opts)
end
function space_methods:len()
    -- As 2.6: a view's length is its primary index's, which it does not know.
    if space_engines[self.id] == 'sysview' and self.index[0] ~= nil then return self.index[0]:len() end
    return op('len', self.id)
end
-- The bytes of the space's tuple data, as 2.6's uint64_t.
function space_methods:bsize()
    if box.space[self.id] == nil then raise(36, "Space '%s' does not exist", self.name) end
    return require('ffi').new('uint64_t', op('space_bsize', self.id))
end
function space_methods:auto_increment(t)
    local max = self.index[0]:max()
    local id = max and max[1] + 1 or 1
    local row = {id}
    for _, v in ipairs(t) do row[#row + 1] = v end
    return self:insert(row)
end
-- As 2.6: the right to write the space is all truncate needs; its _truncate row is
-- the server's to write.
local as_admin
function space_methods:truncate()
    op('check_space_write', self.id)
    as_admin(function()
        local T = box.space._truncate
        if T:get{self.id} == nil then T:insert{self.id, 0} end
        T:update({self.id}, {{'+', 2, 1}})
    end)
end
function space_methods:drop()
    local link = box.space._space_sequence:delete{self.id}
    if link ~= nil and link[3] then box.schema.sequence.drop(link[2]) end
    local ids = {}
    for iid in pairs(self.index) do if type(iid) == 'number' then ids[#ids + 1] = iid end end
    table.sort(ids, function(a, b) return a > b end)
    drop_func_index_rows(self.id)
    for _, iid in ipairs(ids) do box.space._index:delete{self.id, iid} end
    box.space._truncate:delete{self.id}
    for _, p in ipairs(box.space._priv.index.object:select{'space', self.id}) do
        box.space._priv:delete{p[2], p[3], p[4]}
    end
    -- As 2.6: a space dropped already is no more.
    if box.space._space:delete{self.id} == nil then box.error(box.error.NO_SUCH_SPACE, self.name) end
end
function space_methods:rename(name) box.schema.space.rename(self.id, name) end
function space_methods:format(fmt)
    -- Read through _vspace, as 2.6: whoever may use the space may see its format.
    if fmt == nil then return box.space._vspace:get(self.id)[7] end
    if type(fmt) ~= 'table' then raise(1, 'Illegal parameters, format should be a table') end
    box.space._space:update({self.id}, {{'=', 7, internal.normalize_format(fmt)}})
end
-- space:frommap(map[, {table = bool}]): a tuple of the space's format from the
-- map's named fields (those left out are nils; trailing ones are not there), or
-- with `table` the Lua table it is made of; nil and why when a name is not in the
-- format or the tuple does not fit the space (2.6's messages).
function space_methods.frommap(...)
    local argc, self, m, opts = select('#', ...), ...
    local usage = 'Usage: space:frommap(map, opts)'
    if argc < 2 or argc > 3 or type(m) ~= 'table' then error(usage, 0) end
    local as_table = false
    if argc == 3 then
        if type(opts) ~= 'table' or (opts.table ~= nil and type(opts.table) ~= 'boolean') then error(usage, 0) end
        as_table = opts.table == true
    end
    local id = type(self) == 'table' and tonumber(self.id) or 0
    local space = box.space[id]
    if space == nil then return nil, string.format("Space with id '%d' doesn't exist", id) end
    local fieldno = {}
    for i, f in ipairs(space._format or {}) do fieldno[f.name] = i end
    local t = internal.table_new(#(space._format or {}), 0)
    for k, v in pairs(m) do
        local name = tostring(k)
        if fieldno[name] == nil then return nil, string.format("Unknown field '%s'", name) end
        t[fieldno[name]] = v
    end
    local tuple, _, message = internal.native.tuple_new(t, nil, true)
    if tuple == nil then return nil, message end
    local ok, checked = pcall(op, 'space_tuple', id, tuple)
    if not ok then return nil, type(checked) == 'string' and checked or checked.message end
    if as_table then return t end
    return checked
end

fill_space = function(s, info)
    s.id, s.name, s.field_count, s.temporary, s._format = info.id, info.name, info.field_count, info.temporary,
        info.format
    space_engines[info.id] = info.engine or 'memtx'
    -- A field of its own, as 2.6's (pairs(space) meets it); 'blackhole' and
    -- 'service' spaces (one kind here) read theirs from _space when asked.
    s.engine = info.engine ~= 'blackhole' and space_engines[info.id] or nil
    any_vinyl = any_vinyl or info.engine == 'vinyl'
    s.is_local = info.is_local
    -- As 2.6: a space takes writes once it has a primary key.
    s.enabled = info.index[0] ~= nil
    -- As 2.6, an index keeps its object (a reference to it sees the change).
    local kept = {}
    for k, v in pairs(s.index) do
        if type(k) == 'number' and info.index[k] ~= nil then kept[k] = v end
        s.index[k] = nil
    end
    local ids = {}
    for iid in pairs(info.index) do ids[#ids + 1] = iid end
    table.sort(ids)
    for _, iid in ipairs(ids) do
        local ix = info.index[iid]
        local engine_mt = info.engine == 'vinyl' and vinyl_index_mt or memtx_index_mt
        -- Fields one by one, in the order 2.6's lbox_fillspace sets them (with its
        -- nils: setting one makes a key all the same), so that the object iterates
        -- and prints as there.
        local index = kept[iid]
        if index == nil then
            index = setmetatable({}, object_mt(engine_mt, {__call = engine_mt.__call, __pairs = engine_mt.pairs}))
        end
        if ix.unique ~= nil then
            rawset(index, 'unique', ix.unique)
        elseif ix.dimension ~= nil then
            rawset(index, 'dimension', ix.dimension)
        end
        if ix.func ~= nil then rawset(index, 'func', ix.func) end
        rawset(index, 'type', ix.type)
        rawset(index, 'id', iid)
        rawset(index, 'space_id', info.id)
        rawset(index, 'name', ix.name)
        rawset(index, 'parts', ix.parts)
        local sequenced = iid == 0 and info.sequence_id ~= nil
        rawset(index, 'sequence_id', sequenced and info.sequence_id or nil)
        rawset(index, 'sequence_fieldno', sequenced and info.sequence_field + 1 or nil)
        rawset(index, 'sequence_path', nil)
        s.index[iid] = index
        s.index[ix.name] = index
    end
end

make_space = function(info)
    local s = setmetatable({enabled = true, index = {}, ck_constraint = {}},
                           object_mt(space_methods.__index, {__serialize = 'map', __pairs = space_methods.pairs}))
    fill_space(s, info)
    s.create_index = function(self, name, opts)
        internal.check_space_arg(self, 'create_index')
        return internal.create_index(self, name, opts)
    end
    return s
end

--------------------------------------------------------------------------------
-- box.schema
--------------------------------------------------------------------------------

box.schema = box.schema or {}
-- box.priv: the privilege bits of _priv's fifth field.
box.priv = {R = 1, W = 2, X = 4, S = 8, U = 16, C = 32, D = 64, A = 128, REFERENCE = 256, TRIGGER = 512,
            INSERT = 1024, UPDATE = 2048, DELETE = 4096, GRANT = 8192, REVOKE = 16384, ALL = 4294967295}
box.schema.space = {}
-- The methods of spaces and indexes, for modules to extend (as 2.6).
box.schema.space_mt, box.schema.index_mt = space_methods, index_methods
box.schema.memtx_index_mt, box.schema.vinyl_index_mt = memtx_index_mt, vinyl_index_mt
box.schema.user = {}
box.schema.role = {}
box.schema.func = {}
-- box.schema's constants, as 2.6 has them (system space ids, limits, ids of the
-- built-in users and roles).
for k, v in pairs({
    ADMIN_ID = 1, CK_CONSTRAINT_ID = 364, CLUSTER_ID = 320, COLLATION_ID = 276, FIELD_MAX = 2147483647,
    FK_CONSTRAINT_ID = 356, FORMAT_ID_MAX = 65534, FUNC_ID = 296, FUNC_INDEX_ID = 372, GUEST_ID = 0,
    INDEX_FIELD_MAX = 32767, INDEX_ID = 288, INDEX_MAX = 128, INDEX_PART_MAX = 255, NAME_MAX = 65000,
    PRIV_ID = 312, PUBLIC_ROLE_ID = 2, REPLICA_MAX = 32, SCHEMA_ID = 272, SEQUENCE_DATA_ID = 285,
    SEQUENCE_ID = 284, SESSION_SETTINGS_ID = 380, SPACE_ID = 280, SPACE_MAX = 2147483647,
    SPACE_SEQUENCE_ID = 340, SQL_BIND_PARAMETER_MAX = 65000, SUPER_ROLE_ID = 31, SYSTEM_ID_MAX = 511,
    SYSTEM_ID_MIN = 256, SYSTEM_USER_ID_MAX = 2, SYSTEM_USER_ID_MIN = 0, TRIGGER_ID = 328, TRUNCATE_ID = 330,
    USER_ID = 304, VCOLLATION_ID = 277, VFUNC_ID = 297, VINDEX_ID = 289, VINYL_DEFERRED_DELETE_ID = 257,
    VPRIV_ID = 313, VSEQUENCE_ID = 286, VSPACE_ID = 281, VUSER_ID = 305,
}) do
    box.schema[k] = v
end

local function session_uid() return op('uid') end

-- A format as 2.6 stores it: the name and type by key or else by position
-- ({'id', 'unsigned'}, {name = 'id', 'unsigned'}); other keys kept as given (a
-- positional one left over is refused by the catalog); a collation by its id.
function internal.normalize_format(fmt)
    local out = {}
    for i, given in ipairs(fmt or {}) do
        local field = map{}
        if type(given) ~= 'table' then
            field.name = given
        else
            for k, v in pairs(given) do
                if k == 1 then
                    if given.name == nil then field.name = v
                    elseif given.type == nil then field.type = v
                    else field[1] = v end
                elseif k == 2 then
                    if given.name == nil and given.type == nil then field.type = v else field[2] = v end
                elseif k == 'collation' then
                    local coll = box.space._collation.index.name:get({v})
                    if coll == nil then
                        raise(1, "Illegal parameters, format[%d]: collation was not found by name '%s'", i, tostring(v))
                    end
                    field.collation = coll[1]
                else
                    field[k] = v
                end
            end
        end
        if type(field.name) ~= 'string' then raise(1, 'Illegal parameters, format[%d]: name (string) is expected', i) end
        if field.type == nil then field.type = 'any' end
        if type(field.type) ~= 'string' then raise(1, 'Illegal parameters, format[%d]: type must be a string', i) end
        out[i] = field
    end
    return setmetatable(out, {__serialize = 'seq'})
end

-- 2.6's check of an options table against `template` (option -> type name, or
-- 'a, b' for one of several types).
local function check_param_table(opts, template)
    if opts == nil then return end
    if type(opts) ~= 'table' then raise(1, 'Illegal parameters, options should be a table') end
    for k, v in pairs(opts) do
        local want = template[k]
        if want == nil then raise(1, "Illegal parameters, unexpected option '%s'", tostring(k)) end
        if not want:find(',', 1, true) then
            if type(v) ~= want then
                raise(1, "Illegal parameters, options parameter '%s' should be of type %s", k, want)
            end
        elseif not (',' .. want:gsub(' ', '') .. ','):find(',' .. type(v) .. ',', 1, true) then
            raise(1, "Illegal parameters, options parameter '%s' should be one of types: %s", k, want)
        end
    end
end

local SPACE_OPTIONS = {
    if_not_exists = 'boolean', engine = 'string', id = 'number', field_count = 'number', user = 'string, number',
    format = 'table', is_local = 'boolean', temporary = 'boolean', is_sync = 'boolean',
}

function box.schema.space.create(name, opts)
    if type(name) ~= 'string' then raise(1, 'Illegal parameters, name should be a string') end
    check_param_table(opts, SPACE_OPTIONS)
    opts = opts or {}
    local existing = box.space[name]
    if existing ~= nil then
        if opts.if_not_exists then return existing, 'not created' end
        raise(10, "Space '%s' already exists", name)
    end
    local id = opts.id
    if id == nil then
        -- As 2.6: the next id comes from _schema's 'max_id' (so ids are never reused).
        local max_id = box.space._schema:update({'max_id'}, {{'+', 2, 1}})
        if max_id == nil then
            id = math.max(op('max_space_id'), 511)
            max_id = box.space._schema:insert{'max_id', id + 1}
        end
        id = max_id[2]
    end
    local flags = map{}
    if opts.temporary then flags.temporary = true end
    if opts.is_sync then flags.is_sync = true end
    -- A replica-local space is in replication group 1.
    if opts.is_local then flags.group_id = 1 end
    local owner = session_uid()
    if opts.user ~= nil then owner = box.schema.user.get_id(opts.user) end
    box.space._space:insert{id, owner, name, opts.engine or 'memtx', opts.field_count or 0, flags,
                            internal.normalize_format(opts.format)}
    return box.space[id], 'created'
end
box.schema.create_space = box.schema.space.create
-- The schema is always 2.6's own: nothing to upgrade.
function box.schema.upgrade() end
-- box.schema.space.drop(id[, name[, {if_exists = true}]]): as 2.6, a missing
-- space is an error unless if_exists.
function box.schema.space.drop(space_id, space_name, opts)
    if type(space_id) ~= 'number' then raise(1, 'Illegal parameters, space_id should be a number') end
    local s = box.space[space_id]
    if s ~= nil then return s:drop() end
    if type(opts) == 'table' and opts.if_exists then return end
    box.error(box.error.NO_SUCH_SPACE, space_name or '#' .. tostring(space_id))
end
function box.schema.space.rename(space_id, name)
    if type(space_id) ~= 'number' then raise(1, 'Illegal parameters, space_id should be a number') end
    if type(name) ~= 'string' then raise(1, 'Illegal parameters, space_name should be a string') end
    box.space._space:update(space_id, {{'=', 3, name}})
end
-- box.schema.space.format(id[, format]): the space's format, or sets it.
function box.schema.space.format(space_id, format)
    if type(space_id) ~= 'number' then raise(1, 'Illegal parameters, space_id should be a number') end
    local space = box.space[space_id]
    if space == nil then raise(36, "Space '%s' does not exist", '#' .. space_id) end
    if format == nil then return space:format() end
    if type(format) ~= 'table' then raise(1, 'Illegal parameters, format should be a table') end
    space:format(format)
end

-- box.schema.index: the index methods by space and index id, as 2.6 keeps them.
box.schema.index = {}
local function existing_space(space_id)
    local s = box.space[space_id]
    if s == nil then box.error(box.error.NO_SUCH_SPACE, '#' .. tostring(space_id)) end
    return s
end
local function existing_index(space_id, index_id)
    local s = existing_space(space_id)
    local i = s.index[index_id]
    if i == nil then box.error(box.error.NO_SUCH_INDEX_ID, index_id, s.name) end
    return i
end
function box.schema.index.create(space_id, name, opts)
    return internal.create_index(existing_space(space_id), name, opts)
end
-- As 2.6: a drop or rename of an index that is not there changes nothing, silently.
function box.schema.index.drop(space_id, index_id)
    drop_func_index_rows(space_id, index_id)
    box.space._index:delete{space_id, index_id}
end
function box.schema.index.rename(space_id, index_id, name)
    if type(space_id) ~= 'number' then raise(1, 'Illegal parameters, space_id should be a number') end
    if type(index_id) ~= 'number' then raise(1, 'Illegal parameters, index_id should be a number') end
    if type(name) ~= 'string' then raise(1, 'Illegal parameters, name should be a string') end
    box.space._index:update({space_id, index_id}, {{'=', 3, name}})
end
function box.schema.index.alter(space_id, index_id, opts) existing_index(space_id, index_id):alter(opts) end

local function space_fieldno(space, name)
    for i, f in ipairs(space._format or {}) do
        if f.name == name then return i end
    end
    return nil
end

-- A part's field as 2.6's format_field_resolve finds it: a number, a format name,
-- or a JSON path whose first step is a field number ('[3]'), a quoted name or a
-- name; returns the zero-based field and the rest of the path (nil when none).
local function resolve_part_field(space, field, what)
    local n, rest = field, nil
    if type(field) == 'string' then
        n = space_fieldno(space, field)
        if n == nil then
            local digits = field:match('^%[(%d+)%]')
            if digits ~= nil then
                n, rest = tonumber(digits), field:sub(#digits + 3)
            else
                local name = field:match('^%["([^%]]+)"%]') or field:match("^%['([^%]]+)'%]")
                if name ~= nil and space_fieldno(space, name) ~= nil then
                    n, rest = space_fieldno(space, name), field:sub(#name + 5)
                else
                    name = field:match('^([^.[]+)')
                    n = name and space_fieldno(space, name)
                    if n == nil then
                        raise(1, "Illegal parameters, %s: field was not found by name '%s'", what, field)
                    end
                    rest = field:sub(#name + 1)
                end
            end
        end
    end
    if n <= 0 then raise(1, 'Illegal parameters, %s: field (number) must be one-based', what) end
    return n - 1, rest
end

-- create_index's spelling of a part's type (2.6 warns about 'num').
local TYPE_ALIASES = {num = 'unsigned', uint = 'unsigned', str = 'string', int = 'integer', ['*'] = 'any'}

-- An index's parts as create_index and alter take them, into _index's form, as
-- 2.6's update_index_parts: 1.6.6's {{field, type}, ...} when nothing but fields
-- and types is given, maps otherwise (unknown keys kept, for the engine to refuse).
local function normalize_parts(space, parts)
    if type(parts) ~= 'table' then raise(1, 'Illegal parameters, options.parts parameter should be a table') end
    if #parts == 0 then raise(1, 'Illegal parameters, options.parts must have at least one part') end
    local format = space._format or {}
    local list, simple = {}, true
    if type(parts[1]) == 'number' and type(parts[2]) == 'string' then
        -- 1.6.0's flat list: field number, type, field number, type, ...
        local pairs_expected = 'Illegal parameters, options.parts: expected field_no (number), type (string) pairs'
        if #parts % 2 ~= 0 then raise(1, pairs_expected) end
        for i = 1, #parts, 2 do
            if type(parts[i]) ~= 'number' or type(parts[i + 1]) ~= 'string' then raise(1, pairs_expected) end
            if parts[i] == 0 then raise(1, 'Illegal parameters, invalid index parts: field_no must be one-based') end
            list[#list + 1] = {field = parts[i] - 1, type = parts[i + 1]}
        end
    else
        for i = 1, #parts do
            local what = 'options.parts[' .. i .. ']'
            local part = {}
            if type(parts[i]) ~= 'table' then
                part.field = parts[i]
            else
                for k, v in pairs(parts[i]) do
                    if k == 1 or k == 'field' then
                        part.field = v
                    elseif k == 2 or k == 'type' then
                        part.type = v
                    elseif k == 'collation' then
                        local coll = box.space._collation.index.name:get{v}
                        if coll == nil and type(v) == 'string' then
                            coll = box.space._collation.index.name:get{v:lower()}
                        end
                        if coll == nil then
                            raise(1, "Illegal parameters, %s: collation was not found by name '%s'", what, tostring(v))
                        end
                        part.collation, simple = coll[1], false
                    else
                        part[k], simple = v, false
                    end
                end
            end
            if type(part.field) ~= 'number' and type(part.field) ~= 'string' then
                raise(1, 'Illegal parameters, %s: field (name or number) is expected', what)
            end
            local path
            part.field, path = resolve_part_field(space, part.field, what)
            part.path = path or part.path
            simple = simple and part.path == nil
            local fmt = format[part.field + 1]
            if part.type == nil then
                part.type = fmt and fmt.type or 'scalar'
            elseif type(part.type) ~= 'string' then
                raise(1, 'Illegal parameters, %s: type (string) is expected', what)
            end
            if part.is_nullable == nil then
                if fmt and fmt.is_nullable then part.is_nullable, simple = true, false end
            elseif type(part.is_nullable) ~= 'boolean' then
                raise(1, 'Illegal parameters, %s: type (boolean) is expected', what)
            end
            list[#list + 1] = part
        end
    end
    for i, part in ipairs(list) do
        local given = string.lower(part.type)
        part.type = TYPE_ALIASES[given] or given
        if given == 'num' then
            require('log').warn("field type '%s' is deprecated since Tarantool 1.7, please use '%s' instead", given, part.type)
        end
        if simple then
            list[i] = {part.field, part.type}
        else
            local m = map{field = part.field, type = part.type}
            for k, v in pairs(part) do m[k] = v end
            list[i] = m
        end
    end
    return list
end

-- 2.6.0's create_index options (an index's alter takes them but if_not_exists).
local ALTER_INDEX_OPTIONS = {
    id = 'number', name = 'string', type = 'string', parts = 'table', sequence = 'boolean, number, string, table',
    unique = 'boolean', dimension = 'number', distance = 'string', run_count_per_level = 'number',
    run_size_ratio = 'number', range_size = 'number', page_size = 'number', bloom_fpr = 'number',
    func = 'number, string',
}
local CREATE_INDEX_OPTIONS = {if_not_exists = 'boolean'}
for k, v in pairs(ALTER_INDEX_OPTIONS) do CREATE_INDEX_OPTIONS[k] = v end

function internal.create_index(space, name, opts)
    opts = opts or {}
    -- The caller's space object may predate indexes created since: look again,
    -- through _vspace as 2.6 does (a space the user cannot see does not exist).
    if box.space._vspace:get{space.id} == nil then raise(36, "Space '%s' does not exist", '#' .. space.id) end
    space = box.space[space.id]
    if type(name) ~= 'string' then raise(1, 'Illegal parameters, name should be a string') end
    check_param_table(opts, CREATE_INDEX_OPTIONS)
    local existing = space.index[name]
    if existing ~= nil then
        if opts.if_not_exists then return existing, 'not created' end
        raise(85, "Index '%s' already exists", name)
    end
    local iid = opts.id
    if iid == nil then
        iid = 0
        for k in pairs(space.index) do
            if type(k) == 'number' and k >= iid then iid = k + 1 end
        end
    end
    local itype = opts.type or 'tree'
    -- 2.6's defaults by type (named as given: 'BITSET' takes a TREE's): the field
    -- (with its type in the format, unless that is 'any') and uniqueness.
    local defaults = ({rtree = {2, 'array', false}, bitset = {2, 'unsigned', false}})[itype] or {1, 'unsigned', true}
    local parts_opt = opts.parts
    if parts_opt == nil then
        local fmt = space._format[defaults[1]]
        local ftype = fmt ~= nil and fmt.type or 'any'
        parts_opt = ftype ~= 'any' and {{defaults[1], ftype}} or {defaults[1], defaults[2]}
    end
    local parts = normalize_parts(space, parts_opt)
    local unique = opts.unique
    if unique == nil then unique = defaults[3] end
    local sequence = internal.index_sequence(space, name, iid, parts, opts.sequence)
    local index_opts = map{unique = unique}
    -- An RTREE's options go with it as given (2.6 stores no defaults).
    if opts.dimension ~= nil then index_opts.dimension = opts.dimension end
    if opts.distance ~= nil then index_opts.distance = opts.distance end
    if opts.func ~= nil then index_opts.func = index_func_id(opts.func) end
    box.space._index:insert{space.id, iid, name, itype, index_opts, parts}
    if index_opts.func ~= nil then box.space._func_index:insert{space.id, iid, index_opts.func} end
    if sequence ~= nil then internal.link_sequence(space, sequence) end
    return box.space[space.id].index[name]
end

-- Users and roles.

local privs = {read = 1, write = 2, execute = 4, session = 8, usage = 16, create = 32, drop = 64,
               alter = 128, reference = 256, trigger = 512, insert = 1024, update = 2048, delete = 4096}

local function find_user(name, kind)
    local u = op('user', name)
    if u == nil or (kind ~= nil and u.type ~= kind) then return nil end
    -- As 2.6 resolves a name through _vuser: a user or role the caller may not see
    -- is not found.
    if box.space._vuser ~= nil and box.space._vuser:get{u.id} == nil then return nil end
    return u
end

-- fn(...) with the server's rights (for what 2.6 does as admin on a user's behalf).
as_admin = function(fn, ...)
    local prev = op('su', box.schema.ADMIN_ID)
    local r = {pcall(fn, ...)}
    op('su', prev)
    if not r[1] then error(r[2], 0) end
    return unpack(r, 2, table.maxn(r))
end

function box.schema.user.get_id(name)
    local u = type(name) == 'number' and {id = name} or find_user(name)
    return u and u.id
end

-- box.internal.collation, as 2.6 has it: create, drop, exists and id_by_name over
-- _collation (an ICU locale and options; the engine checks them).
internal.collation = {}
function internal.collation.create(name, coll_type, locale, opts)
    opts = opts or map{}
    if type(name) ~= 'string' then raise(1, 'Illegal parameters, name (first arg) must be a string') end
    if type(coll_type) ~= 'string' then raise(1, 'Illegal parameters, type (second arg) must be a string') end
    if type(locale) ~= 'string' then raise(1, 'Illegal parameters, locale (third arg) must be a string') end
    if type(opts) ~= 'table' then raise(1, 'Illegal parameters, options (fourth arg) must be a table or nil') end
    local if_not_exists = opts.if_not_exists
    check_param_table({if_not_exists = if_not_exists}, {if_not_exists = 'boolean'})
    local options = map{strength = 'tertiary'}
    for k, v in pairs(opts) do
        if k ~= 'if_not_exists' then options[k] = v end
    end
    if if_not_exists and box.space._collation.index.name:get{name} ~= nil then return end
    box.space._collation:auto_increment{name, session_uid(), coll_type, locale, options}
end
function internal.collation.drop(name, opts)
    opts = opts or {}
    check_param_table(opts, {if_exists = 'boolean'})
    if opts.if_exists and box.space._collation.index.name:get{name} == nil then return end
    box.space._collation.index.name:delete{name}
end
function internal.collation.exists(name) return box.space._collation.index.name:get{name} ~= nil end
function internal.collation.id_by_name(name) return box.space._collation.index.name:get{name}.id end

function box.schema.user.exists(name) return find_user(name, 'user') ~= nil end
function box.schema.role.exists(name) return find_user(name, 'role') ~= nil end

local function create_principal(kind, name, opts)
    opts = opts or {}
    check_param_table(opts, kind == 'user' and {password = 'string', if_not_exists = 'boolean'}
                            or {if_not_exists = 'boolean'})
    if find_user(name) ~= nil then
        if opts.if_not_exists then return end
        if kind == 'user' then raise(46, "User '%s' already exists", name) end
        raise(83, "Role '%s' already exists", name)
    end
    -- After the built-in users and roles (the last, 'super', is 31), as 2.6 numbers them.
    -- Read through the caller's rights, as 2.6's _user:auto_increment reads it.
    local last = box.space._user.index[0]:max()
    local id = math.max((last and last[1] or 0) + 1, box.schema.SUPER_ROLE_ID + 1)
    local auth = map{}
    if kind == 'user' and opts.password ~= nil then auth['chap-sha1'] = op('chap_sha1', opts.password) end
    box.space._user:insert{id, session_uid(), name, kind, auth}
    if kind == 'user' then
        box.schema.user.grant(name, 'public')
        box.schema.user.grant(name, 'alter', 'user', name)
        -- As 2.6: only admin grants on the universe.
        as_admin(box.schema.user.grant, name, 'session,usage', 'universe', nil, {if_not_exists = true})
    end
end

function box.schema.user.create(name, opts) create_principal('user', name, opts) end
function box.schema.role.create(name, opts) create_principal('role', name, opts) end

local function drop_principal(kind, name, opts)
    check_param_table(opts, {if_exists = 'boolean'})
    local u = find_user(name, kind)
    if u == nil then
        if opts and opts.if_exists then return end
        if kind == 'user' then raise(45, "User '%s' is not found", name) end
        raise(82, "Role '%s' is not found", name)
    end
    if u.id <= box.schema.SYSTEM_USER_ID_MAX or u.id == box.schema.SUPER_ROLE_ID then
        raise(44, "Failed to drop user or role '%s': the user or the role is a system", name)
    end
    if u.id == box.session.uid() or u.id == box.session.euid() then
        raise(44, "Failed to drop user or role '%s': the user is active in the current session", name)
    end
    -- As 2.6: what the user owns goes with it (spaces, functions, sequences), its
    -- role is revoked from whoever had it, then its own rights, as admin.
    for _, t in ipairs(box.space._vspace.index.owner:select{u.id}) do box.space[t[1]]:drop() end
    for _, t in ipairs(box.space._vfunc.index.owner:select{u.id}) do box.schema.func.drop(t[1]) end
    for _, p in ipairs(box.space._vpriv.index.object:select{'role', u.id}) do
        box.space._priv:delete{p[2], p[3], p[4]}
    end
    for _, t in ipairs(box.space._vsequence.index.owner:select{u.id}) do box.schema.sequence.drop(t[1]) end
    as_admin(function()
        for _, p in ipairs(box.space._priv:select{u.id}) do box.space._priv:delete{p[2], p[3], p[4]} end
    end)
    box.space._user:delete{u.id}
end
function box.schema.user.drop(name, opts) drop_principal('user', name, opts) end
function box.schema.role.drop(name, opts) drop_principal('role', name, opts) end

function box.schema.user.passwd(name, password)
    if password == nil then
        -- One's own password: 2.6 changes it as admin.
        local auth = map{['chap-sha1'] = op('chap_sha1', name)}
        as_admin(box.space._user.update, box.space._user, {session_uid()}, {{'=', 5, auth}})
        return
    end
    local u = find_user(name, 'user')
    if u == nil then raise(45, "User '%s' is not found", name) end
    box.space._user:update({u.id}, {{'=', 5, map{['chap-sha1'] = op('chap_sha1', password)}}})
end

-- box.schema.user.password(pw): the hash _user keeps for `pw` (base64 of
-- sha1(sha1(pw)), as 2.6's password_prepare).
function box.schema.user.password(password)
    if type(password) ~= 'string' then
        error("attempt to get length of local 'password' (a " .. type(password) .. " value)", 2)
    end
    return op('chap_sha1', password)
end

local function object_id(obj_type, obj_name)
    if obj_type == 'universe' then return 0 end
    if obj_name == nil or obj_name == '' then return '' end
    if type(obj_name) == 'number' then return obj_name end
    if obj_type == 'space' then
        local s = box.space[obj_name]
        if s == nil then raise(36, "Space '%s' does not exist", obj_name) end
        return s.id
    elseif obj_type == 'function' then
        local f = box.space._func.index.name:get{obj_name}
        if f == nil then raise(51, "Function '%s' does not exist", obj_name) end
        return f[1]
    elseif obj_type == 'role' then
        -- Roles only, as 2.6's object_resolve: a user's name is no role.
        local u = find_user(obj_name, 'role')
        if u == nil then raise(82, "Role '%s' is not found", obj_name) end
        return u.id
    elseif obj_type == 'user' then
        local u = find_user(obj_name, 'user')
        if u == nil then raise(45, "User '%s' is not found", obj_name) end
        return u.id
    elseif obj_type == 'sequence' then
        local s = box.space._sequence.index.name:get{obj_name}
        if s == nil then raise(1, "Illegal parameters, sequence '%s' does not exist", obj_name) end
        return s[1]
    end
    raise(49, "Unknown object type '%s'", tostring(obj_type))
end

local priv_order = {{1, 'read'}, {2, 'write'}, {4, 'execute'}, {8, 'session'}, {16, 'usage'},
                    {32, 'create'}, {64, 'drop'}, {128, 'alter'}, {256, 'reference'}, {512, 'trigger'},
                    {1024, 'insert'}, {2048, 'update'}, {4096, 'delete'}}

-- The privileges each object type takes, as 2.6 allows them (sic: 'execute' on a space).
local PRIV_ALL, PRIV_GRANT, PRIV_REVOKE = 0xffffffff, 8192, 16384
local privs_of_object = {
    universe = PRIV_ALL,
    space = bit.bxor(PRIV_ALL, privs.session, PRIV_REVOKE, PRIV_GRANT),
    sequence = bit.bor(privs.read, privs.write, privs.usage, privs.create, privs.alter, privs.drop),
    ['function'] = bit.bor(privs.execute, privs.usage, privs.create, privs.drop),
    role = bit.bor(privs.execute, privs.usage, privs.create, privs.drop),
    user = bit.bor(privs.create, privs.alter, privs.drop),
}

-- A privilege's bits as 2.6 reads them (a name found anywhere in the string
-- counts; a number is taken as it is), checked against the object type.
local function checked_priv_bits(privilege, obj_type)
    local bits = privilege
    if type(privilege) == 'string' then
        bits = 0
        local lower = string.lower(privilege)
        for _, p in ipairs(priv_order) do
            if string.find(lower, p[2], 1, true) then bits = bits + p[1] end
        end
    end
    local allowed = privs_of_object[obj_type]
    if allowed == nil then raise(49, "Unknown object type '%s'", tostring(obj_type)) end
    if type(bits) ~= 'number' or bits == 0 or bit.band(bits, allowed) ~= bits then
        raise(98, "Unsupported %s privilege '%s'", obj_type, tostring(privilege))
    end
    return bits
end

-- grant/revoke's arguments as 2.6 reads them: (privilege, object type, name) or
-- (role); returns the object type, its name and the privilege bits.
local function grant_target(privilege, obj_type, obj_name)
    if obj_name == nil then
        -- grant('u', 'role_name'): the role's execute right.
        if obj_type == nil then return 'role', privilege, privs.execute end
        obj_name = ''
    end
    if type(obj_name) ~= 'string' and type(obj_name) ~= 'number' then
        raise(1, 'Illegal parameters, wrong object name type')
    end
    return obj_type, obj_name, checked_priv_bits(privilege, obj_type)
end

local function grant(kind, name, privilege, obj_type, obj_name, opts)
    local grantee = find_user(name, kind)
    if grantee == nil then
        if kind == 'user' then raise(45, "User '%s' is not found", name) end
        raise(82, "Role '%s' is not found", name)
    end
    if type(obj_type) == 'table' then opts, obj_type = obj_type, nil end
    if type(obj_name) == 'table' then opts, obj_name = obj_name, nil end
    opts = opts or {}
    local bits
    obj_type, obj_name, bits = grant_target(privilege, obj_type, obj_name)
    local oid = object_id(obj_type, obj_name)
    -- Read through the view, as 2.6 does: a user may look at the grants it can see.
    local row = box.space._vpriv:get{grantee.id, obj_type, oid}
    local old = row and row[5] or 0
    if bit.band(old, bits) == bits then
        if opts.if_not_exists then return end
        if obj_type == 'role' then
            raise(90, "User '%s' already has role '%s'", name, obj_name)
        end
        raise(89, "User '%s' already has %s access on %s%s", name, privilege, obj_type,
                  obj_name and (" '" .. tostring(obj_name) .. "'") or '')
    end
    box.space._priv:replace{opts.grantor and box.schema.user.get_id(opts.grantor) or session_uid(),
                            grantee.id, obj_type, oid, bit.bor(old, bits)}
end

local function revoke(kind, name, privilege, obj_type, obj_name, opts)
    local grantee = find_user(name, kind)
    if grantee == nil and kind == 'role' then raise(82, "Role '%s' is not found", name) end
    if grantee == nil then raise(45, "User '%s' is not found", name) end
    if type(obj_name) == 'table' then opts, obj_name = obj_name, nil end
    opts = opts or {}
    local bits
    obj_type, obj_name, bits = grant_target(privilege, obj_type, obj_name)
    local oid = object_id(obj_type, obj_name)
    local row = box.space._vpriv:get{grantee.id, obj_type, oid}
    if row == nil or bit.band(row[5], bits) == 0 then
        if opts.if_exists then return end
        if obj_type == 'role' then raise(92, "User '%s' does not have role '%s'", name, tostring(obj_name)) end
        raise(91, "User '%s' does not have %s access on %s '%s'", name, tostring(privilege), obj_type,
                  tostring(obj_name))
    end
    local left = bit.band(row[5], bit.bnot(bits))
    if left == 0 then
        box.space._priv:delete{grantee.id, obj_type, oid}
    else
        box.space._priv:update({grantee.id, obj_type, oid}, {{'=', 5, left}})
    end
end

function box.schema.user.grant(...) grant('user', ...) end
function box.schema.user.revoke(...) revoke('user', ...) end
function box.schema.role.grant(...) grant('role', ...) end
function box.schema.role.revoke(...) revoke('role', ...) end


local function priv_names(bits)
    local names = {}
    for _, p in ipairs(priv_order) do
        if bit.band(bits, p[1]) ~= 0 then names[#names + 1] = p[2] end
    end
    return table.concat(names, ',')
end

local function object_name(otype, oid)
    if otype == 'universe' then return '' end
    local sys = ({space = '_vspace', ['function'] = '_vfunc', role = '_vuser', user = '_vuser',
                  sequence = '_vsequence'})[otype]
    local row = sys and box.space[sys]:get{oid}
    return row and row[3] or ''
end

local function principal_info(kind, name)
    local u = find_user(name or op('user_name', session_uid()), kind)
    if u == nil then
        if kind == 'role' then raise(82, "Role '%s' is not found", tostring(name)) end
        raise(45, "User '%s' is not found", tostring(name))
    end
    local out = {}
    for _, p in ipairs(box.space._vpriv:select{u.id}) do
        out[#out + 1] = {priv_names(p[5]), p[3], object_name(p[3], p[4])}
    end
    return out
end
function box.schema.user.info(name) return principal_info('user', name) end
-- enable/disable: the usage and session rights on universe, which logging in needs.
function box.schema.user.enable(name)
    box.schema.user.grant(name, 'usage,session', 'universe', nil, {if_not_exists = true})
end
function box.schema.user.disable(name)
    box.schema.user.revoke(name, 'usage,session', 'universe', nil, {if_exists = true})
end
function box.schema.role.info(name) return principal_info('role', name) end

-- Functions.

function box.schema.func.exists(name) return box.space._vfunc.index.name:get{name} ~= nil end

-- Persistent functions: a LUA function of _func with a body is `return <body>`,
-- compiled once per body; a sandboxed one sees only 2.6's sandbox exports.
local SANDBOX_EXPORTS = {'assert', 'error', 'ipairs', 'math', 'next', 'pairs', 'pcall', 'print', 'select',
                         'string', 'table', 'tonumber', 'tostring', 'type', 'unpack', 'xpcall', 'utf8'}
local function sandbox()
    local env = {}
    for _, name in ipairs(SANDBOX_EXPORTS) do
        local v = _G[name]
        env[name] = type(v) == 'table' and table.copy(v) or v
    end
    return env
end

local function compile_body(name, body, sandboxed)
    local chunk = loadstring('return ' .. body)
    local ok, fn = false, nil
    if chunk ~= nil then
        if sandboxed then setfenv(chunk, sandbox()) end
        ok, fn = pcall(chunk)
    end
    if not ok or type(fn) ~= 'function' then
        raise(99, "Failed to dynamically load function '%s': given body doesn't define a function", name)
    end
    return fn
end

local compiled_functions = {} -- name -> {body, sandboxed, fn}

-- A functional index's function (the engine calls it with each tuple): compiled
-- from its body in the sandbox, once per body. Returns the function, or nil and
-- the error. It must not touch box: the engine is in the middle of a write.
local key_functions = {} -- id -> {body, fn}
function internal.func_index_function(id, name, body)
    local known = key_functions[id]
    if known ~= nil and known.body == body then return known.fn end
    local ok, fn = pcall(compile_body, name, body, true)
    if not ok then return nil, fn end
    key_functions[id] = {body = body, fn = fn}
    return fn
end

-- The function a CALL of persistent function `name` runs (nil if there is none).
function internal.persistent_function(name)
    local row = as_admin(function() return box.space._func.index.name:get(name) end)
    if row == nil or row[6] == '' or string.upper(tostring(row[5])) ~= 'LUA' then return nil end
    local body, sandboxed = row[6], row[13] == true
    local known = compiled_functions[name]
    if known ~= nil and known.body == body and known.sandboxed == sandboxed then return known.fn end
    local fn = compile_body(name, body, sandboxed)
    compiled_functions[name] = {body = body, sandboxed = sandboxed, fn = fn}
    return fn
end

local FUNC_OPTIONS = {
    setuid = 'boolean', if_not_exists = 'boolean', language = 'string', body = 'string',
    is_deterministic = 'boolean', is_sandboxed = 'boolean', comment = 'string', param_list = 'table',
    returns = 'string', exports = 'table', opts = 'table',
}
function box.schema.func.create(name, opts)
    opts = opts or {}
    check_param_table(opts, FUNC_OPTIONS)
    if box.schema.func.exists(name) then
        if opts.if_not_exists then return end
        raise(52, "Function '%s' already exists", name)
    end
    local language = string.upper(opts.language or 'LUA')
    if language ~= 'LUA' and language ~= 'C' then
        raise(100, "Unsupported language '%s' specified for function '%s'", language, name)
    end
    if language == 'C' and (opts.body ~= nil or opts.is_sandboxed) then
        raise(50, "Failed to create function '%s': body and is_sandboxed options are not compatible with C language",
              name)
    end
    if opts.body ~= nil and opts.body ~= '' then compile_body(name, opts.body, opts.is_sandboxed) end
    -- Read through the caller's rights, as 2.6's _func:auto_increment reads it.
    local last = box.space._func.index[0]:max()
    local id = (last and last[1] or 0) + 1
    local now = os.date('!%Y-%m-%d %H:%M:%S')
    box.space._func:insert{id, session_uid(), name, opts.setuid and 1 or 0, string.upper(opts.language or 'LUA'),
                           opts.body or '', 'function', opts.param_list or setmetatable({}, {__serialize = 'seq'}),
                           opts.returns or 'any', 'none', 'none', opts.is_deterministic or false,
                           opts.is_sandboxed or false, true,
                           opts.exports or setmetatable({'LUA'}, {__serialize = 'seq'}),
                           opts.opts or map{}, opts.comment or '', now, now}
end

function box.schema.func.drop(name, opts)
    check_param_table(opts, {if_exists = 'boolean'})
    -- By name, or by id as 2.6 takes a number.
    local f
    if type(name) == 'string' then f = box.space._vfunc.index.name:get{name} else f = box.space._vfunc:get{name} end
    if f == nil then
        if opts and opts.if_exists then return end
        raise(51, "Function '%s' does not exist", name)
    end
    for _, p in ipairs(box.space._priv.index.object:select{'function', f[1]}) do
        box.space._priv:delete{p[2], p[3], p[4]}
    end
    box.space._func:delete{f[1]}
    compiled_functions[f[3]] = nil
end

-- Sequences: definitions in _sequence, values in _sequence_data. next() is the
-- engine's (src/engine/sequence.rs), which also fills the key of a space linked to
-- a sequence in _space_sequence (create_index{sequence = ...}).

box.schema.sequence = {}
local INT64_MAX = 9223372036854775807LL
local INT64_MIN = -9223372036854775807LL - 1
local sequence_fields = {id = 1, uid = 2, name = 3, step = 4, min = 5, max = 6, start = 7, cache = 8, cycle = 9}
local sequence_options = {step = 'number', min = 'number', max = 'number', start = 'number', cache = 'number',
                          cycle = 'boolean', if_not_exists = 'boolean', name = 'string'}
local sequence_methods = {}
local sequence_objects = setmetatable({}, {__mode = 'v'})

-- The definition row, read as the system: like 2.6's box.sequence, which the
-- system fills, it does not need the right to read _sequence.
local function sequence_row(id_or_name)
    return op('sequence', id_or_name)
end

-- A sequence object reads its definition afresh, so it follows alter().
local sequence_mt = {
    __index = function(self, k)
        if sequence_methods[k] ~= nil then return sequence_methods[k] end
        local f = sequence_fields[k]
        if f == nil then return nil end
        local row = sequence_row(rawget(self, 'id'))
        local v = row and row[f]
        -- 2.6 gives the definition's large integers as int64 cdata (9223372036854775807LL).
        if type(v) == 'cdata' then v = require('ffi').cast('int64_t', v) end
        return v
    end,
    __serialize = function(self)
        local row = sequence_row(rawget(self, 'id'))
        local out = {}
        if row ~= nil then for k, f in pairs(sequence_fields) do out[k] = row[f] end end
        return out
    end,
}

local function sequence_object(id)
    local s = sequence_objects[id]
    if s == nil then
        s = setmetatable({id = id}, sequence_mt)
        sequence_objects[id] = s
    end
    return s
end

box.sequence = setmetatable({}, {
    __index = function(_, k)
        local row = sequence_row(k)
        return row and sequence_object(row[1])
    end,
    __serialize = 'map',
})

local function check_sequence_options(opts)
    for k, v in pairs(opts) do
        local want = sequence_options[k]
        if want == nil then raise(1, "Illegal parameters, unexpected option '%s'", k) end
        local got = type(v)
        if got == 'cdata' and want == 'number' and tonumber(v) ~= nil then got = 'number' end
        if got ~= want then raise(1, "Illegal parameters, options parameter '%s' should be of type %s", k, want) end
    end
end

-- The definition's values with `opts` applied, or the reason they do not hold.
local function sequence_definition(opts, row)
    local d = {}
    for k, f in pairs(sequence_fields) do d[k] = row and row[f] end
    local step = opts.step or d.step or 1
    if step == 0 then return nil, 'step option must be non-zero' end
    local ascending = step > 0
    d.step = step
    d.min = opts.min or d.min or (ascending and 1 or INT64_MIN)
    d.max = opts.max or d.max or (ascending and INT64_MAX or -1)
    d.start = opts.start or (row == nil and (ascending and d.min or d.max)) or d.start
    d.cache = opts.cache or d.cache or 0
    if opts.cycle ~= nil then d.cycle = opts.cycle elseif d.cycle == nil then d.cycle = false end
    if d.min > d.max then return nil, 'max must be greater than or equal to min' end
    if d.start < d.min or d.start > d.max then return nil, 'start must be between min and max' end
    return d
end

function box.schema.sequence.create(name, opts)
    opts = opts or {}
    if type(name) ~= 'string' then raise(1, 'Illegal parameters, name should be a string') end
    check_sequence_options(opts)
    local existing = sequence_row(name)
    if existing ~= nil then
        if opts.if_not_exists then return sequence_object(existing[1]), 'not created' end
        raise(146, "Sequence '%s' already exists", name)
    end
    local d, why = sequence_definition(opts)
    if d == nil then raise(142, "Failed to create sequence '%s': %s", name, why) end
    local last = box.space._sequence.index[0]:max()
    local id = last and last[1] + 1 or 1
    box.space._sequence:insert{id, session_uid(), name, d.step, d.min, d.max, d.start, d.cache, d.cycle}
    return sequence_object(id)
end

function box.schema.sequence.alter(name, opts)
    opts = opts or {}
    check_sequence_options(opts)
    local row = sequence_row(name)
    if row == nil then raise(145, "Sequence '%s' does not exist", name) end
    local d, why = sequence_definition(opts, row)
    if d == nil then raise(143, "Can't modify sequence '%s': %s", row[3], why) end
    box.space._sequence:replace{row[1], row[2], opts.name or row[3], d.step, d.min, d.max, d.start, d.cache, d.cycle}
end

function box.schema.sequence.drop(name, opts)
    local row = sequence_row(name)
    if row == nil then
        if opts and opts.if_exists then return end
        raise(145, "Sequence '%s' does not exist", name)
    end
    -- As 2.6: its grants, its value, then its definition (refused while a space
    -- uses it, when the grants and the value are already gone).
    for _, p in ipairs(box.space._vpriv.index.object:select{'sequence', row[1]}) do
        box.space._priv:delete{p[2], p[3], p[4]}
    end
    box.space._sequence_data:delete{row[1]}
    box.space._sequence:delete{row[1]}
end

-- Each needs write access to the sequence, as in 2.6.
function sequence_methods:next() return op('sequence_next', self.id) end
-- 2.6 gives current() as int64 cdata (3LL), next() as a number.
function sequence_methods:current() return require('ffi').cast('int64_t', op('sequence_current', self.id)) end
function sequence_methods:set(value)
    if tonumber(value) == nil then error('expected int64_t as 2 argument', 2) end
    op('sequence_set', self.id, value)
end
function sequence_methods:reset() op('sequence_reset', self.id) end
function sequence_methods:alter(opts) box.schema.sequence.alter(self.id, opts) end
function sequence_methods:drop() box.schema.sequence.drop(self.id) end

-- create_index's `sequence` option: the sequence (made for the space when `true`)
-- and the key field it fills, checked before the index is made.
function internal.index_sequence(space, name, iid, parts, seq)
    if seq == nil or seq == false then return nil end
    local function refuse(why) raise(14, "Can't create or modify index '%s' in space '%s': %s", name, space.name, why) end
    if iid ~= 0 then refuse('sequence cannot be used with a secondary key') end
    local field
    if type(seq) == 'table' then seq, field = seq.id, seq.field end
    if field == nil then
        field = parts[1][1] or parts[1].field
    else
        if type(field) == 'string' then field = space_fieldno(space, field) or field end
        if type(field) == 'number' then field = field - 1 end
    end
    local part
    for _, p in ipairs(parts) do if (p[1] or p.field) == field then part = p end end
    if part == nil then refuse('sequence field must be a part of the index') end
    local ptype = part[2] or part.type
    if ptype ~= 'unsigned' and ptype ~= 'integer' then refuse('sequence cannot be used with a non-integer key') end
    if seq ~= true and sequence_row(seq) == nil then raise(145, "Sequence '%s' does not exist", tostring(seq)) end
    return {sequence = seq, field = field}
end

function internal.link_sequence(space, link)
    local generated = link.sequence == true
    local row = generated and box.space._sequence:get{box.schema.sequence.create(space.name .. '_seq').id}
        or sequence_row(link.sequence)
    box.space._space_sequence:insert{space.id, row[1], generated, link.field, ''}
end

-- index:alter(opts): rewrites the index's _index row (its name, type, uniqueness or
-- parts; the engine rebuilds it, or refuses, as for a direct _index replace), and
-- its sequence, as 2.6's alter does.
function index_methods:alter(opts)
    if opts == nil then return end
    check_param_table(opts, ALTER_INDEX_OPTIONS)
    local space = box.space[self.space_id]
    if space == nil then raise(36, "Space '%s' does not exist", '#' .. self.space_id) end
    local row = box.space._index:get{self.space_id, self.id}
    if row == nil then raise(35, "No index #%u is defined in space '%s'", self.id, space.name) end
    local iid, name = opts.id or row[2], opts.name or row[3]
    local flags = map{}
    for k, v in pairs(row[5]) do flags[k] = v end
    if opts.unique ~= nil then flags.unique = opts.unique end
    if opts.func ~= nil then flags.func = index_func_id(opts.func) end
    local parts = opts.parts ~= nil and normalize_parts(space, opts.parts) or row[6]
    local link = box.space._space_sequence:get{space.id}
    local sequence
    if opts.sequence ~= nil and opts.sequence ~= false then
        sequence = internal.index_sequence(space, name, iid, parts, opts.sequence)
    elseif opts.sequence == nil and link ~= nil and iid == 0 and opts.parts ~= nil then
        -- The linked sequence must still fit the new parts.
        internal.index_sequence(space, name, iid, parts, {id = link[2], field = link[4] + 1})
    end
    if iid ~= row[2] then
        -- As 2.6 (an update of the row's key): refused.
        box.space._index:update({space.id, row[2]}, {{'=', 2, iid}})
    end
    box.space._index:replace{space.id, iid, name, opts.type or row[4], flags, parts}
    if opts.func ~= nil then box.space._func_index:insert{space.id, iid, flags.func} end
    if opts.sequence ~= nil and link ~= nil then
        box.space._space_sequence:delete{space.id}
        if link[3] then box.schema.sequence.drop(link[2]) end
    end
    if sequence ~= nil then internal.link_sequence(space, sequence) end
    -- Space objects held by the caller see the new definition at once.
    local _ = box.space[space.id]
end

-- As 2.6's check_space_arg and check_index_arg: a method called with a dot
-- (`space.insert(t)`) fails naming the call to make, where 2.6 raises it (its
-- builtin/box/schema.lua, lines 1291 and 1310).
local DOT_CALLS = {
    space = {line = 1291, methods = space_methods, names = {
        insert = 'insert', replace = 'replace', put = 'replace', update = 'update', upsert = 'upsert',
        delete = 'delete', get = 'get', select = 'select', pairs = 'pairs', count = 'count', len = 'len',
        bsize = 'bsize', auto_increment = 'auto_increment', truncate = 'truncate', format = 'format',
        drop = 'drop', rename = 'rename'}},
    index = {line = 1310, methods = index_methods, engines = {memtx_index_mt, vinyl_index_mt}, names = {
        select = 'select', get = 'get', pairs = 'pairs', count = 'count', min = 'min', max = 'max',
        random = 'random', len = 'len', bsize = 'bsize', update = 'update', delete = 'delete', drop = 'drop',
        rename = 'rename', alter = 'alter'}},
}
local function dot_call_error(kind, line, method)
    error(string.format('builtin/box/schema.lua:%d: Use %s:%s(...) instead of %s.%s(...)', line, kind, method,
                        kind, method), 0)
end
internal.check_space_arg = function(space, method)
    if type(space) ~= 'table' or space.id == nil then dot_call_error('space', DOT_CALLS.space.line, method) end
end
for kind, calls in pairs(DOT_CALLS) do
    for name, shown in pairs(calls.names) do
        local method = rawget(calls.methods, name)
        local checked = function(self, ...)
            if type(self) ~= 'table' or self.id == nil then dot_call_error(kind, calls.line, shown) end
            return method(self, ...)
        end
        rawset(calls.methods, name, checked)
        for _, mt in ipairs(calls.engines or {}) do
            if mt[name] == method then mt[name] = checked end
        end
    end
end
-- Called from C in 2.6: the usage, without a position.
local index_stat, index_compact = index_methods.stat, index_methods.compact
for _, mt in ipairs({index_methods, memtx_index_mt, vinyl_index_mt}) do
    rawset(mt, 'stat', function(self, ...)
        if type(self) ~= 'table' or self.space_id == nil then error('usage index.info(space_id, index_id)', 0) end
        return index_stat(self, ...)
    end)
    rawset(mt, 'compact', function(self, ...)
        if type(self) ~= 'table' or self.space_id == nil then error('usage index.compact(space_id, index_id)', 0) end
        return index_compact(self, ...)
    end)
end

--------------------------------------------------------------------------------
-- Transactions: the request's changes commit together; rollback undoes them.
--------------------------------------------------------------------------------

-- Each fiber has its own transaction (internal.fiber_locals(), from fiber.lua).
local function current_txn()
    local locals = internal.fiber_locals()
    local txn = rawget(locals, 'txn')
    if txn == nil then
        txn = {}
        locals.txn = txn
    end
    return txn
end
local txn_serial = 0

local function token_opts(opts)
    if type(opts) == 'table' and getmetatable(opts) == nil and opts.idempotent_token ~= nil then
        return opts.idempotent_token
    end
    return nil
end

-- A transaction's fields, cleared when it ends. Only those set are cleared:
-- setting a missing key, even to nil, adds it, and a table that fills up with
-- such keys is rehashed (a tenth of an empty box.begin/box.commit).
local txn_clear
do
    local TXN_FIELDS = {'mark', 'token', 'aborted', 'engine', 'on_commit', 'on_rollback'}
    function txn_clear(txn)
        for i = 1, #TXN_FIELDS do
            local key = TXN_FIELDS[i]
            if rawget(txn, key) ~= nil then txn[key] = nil end
        end
    end
end

-- The statements box.on_commit/on_rollback triggers are shown, captured before
-- the transaction's end: {{old, new, space_id}, ...}, oldest first.
local function txn_statements(txn, list)
    if list == nil or #list == 0 then return nil end
    if txn.aborted then return {} end -- a yield already undid them (2.6 shows none)
    return op('changes_since', txn.mark)
end

-- Runs a transaction's triggers, in the order they were set, each given an
-- iterator over the statements: `for i, old, new, space_id in iterator() do`.
-- An error is logged and the next trigger runs (2.6 crashes on one).
local function run_txn_triggers(list, statements, kind)
    if list == nil then return end
    local function iterator()
        return function(rows, i)
            local row = rows[i + 1]
            if row == nil then return nil end
            return i + 1, row[1], row[2], row[3]
        end, statements, 0
    end
    for _, trigger in ipairs(list) do
        local ok, err = pcall(trigger, iterator)
        if not ok then
            require('log').error('%s trigger failed: %s', kind, tostring(err))
        end
    end
end

-- Ends a transaction by undoing it, then runs its on_rollback triggers.
local function txn_undo(txn)
    local list = txn.on_rollback
    local statements = txn_statements(txn, list)
    op('txn_rollback', txn.mark)
    txn_clear(txn)
    run_txn_triggers(list, statements, 'on_rollback')
end

function box.begin(opts)
    local txn = current_txn()
    if txn.mark ~= nil then raise(79, 'Operation is not permitted when there is an active transaction ') end
    txn.mark = op('txn_mark')
    local token = token_opts(opts)
    if token ~= nil then txn.token = token end
    txn_serial = txn_serial + 1
    txn.serial = txn_serial
end

function box.commit()
    local txn = current_txn()
    if txn.mark == nil then return end
    if txn.aborted then
        txn_undo(txn)
        raise(154, 'Transaction has been aborted by a fiber yield')
    end
    local token = txn.token
    if token ~= nil and op('idem_lookup', token) ~= nil then
        -- Already committed under this token: this transaction is discarded.
        return txn_undo(txn)
    end
    local list = txn.on_commit
    local statements = txn_statements(txn, list)
    if token ~= nil then op('idem_store', token, setmetatable({}, {__serialize = 'seq'})) end
    txn_clear(txn)
    run_txn_triggers(list, statements, 'on_commit')
end

function box.rollback()
    local txn = current_txn()
    if txn.mark ~= nil then return txn_undo(txn) end
    txn_clear(txn)
end

-- box.on_commit / box.on_rollback: triggers of the current transaction (the
-- usual trigger arguments), run once it commits or rolls back.
local function txn_trigger(kind, name)
    return function(new, old)
        local txn = current_txn()
        if txn.mark == nil then
            error(string.format('Usage inside a transaction: box.%s([function | nil, [function | nil]])', name), 2)
        end
        txn[kind] = txn[kind] or {}
        return set_trigger(txn[kind], new, old)
    end
end
box.on_commit = txn_trigger('on_commit', 'on_commit')
box.on_rollback = txn_trigger('on_rollback', 'on_rollback')

-- A fiber switched out inside a transaction: its changes are undone, and it is
-- marked aborted, so that box.commit fails with 154 (as memtx in 2.6 does); its
-- on_rollback triggers run when it ends. Statements it ran in the aborted
-- transaction since it was resumed are undone at each later switch: they are
-- never committed, as in 2.6.
function internal.txn_on_yield(locals)
    local txn = locals.txn
    if txn ~= nil and txn.mark ~= nil then
        op('txn_rollback', txn.mark)
        if not txn.aborted then
            txn.aborted = true
            txn.on_commit = nil
        end
    end
end

-- The fiber runs again: statements of an aborted transaction still apply until
-- box.commit or box.rollback undoes them, from a mark in this run's change log.
function internal.txn_on_resume(locals)
    local txn = locals.txn
    if txn ~= nil and txn.aborted and internal.op ~= nil then
        txn.mark = op('txn_mark')
        txn_serial = txn_serial + 1
        txn.serial = txn_serial
    end
end

-- A request's fiber ends: a transaction left open is rolled back; returns whether one was.
function internal.txn_leave(locals)
    -- rawget: a fiber's missing field is not looked for in its metatable (once per request).
    local txn = rawget(locals, 'txn')
    if txn == nil or txn.mark == nil then return false end
    txn_undo(txn)
    return true
end

function box.is_in_txn() return current_txn().mark ~= nil end

-- As 2.6's txn_begin_in_engine: the statements of a transaction (reads too) run
-- in one engine, memtx or vinyl (system views and the like take no part).
function internal.check_txn_engine(engine)
    if engine ~= 'memtx' and engine ~= 'vinyl' then return end
    local txn = current_txn()
    if txn.mark == nil then return end
    if txn.engine == nil then
        txn.engine = engine
    elseif txn.engine ~= engine then
        raise(81, 'A multi-statement transaction can not use multiple storage engines')
    end
end

-- Savepoints: a mark in the current transaction's undo log.
local savepoint_mt = {__serialize = function(sp) return {csavepoint = 'savepoint', txn = sp.txn} end}
function box.savepoint()
    local txn = current_txn()
    if txn.mark == nil then raise(114, 'No active transaction') end
    return setmetatable({mark = op('txn_mark'), txn = txn.serial}, savepoint_mt)
end
function box.rollback_to_savepoint(sp)
    local txn = current_txn()
    if type(sp) ~= 'table' or getmetatable(sp) ~= savepoint_mt then
        error('Usage: box.rollback_to_savepoint(savepoint)', 2)
    end
    if txn.mark == nil or sp.txn ~= txn.serial then
        raise(61, 'Can not rollback to savepoint: the savepoint does not exist')
    end
    op('txn_rollback', sp.mark)
end

-- box.atomic([{idempotent_token = T},] fn, ...): with a token, the first call runs fn
-- and stores its results in the same commit; a replay returns them without running fn.
function box.atomic(opts, fn, ...)
    local token = token_opts(opts)
    local args
    if token == nil and type(opts) == 'table' and getmetatable(opts) == nil and type(fn) == 'function' then
        opts = nil
    end
    if opts ~= nil and token == nil and type(opts) ~= 'table' then
        -- box.atomic(fn, ...)
        args = {n = select('#', ...) + 1, fn, ...}
        fn = opts
    elseif opts == nil then
        args = {n = select('#', ...), ...}
    else
        args = {n = select('#', ...), ...}
    end
    if token ~= nil then
        local stored = op('idem_lookup', token)
        if stored ~= nil then return unpack(stored, 1, table.maxn(stored)) end
    end
    box.begin()
    local r = {pcall(fn, unpack(args, 1, args.n))}
    if not r[1] then
        box.rollback()
        error(r[2], 0)
    end
    local results = setmetatable({unpack(r, 2, table.maxn(r))}, {__serialize = 'seq'})
    -- A transaction a yield aborted fails here (154), before any outcome is stored.
    if current_txn().aborted then box.commit() end
    if token ~= nil then op('idem_store', token, results) end
    box.commit()
    return unpack(r, 2, table.maxn(r))
end
function internal.reset_txn()
    -- A request that ends inside a transaction rolls it back, as Tarantool does.
    internal.txn_leave(internal.fiber_locals())
end

--------------------------------------------------------------------------------
-- Sessions, info, configuration, tuples, once
--------------------------------------------------------------------------------

box.session = {}
-- The session's own user while su() runs code as another (box.session.user() keeps
-- naming it, as in 2.6; box.session.effective_user() names the other).
local function su_uid() return rawget(internal.fiber_locals(), 'su_uid') end
function box.session.uid() return su_uid() or session_uid() end
function box.session.euid() return session_uid() end
function box.session.user() return op('user_name', box.session.uid()) end
function box.session.effective_user() return op('user_name', session_uid()) end
function box.session.id() return op('session_id') end

-- Session settings: 2.6's list with each one's type and default, and each
-- session's own values. box.session.settings reads and sets them; the service
-- space _session_settings shows them as rows {name, value}, sorted by name, and
-- takes UPDATE only (as 2.6's).
local SESSION_SETTINGS = {
    {'error_marshaling_enabled', 'boolean', false}, {'sql_default_engine', 'string', 'memtx'},
    {'sql_defer_foreign_keys', 'boolean', false}, {'sql_full_column_names', 'boolean', false},
    {'sql_full_metadata', 'boolean', false}, {'sql_parser_debug', 'boolean', false},
    {'sql_recursive_triggers', 'boolean', true}, {'sql_reverse_unordered_selects', 'boolean', false},
    {'sql_select_debug', 'boolean', false}, {'sql_vdbe_debug', 'boolean', false},
}
local setting_by_name = {}
for _, setting in ipairs(SESSION_SETTINGS) do setting_by_name[setting[1]] = setting end
local session_values = {} -- session id -> {name -> value}

local function setting_of(name)
    local setting = setting_by_name[name]
    if setting == nil then raise(213, "Session setting %s doesn't exist", tostring(name)) end
    return setting
end

-- The current session's value of setting `name`.
function internal.session_setting(name)
    local own = session_values[box.session.id()]
    local v = own and own[name]
    if v == nil then return setting_of(name)[3] end
    return v
end

local function set_session_setting(name, value)
    local setting = setting_of(name)
    if type(value) ~= setting[2] then
        raise(209, 'Session setting %s expected a value of type %s', name, setting[2])
    end
    if name == 'sql_default_engine' and value ~= 'memtx' and value ~= 'vinyl' then
        raise(57, "Space engine '%s' does not exist", value)
    end
    local sid = box.session.id()
    session_values[sid] = session_values[sid] or {}
    session_values[sid][name] = value
    -- Replies to the session are written with errors as MP_ERROR, or as text.
    if name == 'error_marshaling_enabled' then internal.native.set_error_marshaling(sid, value) end
end

box.session.settings = setmetatable({}, {
    __index = function(_, name) return internal.session_setting(name) end,
    __newindex = function(_, name, value) set_session_setting(name, value) end,
})

-- The rows of _session_settings an index read finds: `key` (a name, or none),
-- `it` the iterator's code, then offset and limit.
local function session_setting_rows(key, it, offset, limit)
    if type(key) == 'table' then key = key[1] end
    local rows = {}
    for _, setting in ipairs(SESSION_SETTINGS) do
        local name = setting[1]
        local keep = key == nil or it == 2 or (it <= 1 and name == key) or (it == 3 and name < key)
            or (it == 4 and name <= key) or (it == 5 and name >= key) or (it == 6 and name > key)
        if keep then rows[#rows + 1] = box.tuple.new({name, internal.session_setting(name)}) end
    end
    if it == 1 or it == 3 or it == 4 then
        -- REQ, LT and LE walk backwards.
        local reversed = {}
        for i = #rows, 1, -1 do reversed[#reversed + 1] = rows[i] end
        rows = reversed
    end
    local out = {}
    for i = (offset or 0) + 1, math.min(#rows, (offset or 0) + (limit or #rows)) do out[#out + 1] = rows[i] end
    return out
end

-- An IPROTO request on _session_settings (src/executor.rs routes them here):
-- SELECT's tuples, UPDATE's new tuple (its field numbers counted from
-- `index_base`), or the error 2.6 gives the others.
function internal.session_settings_request(kind, key, a, b, c)
    if kind == 'select' then return unpack(session_setting_rows(key, a, b, c)) end
    if kind == 'update' then
        local ops = a
        if b == 0 and type(ops) == 'table' then
            for i, o in ipairs(ops) do
                if type(o) == 'table' and type(o[2]) == 'number' and o[2] >= 0 then
                    ops[i] = {unpack(o, 1, table.maxn(o))}
                    ops[i][2] = o[2] + 1
                end
            end
        end
        local _, tuple = session_settings_op('update', SESSION_SETTINGS_ID, 0, key, ops)
        if tuple == nil then return end
        return tuple
    end
    return select(2, session_settings_op(kind, SESSION_SETTINGS_ID))
end

-- What box.lua's `op` runs for space 380: true and the result, or false for the
-- engine to answer.
session_settings_op = function(name, _, a, b, c, d, e)
    if name == 'select' then return true, session_setting_rows(b, c, d, e) end
    if name == 'get' then return true, session_setting_rows(b, 0, 0, 1)[1] end
    if name == 'len' then return true, #SESSION_SETTINGS end
    if name == 'update' then
        local key, ops = b, c
        if type(key) == 'table' then key = key[1] end
        if setting_by_name[key] == nil then return true, nil end
        local row = box.tuple.new({key, internal.session_setting(key)})
        -- The space's field names, as its format gives them.
        local numbered = {}
        for i, o in ipairs(type(ops) == 'table' and ops or {}) do
            numbered[i] = o
            if type(o) == 'table' and (o[2] == 'name' or o[2] == 'value') then
                numbered[i] = {unpack(o, 1, table.maxn(o))}
                numbered[i][2] = o[2] == 'name' and 1 or 2
            end
        end
        local new = row:update(type(ops) == 'table' and numbered or ops)
        if new[1] ~= key then
            raise(105, "Attempt to modify a tuple field which is part of index 'primary' in space "
                .. "'_session_settings'")
        end
        set_session_setting(key, new[2])
        return true, new
    end
    if name == 'insert' or name == 'replace' then raise(5, 'Session_settings space does not support replace()') end
    if name == 'delete' or name == 'upsert' then raise(5, 'Session_settings space does not support %s()', name) end
    return false
end
-- box.session.exists/peer/fd([id]): of this session, or of session `id`.
local function session_id_arg(id)
    if id ~= nil and type(id) ~= 'number' then error('expected int64_t as -1 argument', 3) end
    return id
end
-- As 2.6: one argument at most, and an explicit nil is no session id.
local function session_args(name, ...)
    local n = select('#', ...)
    if n > 1 then error(string.format('session.%s(sid): bad arguments', name), 3) end
    return n, ...
end
function box.session.exists(...)
    local n, id = session_args('exists', ...)
    if n == 1 and id == nil then error('expected int64_t as -1 argument', 2) end
    local sid = session_id_arg(id)
    -- A Lua fiber's own background session exists while the fiber lives, as in 2.6.
    return op('session_exists', sid) or (sid ~= nil and internal.is_background_session(sid))
end
function box.session.peer(...)
    local n, id = session_args('peer', ...)
    if (n == 1 and id == nil) or (id ~= nil and type(id) ~= 'number') then
        error(string.format("bad argument #1 to '?' (number expected, got %s)", type(id)), 2)
    end
    local peer = op('session_peer', id)
    if peer == false then error('session.peer(): session does not exist', 2) end
    return peer
end
function box.session.fd(...)
    local n, id = session_args('fd', ...)
    if n == 1 and id == nil then error('expected int64_t as -1 argument', 2) end
    local fd = op('session_fd', session_id_arg(id))
    if fd == false then error('session.fd(): session does not exist', 2) end
    return fd
end
-- The sync of the request this fiber serves (0 in the script and in fibers it started).
function box.session.sync() return internal.fiber_sync() end

-- Console sessions are numbered from 2^48 up (see listeners.rs); 1 is the
-- server's own (the script, its triggers; SERVER_SESSION_ID in server/mod.rs).
local CONSOLE_SESSIONS = 2 ^ 48

-- box.session.type(): 'binary' for an IPROTO client's, 'console' for an admin
-- console's, 'background' for the server's own.
function box.session.type()
    local id = box.session.id()
    if id == 1 or internal.is_background_session(id) then return 'background' end
    return id >= CONSOLE_SESSIONS and 'console' or 'binary'
end
-- box.session.storage: a table of each session's own, dropped when it disconnects.
-- (Assigning box.session.storage replaces it for every session, as in 2.6.)
local session_storage = {}
setmetatable(box.session, {
    __index = function(_, k)
        if k ~= 'storage' then return nil end
        local id = box.session.id()
        local t = session_storage[id]
        if t == nil then
            t = {}
            session_storage[id] = t
        end
        return t
    end,
})
function internal.forget_session(id)
    session_storage[id] = nil
    if session_values[id] ~= nil then internal.native.set_error_marshaling(id, false) end
    session_values[id] = nil
end

-- box.session.on_connect / on_disconnect / on_auth(fn [, old]): Tarantool's trigger
-- convention; an on_connect error closes the new connection.
local session_triggers = {connect = {}, disconnect = {}, auth = {}, access_denied = {}}
local function session_trigger(kind)
    return function(new, old)
        local list = session_triggers[kind]
        local r = set_trigger(list, new, old)
        -- Before a script's box.cfg{} the server learns of them at boot.
        if (new ~= nil or old ~= nil) and internal.op ~= nil then op('set_session_triggers', kind, #list > 0) end
        return r
    end
end
-- Tells the server which session triggers a script set before its box.cfg{}.
function internal.sync_session_triggers()
    for kind, list in pairs(session_triggers) do
        if #list > 0 then op('set_session_triggers', kind, true) end
    end
end
box.session.on_connect = session_trigger('connect')
box.session.on_disconnect = session_trigger('disconnect')
box.session.on_auth = session_trigger('auth')
-- box.session.on_access_denied(fn [, old]): fn(access, object_type, object_name) for
-- every access-denied error a box operation raises (caught or not), as 2.6 runs it
-- when the error is made; a failing trigger ends the run, the error stays the same.
box.session.on_access_denied = session_trigger('access_denied')
function internal.run_session_triggers(kind, ...)
    -- Newest first, as 2.6 runs a trigger list.
    local list = session_triggers[kind]
    for i = #list, 1, -1 do list[i](...) end
end
-- Session triggers as 2.6 runs them: effective user admin, box.session.uid()
-- the session's own user.
function internal.run_session_triggers_as(uid, kind, ...)
    local locals = internal.fiber_locals()
    local outer = locals.su_uid
    locals.su_uid = uid
    local ok, err = pcall(internal.run_session_triggers, kind, ...)
    locals.su_uid = outer
    if not ok then error(err, 0) end
end
function internal.access_denied(e)
    -- A trigger's error stops the list (as any 2.6 trigger list) and is dropped.
    pcall(internal.run_session_triggers, 'access_denied', e.access_type, e.object_type, e.object_name)
end

-- box.session.su(user[, fn, ...]): run fn as `user` (admin only, as 2.6 requires
-- the right to act as another user), or switch the session's effective user.
function box.session.su(user, fn, ...)
    -- As 2.6 finds the user: by name in the user cache, whatever the effective
    -- user may see (so a script that su'd to a user can su back to admin).
    local found = type(user) ~= 'number' and op('user', user) or nil
    -- (A role is no user to act as: 2.6 does not find it.)
    if found ~= nil and found.type ~= 'user' then found = nil end
    local uid = type(user) == 'number' and user or (found and found.id)
    if uid == nil then raise(45, "User '%s' is not found", tostring(user)) end
    if fn == nil then
        -- As 2.6: the session's own user changes too (box.session.user() names it),
        -- for its later requests and console lines as well.
        op('su', uid)
        internal.fiber_locals().su_uid = nil
        op('session_su', uid)
        return
    end
    return internal.run_as(uid, fn, ...)
end
-- Runs fn(...) with `uid` as the effective user (box.session.uid() still the
-- session's own), then puts the effective user back, whatever fn did.
function internal.run_as(uid, fn, ...)
    local prev = op('su', uid)
    local locals = internal.fiber_locals()
    local outer = locals.su_uid
    locals.su_uid = outer or prev
    local r = {pcall(fn, ...)}
    op('su', prev)
    locals.su_uid = outer
    if not r[1] then error(r[2], 0) end
    return unpack(r, 2, table.maxn(r))
end
function internal.reset_su() internal.fiber_locals().su_uid = nil end
local reset_txn_only = internal.reset_txn
function internal.reset_txn()
    internal.reset_su()
    reset_txn_only()
end

-- After every Lua entry of a request: whether it left a transaction open, then the
-- fiber's transaction and su() state are reset (one call from the runtime for both).
function internal.end_call()
    local open = box.is_in_txn()
    internal.reset_txn()
    return open
end
-- box.session.push(value): an IPROTO_CHUNK to the requesting client before the final reply.
function box.session.push(...)
    if select('#', ...) ~= 1 then error('Usage: box.session.push(data)', 2) end
    -- As 2.6: a script's or a fiber's own session has no client to push to.
    if box.session.type() == 'background' then
        return nil, set_last_error(make_error(5, "Session 'background' does not support push()"))
    end
    return op('session_push', (...))
end

-- box.snapshot(): everything committed so far is synced to the device and a
-- checkpoint starts; 'ok' once the request's reply is released, which waits for
-- that sync like any write. Under wal_mode = 'none' the whole state is saved
-- before it returns (src/storage/image.rs), and loaded at the next start.
function box.snapshot()
    -- 2.6 yields here: a transaction open in the caller is aborted, as by a yield.
    if box.is_in_txn() then
        local locals = internal.fiber_locals()
        internal.txn_on_yield(locals)
        internal.txn_on_resume(locals)
    end
    op('snapshot')
    return 'ok'
end

-- box.backup: start() writes a copy of the data as a data directory of its own
-- and lists its files (src/storage/backup.rs); stop() deletes it. The checkpoint
-- index is read as 2.6's luaL_checkint reads it.
box.backup = {}
function box.backup.start(...)
    local index = 0
    if select('#', ...) > 0 then
        local given = ...
        index = tonumber(given)
        if type(given) ~= 'number' and (type(given) ~= 'string' or index == nil) then
            -- Named as the caller called it ('?' through pcall or a tail call), as 2.6's C function is.
            local name = debug.getinfo(1, 'n').name or '?'
            error(string.format("bad argument #1 to '%s' (number expected, got %s)", name, type(given)), 0)
        end
        index = index >= 0 and math.floor(index) or math.ceil(index)
        if index < 0 then error('invalid checkpoint index', 0) end
    end
    -- The engine holds the transaction's changes in place: a copy taken now
    -- would keep what may yet be rolled back (2.6 copies its last checkpoint).
    if box.is_in_txn() then box.error(box.error.ACTIVE_TRANSACTION) end
    return op('backup_start', index)
end
function box.backup.stop() op('backup_stop') end

-- Memory as 2.6 reports it, mapped onto oncebox's (which has no slab allocator
-- and no vinyl): data is the tuples' bytes, index the index structures' estimate,
-- lua the Lua heap; there is no tuple cache and no transaction memory to speak of.
local TUPLE_HEADER_BYTES = 16
-- (These tables are made and filled as 2.6's C code does, so that they iterate and
-- print in its order: see test_table_order.py.)
internal.table_new = require('table.new')
local function box_info_memory()
    local m = op('memory')
    local t = internal.table_new(0, 6)
    t.data = m.data
    t.index = m.index
    t.cache = 0
    t.tx = 0
    t.net = 0
    t.lua = math.floor(collectgarbage('count') * 1024)
    return t
end

-- box.slab.info(): "items" are the tuples (their bytes, and their allocations
-- with a header each), the "arena" the tuples and index structures, the quota
-- memtx_memory and its use what a write is checked against (every space's
-- tuples and index entries but _idempotency's: src/engine/memory.rs).
local function ratio(used, size)
    return string.format('%.2f%%', size > 0 and used * 100 / size or 0)
end
box.slab = {}
function box.slab.info()
    local m = op('memory')
    local items_size = m.data + m.tuples * TUPLE_HEADER_BYTES
    local arena = items_size + m.index
    local quota = box.cfg.memtx_memory or 268435456
    local t = {}
    t.items_size = items_size
    t.items_used = m.data
    t.items_used_ratio = ratio(m.data, items_size)
    t.arena_size = arena
    t.arena_used = arena
    t.arena_used_ratio = ratio(arena, arena)
    t.quota_size = quota
    t.quota_used = m.quota_used
    t.quota_used_ratio = ratio(m.quota_used, quota)
    return t
end
-- Per size class in 2.6; oncebox's allocator has none to list.
function box.slab.stats() return {} end
function box.slab.check() end

-- box.runtime.info(): the Lua heap (the runtime's memory here); no allocation limit.
box.runtime = {}
function box.runtime.info()
    local lua = math.floor(collectgarbage('count') * 1024)
    local t = {}
    t.used = lua
    t.maxalloc = 4398046510080
    t.lua = lua
    return t
end

-- A box.info item that is called for its figures (2.6's are callable tables).
local function callable(fn) return setmetatable({}, {__call = function(_, ...) return fn(...) end}) end

-- A vclock: a map from replica id to lsn (2.6 encodes it as a map, `{1: 5}`).
local function vclock(lsn)
    lsn = lsn or op('lsn')
    local t = internal.table_new(0, lsn > 0 and 1 or 0)
    if lsn > 0 then t[1] = lsn end
    return map(t)
end

-- box.info.gc(): the last checkpoint (oncebox applies the log to its rows every
-- checkpoint_wal_threshold bytes, and keeps no older checkpoint); nothing holds it.
local box_info_gc = callable(function()
    local lsn = op('checkpoint_lsn')
    local t = {}
    t.vclock = vclock(lsn)
    t.signature = lsn
    t.checkpoint_is_in_progress = false
    local checkpoint = internal.table_new(0, 2)
    checkpoint.vclock = vclock(lsn)
    checkpoint.signature = lsn
    checkpoint.references = {}
    t.checkpoints = {checkpoint}
    t.consumers = {}
    return t
end)

-- No SQL: an empty prepared statement cache.
local box_info_sql = callable(function() return {cache = {size = 0, stmt_count = 0}} end)

-- No vinyl engine: 2.6's figures for an instance that never used it.
local function vinyl_stat()
    return {
        tx = {conflict = 0, commit = 0, rollback = 0, statements = 0, transactions = 0, gap_locks = 0,
              read_views = 0},
        regulator = {dump_bandwidth = 10485760, rate_limit = 10485760, dump_watermark = 134217715, write_rate = 0},
        memory = {tuple_cache = 0, tx = 0, level0 = 0, page_index = 0, bloom_filter = 0},
        disk = {data_compacted = 0, data = 0, index = 0},
        scheduler = {dump_time = 0, tasks_inprogress = 0, dump_output = 0, compaction_queue = 0,
                     compaction_output = 0, compaction_time = 0, dump_count = 0, tasks_failed = 0,
                     tasks_completed = 0, dump_input = 0, compaction_input = 0},
    }
end
local box_info_vinyl = callable(vinyl_stat)
internal.vinyl_stat = vinyl_stat

-- No anonymous replicas.
local box_info_replication_anon = callable(function() return {} end)
local box_info_memory_item = callable(box_info_memory)

box.info = setmetatable({package = 'Tarantool', version = _TARANTOOL}, {__index = function(_, k)
    if k == 'version' then return _TARANTOOL end
    if k == 'package' then return 'Tarantool' end
    if k == 'gc' then return box_info_gc end
    if k == 'sql' then return box_info_sql end
    if k == 'vinyl' then return box_info_vinyl end
    if k == 'replication_anon' then return box_info_replication_anon end
    if k == 'status' then return op('is_orphan') and 'orphan' or 'running' end
    if k == 'ro' then return op('is_read_only') end
    if k == 'id' then return 1 end
    if k == 'uuid' then return op('instance_uuid') end
    -- The address the binary port is bound to (port 0 resolved), as 2.6's box.info.listen.
    if k == 'listen' then return internal.listen_bound or box.cfg.listen end
    if k == 'schema_version' then return op('schema_version') end
    if k == 'memory' then return box_info_memory_item end
    -- One instance, no replicas: its own vclock component counts the commit
    -- groups logged (a group holds every statement committed together).
    if k == 'lsn' or k == 'signature' then return op('lsn') end
    if k == 'vclock' then return vclock() end
    if k == 'replication' then
        -- By replica id, a map as in 2.6 (in block style).
        local replica = internal.table_new(0, 16)
        replica.id = 1
        replica.uuid = op('instance_uuid')
        replica.lsn = op('lsn')
        return setmetatable({[1] = replica}, {__serialize = 'mapping'})
    end
    if k == 'cluster' then
        local row = op('cluster_row')
        local t = internal.table_new(0, 2)
        t.uuid = row and row[2]
        return t
    end
    if k == 'pid' then return require('tarantool').pid() end
    -- Whole seconds, counted from 1 as 2.6's (uptime + 1).
    if k == 'uptime' then return math.floor(require('tarantool').uptime()) + 1 end
    -- 1.6's name for this instance's own entry, still answered (not listed) in 2.6.
    if k == 'server' then
        local t = internal.table_new(0, 2)
        t.id = 1
        t.uuid = op('instance_uuid')
        t.lsn = op('lsn')
        t.ro = op('is_read_only')
        return t
    end
    return nil
end, __call = function(self)
    -- In 2.6's order, `listen` set even when nil (as 2.6 sets it: the key is made all the same).
    local all = {}
    all.version = _TARANTOOL
    all.package = 'Tarantool'
    for _, k in ipairs({'id', 'uuid', 'lsn', 'signature', 'vclock', 'ro', 'replication', 'replication_anon',
                        'status', 'uptime', 'pid', 'cluster', 'memory', 'gc', 'vinyl', 'sql', 'listen'}) do
        if k == 'replication_anon' then all[k] = {count = 0} else all[k] = self[k] end
    end
    return setmetatable(all, {__index = function(_, k) if k == 'server' then return self.server end end})
end})

-- box.cfg: Tarantool 2.6's options are accepted; those 2.6 cannot change at run time
-- are refused a new value once configured ("Can't set option dynamically");
-- oncebox's idempotency options apply at once.
local cfg_dynamic = {
    listen = true, replication = true, io_collect_interval = true, readahead = true, too_long_threshold = true,
    snap_io_rate_limit = true, read_only = true, memtx_memory = true, memtx_max_tuple_size = true,
    vinyl_memory = true, vinyl_max_tuple_size = true, vinyl_cache = true, vinyl_timeout = true,
    checkpoint_count = true, checkpoint_interval = true, checkpoint_wal_threshold = true,
    worker_pool_threads = true, feedback_enabled = true, feedback_host = true, feedback_interval = true,
    wal_dir_rescan_delay = true, custom_proc_title = true, force_recovery = true, replication_timeout = true,
    replication_connect_timeout = true, replication_connect_quorum = true, replication_sync_lag = true,
    replication_sync_timeout = true, replication_synchro_quorum = true, replication_synchro_timeout = true,
    replication_skip_conflict = true, replication_anon = true, net_msg_max = true, sql_cache_size = true,
    idempotency_mode = true, idempotency_lifetime = true, idempotency_max_count = true,
    idempotency_max_size = true, idempotency_max_token_size = true,
}
-- The logger's options (log, log_level, log_format, log_nonblock) are checked
-- and taken by the log module: `log` and `log_nonblock` are set once, by
-- log.cfg{} or the first box.cfg{}.

local cfg_known = {
    listen = 'string, number', memtx_memory = 'number', memtx_min_tuple_size = 'number', memtx_max_tuple_size = 'number',
    memtx_dir = 'string', wal_dir = 'string', work_dir = 'string', vinyl_dir = 'string', vinyl_memory = 'number',
    vinyl_cache = 'number', vinyl_max_tuple_size = 'number', vinyl_read_threads = 'number',
    vinyl_write_threads = 'number', vinyl_timeout = 'number', vinyl_run_count_per_level = 'number',
    vinyl_run_size_ratio = 'number', vinyl_range_size = 'number', vinyl_page_size = 'number',
    vinyl_bloom_fpr = 'number', log = 'string', log_level = 'number', log_format = 'string',
    log_nonblock = 'boolean', pid_file = 'string', background = 'boolean', custom_proc_title = 'string',
    username = 'string', coredump = 'boolean', read_only = 'boolean', readahead = 'number',
    io_collect_interval = 'number', too_long_threshold = 'number', wal_mode = 'string', wal_max_size = 'number',
    wal_dir_rescan_delay = 'number', checkpoint_interval = 'number', checkpoint_count = 'number',
    checkpoint_wal_threshold = 'number', snap_io_rate_limit = 'number', force_recovery = 'boolean',
    replication = 'any', replication_timeout = 'number', replication_connect_timeout = 'number',
    replication_connect_quorum = 'number', replication_sync_lag = 'number', replication_sync_timeout = 'number',
    replication_skip_conflict = 'boolean', replication_anon = 'boolean', replication_synchro_quorum = 'any',
    replication_synchro_timeout = 'number', instance_uuid = 'string', replicaset_uuid = 'string',
    net_msg_max = 'number', sql_cache_size = 'number', feedback_enabled = 'boolean', feedback_host = 'string',
    feedback_interval = 'number', hot_standby = 'boolean',
    slab_alloc_arena = 'number', slab_alloc_factor = 'number', slab_alloc_minimal = 'number',
    slab_alloc_maximal = 'number', worker_pool_threads = 'number', strip_core = 'boolean',
    -- (election_mode, election_timeout, memtx_use_mvcc_engine and wal_queue_max_size
    -- came after 2.6.0, which refuses them as unexpected options. So did auth_type,
    -- kept: its one method then, chap-sha1, is 2.6's, and connectors' test servers
    -- pass it, tarantool-python's through an environment variable that outlives
    -- its own tests.)
    auth_type = 'string',
    idempotency_mode = 'string', idempotency_lifetime = 'number', idempotency_max_count = 'number',
    idempotency_max_size = 'number', idempotency_max_token_size = 'number',
}
local cfg_values = nil

-- 2.6's defaults, reported by box.cfg before an option is set and restored by
-- setting it to box.NULL. The keys are 2.6's default_cfg's, in its order and with
-- its nils: box.cfg is filled by iterating this table (see cfg_publish), so it
-- must iterate as 2.6's does.
-- (Filled key by key, nils included, into a table made for one key: so 2.6's
-- LuaJIT parser builds its literal's template, growing it, a key with a nil value
-- holding a place until a later key or a resize takes it. Our LuaJIT's parser
-- keeps such places, so a literal would not iterate alike.)
local cfg_defaults = internal.table_new(0, 1)
for _, option in ipairs({
    {'listen'}, {'memtx_memory', 268435456}, {'strip_core', true}, {'memtx_min_tuple_size', 16},
    {'memtx_max_tuple_size', 1048576}, {'slab_alloc_factor', 1.05}, {'work_dir'}, {'memtx_dir', '.'},
    {'wal_dir', '.'}, {'vinyl_dir', '.'}, {'vinyl_memory', 134217728}, {'vinyl_cache', 134217728},
    {'vinyl_max_tuple_size', 1048576}, {'vinyl_read_threads', 1}, {'vinyl_write_threads', 4},
    {'vinyl_timeout', 60}, {'vinyl_run_count_per_level', 2}, {'vinyl_run_size_ratio', 3.5}, {'vinyl_range_size'},
    {'vinyl_page_size', 8192}, {'vinyl_bloom_fpr', 0.05}, {'io_collect_interval'}, {'readahead', 16320},
    {'snap_io_rate_limit'}, {'too_long_threshold', 0.5}, {'wal_mode', 'write'}, {'wal_max_size', 268435456},
    {'wal_dir_rescan_delay', 2}, {'force_recovery', false}, {'replication'}, {'instance_uuid'},
    {'replicaset_uuid'}, {'custom_proc_title'}, {'pid_file'}, {'background', false}, {'username'},
    {'coredump', false}, {'read_only', false}, {'hot_standby', false}, {'checkpoint_interval', 3600},
    {'checkpoint_wal_threshold', 1e18}, {'checkpoint_count', 2}, {'worker_pool_threads', 4},
    {'replication_timeout', 1}, {'replication_sync_lag', 10}, {'replication_sync_timeout', 300},
    {'replication_synchro_quorum', 1}, {'replication_synchro_timeout', 5}, {'replication_connect_timeout', 30},
    {'replication_connect_quorum'}, {'replication_skip_conflict', false}, {'replication_anon', false},
    {'feedback_enabled', true}, {'feedback_host', 'https://feedback.tarantool.io'}, {'feedback_interval', 3600},
    {'net_msg_max', 768}, {'sql_cache_size', 5242880},
}) do
    rawset(cfg_defaults, option[1], option[2])
end
-- The log module's options, which 2.6 asks the log module for after the others
-- (in this table's order; its values are not constants there either), with
-- their defaults.
local cfg_log_options = {log = {}, log_nonblock = {}, log_level = {5}, log_format = {'plain'}}

-- An option's default.
local function cfg_default(k)
    local v = cfg_defaults[k]
    if v == nil and cfg_log_options[k] ~= nil then v = cfg_log_options[k][1] end
    return v
end

-- nil or box.NULL: "no value" (an option's default).
local function is_null(v)
    return v == nil or (type(v) == 'cdata' and v == box.NULL)
end

-- Checks one option's value as 2.6's box.cfg does; log_level takes a number or a level's name.
local LOG_LEVEL_NAMES = {fatal = true, syserror = true, error = true, crit = true, warn = true, info = true,
                         verbose = true, debug = true}
local function check_cfg_value(k, v)
    local want = cfg_known[k]
    if want == nil then
        raise(59, "Incorrect value for option '%s': unexpected option", tostring(k))
    end
    if is_null(v) or v == '' then
        return
    elseif k == 'log_level' then
        if type(v) == 'string' then
            if not LOG_LEVEL_NAMES[v] then
                raise(59, "Incorrect value for option 'log_level': " ..
                    "expected crit,warn,info,debug,syserror,verbose,fatal,error")
            end
        elseif type(v) ~= 'number' then
            raise(59, "Incorrect value for option 'log_level': must be a number or a string")
        end
    elseif want:find(',', 1, true) then
        if not want:find(type(v), 1, true) then
            raise(59, "Incorrect value for option '%s': should be one of types %s", k, want)
        end
    elseif want ~= 'any' and type(v) ~= want then
        raise(59, "Incorrect value for option '%s': should be of type %s", k, want)
    end
end

-- The largest memory quota 2.6 takes (small's QUOTA_MAX).
local QUOTA_MAX = 4398046510080

-- An option's value as a URI 2.6 can listen on or connect to.
local function check_cfg_uri(k, v)
    local parts = require('uri').parse(tostring(v))
    if parts == nil or parts.service == nil then
        raise(59, "Incorrect value for option '%s': expected host:service or /unix.socket", k)
    end
end

-- A `log` value's kind ('file', 'pipe' or 'syslog'), or 2.6's reason to refuse
-- it: the parser log targets are opened with (src/log_sink) reads it.
local function log_target(v) return internal.native.log_target(tostring(v)) end

-- Bounds 2.6 checks (box_check_config at the first box.cfg, each option's setter
-- later): `v` is the value of `k` (neither nil nor box.NULL), `get` reads the
-- value another option will have.
local cfg_limits = {
    listen = function(v) if v ~= '' then check_cfg_uri('listen', v) end end,
    log = function(v)
        local kind, why = log_target(v)
        return kind ~= nil or why
    end,
    log_nonblock = function(v, get)
        local log = get('log')
        local to_file = log == nil or log_target(log) == 'file'
        return not (v and to_file) or 'the option is incompatible with file/stderr logger'
    end,
    replication = function(v)
        for _, source in ipairs(type(v) == 'table' and v or {v}) do check_cfg_uri('replication', source) end
    end,
    replication_timeout = function(v) return v > 0 or 'the value must be greather than 0' end,
    replication_connect_timeout = function(v) return v > 0 or 'the value must be greather than 0' end,
    replication_connect_quorum = function(v) return v >= 0 or 'the value must be greater or equal to 0' end,
    replication_sync_lag = function(v) return v > 0 or 'the value must be greater than 0' end,
    replication_sync_timeout = function(v) return v > 0 or 'the value must be greater than 0' end,
    replication_synchro_quorum = function(v)
        return type(v) ~= 'number' or (v > 0 and v < 32) or
            'the value must be greater than zero and less than maximal number of replicas'
    end,
    replication_synchro_timeout = function(v) return v > 0 or 'the value must be greater than zero' end,
    readahead = function(v) return (v >= 128 and v <= 2147483647) or 'specified value is out of bounds' end,
    checkpoint_count = function(v) return v >= 1 or 'the value must not be less than one' end,
    wal_max_size = function(v) return v > 1 or 'the value must be greater than one' end,
    wal_mode = function(v) return v == 'none' or v == 'write' or v == 'fsync' or v end,
    memtx_memory = function(v)
        return (v >= 0 and v <= QUOTA_MAX) or string.format('must be >= 0 and <= %d, but it is %d', QUOTA_MAX, v)
    end,
    memtx_min_tuple_size = function(v) return (v >= 8 and v <= 1048280) or 'specified value is out of bounds' end,
    vinyl_memory = function(v)
        return (v >= 0 and v <= QUOTA_MAX) or string.format('must be >= 0 and <= %d, but it is %d', QUOTA_MAX, v)
    end,
    vinyl_read_threads = function(v) return v >= 1 or 'must be greater than or equal to 1' end,
    vinyl_write_threads = function(v) return v >= 2 or 'must be greater than or equal to 2' end,
    vinyl_page_size = function(v, get)
        local range = get('vinyl_range_size')
        return (v > 0 and not (type(range) == 'number' and range > 0 and v > range)) or
            'must be greater than 0 and less than or equal to vinyl_range_size'
    end,
    vinyl_run_count_per_level = function(v) return v > 0 or 'must be greater than 0' end,
    vinyl_run_size_ratio = function(v) return v > 1 or 'must be greater than 1' end,
    vinyl_bloom_fpr = function(v) return (v > 0 and v <= 1) or 'must be greater than 0 and less than or equal to 1' end,
    sql_cache_size = function(v) return v >= 0 or 'must be non-negative' end,
    instance_uuid = function(v)
        local parsed = require('uuid').fromstr(v)
        if parsed == nil then return v end
        return not parsed:isnil() or 'nil UUID is reserved'
    end,
}
cfg_limits.replicaset_uuid = cfg_limits.instance_uuid

-- Bounds only a running instance checks, as 2.6's setters do.
local cfg_run_time_limits = {
    memtx_memory = function(v, get)
        return v >= get('memtx_memory') or 'cannot decrease memory size at runtime'
    end,
    vinyl_memory = function(v, get)
        return v >= get('vinyl_memory') or 'cannot decrease memory size at runtime'
    end,
    net_msg_max = function(v) return v >= 2 or 'minimal value is 2' end,
    replication_anon = function(v, get)
        return not v or get('read_only') or 'the value may be set to true only when the instance is read-only'
    end,
}

-- Raises 2.6's error when option `k`'s value `v` is out of its bounds.
local function check_cfg_limits(limits, k, v, get)
    local check = limits[k]
    if check == nil or is_null(v) then return end
    local verdict = check(v, get)
    if verdict ~= true and verdict ~= nil then
        raise(59, "Incorrect value for option '%s': %s", k, tostring(verdict))
    end
end

-- The options as box.cfg's own fields too, so that pairs(box.cfg) lists them as in
-- 2.6: the first time in the order 2.6 fills its table in (a script's first
-- box.cfg{} options as given, then the defaults missing, then the log module's,
-- a nil among them making its key all the same), so that it iterates as there.
local function cfg_publish()
    if not internal.cfg_published then
        internal.cfg_published = true
        for _, k in ipairs(internal.first_cfg_keys or {}) do rawset(box.cfg, k, cfg_values[k]) end
        for k in pairs(cfg_defaults) do
            if rawget(box.cfg, k) == nil then rawset(box.cfg, k, cfg_values[k]) end
        end
        for k in pairs(cfg_log_options) do
            if rawget(box.cfg, k) == nil then rawset(box.cfg, k, cfg_values[k]) end
        end
    end
    for k, v in pairs(cfg_values) do rawset(box.cfg, k, v) end
end

local function cfg_load()
    if cfg_values ~= nil then return end
    cfg_values = {}
    for k, v in pairs(cfg_defaults) do cfg_values[k] = v end
    for k, v in pairs(cfg_log_options) do cfg_values[k] = v[1] end
    for k, v in pairs(op('cfg_initial')) do
        if k == 'listen_bound' then
            internal.listen_bound = internal.listen_bound or v
        elseif k == 'listen' then
            cfg_values[k] = v
        elseif cfg_known[k] == 'boolean' and (v == 'true' or v == 'false') then
            cfg_values[k] = v == 'true'
        else
            cfg_values[k] = tonumber(v) or v
        end
    end
    -- Defaults 2.6 reports before they are set.
    if cfg_values.read_only == nil then cfg_values.read_only = op('is_read_only') end
    if internal.booted or not internal.script_mode then cfg_publish() end
end

-- Refuses `opts` when a log option of it is one the logger cannot take, as 2.6.
local function check_log_options(opts)
    -- The options set once first, as 2.6 reports them.
    for _, k in ipairs({'log', 'log_nonblock', 'log_level', 'log_format'}) do
        local v = opts[k]
        if not is_null(v) and v ~= '' then
            local ok, why = internal.log_box_check(k, v, opts)
            if not ok then raise(59, "Incorrect value for option '%s': %s", k, why) end
        end
    end
end

-- The logger changed `key` (log.level(), log.cfg{}...): box.cfg shows it, once
-- the instance is configured.
function internal.cfg_from_log(key, value)
    if internal.script_mode and not internal.booted then return end
    cfg_load()
    cfg_values[key] = value
    if rawget(box.cfg, key) ~= nil then rawset(box.cfg, key, value) end
end

-- Log options are checked and taken by the log module.
local LOG_OPTIONS = {log = true, log_nonblock = true, log_level = true, log_format = true}

-- Options 2.6 still takes under their old names: the new name, and how the old
-- value converts (to the old option's value, which is none but for
-- rows_per_wal, and the new one's).
local CFG_RENAMED = {
    snapshot_count = {'checkpoint_count'},
    snapshot_period = {'checkpoint_interval'},
    slab_alloc_arena = {'memtx_memory', function(old) return nil, math.floor(old * 1024 * 1024 * 1024) end},
    slab_alloc_minimal = {'memtx_min_tuple_size'},
    slab_alloc_maximal = {'memtx_max_tuple_size'},
    snap_dir = {'memtx_dir'},
    logger = {'log'},
    logger_nonblock = {'log_nonblock'},
    panic_on_snap_error = {'force_recovery', function(old) return nil, not old end},
    panic_on_wal_error = {'force_recovery', function(old) return nil, not old end},
    replication_source = {'replication'},
    rows_per_wal = {'wal_max_size', function(old, new) return old, new end},
}

-- `opts` with the options under old names renamed, warning of each, as 2.6's
-- upgrade_cfg (an old and a new name given different values is an error).
local function cfg_renamed(opts)
    local result = {}
    for k, v in pairs(opts) do
        local rename = CFG_RENAMED[k]
        if rename == nil then
            result[k] = v
        else
            local new_key, convert = rename[1], rename[2]
            require('log').warn('Deprecated option %s, please use %s instead', k, new_key)
            local given_new, old_value, new_value = opts[new_key], nil, v
            if convert ~= nil then old_value, new_value = convert(v, given_new) end
            if given_new ~= nil and given_new ~= new_value then
                raise(59, "Incorrect value for option '%s': can not override a value for a deprecated option", k)
            end
            result[k], result[new_key] = old_value, new_value
        end
    end
    return result
end

-- A script's first box.cfg{} options, checked as 2.6 does before it configures
-- anything (so that a refused box.cfg leaves the instance unconfigured), with
-- '' (an option's default, as box.NULL) left out.
function internal.check_first_cfg(opts)
    if opts ~= nil and type(opts) ~= 'table' then
        error("bad argument #1 to 'pairs' (table expected, got " .. type(opts) .. ')', 2)
    end
    local given, keys = {}, {}
    for k, v in pairs(cfg_renamed(opts or {})) do
        check_cfg_value(k, v)
        if v ~= '' then given[k] = v end
        keys[#keys + 1] = k
    end
    internal.first_cfg_keys = keys
    local function get(k)
        if given[k] ~= nil then return given[k] end
        return cfg_default(k)
    end
    for k in pairs(cfg_limits) do check_cfg_limits(cfg_limits, k, get(k), get) end
    check_log_options(given)
    return given
end

-- A script's first box.cfg{}, run by its main chunk: the server boots the
-- engine and resumes the chunk here (as fiber 103), which then finishes what
-- box.cfg{} does once booted.
local function boot(opts)
    coroutine.yield('box.cfg', opts)
    internal.booted = true
    package.loaded.title.update{status = 'running', custom_title = opts.custom_proc_title}
    if internal.console_take_over then internal.console_take_over() end
    internal.sync_session_triggers()
    internal.run_schema_init_triggers()
    cfg_values = nil
    cfg_load()
    internal.log_box_booted(opts)
    if internal.cfg_done then internal.cfg_done:broadcast() end
    if opts.read_only ~= nil then op('set_read_only', opts.read_only) end
    if opts.memtx_max_tuple_size ~= nil then op('max_tuple_size', opts.memtx_max_tuple_size) end
    if opts.memtx_memory ~= nil then op('memtx_memory', opts.memtx_memory) end
    if opts.checkpoint_wal_threshold ~= nil then
        op('checkpoint_wal_threshold', opts.checkpoint_wal_threshold)
    end
end

-- The main chunk, waiting while a fiber called the first box.cfg{}, boots for it.
function internal.boot_pending()
    local opts = internal.pending_boot
    internal.pending_boot = nil
    boot(opts)
end

-- Whether a script's first box.cfg{} may run here: in its main chunk, or in a
-- fiber while the main chunk waits (it then boots on that fiber's behalf) or
-- after it ended (the event loop then boots for it: internal.main_ended).
local function may_boot_here()
    return internal.fiber_in_main() or internal.fiber_main_waits() or internal.main_ended == true
end
local NOT_FROM_A_FIBER = "oncebox runs a script's first box.cfg{} from a fiber only while the main chunk " ..
    "waits, not after it ended"

-- box.cfg{replication = ...} at run time, as 2.6 takes it: the new sources are
-- connected to (a source's greeting counts: oncebox does not replicate), waited
-- for up to replication_connect_timeout, retrying every replication_timeout;
-- short of the quorum the instance goes on as an orphan (read-only) until they
-- answer, retried by a fiber. The first box.cfg{} does the same in src/upstreams.rs.
local replication_generation = 0

-- Whether the source at `uri` sends a Tarantool greeting within `timeout` seconds.
local function source_answers(uri, timeout)
    local u = require('uri').parse(tostring(uri))
    if u == nil or u.service == nil then return false end
    local s = require('socket').tcp_connect(u.host or 'localhost', u.service, timeout)
    if s == nil then return false end
    local greeting = s:read(128, timeout)
    s:close()
    return greeting ~= nil and greeting:sub(1, 10) == 'Tarantool '
end

local function follow_sources(uris, connect_timeout, retry, quorum)
    local fiber = require('fiber')
    local log = require('log')
    replication_generation = replication_generation + 1
    local generation = replication_generation
    if type(uris) ~= 'table' then uris = {uris} end
    retry = math.max(retry, 0.01)
    local answered, count = {}, 0
    local function round(timeout)
        for i, uri in ipairs(uris) do
            if not answered[i] and source_answers(uri, timeout) then
                answered[i] = true
                count = count + 1
            end
        end
    end
    local needed = math.min(quorum or #uris, #uris)
    if #uris > 0 then
        log.info('connecting to %d replicas', #uris)
        local deadline = fiber.clock() + connect_timeout
        while true do
            round(math.min(retry, connect_timeout))
            if count == #uris or fiber.clock() >= deadline then break end
            fiber.sleep(math.min(retry, deadline - fiber.clock()))
        end
        if count < #uris then log.error('failed to connect to %d out of %d replicas', #uris - count, #uris) end
    end
    if count >= needed then
        op('set_orphan', false)
        return
    end
    log.error('entering orphan mode')
    op('set_orphan', true)
    fiber.create(function()
        fiber.name('applier')
        while generation == replication_generation do
            fiber.sleep(retry)
            if generation ~= replication_generation then return end
            round(retry)
            if count >= needed and generation == replication_generation then
                op('set_orphan', false)
                log.error('leaving orphan mode')
                return
            end
        end
    end)
end

box.cfg = setmetatable({}, {
    __index = function(_, k)
        cfg_load()
        return cfg_values[k]
    end,
    -- `checked`: the options are the outcome of internal.check_first_cfg.
    __call = function(_, opts, checked)
        if internal.script_mode and not internal.booted then
            if not checked then opts = internal.check_first_cfg(opts) end
            if not may_boot_here() then raise(0, NOT_FROM_A_FIBER) end
            if internal.fiber_in_main() then
                boot(opts)
                return
            end
            -- A fiber's: the main chunk boots (once), this fiber waits for it, as
            -- 2.6's box.cfg{} makes other callers wait; a later call reconfigures.
            local first = internal.pending_boot == nil
            if first then internal.pending_boot = opts end
            internal.cfg_done = internal.cfg_done or require('fiber').cond()
            repeat internal.cfg_done:wait() until internal.booted
            if not first then return box.cfg(opts) end
            return
        end
        cfg_load()
        if opts ~= nil and type(opts) ~= 'table' then
            error("bad argument #1 to 'pairs' (table expected, got " .. type(opts) .. ')', 2)
        end
        opts = cfg_renamed(opts or {})
        for k, v in pairs(opts) do check_cfg_value(k, v) end
        -- As 2.6: an option fixed at start refuses any other value, '' included.
        for k, v in pairs(opts) do
            local current = cfg_values[k]
            if current == nil then current = cfg_default(k) end
            if not cfg_dynamic[k] and not LOG_OPTIONS[k] and current ~= v then
                raise(58, "Can't set option '%s' dynamically", k)
            end
        end
        -- box.NULL and '' restore an option's default; an empty listen stops listening.
        local new = {}
        for k, v in pairs(opts) do
            if is_null(v) or v == '' then v = cfg_default(k) end
            new[k] = v
        end
        local function get(k)
            if new[k] ~= nil then return new[k] end
            return cfg_values[k]
        end
        for k, v in pairs(new) do
            -- (The log module refuses a new log target or nonblock setting first.)
            if not LOG_OPTIONS[k] then check_cfg_limits(cfg_limits, k, v, get) end
            check_cfg_limits(cfg_run_time_limits, k, v, function(name) return cfg_values[name] end)
        end
        check_log_options(opts)
        for k in pairs(opts) do
            local v = new[k]
            if string.sub(k, 1, 12) == 'idempotency_' and v ~= nil then op('idem_cfg', k, v) end
            if k == 'read_only' then op('set_read_only', v) end
            if k == 'replication' then
                follow_sources(v or {}, get('replication_connect_timeout') or cfg_default('replication_connect_timeout'),
                               get('replication_timeout') or cfg_default('replication_timeout'),
                               get('replication_connect_quorum'))
            end
            if k == 'custom_proc_title' then package.loaded.title.update{custom_title = v} end
            if k == 'memtx_max_tuple_size' then op('max_tuple_size', v) end
            if k == 'memtx_memory' and v ~= nil then op('memtx_memory', v) end
            if k == 'checkpoint_wal_threshold' then op('checkpoint_wal_threshold', v) end
            if (k == 'log_level' or k == 'log_format') and v ~= nil then internal.log_box_set(k, v) end
            if k == 'listen' and v ~= cfg_values.listen then
                local bound = op('listen', v)
                internal.listen_bound = bound ~= '' and bound or nil
            end
            cfg_values[k] = v
            rawset(box.cfg, k, v)
        end
    end,
})

-- Before a script's first box.cfg{}, as in 2.6: box.cfg is a plain function and
-- `box` shows only what works unconfigured (NULL, cfg, ctl, error, execute, index,
-- internal, runtime, session, tuple); anything else raises "Please call box.cfg{}
-- first". Modules tell a configured instance by that (tarantool/queue does).
local UNCONFIGURED_BOX = {NULL = true, cfg = true, ctl = true, error = true, execute = true, index = true,
                          internal = true, runtime = true, session = true, tuple = true}
function internal.hide_until_cfg()
    local configure = box.cfg
    local hidden = {}
    for k, v in pairs(box) do
        if not UNCONFIGURED_BOX[k] then hidden[k] = v end
    end
    for k in pairs(hidden) do rawset(box, k, nil) end
    setmetatable(box, {__index = function(_, k)
        if hidden[k] ~= nil then error('Please call box.cfg{} first', 2) end
    end})
    -- box.execute configures the instance with the defaults first (2.6's
    -- box_load_and_execute); fibers calling it meanwhile wait for that.
    local execute = box.execute
    local function load_and_execute(...)
        if internal.script_mode and not internal.booted then
            if type(box.cfg) == 'function' then
                box.cfg{}
            else
                local fiber = require('fiber')
                internal.cfg_done = internal.cfg_done or fiber.cond()
                repeat internal.cfg_done:wait() until internal.booted
            end
        end
        return execute(...)
    end
    box.execute = load_and_execute
    box.cfg = function(opts)
        -- Refused options leave the instance unconfigured, as in 2.6.
        local checked = internal.check_first_cfg(opts)
        if not may_boot_here() then raise(0, NOT_FROM_A_FIBER) end
        setmetatable(box, nil)
        for k, v in pairs(hidden) do rawset(box, k, v) end
        box.cfg = configure
        if box.execute == load_and_execute then box.execute = execute end
        return configure(checked, true)
    end
end

-- box.func: the functions of _func by name, each with call(args) running it as a
-- CALL would (a global, or a path like 'mod.fn' or 'mod.obj:method').
local func_methods = {}
func_methods.__index = func_methods

-- The Lua function a CALL of `name` reaches, and the object of a ':' call.
local function resolve_function(name)
    local path, method = string.match(name, '^(.-):([^.:]+)$')
    local value = _G
    for part in string.gmatch(path or name, '[^.]+') do
        if type(value) ~= 'table' then return nil end
        value = value[part]
    end
    if method then
        if type(value) ~= 'table' then return nil end
        return value[method], value
    end
    return value
end

-- Each box.func object's owner (not a field of its own, as in 2.6).
local func_owners = setmetatable({}, {__mode = 'k'})

function func_methods:call(args)
    if args ~= nil and type(args) ~= 'table' then error('Use func:call(table)', 2) end
    -- The caller needs the right to execute it, as a CALL does.
    op('check_call', self.name)
    local fn, object = internal.persistent_function(self.name), nil
    if fn == nil then fn, object = resolve_function(self.name) end
    if fn == nil then raise(33, "Procedure '%s' is not defined", self.name) end
    args = args or {}
    local run = fn
    if object ~= nil then run = function(...) return fn(object, ...) end end
    -- A setuid function runs with its owner's rights, as a CALL of it does.
    local owner = self.setuid and func_owners[self] or nil
    if owner ~= nil then return internal.run_as(owner, run, unpack(args, 1, table.maxn(args))) end
    return run(unpack(args, 1, table.maxn(args)))
end

function func_methods:drop() box.schema.func.drop(self.name) end

-- box.schema.func.reload(name): reloads a C module; oncebox loads none, so every
-- name is unknown.
function box.schema.func.reload(name)
    if type(name) ~= 'string' then
        error("bad argument #1 to '?' (string expected, got " .. (name == nil and 'no value' or type(name)) .. ')', 2)
    end
    raise(165, "Module '%s' does not exist", name)
end

-- box.schema.func.call(name, ...): runs a function of _func as func:call would.
function box.schema.func.call(name, ...)
    local func = box.func[name]
    if func == nil then raise(51, "Function '%s' does not exist", tostring(name)) end
    return func:call({...})
end

-- (2.6 keeps box.func as a cache: reading it checks no rights.)
box.func = setmetatable({}, {__index = function(_, name)
    if type(name) ~= 'string' then return nil end
    local row = as_admin(function() return box.space._func.index.name:get(name) end)
    if row == nil then return nil end
    local func = setmetatable({id = row[1], name = row[3], setuid = row[4] == 1 or row[4] == true,
                               language = string.upper(tostring(row[5] or 'LUA'))}, func_methods)
    func_owners[func] = row[2]
    return func
end})

-- box.stat(): operations counted since start (or box.stat.reset()), each with its
-- rate over the last five seconds: SELECT, INSERT, REPLACE, UPDATE, UPSERT, DELETE
-- (from Lua and IPROTO alike), CALL, EVAL, AUTH (IPROTO), ERROR (failed operations).
box.stat = setmetatable({}, {__call = function() return op('stat') end})
box.stat.vinyl = internal.vinyl_stat
function box.stat.reset() op('stat_reset') end
-- box.stat.net(): IPROTO traffic: bytes SENT and RECEIVED, CONNECTIONS and
-- REQUESTS (with the number open / in progress now), each with its rate.
-- A table one calls, as in 2.6 (its `thread` is nil there: there is one
-- network thread's worth of counters; the metrics module looks for it).
box.stat.net = setmetatable({}, {__call = function() return op('stat_net') end})
function box.stat.idempotency() return op('idem_stat') end

-- box.ctl.on_iproto_request(fn [, old]): Tarantool's trigger convention.
box.ctl = box.ctl or {}

-- box.ctl.wait_rw([timeout]) / wait_ro([timeout]): return once the instance is
-- writable (read-only), waiting at most `timeout` seconds ("timed out" then).
-- Before box.cfg{} the instance is neither: both wait for box.cfg{} and return
-- when it is done, whatever mode it set, as 2.6's do.
local function wait_mode(read_only, timeout)
    -- As 2.6's luaL_checknumber (a numeric string counts).
    if timeout ~= nil then
        local seconds = tonumber(timeout)
        if seconds == nil then
            error(string.format("bad argument #1 to '?' (number expected, got %s)", type(timeout)), 0)
        end
        timeout = seconds
    end
    local fiber = require('fiber')
    local deadline = timeout and fiber.clock() + timeout
    local function unconfigured() return internal.script_mode and not internal.booted end
    if unconfigured() then
        -- Woken in the order they began, by box.cfg{} once it is done.
        internal.cfg_done = internal.cfg_done or fiber.cond()
        repeat
            local left = deadline and deadline - fiber.clock()
            if left and left <= 0 then error('timed out', 0) end
            internal.cfg_done:wait(left)
        until not unconfigured()
        return
    end
    while op('is_read_only') ~= read_only do
        if deadline and fiber.clock() >= deadline then error('timed out', 0) end
        fiber.sleep(0.01)
    end
end
function box.ctl.wait_rw(timeout) wait_mode(false, timeout) end
function box.ctl.wait_ro(timeout) wait_mode(true, timeout) end

local iproto_triggers = {}
function box.ctl.on_iproto_request(new, old)
    local r = set_trigger(iproto_triggers, new, old)
    if new ~= nil or old ~= nil then op('iproto_triggers', #iproto_triggers) end
    return r
end

-- box.ctl.on_schema_init(fn [, old]): triggers the first box.cfg{} runs (newest
-- first, no arguments) once the schema is loaded; set later, they never run.
-- (2.6 runs them before the data is recovered, so that a before_replace trigger
-- set there sees recovery; oncebox runs them right after it.)
local schema_init_triggers = {}
function box.ctl.on_schema_init(new, old) return set_trigger(schema_init_triggers, new, old) end
function internal.run_schema_init_triggers()
    local list = schema_init_triggers
    for i = #list, 1, -1 do list[i]() end
end

-- Synchronous replication's queue: a single instance has none to clear.
function box.ctl.clear_synchro_queue() end

-- box.ctl.on_shutdown(fn [, old]): triggers run once when the instance stops
-- (os.exit, SIGTERM or SIGINT, the script's end when nothing is left to serve),
-- newest first, with no arguments; an error is logged and the next one runs.
local shutdown_triggers = {}
function box.ctl.on_shutdown(new, old) return set_trigger(shutdown_triggers, new, old) end

function internal.run_shutdown_triggers()
    local list = shutdown_triggers
    shutdown_triggers = {}
    for i = #list, 1, -1 do
        local ok, err = pcall(list[i])
        if not ok then require('log').error('on_shutdown trigger failed: %s', tostring(err)) end
    end
end

function internal.run_iproto_triggers(header)
    for _, t in ipairs(iproto_triggers) do t(header) end
end

box.tuple = {}

function box.tuple.new(...)
    local t = select('#', ...) == 1 and type((...)) == 'table' and (...) or {...}
    return op('tuple_new', t)
end
function box.tuple.is(v) return internal.native.is_tuple(v) end

-- box.once(key, fn, ...): fn(...) the first time `key` is seen by this database
-- (its results returned), nothing later.
function box.once(key, fn, ...)
    if type(key) ~= 'string' or type(fn) ~= 'function' then
        raise(1, 'Illegal parameters, Usage: box.once(key, func, ...)')
    end
    local k = 'once' .. key
    if box.space._schema:get{k} ~= nil then return end
    box.space._schema:put{k}
    return fn(...)
end

--------------------------------------------------------------------------------
-- Modules
--------------------------------------------------------------------------------

-- msgpack works before box.cfg{}, as in Tarantool: it touches no engine state.
-- array_mt and map_mt (the metatables of decoded tables) are set from Rust.
-- It also reads from memory (a `char *` or `const char *`, as 2.6 takes from an
-- ibuf's rpos) and encodes into an ibuf, both through ffi.
local ffi = require('ffi')
local char_ptr, const_char_ptr = ffi.typeof('char *'), ffi.typeof('const char *')
-- 2.6's ibuf (the buffer module's; its fields are read and moved by users too).
ffi.cdef[[
struct ibuf {
    void *slabc;
    char *buf;
    char *rpos;
    char *wpos;
    char *epos;
    size_t start_capacity;
};
]]
local ibuf_t, ibuf_ptr = ffi.typeof('struct ibuf'), ffi.typeof('struct ibuf *')
local function is_ibuf(v)
    return type(v) == 'cdata' and (ffi.istype(ibuf_t, v) or ffi.istype(ibuf_ptr, v))
end
local msgpack = {NULL = box.NULL}
-- An encoding error as 2.6 raises it: its own checks of depth and type as a
-- string, what the options or a __serialize refuse as a LuajitError.
local function encode_failure(err)
    if string.find(err, '^Too high nest level') or string.find(err, "^unsupported Lua type") then return err end
    return make_error(nil, err, 'LuajitError')
end
internal.encode_failure = encode_failure

-- Raises an encoding error of msgpack.encode (a string tells where the call was).
local function encode_error(err)
    local e = encode_failure(err)
    error(e, type(e) == 'string' and 3 or 0)
end

-- msgpack.encode for a serializer whose options `holder.options` holds as the
-- native encoder takes them: an instance's (msgpack.new()), nil for the module's
-- own (msgpack.cfg).
local function encoder(holder)
    return function(...)
        if select('#', ...) == 0 then error('msgpack.encode: a Lua object expected', 2) end
        local bytes, err = internal.native.msgpack_encode((...), holder.options)
        -- The second argument is an ibuf to encode into: the bytes go after its wpos,
        -- and the count of them is returned.
        local ibuf = select(2, ...)
        -- A second argument given, nil too (an empty ibuf's buf), must be an ibuf.
        if select('#', ...) >= 2 then
            if not is_ibuf(ibuf) then error("msgpack.encode: argument 2 must be of type 'struct ibuf'", 2) end
            if bytes == nil then encode_error(err) end
            ffi.copy(ibuf:alloc(#bytes), bytes, #bytes)
            return #bytes
        end
        if bytes == nil then encode_error(err) end
        return bytes
    end
end
-- Reading msgpack from memory: the bytes are read through a byte pointer.
local byte_ptr = ffi.typeof('const uint8_t *')
local function is_char_ptr(v)
    if type(v) ~= 'cdata' then return false end
    local t = ffi.typeof(v)
    return t == char_ptr or t == const_char_ptr
end
-- The big-endian unsigned integer of `n` bytes at `bytes[at]`.
local function be(bytes, at, n)
    local v = 0
    for i = at, at + n - 1 do v = v * 256 + bytes[i] end
    return v
end
-- The length of the msgpack value at `ptr`, read without bounds (as 2.6's
-- decode_unchecked): heads and lengths are read, payloads skipped.
local function mp_length(ptr)
    local at, pending, ptr = 0, 1, ffi.cast(byte_ptr, ptr)
    while pending > 0 do
        pending = pending - 1
        local c = ptr[at]
        at = at + 1
        if c <= 0x7f or c >= 0xe0 or c == 0xc0 or c == 0xc2 or c == 0xc3 then -- fixint, nil, bool
        elseif c >= 0x80 and c <= 0x8f then pending = pending + 2 * (c - 0x80)
        elseif c >= 0x90 and c <= 0x9f then pending = pending + (c - 0x90)
        elseif c >= 0xa0 and c <= 0xbf then at = at + (c - 0xa0)
        elseif c == 0xc4 or c == 0xd9 then at = at + 1 + be(ptr, at, 1) -- bin8, str8
        elseif c == 0xc5 or c == 0xda then at = at + 2 + be(ptr, at, 2)
        elseif c == 0xc6 or c == 0xdb then at = at + 4 + be(ptr, at, 4)
        elseif c == 0xc7 then at = at + 2 + be(ptr, at, 1) -- ext8
        elseif c == 0xc8 then at = at + 3 + be(ptr, at, 2)
        elseif c == 0xc9 then at = at + 5 + be(ptr, at, 4)
        elseif c == 0xca or c == 0xce or c == 0xd2 then at = at + 4
        elseif c == 0xcb or c == 0xcf or c == 0xd3 then at = at + 8
        elseif c == 0xcc or c == 0xd0 then at = at + 1
        elseif c == 0xcd or c == 0xd1 then at = at + 2
        elseif c >= 0xd4 and c <= 0xd8 then at = at + 1 + 2 ^ (c - 0xd4) -- fixext
        elseif c == 0xdc then pending = pending + be(ptr, at, 2) at = at + 2
        elseif c == 0xdd then pending = pending + be(ptr, at, 4) at = at + 4
        elseif c == 0xde then pending = pending + 2 * be(ptr, at, 2) at = at + 2
        elseif c == 0xdf then pending = pending + 2 * be(ptr, at, 4) at = at + 4
        else error('msgpack.decode: invalid MsgPack', 0) end -- 0xc1
    end
    return at
end
-- Decodes the value at `ptr` from `size` bytes (unknown: read without bounds).
local function decode_memory(ptr, size, options)
    -- A NULL pointer (an empty ibuf's rpos) is refused, not read.
    if ptr == nil then error('msgpack.decode: pointer is null', 0) end
    local len = size == nil and mp_length(ptr) or size
    local v, next_pos, err = internal.native.msgpack_decode(ffi.string(ptr, len), 1, options)
    if next_pos == nil then error(err or 'msgpack.decode: invalid MsgPack', 0) end
    return v, ptr + (next_pos - 1)
end

local function decoder(check_bounds, holder)
    local name = 'msgpack.decode'
    return function(...)
        local s, pos = ...
        if is_char_ptr(s) then
            if not check_bounds then return decode_memory(s, nil, holder.options) end
            if select('#', ...) < 2 then error("bad argument #2 to '?' (number expected, got no value)", 2) end
            local size = tonumber(pos)
            if size == nil then error(string.format("bad argument #2 to '?' (number expected, got %s)", type(pos)), 2) end
            if size < 0 then error(name .. ": size can't be negative", 2) end
            if size == 0 then error(name .. ': invalid MsgPack', 2) end
            return decode_memory(s, size, holder.options)
        end
        if type(s) ~= 'string' then error(name .. ": a Lua string or 'char *' expected", 2) end
        if select('#', ...) == 1 then pos = 1 end
        -- A position given, even as nil, must be a number (luaL_checkinteger's words).
        if tonumber(pos) == nil then
            error(string.format("bad argument #2 to '?' (number expected, got %s)", type(pos)), 2)
        end
        pos = tonumber(pos)
        pos = math.floor(pos)
        -- (decode_unchecked checks the offset of a string too, as 2.6's.)
        if #s > 0 and (pos < 1 or pos > #s) then
            error(name .. ': offset is out of bounds', 2)
        end
        local v, next_pos, err = internal.native.msgpack_decode(s, math.max(pos, 1), holder.options)
        if err ~= nil then error(err, 0) end
        if next_pos == nil then error(name .. ': invalid MsgPack', 2) end
        return v, next_pos
    end
end

-- decode_array_header(ptr, size) and decode_map_header(ptr, size): the count of
-- the array or map whose head is at `ptr`, and the pointer past the head.
local function header_decoder(kind, fix, fix_max, head16, head32)
    local name = 'msgpack.decode_' .. kind .. '_header'
    return function(...)
        if select('#', ...) ~= 2 then error(string.format('Usage: %s(ptr, size)', name), 0) end
        local ptr, size = ...
        if not is_char_ptr(ptr) then error(name .. ": 'char *' expected", 0) end
        if tonumber(size) == nil then
            error(string.format("bad argument #2 to '?' (number expected, got %s)", type(size)), 0)
        end
        size = tonumber(size)
        if size <= 0 then error(name .. ': non-positive size', 0) end
        local bytes = ffi.cast(byte_ptr, ptr)
        local c = bytes[0]
        local head, count
        if c >= fix and c <= fix_max then
            head, count = 1, c - fix
        elseif c == head16 then
            head = 3
        elseif c == head32 then
            head = 5
        else
            error(name .. ': unexpected msgpack type', 0)
        end
        if size < head then error(name .. ': unexpected end of buffer', 0) end
        count = count or be(bytes, 1, head - 1)
        return count, ptr + head
    end
end
msgpack.decode_array_header = header_decoder('array', 0x90, 0x9f, 0xdc, 0xdd)
msgpack.decode_map_header = header_decoder('map', 0x80, 0x8f, 0xde, 0xdf)

-- ibuf_decode(rpos): decode_unchecked with its results the other way round.
local function ibuf_decoder(holder)
    return function(...)
        local ptr = ...
        if type(ptr) ~= 'cdata' then error('expected cdata as 1 argument', 0) end
        if ptr == nil then error('msgpack.ibuf_decode: rpos is null', 0) end
        local v, next_ptr = decode_memory(ptr, nil, holder.options)
        return next_ptr, v
    end
end

-- Sets the functions of a msgpack serializer (the module, or an instance of
-- msgpack.new()) whose options `holder.options` holds.
function internal.msgpack_functions(m, holder)
    m.encode = encoder(holder)
    m.decode = decoder(true, holder)
    m.decode_unchecked = decoder(false, holder)
    m.decode_array_header = msgpack.decode_array_header
    m.decode_map_header = msgpack.decode_map_header
    m.ibuf_decode = ibuf_decoder(holder)
end
internal.msgpack_functions(msgpack, {})
package.loaded.msgpack = msgpack
package.loaded.box = box
