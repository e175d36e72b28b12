-- box.tuple extras: the tuple methods Tarantool 2.6 has beyond field access
-- (find, findall, next, pairs, ipairs, slice, transform, update, upsert), and
-- box.tuple.new without box.cfg{}. The Rust userdata (src/lua/tuple.rs) looks
-- names up here when no field has them.

local type = type -- the builtin, not the one user code sees (box.lua)
local native = box.internal.native
local make_error = box.internal.make_error
local fun = require('fun')
local methods = {}

local function raise(code, message) error(make_error(code, message), 3) end

-- `never_sparse`: a sparse table in a field is an array with nils (as 2.6's
-- box.tuple.new of one table), not a map (as its box.tuple.new(a, b, ...)).
local function new_tuple(v, never_sparse)
    local t, code, message = native.tuple_new(v, nil, never_sparse)
    if t == nil and code == nil then error(box.internal.encode_failure(message), 0) end
    if t == nil then raise(code, message) end
    return t
end

function box.tuple.new(...)
    if select('#', ...) == 1 and type((...)) == 'table' then return new_tuple((...), true) end
    return new_tuple({...})
end

methods.bsize = native.tuple_bsize

-- find([from,] value): the first field equal to value; `from` counts from 0, as in 2.6.
function methods.find(t, a, b)
    local from, value = 1, a
    if b ~= nil then from, value = a + 1, b end
    for i = from, #t do
        if t[i] == value then return i end
    end
    return nil
end

function methods.findall(t, a, b)
    local from, value = 1, a
    if b ~= nil then from, value = a + 1, b end
    local out = {}
    for i = from, #t do
        if t[i] == value then out[#out + 1] = i end
    end
    return out
end

function methods.next(t, pos)
    pos = (pos or 0) + 1
    if pos > #t then return nil end
    return pos, t[pos]
end

local function fields_gen(t, i)
    i = i + 1
    if i > #t then return nil end
    return i, t[i]
end

function methods.pairs(t) return fun.wrap(fields_gen, t, 0) end
methods.ipairs = methods.pairs

-- transform(from, count, ...): count fields from `from` (1-based; negative from the end) removed, values inserted.
function methods.transform(t, from, count, ...)
    local fields = t:totable()
    local n = #fields
    if type(from) ~= 'number' or type(count) ~= 'number' then
        error('Usage: tuple:transform(offset, len, [args...])', 2)
    end
    if from < 0 then from = n + from + 1 end
    if from < 1 then error('tuple.transform(): offset is out of bound', 0) end
    local out = {}
    for i = 1, math.min(from - 1, n) do out[#out + 1] = fields[i] end
    for i = 1, select('#', ...) do out[#out + 1] = (select(i, ...)) end
    for i = from + count, n do out[#out + 1] = fields[i] end
    return new_tuple(out)
end

-- slice(start[, end]): the fields from `start` (counted from 0) up to `end`
-- (not included), as values; negative positions count from the end (2.6's rules
-- and messages).
function methods.slice(t, ...)
    local argc = select('#', ...)
    if argc == 0 or argc > 2 then error('tuple.slice(): bad arguments', 0) end
    local count = #t
    local offset = math.floor(tonumber((...)) or 0)
    local first
    if offset >= 0 and offset < count then
        first = offset
    elseif offset < 0 and -offset <= count then
        first = offset + count
    else
        error('tuple.slice(): start >= field count', 0)
    end
    local last = count
    if argc == 2 then
        offset = math.floor(tonumber((select(2, ...))) or 0)
        if offset > 0 and offset <= count then
            last = offset
        elseif offset < 0 and -offset < count then
            last = offset + count
        else
            error('tuple.slice(): end > field count', 0)
        end
    end
    if last <= first then error('tuple.slice(): start must be less than end', 0) end
    return t:unpack(first + 1, last)
end

local function apply(t, ops, upsert)
    local r, code, message = native.tuple_update(t, ops, upsert)
    if r == nil then raise(code, message) end
    return r
end

function methods.update(t, ops)
    if type(ops) ~= 'table' then error('Usage: tuple:update({ { op, field, arg}+ })') end
    return apply(t, ops, false)
end
function methods.upsert(t, ops)
    if type(ops) ~= 'table' then error('Usage: tuple:upsert({ { op, field, arg}+ })') end
    return apply(t, ops, true)
end

-- totable/unpack's range, checked as 2.6 checks it (where anything but a number
-- fails the comparison, as there).
local function check_range(from, to)
    if from ~= nil and from < 1 then error('tuple.totable: invalid second argument') end
    if to ~= nil and to <= 0 then error('tuple.totable: invalid third argument') end
end
local tuple_totable, tuple_unpack, tuple_tomap = native.tuple_totable, native.tuple_unpack, native.tuple_tomap
function methods.totable(t, from, to)
    check_range(from, to)
    return tuple_totable(t, from, to)
end
function methods.unpack(t, from, to)
    check_range(from, to)
    return tuple_unpack(t, from, to)
end
function methods.tomap(t, ...)
    local n, opts = select('#', ...), ...
    local names_only = false
    if n > 0 then
        if n > 1 or type(opts) ~= 'table' then error('Usage: tuple:tomap(opts)', 0) end
        names_only = opts.names_only
        if names_only ~= nil and type(names_only) ~= 'boolean' then error('Usage: tuple:tomap(opts)', 0) end
    end
    return tuple_tomap(t, names_only == true)
end

-- tostring(tuple): YAML flow style, as Tarantool prints tuples.
local flow = box.internal.yaml.flow
methods.__tostring = function(t) return flow(t, true) end

native.tuple_methods(methods)

-- The methods are functions of box.tuple too (box.tuple.totable(t)), as in 2.6;
-- anything but a tuple is refused with 2.6's usage message.
local is_tuple = native.is_tuple
local FUNCTIONS = {
    bsize = 'Usage: tuple:bsize()', find = 'Usage: tuple:find([offset, ]val)',
    findall = 'Usage: tuple:findall([offset, ]val)', ipairs = 'Usage: tuple:pairs(tuple[, pos])',
    next = 'Usage: tuple:next(tuple[, pos])', pairs = 'Usage: tuple:pairs(tuple[, pos])',
    totable = 'Usage: tuple:totable([from[, to]])', unpack = 'Usage: tuple:totable([from[, to]])',
    update = 'Usage: tuple:update({ { op, field, arg}+ })', upsert = 'Usage: tuple:upsert({ { op, field, arg}+ })',
    slice = false, tomap = false, transform = false,
}
for name, usage in pairs(FUNCTIONS) do
    box.tuple[name] = function(t, ...)
        if not is_tuple(t) then
            if usage then error(usage, 2) end
            error(string.format('Invalid argument #1 (box.tuple expected, got %s)', type(t)), 2)
        end
        return (methods[name] or t[name])(t, ...)
    end
end

