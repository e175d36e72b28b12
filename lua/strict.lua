-- strict: Tarantool's strict mode for globals. With strict.on(), reading a
-- global that was never assigned is an error, except from C, and so is a
-- function's assignment of a new global: new globals are declared by
-- assignments in a main chunk (or from C). strict.off() forgets the
-- declarations. When _G already has a metatable, strict.on() sets its
-- __index and __newindex and strict.off() clears them.

local getinfo, rawget, rawset = debug.getinfo, rawget, rawset

local strict_mt = {}
local declared = {}

-- What kind of function touched the global: 'main', 'Lua' or 'C' (the
-- metamethod's caller, two frames up from here).
local function accessor_kind()
    local info = getinfo(3, 'S')
    return info and info.what or 'C'
end

strict_mt.__newindex = function(g, name, value)
    if not declared[name] then
        local kind = accessor_kind()
        if kind ~= 'main' and kind ~= 'C' then
            error("assign to undeclared variable '" .. name .. "'", 2)
        end
        declared[name] = true
    end
    rawset(g, name, value)
end

strict_mt.__index = function(g, name)
    if not declared[name] and accessor_kind() ~= 'C' then
        error("variable '" .. name .. "' is not declared", 2)
    end
    return rawget(g, name)
end

local strict = {}

function strict.on()
    local mt = getmetatable(_G)
    if mt == strict_mt then
        return
    elseif mt == nil then
        setmetatable(_G, strict_mt)
    else
        mt.__newindex = strict_mt.__newindex
        mt.__index = strict_mt.__index
    end
end

function strict.off()
    declared = {}
    local mt = getmetatable(_G)
    if mt == strict_mt then
        setmetatable(_G, nil)
    elseif mt ~= nil then
        mt.__newindex = nil
        mt.__index = nil
    end
end

package.loaded.strict = strict
