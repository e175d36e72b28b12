-- box.tuple extras: the tuple methods Tarantool 2.6 has beyond field access
-- (find, findall, next, pairs, ipairs, transform, update, upsert), and
-- box.tuple.new without box.cfg{}. The Rust userdata (src/lua/tuple.rs) looks
-- names up here when no field has them.

local native = box.internal.native
local make_error = box.internal.make_error
local fun = require('fun')
local methods = {}

local function raise(code, message) error(make_error(code, message), 3) end

local function new_tuple(v)
    local t, code, message = native.tuple_new(v)
    if t == nil then raise(code, message) end
    return t
end

function box.tuple.new(...)
    if select('#', ...) == 1 and type((...)) == 'table' then return new_tuple((...)) end
    return new_tuple({...})
end

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

local function apply(t, ops, upsert)
    local r, code, message = native.tuple_update(t, ops, upsert)
    if r == nil then raise(code, message) end
    return r
end

function methods.update(t, ops) return apply(t, ops, false) end
function methods.upsert(t, ops) return apply(t, ops, true) end

-- tostring(tuple): YAML flow style, as Tarantool prints tuples.
local flow = box.internal.yaml.flow
methods.__tostring = function(t) return flow(t, true) end

native.tuple_methods(methods)
