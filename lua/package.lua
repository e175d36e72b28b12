-- What Tarantool adds to LuaJIT's `package`, `debug` and globals:
-- * modules are searched in the search root (the working directory unless
--   `package.setsearchroot` moved it) and in `.rocks` there and in every
--   directory above it, before `package.path` and `package.cpath`, which
--   default to Tarantool's own lists (LUA_PATH and LUA_CPATH as in LuaJIT);
-- * `package.search`, `package.searchroot`, `package.setsearchroot`;
-- * `debug.sourcefile`, `debug.sourcedir`, `debug.__file__`, `debug.__dir__`;
-- * the globals `dostring` and `tonumber64`, and the `tarantool` module.

local type = type -- the builtin, not the one user code sees (box.lua)
local ffi = require('ffi')
local fio = require('fio')
local clock = require('clock')

-- debug ----------------------------------------------------------------------

-- The file of the function `level` frames up (the caller's by default), for
-- chunks loaded from a file; nil otherwise.
local function sourcefile(level)
    local info = debug.getinfo(level or 2, 'S')
    local source = info and info.source
    if type(source) == 'string' and source:sub(1, 1) == '@' then
        return source:sub(2)
    end
    return nil
end

-- The directory of that file, '.' when there is none.
local function sourcedir(level)
    local file = sourcefile(level and level + 1 or 3)
    return file and file:match('(.*)/') or '.'
end

debug.sourcefile = sourcefile
debug.sourcedir = sourcedir

-- A script's main chunk runs under oncebox's wrapper (which keeps the value it
-- raises), a request's function under a fiber worker's pcall: their frames
-- below the user's own are left out of tracebacks, as 2.6 has none for a
-- script; a request's function shows the C function that called it, as 2.6
-- shows its own (`[C]: at 0x...`: the errors module's tests look for a line there).
local traceback = debug.traceback
local C_CALLER = '\n\t[C]: at ' .. (tostring(sourcefile):match('0x%x+') or '0x00000000')
local RUNNER_FRAMES = {
    {"\n\t%[C%]: in function 'xpcall'\n\tscript:%d+: in function <script:%d+>$", ''},
    {"\n\t%[C%]: in function 'pcall'\n\tfiber%.lua:%d+: in function <fiber%.lua:%d+>$", C_CALLER},
}
debug.traceback = function(...)
    local result
    if type((...)) == 'thread' then
        result = traceback(...)
    elseif select('#', ...) == 0 then
        -- (a nil message given is returned as it is; none given means none)
        result = traceback('', 2):sub(2)
    else
        local message, level = ...
        result = traceback(message, (level or 1) + 1)
    end
    if type(result) == 'string' then
        for _, frames in ipairs(RUNNER_FRAMES) do
            result = result:gsub(frames[1], frames[2])
        end
    end
    return result
end
-- `debug.__file__` and `debug.__dir__` name the reader's own file: the calls
-- below are tail calls, so one frame up from them is the function reading.
setmetatable(debug, {
    __index = function(self, key)
        if key == '__file__' then
            return sourcefile()
        elseif key == '__dir__' then
            return sourcedir()
        end
        return rawget(self, key)
    end,
})

-- package.path and package.cpath ---------------------------------------------

local function joined(list)
    return table.concat(list, ';') .. ';'
end

local function default_paths()
    local multiarch = ({ x64 = 'x86_64-linux-gnu', arm64 = 'aarch64-linux-gnu' })[jit.arch] or jit.arch
    local lua, lib = {}, {}
    local home = os.getenv('HOME')
    if home ~= nil then
        for _, dir in ipairs({ '/.luarocks/share/lua/5.1/', '/.luarocks/share/lua/' }) do
            table.insert(lua, home .. dir .. '?.lua')
            table.insert(lua, home .. dir .. '?/init.lua')
        end
        table.insert(lib, home .. '/.luarocks/lib/lua/5.1/?.so')
        table.insert(lib, home .. '/.luarocks/lib/lua/?.so')
    end
    for _, dir in ipairs({ '/usr/local/share/tarantool/', '/usr/share/tarantool/',
                           '/usr/local/share/lua/5.1/', '/usr/share/lua/5.1/' }) do
        table.insert(lua, dir .. '?.lua')
        table.insert(lua, dir .. '?/init.lua')
    end
    for _, dir in ipairs({ '/usr/local/lib/' .. multiarch .. '/tarantool/', '/usr/lib/' .. multiarch .. '/tarantool/',
                           '/usr/local/lib/tarantool/', '/usr/local/lib/' .. multiarch .. '/lua/5.1/',
                           '/usr/lib/' .. multiarch .. '/lua/5.1/', '/usr/local/lib/lua/5.1/' }) do
        table.insert(lib, dir .. '?.so')
    end
    return joined(lua), joined(lib)
end

-- An environment variable's list, ';;' in it standing for the default (LuaJIT's rule).
local function from_environment(variable, default)
    local value = os.getenv(variable)
    if value == nil then
        return default
    end
    return (value:gsub(';;', function() return ';' .. default .. ';' end))
end

do
    local lua, lib = default_paths()
    package.path = from_environment('LUA_PATH', lua)
    package.cpath = from_environment('LUA_CPATH', lib)
end

-- Searching and loading ------------------------------------------------------

local searchroot_path = nil

local function searchroot()
    return searchroot_path or fio.cwd()
end

-- Moves the search root to `path`, to the caller's own directory without one,
-- back to the working directory with box.NULL.
local function setsearchroot(path)
    if not path then
        path = debug.sourcedir(3)
    elseif path == box.NULL then
        path = nil
    else
        assert(type(path) == 'string', 'Search root must be a string')
    end
    searchroot_path = path and fio.abspath(path)
end

-- `path` made absolute, then each directory above it up to '/'.
local function this_and_above(path)
    path = fio.abspath(path)
    local dirs = { path }
    while path ~= '/' do
        path = fio.dirname(path)
        table.insert(dirs, path)
    end
    return dirs
end

-- A function finding a module's file by `templates` under the search root
-- (and under each directory above it when `upwards`).
local function searcher(templates, upwards)
    return function(name)
        local root = searchroot() or '.'
        local dirs = upwards and this_and_above(root) or { root }
        local candidates = {}
        for _, dir in ipairs(dirs) do
            for _, template in ipairs(templates) do
                table.insert(candidates, fio.pathjoin(dir, template))
            end
        end
        return package.searchpath(name, table.concat(candidates, ';'))
    end
end

-- The C entry point of module `name`: what follows a '-' in it, dots as '_'.
local function entry_point(name)
    local dash = name:find('-', 1, true)
    if dash then
        name = name:sub(dash + 1)
    end
    return 'luaopen_' .. (name:gsub('%.', '_'))
end

local function load_lua(file)
    return loadfile(file)
end

local function load_lib(file, name)
    return package.loadlib(file, entry_point(name))
end

-- A `package.loaders` entry: finds the file with `search`, loads it with
-- `load`; a string says why not.
local function loader(search, load)
    return function(name)
        if not name then
            return 'empty name of module'
        end
        local file, why = search(name)
        if not file then
            return why
        end
        local chunk, err = load(file, name)
        if err ~= nil then
            return err
        end
        return chunk
    end
end

local so = jit.os == 'OSX' and 'dylib' or 'so'
local search_lua = searcher({ '?.lua', '?/init.lua' })
local search_lib = searcher({ '?.' .. so })
local search_rocks_lua = searcher({ '.rocks/share/tarantool/?.lua', '.rocks/share/tarantool/?/init.lua' }, true)
local search_rocks_lib = searcher({ '.rocks/lib/tarantool/?.' .. so }, true)

-- The file `require(name)` would load, or nil.
local function search(name)
    if not name then
        return 'empty name of module'
    end
    local searches = {
        search_lua, search_lib, search_rocks_lua, search_rocks_lib,
        function(n) return package.searchpath(n, package.path) end,
        function(n) return package.searchpath(n, package.cpath) end,
    }
    for _, find in ipairs(searches) do
        local file = find(name)
        if file ~= nil then
            return file
        end
    end
    return nil
end

-- After `package.preload`, before `package.path` and `package.cpath`.
table.insert(package.loaders, 2, loader(search_lua, load_lua))
table.insert(package.loaders, 3, loader(search_lib, load_lib))
table.insert(package.loaders, 4, loader(search_rocks_lua, load_lua))
table.insert(package.loaders, 5, loader(search_rocks_lib, load_lib))
rawset(package, 'search', search)
rawset(package, 'searchroot', searchroot)
rawset(package, 'setsearchroot', setsearchroot)

-- require -------------------------------------------------------------------

-- `require` as LuaJIT's (package.loaded, then each of package.loaders), written
-- in Lua so that a module may yield while it loads: one that calls box.cfg{}
-- (a script's first boots the server by yielding to it) or waits on a fiber.
-- The module runs under pcall, a C frame as LuaJIT's require is, so error(msg, 2)
-- in a module names no position, as there.
-- (Not a table: luaL_register in a C module's luaopen fills the table it finds
-- in package.loaded, and must make a new one here, as under LuaJIT's require.)
local LOADING = newproxy and newproxy(false) or function() end

-- Refuses the first argument of the function calling this, as LuaJIT refuses a
-- C function's: named as it was called ('?' through pcall), at its caller.
local function bad_string_argument(value)
    local info = debug.getinfo(2, 'n')
    local got = value == nil and 'no value' or type(value)
    error(string.format("bad argument #1 to '%s' (string expected, got %s)", info and info.name or '?', got), 3)
end

local builtin_require = require
local function lua_require(name)
    if type(name) == 'number' then name = tostring(name) end
    if type(name) ~= 'string' then bad_string_argument(name) end
    local loaded = package.loaded
    local module = loaded[name]
    if module == LOADING then error(string.format("loop or previous error loading module '%s'", name), 2) end
    if module ~= nil then return module end
    local loaders = package.loaders
    if type(loaders) ~= 'table' then error("'package.loaders' must be a table", 2) end
    local why = {}
    for _, find in ipairs(loaders) do
        local found = find(name)
        if type(found) == 'function' then
            loaded[name] = LOADING
            local ok, result = pcall(found, name)
            if not ok then
                -- A failed module stays marked, as LuaJIT leaves it: requiring it again
                -- says "loop or previous error".
                error(result, 0)
            end
            if result ~= nil then loaded[name] = result end
            if loaded[name] == LOADING then loaded[name] = true end
            return loaded[name]
        elseif type(found) == 'string' then
            why[#why + 1] = found
        end
    end
    error(string.format("module '%s' not found:%s", name, table.concat(why)), 2)
end
if builtin_require ~= nil then rawset(_G, 'require', lua_require) end

-- `dofile([path])` as LuaJIT's (a file that does not load raises loadfile's
-- message), written in Lua for the same reason: tarantoolctl start runs an
-- instance's script with dofile, and its first box.cfg{} yields to boot.
local function lua_dofile(path)
    if path ~= nil and type(path) ~= 'string' and type(path) ~= 'number' then bad_string_argument(path) end
    local chunk, err = loadfile(path)
    if chunk == nil then error(err, 0) end
    return chunk()
end
rawset(_G, 'dofile', lua_dofile)

-- Globals --------------------------------------------------------------------

-- Runs the Lua source `s` with the rest of the arguments; a syntax error is the caller's.
rawset(_G, 'dostring', function(s, ...)
    local chunk, message = loadstring(s)
    if chunk == nil then
        error(message, 2)
    end
    return chunk(...)
end)

-- A C library function's argument error: "bad argument #n to 'name' (why)",
-- named as the function raising it was called ('?' through pcall), at the
-- caller's line.
local function argument_error(n, why)
    local info = debug.getinfo(2, 'n')
    error(string.format("bad argument #%d to '%s' (%s)", n, info and info.name or '?', why), 3)
end

local numeric_ctypes = {}
for _, name in ipairs({ 'int8_t', 'uint8_t', 'int16_t', 'uint16_t', 'int32_t', 'uint32_t',
                        'int64_t', 'uint64_t', 'float', 'double' }) do
    table.insert(numeric_ctypes, ffi.typeof(name))
end

local U64_MAX = ffi.new('uint64_t', -1)
local INT64_MIN_MAGNITUDE = ffi.new('uint64_t', 2) ^ 63
-- Results smaller than this in magnitude are numbers, as 2.6 returns them.
local AS_NUMBER = 1e14

local function is_space(c)
    return c == ' ' or c == '\t' or c == '\n' or c == '\v' or c == '\f' or c == '\r'
end

local function digit_value(c)
    local b = c:byte()
    if b >= 48 and b <= 57 then return b - 48 end
    if b >= 97 and b <= 122 then return b - 87 end
    if b >= 65 and b <= 90 then return b - 55 end
    return 99
end

-- C's strtoull on `s` from `at`: the value (modulo 2^64 after a '-'), whether
-- it overflowed, and where the number ended (`at` itself when there is none).
local function strtoull(s, at, base)
    local i = at
    while is_space(s:sub(i, i)) do i = i + 1 end
    local minus = false
    local sign = s:sub(i, i)
    if sign == '-' or sign == '+' then
        minus = sign == '-'
        i = i + 1
    end
    if base == 16 and s:sub(i, i) == '0' and s:sub(i + 1, i + 1):lower() == 'x'
            and digit_value(s:sub(i + 2, i + 2)) < 16 then
        i = i + 2
    end
    local value, overflow, first = ffi.new('uint64_t', 0), false, i
    while i <= #s do
        local d = digit_value(s:sub(i, i))
        if d >= base then break end
        if value > (U64_MAX - d) / base then
            overflow = true
        else
            value = value * base + d
        end
        i = i + 1
    end
    if i == first then
        return value, false, at
    end
    if overflow then
        return U64_MAX, true, i
    end
    return minus and -value or value, false, i
end

local function parse64(s, base)
    local from, to = 1, #s
    while to >= from and is_space(s:sub(to, to)) do to = to - 1 end
    while from <= to and is_space(s:sub(from, from)) do from = from + 1 end
    s = s:sub(from, to)
    local at, negative = 1, false
    local sign = s:sub(1, 1)
    if sign == '-' or sign == '+' then
        negative = sign == '-'
        at = 2
    end
    local prefix = s:sub(at, at + 1):lower()
    if base == -1 then
        base = 10
        if prefix == '0x' then
            base, at = 16, at + 2
        elseif prefix == '0b' then
            base, at = 2, at + 2
        end
    elseif (base == 16 and prefix == '0x') or (base == 2 and prefix == '0b') then
        at = at + 2
    end
    local value, overflow, stop = strtoull(s, at, base)
    if overflow or stop ~= #s + 1 or at > #s then
        return nil
    end
    if negative then
        if value > INT64_MIN_MAGNITUDE then
            return nil
        end
        local signed = ffi.cast('int64_t', -value)
        return (signed > -AS_NUMBER and signed < AS_NUMBER) and tonumber(signed) or signed
    end
    return value < AS_NUMBER and tonumber(value) or value
end

-- Converts a number, a numeric cdata or a string (in `base`, 2 to 36; '0x' and
-- '0b' prefixes without one) to a number, or to a 64-bit cdata past 2^53.
rawset(_G, 'tonumber64', function(...)
    local value, base = ...
    if select('#', ...) == 0 then
        argument_error(1, 'value expected')
    end
    if base == nil then
        base = -1
    else
        local n = tonumber(base)
        if n == nil then
            argument_error(2, 'number expected, got ' .. type(base))
        end
        base = n >= 0 and math.floor(n) or math.ceil(n)
        if (base < 2 or base > 36) and base ~= -1 then
            argument_error(2, 'base out of range')
        end
    end
    local kind = type(value)
    if kind == 'number' then
        if base ~= -1 and base ~= 10 then
            argument_error(1, 'string expected')
        end
        return value
    elseif kind == 'string' then
        return parse64(value, base)
    elseif kind == 'cdata' then
        for _, ctype in ipairs(numeric_ctypes) do
            if ffi.istype(ctype, value) then
                return value
            end
        end
    end
    return nil
end)

-- C types 2.6's own modules declare in LuaJIT's global C namespace, which Lua
-- modules use in their ffi.cdef without declaring them (luatest's fork and kill
-- name pid_t).
for _, decl in ipairs({'typedef int32_t pid_t;', 'typedef int uid_t;', 'typedef int gid_t;',
                       'typedef long time_t;'}) do
    pcall(ffi.cdef, decl)
end

-- os.environ(): the process environment as a table.
pcall(ffi.cdef, 'extern char **environ;')
rawset(os, 'environ', function()
    local vars = {}
    local environ = ffi.C.environ
    local i = 0
    while environ[i] ~= nil do
        local name, value = ffi.string(environ[i]):match('^([^=]*)=(.*)$')
        if name then vars[name] = value end
        i = i + 1
    end
    return vars
end)

-- The tarantool module -------------------------------------------------------

pcall(ffi.cdef, 'int getpid(void);')
local started = clock.monotonic()

package.loaded.tarantool = {
    version = _TARANTOOL,
    package = 'Tarantool',
    build = {
        target = jit.os .. '-' .. (jit.arch == 'x64' and 'x86_64' or jit.arch) .. '-Release',
        options = 'oncebox',
        compiler = 'rustc',
        mod_format = so,
        flags = '',
    },
    uptime = function() return clock.monotonic() - started end,
    pid = function() return tonumber(ffi.C.getpid()) end,
}
