-- internal.argparse: the command-line parser tarantoolctl uses, with 2.6's rules.
--
-- parse(args[, options]) reads args[1..n] (args[0], the program, is left out):
--   -abc        flags a, b and c (each true; a repeated flag becomes a list)
--   --name=v    option `name` with value v
--   --name v    the same, unless v starts with '-' ('-' alone is dropped)
--   --name      true
--   anything else is a positional argument, in order.
-- `options` lists the options allowed, each a name or {name, type}, type one of
-- 'string', 'number', 'boolean' (a flag that takes no value), each with a '+'
-- for a list; an option not listed is an error.

local function kind(arg)
    if arg == nil then return nil end
    if string.sub(arg, 1, 2) == '--' then return 'long' end
    if arg == '-' then return 'dash' end
    if string.sub(arg, 1, 1) == '-' then return 'short' end
    return 'plain'
end

local function takes_value(ty)
    return ty ~= 'boolean' and ty ~= 'boolean+'
end

-- A value seen once is kept as is, seen again it becomes a list.
local function add(out, key, value)
    if value == nil then
        table.insert(out, key)
    elseif out[key] == nil then
        out[key] = value
    elseif type(out[key]) == 'table' then
        table.insert(out[key], value)
    else
        out[key] = {out[key], value}
    end
end

local function bad_value(name, got, expected)
    local why
    if type(got) == 'boolean' then
        why = string.format('Expected %s, got nothing', expected)
    elseif not takes_value(expected) then
        why = string.format('No value expected, got "%s"', got)
    else
        why = string.format('Expected %s, got "%s"', expected, got)
    end
    error(string.format('Bad value for parameter "%s". %s', name, why))
end

local function convert_one(name, value, ty)
    if ty == 'number' then
        local n = tonumber(value)
        if n == nil then bad_value(name, value, ty) end
        return n
    elseif ty == 'boolean' then
        if type(value) ~= 'boolean' then bad_value(name, value, ty) end
    elseif ty == 'string' then
        if type(value) ~= 'string' then bad_value(name, value, ty) end
    else
        error(string.format('Bad conversion format "%s" provided for %s', ty, name))
    end
    return value
end

local function convert(name, value, ty)
    if string.sub(ty, -1) == '+' then
        local list = type(value) == 'table' and value or {value}
        local out = {}
        for i, v in ipairs(list) do out[i] = convert_one(name, v, string.sub(ty, 1, -2)) end
        return out
    end
    -- Given more than once where one is expected: the last one counts.
    if type(value) == 'table' then value = value[#value] end
    return convert_one(name, value, ty)
end

local function parse(args, options)
    args = args or {}
    local out = {}
    -- Option name -> its type, or true (a value kept as given).
    local allowed = {}
    for _, option in ipairs(options or {}) do
        if type(option) ~= 'table' then option = {option} end
        allowed[option[1]] = option[2] or true
    end
    local i = 1
    while args[i] ~= nil do
        local arg = args[i]
        local k = kind(arg)
        if k == 'short' then
            local flags = string.sub(arg, 2)
            if not string.match(flags, '^%a+$') then error(string.format('bad argument #%d: ID not valid', i)) end
            for flag in string.gmatch(flags, '%a') do add(out, flag, true) end
        elseif k == 'long' then
            local body = string.sub(arg, 3)
            if string.find(body, '=', 1, true) then
                local name, value = string.match(body, '^([%a_][%w_-]+)=(.*)$')
                if name == nil then error(string.format('bad argument #%d: ID not valid', i)) end
                if not takes_value(allowed[name]) then bad_value(name, value, allowed[name]) end
                add(out, name, value)
            else
                if not string.match(body, '^[%a_][%w_-]+$') then
                    error(string.format('bad argument #%d: ID not valid', i))
                end
                local value = true
                if takes_value(allowed[body]) then
                    -- The next argument is the value, unless it is an option; '-' is dropped.
                    local next_kind = kind(args[i + 1])
                    if next_kind == 'plain' then
                        value = args[i + 1]
                        i = i + 1
                    elseif next_kind == 'dash' then
                        i = i + 1
                    end
                end
                add(out, body, value)
            end
        else
            table.insert(out, arg)
        end
        i = i + 1
    end
    if options ~= nil then
        local unknown = {}
        for key, value in pairs(out) do
            if type(key) == 'string' then
                if allowed[key] == nil then
                    table.insert(unknown, key)
                elseif type(allowed[key]) == 'string' then
                    out[key] = convert(key, value, allowed[key])
                end
            end
        end
        if #unknown > 0 then error(string.format('unknown options: %s', table.concat(unknown, ', '))) end
    end
    return out
end

package.loaded['internal.argparse'] = {parse = parse}
