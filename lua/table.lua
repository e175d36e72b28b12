-- table: Tarantool's additions to Lua's table library: table.copy (one level)
-- and table.deepcopy (every level, cycles kept), both honouring a `__copy`
-- metamethod and giving the copy the original's metatable; and table.new.

-- The metatable of `t` and its `__copy`, if any.

local type = type -- the builtin, not the one user code sees (box.lua)
local function copier(t)
    local mt = getmetatable(t)
    return mt, mt ~= nil and mt.__copy or nil
end

local function shallow_copy(orig)
    if type(orig) ~= 'table' then return orig end
    local mt, copy_of = copier(orig)
    if copy_of ~= nil then return copy_of(orig) end
    local copy = {}
    for k, v in pairs(orig) do copy[k] = v end
    if mt ~= nil then setmetatable(copy, mt) end
    return copy
end

-- Copies `orig` at every level; `seen` maps each table copied so far to its
-- copy, so shared and cyclic references come out shared and cyclic.
local function deep_copy(orig, seen)
    if type(orig) ~= 'table' then return orig end
    local mt, copy_of = copier(orig)
    if copy_of ~= nil then return copy_of(orig) end
    local done = seen[orig]
    if done ~= nil then return done end
    local copy = {}
    seen[orig] = copy
    for k, v in pairs(orig) do copy[deep_copy(k, seen)] = deep_copy(v, seen) end
    if mt ~= nil then setmetatable(copy, mt) end
    return copy
end

table.copy = shallow_copy
-- LuaJIT's preallocating constructor, which 2.6 puts in the table library too.
table.new = require('table.new')
table.deepcopy = function(orig) return deep_copy(orig, {}) end
