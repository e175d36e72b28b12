-- strict: Tarantool's strict mode for globals. strict.on() makes reading an
-- undeclared global an error. Tarantool also rejects assigning a new global from
-- inside a function; telling where an assignment comes from needs the debug
-- library, which is not loaded here, so assignments always declare the global.

local strict = {}
local declared = {}
local strict_mt = {
    __index = function(_, name)
        if not declared[name] then error("variable '" .. tostring(name) .. "' is not declared", 2) end
        return nil
    end,
    __newindex = function(g, name, value)
        declared[name] = true
        rawset(g, name, value)
    end,
}

function strict.on()
    if getmetatable(_G) == nil then setmetatable(_G, strict_mt) end
end

function strict.off()
    if getmetatable(_G) == strict_mt then setmetatable(_G, nil) end
end

package.loaded.strict = strict
