-- internal.trigger: 2.6's lists of triggers (require('internal.trigger')), which
-- modules such as vshard build their own on_* setters with.
-- * trigger.new(name): a list; list(fn) appends, list(new, old) replaces old,
--   list(nil, old) removes it, list() returns the triggers; list:run(...) calls
--   each in order. Errors carry 2.6's texts and places.

local type = type -- the builtin, not the one user code sees (box.lua)

-- A function, or a table whose metatable has a __call function.
local function is_callable(v)
    if type(v) == 'function' then return true end
    if type(v) ~= 'table' then return false end
    local mt = getmetatable(v)
    return mt ~= nil and type(mt.__call) == 'function'
end

-- 2.6 raises from its own file: the message carries that place.
local function raise(line, message)
    error(string.format('builtin/internal.trigger.lua:%d: %s', line, message), 0)
end

local function position_of(list, fn)
    for i, f in ipairs(list) do
        if f == fn then return i end
    end
    return nil
end

local list_mt = {
    __call = function(self, new, old)
        if new ~= nil and not is_callable(new) then raise(23, string.format('Usage: %s(callable)', self.name)) end
        if old ~= nil and not is_callable(old) then raise(26, 'Usage: trigger(new_callable, old_callable)') end
        if new == nil and old == nil then
            local all = {}
            for i, f in ipairs(self) do all[i] = f end
            return all
        end
        if old == nil then
            self[#self + 1] = new
            return
        end
        local at = position_of(self, old)
        if at == nil then raise(new == nil and 44 or 54, self.name .. ': trigger is not found') end
        if new == nil then
            table.remove(self, at)
        else
            self[at] = new
        end
        return old
    end,
    __index = {
        run = function(self, ...)
            for _, f in ipairs(self) do f(...) end
        end,
    },
}

local trigger = {}
function trigger.new(name) return setmetatable({name = name}, list_mt) end

package.loaded['internal.trigger'] = trigger
return trigger
