-- key_def: Tarantool's key definitions, to extract and compare keys of tuples
-- exactly as an index with these parts would (box.internal.key_def does the
-- checking and comparing).
-- * key_def.new(parts): parts as index.parts gives them, {fieldno = N (or
--   field), type = T[, is_nullable = B][, collation = name]}.
-- * kd:extract_key(tuple), kd:compare(a, b), kd:compare_with_key(tuple, key)
--   (-1, 0 or 1), kd:merge(other) (its parts, then the other's on new fields),
--   kd:totable(). Tuples may be tuples or tables.
-- Errors carry 2.6's messages. JSON paths in parts are not supported.

local type = type -- the builtin, not the one user code sees (box.lua)
local native = box.internal.key_def

local function make_error(...) return box.internal.make_error(...) end

local key_def = {}
local methods = {}
local key_def_mt = {
    __index = methods,
    __tostring = function() return '<struct key_def &>' end,
}

-- 2.6's key_def objects are `struct key_def &` cdata: type() and ffi.istype see
-- these as such (box.lua).
box.internal.register_cdata_lookalike(key_def_mt, 'key_def')

local USAGE = 'Bad params, use: key_def.new({{fieldno = fieldno, type = type' ..
    '[, is_nullable = <boolean>][, path = <string>][, collation_id = <number>]' ..
    '[, collation = <string>]}, ...}'

local function illegal(message)
    error(make_error(nil, message, 'IllegalParams'), 3)
end

local FIELD_TYPES = {
    any = true, unsigned = true, string = true, number = true, double = true, integer = true,
    boolean = true, varbinary = true, scalar = true, decimal = true, uuid = true, array = true, map = true,
}
local COLLATIONS = {none = true, unicode = true, unicode_ci = true, binary = true}
-- _collation's ids of those.
local COLLATION_BY_ID = {[0] = 'none', [1] = 'unicode', [2] = 'unicode_ci', [3] = 'binary'}

-- The collation name of the part at `position`, from `collation` or
-- `collation_id`; as in 2.6, no
-- collation exists before box.cfg{}.
local function collation_of(p, position)
    if p.collation ~= nil and p.collation_id ~= nil then
        illegal('Conflicting options: collation_id and collation')
    end
    local configured = box.internal.op ~= nil
    if p.collation_id ~= nil then
        local name = configured and COLLATION_BY_ID[p.collation_id]
        if not name then
            error(make_error(108, string.format('Wrong index options (field %d): collation was not found by ID',
                position)), 4)
        end
        return name
    end
    if p.collation ~= nil and not (configured and COLLATIONS[p.collation]) then
        illegal(string.format('Unknown collation: "%s"', tostring(p.collation)))
    end
    return p.collation
end

-- The part at `position` as key_def keeps it (and totable returns it).
local function normalize_part(p, position)
    if p.fieldno ~= nil and p.field ~= nil then illegal('Conflicting options: fieldno and field') end
    local fieldno = p.fieldno or p.field
    if fieldno == nil then illegal('fieldno or field must not be nil') end
    if p.type == nil then illegal('type must not be nil') end
    if not FIELD_TYPES[p.type] then illegal('Unknown field type: ' .. tostring(p.type)) end
    if p.path ~= nil then
        if type(p.path) ~= 'string' then illegal('invalid path') end
        local wrong = native.path_error(p.path)
        if wrong ~= nil then illegal(wrong) end
    end
    local collation = collation_of(p, position)
    local part = {type = p.type, is_nullable = p.is_nullable == true, fieldno = fieldno, path = p.path}
    if collation ~= nil and collation ~= 'none' then part.collation = collation end
    return part
end

local function build(parts)
    local native_parts = {}
    for i, p in ipairs(parts) do
        native_parts[i] = {p.fieldno - 1, p.type, p.is_nullable, p.collation, p.path}
    end
    return setmetatable({parts = parts, native = native.new(native_parts)}, key_def_mt)
end

function key_def.new(...)
    local parts = ...
    if select('#', ...) ~= 1 or type(parts) ~= 'table' then error(USAGE, 2) end
    if #parts == 0 then illegal('Key definition can only be constructed by using at least 1 key_part') end
    local normalized = {}
    for i, p in ipairs(parts) do
        if type(p) ~= 'table' then error(USAGE, 2) end
        normalized[i] = normalize_part(p, i)
    end
    return build(normalized)
end

-- Raises what a native call reported: (nil, code, message).
local function checked(r, code, message)
    if r == nil and code ~= nil then error(make_error(code, message), 3) end
    return r
end

-- Each method is also a function of the module (key_def.compare(kd, a, b)), as
-- in 2.6, so `self` may be anything: it is checked.
local function usage(self, call)
    if getmetatable(self) ~= key_def_mt then error('Usage: key_def:' .. call, 3) end
end
-- 2.6 takes tuples as tuples or tables only (a key may be any value: it is
-- refused later as not an array).
local function tuple_arg(v)
    if type(v) ~= 'table' and not box.tuple.is(v) then
        error(make_error(nil, 'A tuple or a table expected, got ' .. type(v), 'IllegalParams'), 3)
    end
end
function methods:extract_key(tuple)
    usage(self, 'extract_key(tuple)')
    tuple_arg(tuple)
    return checked(native.extract_key(self.native, tuple))
end
function methods:compare(a, b)
    usage(self, 'compare(tuple_a, tuple_b)')
    tuple_arg(a)
    tuple_arg(b)
    return checked(native.compare(self.native, a, b))
end
function methods:compare_with_key(tuple, key)
    usage(self, 'compare_with_key(tuple, key)')
    tuple_arg(tuple)
    return checked(native.compare_with_key(self.native, tuple, key))
end

function methods:merge(other)
    usage(self, 'merge(second_key_def)')
    usage(other, 'merge(second_key_def)')
    -- A part is the same place when its field and path are.
    local parts, seen = {}, {}
    local function place(p) return tostring(p.fieldno) .. (p.path or '') end
    for _, p in ipairs(self.parts) do
        parts[#parts + 1] = table.copy(p)
        seen[place(p)] = true
    end
    for _, p in ipairs(other.parts) do
        if not seen[place(p)] then
            parts[#parts + 1] = table.copy(p)
            seen[place(p)] = true
        end
    end
    return build(parts)
end

function methods:totable()
    usage(self, 'totable()')
    local out = {}
    for i, p in ipairs(self.parts) do out[i] = table.copy(p) end
    return out
end

key_def_mt.__serialize = methods.totable
for name, method in pairs(methods) do key_def[name] = method end

-- For the merger (lua/merger.lua): whether `v` is a key_def, and `value` (a
-- tuple or table) as a tuple checked against the parts' field types.
function box.internal.is_key_def(v) return getmetatable(v) == key_def_mt end
function box.internal.key_def_tuple(kd, value) return checked(native.tuple(kd.native, value)) end

package.loaded.key_def = key_def
return key_def
