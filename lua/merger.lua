-- merger: Tarantool 2.6's merging of sorted tuple sources (require('merger')).
--
-- * merger.new_table_source(gen, param, state), new_tuple_source(...),
--   new_buffer_source(...): sources fed by an iterator of chunks (tables of
--   tuples, single tuples, or ibufs holding a msgpack array of tuples);
--   new_source_fromtable(t) and new_source_frombuffer(buf) for one chunk.
-- * merger.new(key_def, {source, ...}[, {reverse = bool}]): a source yielding
--   the sources' tuples in key_def order; it is a source itself.
-- * source:select([{buffer = ibuf, limit = n}]), source:pairs() / :ipairs()
--   (a luafun iterator).
-- Sources are cdata, as in 2.6. A merger takes each source's first tuple on its
-- first use, and keeps them in the same binary heap as 2.6, so tuples with
-- equal keys come out in 2.6's order. Each tuple is checked against the
-- key_def's field types. Errors carry 2.6's texts.

local type = type -- the builtin, not the one user code sees (box.lua)
local ffi = require('ffi')
local fun = require('fun')
local msgpack = require('msgpack')
local key_def_lib = require('key_def')

local merger = {internal = {}}

ffi.cdef('struct merge_source { uint32_t oncebox_id; };')
local source_t = ffi.typeof('struct merge_source')
local ibuf_t = ffi.typeof('struct ibuf')

-- The state of each source, by its cdata's id (dropped with the cdata).
local states = {}
local next_id = 0

local function raise(message)
    error(box.internal.make_error(nil, message, 'IllegalParams'), 0)
end

-- luaL_iscallable: a function, or a value whose metatable has __call.
local function is_callable(v)
    if type(v) == 'function' then return true end
    local ok, mt = pcall(getmetatable, v)
    return ok and type(mt) == 'table' and mt.__call ~= nil
end

local function new_source(state)
    next_id = next_id + 1
    states[next_id] = state
    local id = next_id
    return ffi.gc(source_t(id), function() states[id] = nil end)
end

local function state_of(source)
    if type(source) ~= 'cdata' or not ffi.istype(source_t, source) then return nil end
    return states[source.oncebox_id]
end

-- luaL_checkcdata's complaint, naming the argument's place on 2.6's C stack.
local function expected_cdata(position)
    error(string.format('expected cdata as %d argument', position), 0)
end

-- A tuple from what a source gave, checked as the merger's format checks it.
local function as_tuple(key_def, value)
    if not box.tuple.is(value) and type(value) ~= 'table' then
        raise('A tuple or a table expected, got ' .. type(value))
    end
    if key_def == nil then return box.tuple.new(value) end
    return box.internal.key_def_tuple(key_def, value)
end

-- Calls the source's chunk iterator: nil at its end, else the chunk (a NULL
-- cdata is a chunk, refused by its kind's check, as in 2.6); `what`
-- names the chunk for the count error.
local function fetch(s, what)
    local r = {n = 0}
    local function keep(ok, ...)
        -- What the iterator raised comes out as a box error (a LuajitError), as in 2.6.
        if not ok then
            local e = ...
            if box.error.is ~= nil and box.error.is(e) then error(e, 0) end
            error(box.internal.make_error(nil, tostring(e), 'LuajitError'), 0)
        end
        r = {n = select('#', ...), ...}
    end
    keep(pcall(s.gen, s.param, s.state))
    -- The end is a nil state (box.NULL is a state, as 2.6's lua_isnil tells).
    if type(r[1]) == 'nil' then return nil end
    if r.n ~= 2 then raise(string.format('Expected <state>, <%s>, got %d return values', what, r.n)) end
    s.state = r[1]
    return r[2]
end

-- Next tuple of a source (nil at its end), checked against `key_def` (nil: none).
local next_tuple

local function table_next(s, key_def)
    while true do
        if s.chunk ~= nil then
            local value = s.chunk[s.pos]
            if value ~= nil then
                s.pos = s.pos + 1
                return as_tuple(key_def, value)
            end
        end
        local chunk = fetch(s, 'table')
        if type(chunk) == 'nil' then return nil end
        if type(chunk) ~= 'table' then raise('Expected <state>, <table>') end
        s.chunk, s.pos = chunk, 1
    end
end

local function tuple_next(s, key_def)
    local value = fetch(s, 'tuple')
    if type(value) == 'nil' then return nil end
    return as_tuple(key_def, value)
end

-- A buffer chunk: a msgpack array of tuples from rpos on (rpos moves past each).
local function buffer_next(s, key_def)
    while s.remaining == 0 do
        local buf = fetch(s, 'buffer')
        if type(buf) == 'nil' then return nil end
        if type(buf) ~= 'cdata' or not ffi.istype(ibuf_t, buf) then raise('Expected <state>, <buffer>') end
        s.buf = buf
        local used = tonumber(buf.wpos - buf.rpos)
        if used < 0 then raise(string.format('Invalid merge source %s', s.address)) end
        if used == 0 then
            s.remaining = 0
        else
            local ok, len, after = pcall(msgpack.decode_array_header, buf.rpos, used)
            if not ok then raise(string.format('Invalid merge source %s', s.address)) end
            s.remaining = len
            buf.rpos = after
        end
    end
    local buf = s.buf
    local used = tonumber(buf.wpos - buf.rpos)
    if used == 0 then raise('Unexpected msgpack buffer end') end
    local ok, value, after = pcall(msgpack.decode, buf.rpos, used)
    if not ok then raise('Unexpected msgpack buffer end') end
    s.remaining = s.remaining - 1
    buf.rpos = after
    return as_tuple(key_def, value)
end

-- 2.6's heap (lib/salad/heap.h): an array of nodes, `less` decides.
local function sift_up(heap, less, pos)
    local node = heap[pos]
    while pos > 1 do
        local parent = math.floor(pos / 2)
        if not less(node, heap[parent]) then break end
        heap[pos], heap[parent] = heap[parent], node
        pos = parent
    end
    return pos
end

local function sift_down(heap, less, pos)
    local size = #heap
    while true do
        local left, right = 2 * pos, 2 * pos + 1
        local min_child = left
        if right <= size and less(heap[right], heap[left]) then min_child = right end
        if left > size or less(heap[pos], heap[min_child]) then return pos end
        heap[pos], heap[min_child] = heap[min_child], heap[pos]
        pos = min_child
    end
end

local function merger_next(s, key_def)
    local heap = s.heap
    if not s.started then
        for _, node in ipairs(s.nodes) do
            node.tuple = next_tuple(node.source, s.key_def)
            if node.tuple ~= nil then
                heap[#heap + 1] = node
                sift_up(heap, s.less, #heap)
            end
        end
        s.started = true
    end
    local node = heap[1]
    if node == nil then return nil end
    local tuple = node.tuple
    if key_def ~= nil then tuple = as_tuple(key_def, tuple) end
    node.tuple = next_tuple(node.source, s.key_def)
    if node.tuple == nil then
        -- Delete the top: the last node takes its place, then settles.
        local last = table.remove(heap)
        if #heap > 0 and last ~= node then
            heap[1] = last
            sift_up(heap, s.less, sift_down(heap, s.less, 1))
        end
    else
        sift_up(heap, s.less, sift_down(heap, s.less, 1))
    end
    return tuple
end

next_tuple = function(s, key_def) return s.next(s, key_def) end

local function chunk_source(func_name, next_fn, ...)
    local n = select('#', ...)
    local gen, param, state = ...
    if n < 1 or n > 3 or not is_callable(gen) then
        error(string.format('Usage: %s(gen, param, state)', func_name), 0)
    end
    local s = {next = next_fn, gen = gen, param = param, state = state, remaining = 0, pos = 1}
    local source = new_source(s)
    s.address = string.format('%p', source)
    return source
end

function merger.new_table_source(...) return chunk_source('merger.new_table_source', table_next, ...) end
function merger.new_tuple_source(...) return chunk_source('merger.new_tuple_source', tuple_next, ...) end
function merger.new_buffer_source(...) return chunk_source('merger.new_buffer_source', buffer_next, ...) end

function merger.new_source_fromtable(tbl)
    if type(tbl) ~= 'table' then error('Usage: merger.new_source_fromtable(<table>)', 0) end
    return merger.new_table_source(fun.iter({tbl}))
end

function merger.new_source_frombuffer(buf)
    if type(buf) ~= 'cdata' or not ffi.istype(ibuf_t, buf) then
        error('Usage: merger.new_source_frombuffer(<cdata<struct ibuf>>)', 0)
    end
    return merger.new_buffer_source(fun.iter({buf}))
end

local NEW_USAGE = 'merger.new(key_def, {source, source, ...}[, {reverse = <boolean> or <nil>}])'

function merger.new(...)
    local n = select('#', ...)
    local key_def, sources, opts = ...
    if (n ~= 2 and n ~= 3) or not box.internal.is_key_def(key_def) or type(sources) ~= 'table'
        or (opts ~= nil and type(opts) ~= 'table') then
        error('Bad params, use: ' .. NEW_USAGE, 0)
    end
    local reverse = false
    if opts ~= nil and opts.reverse ~= nil then
        if type(opts.reverse) ~= 'boolean' then error('Bad param "reverse", use: ' .. NEW_USAGE, 0) end
        reverse = opts.reverse
    end
    local nodes = {}
    for i = 1, #sources do
        local s = state_of(sources[i])
        if s == nil then expected_cdata(n + i) end
        nodes[i] = {source = s}
    end
    local compare = key_def_lib.compare
    local less
    if reverse then
        less = function(a, b) return compare(key_def, a.tuple, b.tuple) >= 0 end
    else
        less = function(a, b) return compare(key_def, a.tuple, b.tuple) < 0 end
    end
    return new_source({next = merger_next, key_def = key_def, nodes = nodes, heap = {}, less = less})
end

-- Methods of every source.

local function gen(_, source)
    local s = state_of(source)
    if s == nil then error('Bad params, use: lbox_merge_source_gen(nil, merge_source)', 0) end
    local tuple = next_tuple(s, nil)
    if tuple == nil then return nil, nil end
    return source, tuple
end

function merger.internal.ipairs(source)
    if state_of(source) == nil then expected_cdata(1) end
    return fun.wrap(gen, nil, source)
end

local SELECT_USAGE = 'merge_source:select([{buffer = <cdata<struct ibuf>> or <nil>, limit = <number> or <nil>}])'

function merger.internal.select(...)
    local n = select('#', ...)
    local source, opts = ...
    local s = state_of(source)
    if s == nil then expected_cdata(1) end
    if n > 2 or (opts ~= nil and type(opts) ~= 'table') then error('Bad params, use: ' .. SELECT_USAGE, 0) end
    local limit, buf = math.huge, nil
    if opts ~= nil then
        if type(opts.buffer) ~= 'nil' then
            if type(opts.buffer) ~= 'cdata' or not ffi.istype(ibuf_t, opts.buffer) then
                error('Bad param "buffer", use: ' .. SELECT_USAGE, 0)
            end
            buf = opts.buffer
        end
        if opts.limit ~= nil then
            if tonumber(opts.limit) == nil then error('Bad param "limit", use: ' .. SELECT_USAGE, 0) end
            limit = tonumber(opts.limit)
        end
    end
    local result = {}
    while #result < limit do
        local tuple = next_tuple(s, nil)
        if tuple == nil then break end
        result[#result + 1] = tuple
    end
    if buf == nil then return result end
    -- Into the buffer: an array of the tuples, as 2.6 writes it.
    msgpack.encode(result, buf)
end

local methods = {select = merger.internal.select, pairs = merger.internal.ipairs, ipairs = merger.internal.ipairs}
ffi.metatype(source_t, {
    __index = function(_, key) return methods[key] end,
    __pairs = merger.internal.ipairs,
    __ipairs = merger.internal.ipairs,
})

package.loaded.merger = merger
return merger
