"""Tarantool's module search and the globals around it, compared with real
Tarantool 2.6 line for line: `require` finds modules in the search root and in
`.rocks` there and in every directory above it (ahead of package.path), with the
same "not found" message; package.search, searchroot and setsearchroot;
package.path and package.cpath (also from LUA_PATH and LUA_CPATH); the `debug`
library with sourcefile, sourcedir, __file__ and __dir__; dostring; tonumber64;
the `tarantool` module; strict mode, which needs `debug` to tell a main chunk's
assignment from a function's.
"""
import os
import subprocess

from conftest import ONCEBOX, same_output_on_both

SCRIPT = r"""
local fio = require('fio')
local ROOT = fio.dirname(os.getenv('WORK'))
local function rel(v)
  local s = tostring(v):gsub(os.getenv('WORK'):gsub('%p', '%%%0'), '<work>')
  return (s:gsub(ROOT:gsub('%p', '%%%0'), '<root>'))
end
local function p(...)
  local t = {...}
  for i = 1, select('#', ...) do t[i] = rel(t[i]) end
  print(table.concat(t, ' | '))
end
local function write(path, text)
  fio.mktree(fio.dirname(path))
  local f = io.open(path, 'w') f:write(text) f:close()
end
local WORK = os.getenv('WORK')
local APP = WORK .. '/app'
write(APP .. '/mymod.lua', 'return {name = "mymod", dir = debug.__dir__, file = debug.__file__}')
write(APP .. '/.rocks/share/tarantool/rockmod.lua', 'return {name = "rockmod"}')
write(APP .. '/.rocks/share/tarantool/pkg/init.lua', 'return {name = "pkg"}')
write(APP .. '/.rocks/share/tarantool/dotted/sub.lua', 'return {name = "dotted.sub"}')
write(WORK .. '/.rocks/share/tarantool/upper.lua', 'return {name = "upper"}')
write(APP .. '/lib/inner.lua', 'return {name = "inner", here = debug.sourcedir(), root = package.searchroot()}')
write(APP .. '/lib/rooted.lua', 'package.setsearchroot() return package.searchroot()')
write(APP .. '/broken.lua', 'return (')
fio.chdir(APP)

for _, name in ipairs({'mymod', 'rockmod', 'pkg', 'dotted.sub', 'upper', 'lib.inner'}) do
  local ok, m = pcall(require, name)
  p(name, ok, ok and m.name, ok and m.dir, ok and m.file, ok and m.here, ok and m.root)
end
local ok, err = pcall(require, 'nosuch.module')
-- (without the directories above the test's own: how many there are varies)
local kept = {}
for line in rel(err):gmatch('[^\n]+') do
  if not (line:find("^\tno file '/") and line:find('/.rocks/', 1, true)) then table.insert(kept, line) end
end
p(ok, table.concat(kept, '\n'))
ok, err = pcall(require, 'broken')
p(ok, err:find("error loading module 'broken' from file", 1, true), err:find("unexpected symbol near '<eof>'", 1, true) ~= nil)
p(package.search('rockmod'), package.search('pkg'), package.search('upper'), package.search('nosuch'))
p(package.search(), package.searchroot(), #package.loaders)
p(package.path)
p(package.cpath)

-- The search root moves, to a directory given, to the caller's own, and back.
package.setsearchroot(APP .. '/lib')
p(package.searchroot(), package.search('inner'), package.search('rockmod'), package.search('mymod'))
p(select(2, pcall(package.setsearchroot, 5)):match('[^:]+$'))
package.setsearchroot(box.NULL)
p(package.searchroot())
p(dofile(APP .. '/lib/rooted.lua'))
package.setsearchroot('relative/../lib')
p(package.searchroot())
package.setsearchroot(box.NULL)

-- debug
local keys = {}
for k in pairs(debug) do table.insert(keys, k) end
table.sort(keys)
p(table.concat(keys, ' '))
p(debug.sourcefile(), debug.sourcedir(), debug.__file__, debug.__dir__, debug.nosuch)
local function where() return debug.sourcefile(), debug.sourcedir(), debug.__file__, debug.__dir__ end
p(where())
p(debug.sourcefile(10), debug.sourcedir(10))
local info = debug.getinfo(1, 'Sl')
p(info.short_src, info.currentline, info.what)
-- Tracebacks end where 2.6's do: no frames of oncebox's own below the script's.
local function fails() error('boom') end
print(rel(select(2, xpcall(fails, debug.traceback))))
print(rel(debug.traceback('msg')))
print(rel(debug.traceback('msg', 2)))
print(rel(debug.traceback()))
print(debug.traceback(nil), debug.traceback({}) ~= nil, rel(debug.traceback(5)))
local co = coroutine.create(function() coroutine.yield(debug.traceback('in a coroutine')) end)
print(rel(select(2, coroutine.resume(co))))
print(rel(debug.traceback(coroutine.create(function() end), 'idle')))
require('fiber').create(function() print(rel(debug.traceback('in a fiber'))) end)
p(type(require('debug')), require('debug') == debug, type(package.loadlib))

-- dostring
p(dostring('return ...', 1, 'two', nil, 4))
p(dostring('return 1 + 1'))
p(pcall(dostring, 'return (('))
p(pcall(dostring, 'error("inside")'))
p(select(2, pcall(dostring)):match("bad argument.*"))

-- tonumber64
for _, s in ipairs({'0', '1', '-1', '100', '9007199254740991', '9007199254740992', '-9007199254740991',
                    '-9007199254740992', '-9007199254740993', '0x10', '0X1f', '0b101', '0B11', '010',
                    '  12', '12  ', '\t7\n', '1.5', '1e3', '', ' ', '-', '+', '+5', '- 5', '--5', '-+5', '0x',
                    '0x-5', '0x0x10', '18446744073709551615', '18446744073709551616', '-9223372036854775808',
                    '-9223372036854775809', 'ffffffffffffffff', '0xffffffffffffffff', '0x1ffffffffffffffff',
                    '12abc', '-0x10', '1 2', '0b102', '0b', '\0', '5\0', '99999999999999', '100000000000000',
                    '-99999999999999', '-100000000000000', '0x5AF3107A3FFF', '0x5AF3107A4000'}) do
  local r = {pcall(tonumber64, s)}
  p(string.format('%q', s), r[1], r[2], type(r[2]))
end
for _, base in ipairs({2, 8, 10, 16, 36, '10', 10.0}) do
  p('base', base, tonumber64('101', base), tonumber64('Zz', base), tonumber64('0x11', base), tonumber64('0b11', base))
end
for _, args in ipairs({{'12', 1}, {'12', 37}, {'12', 0}, {'12', -1}, {'5', 'x'}, {'5', true}, {5, 16}, {5, 10},
                       {1.5}, {-3}, {2^63}, {1e300}, {nil}, {true}, {{}}, {'5', nil}}) do
  local r = {pcall(tonumber64, unpack(args, 1, 2))}
  p('args', type(args[1]) == 'table' and 'table' or args[1], args[2], r[1], r[2], type(r[2]))
end
p(pcall(tonumber64))
local ffi = require('ffi')
for _, v in ipairs({ffi.new('int64_t', -5), ffi.new('uint64_t', 5), ffi.new('int', 7), ffi.new('uint8_t', 3),
                    ffi.new('float', 2.5), ffi.new('char', 1), ffi.new('bool', true), box.NULL}) do
  local r = tonumber64(v)
  p('cdata', ffi.typeof(v), r == nil and 'nil' or (tostring(r):gsub(': 0x%x+', '')), r == nil or rawequal(r, v))
end
local function named() return tonumber64('1', 99) end
p(pcall(named))
p(pcall(function() local x = tonumber64('1', 99) return x end))
p(pcall(function() local x = tonumber64() return x end))

-- the tarantool module
local t = require('tarantool')
keys = {}
for k in pairs(t) do table.insert(keys, k) end
table.sort(keys)
p(table.concat(keys, ' '), t.version == _TARANTOOL, type(t.version), t.package)
keys = {}
for k in pairs(t.build) do table.insert(keys, k .. ':' .. type(t.build[k])) end
table.sort(keys)
p(table.concat(keys, ' '), t.build.mod_format)
p(type(t.uptime()), t.uptime() >= 0, t.uptime() < 60, t.pid() > 1, math.floor(t.pid()) == t.pid())
os.exit(0)
"""


def test_module_search_debug_dostring_tonumber64_and_the_tarantool_module(tmp_path):
    same_output_on_both(tmp_path, "package.lua", SCRIPT, 182)


PATHS = "print(package.path) print(package.cpath) os.exit(0)\n"


def test_package_paths_from_lua_path_and_lua_cpath(tmp_path):
    """';;' in LUA_PATH stands for the default list; LUA_CPATH without it replaces it."""
    script = tmp_path / "paths.lua"
    script.write_text(PATHS)
    outs = []
    for binary in ("tarantool", ONCEBOX):
        env = dict(os.environ, LUA_PATH="/x/?.lua;;/y/?.lua", LUA_CPATH="/z/?.so")
        r = subprocess.run([binary, str(script)], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert r.returncode == 0, (binary, r.stderr)
        outs.append(r.stdout.splitlines())
    assert outs[0] == outs[1]
    assert outs[0][0].startswith("/x/?.lua;") and outs[0][0].endswith(";/y/?.lua") and outs[0][1] == "/z/?.so"


STRICT = r"""
local strict = require('strict')
print(pcall(function() return undeclared_a end), getmetatable(_G))
strict.on()
print(pcall(function() return undeclared_x end))
top_level = 1
print(top_level)
local function f() new_in_fn = 2 end
print(pcall(f))
print(rawget(_G, 'new_in_fn'))
print(pcall(function() return new_in_fn end))
print(pcall(loadstring('from_chunk = 3')), rawget(_G, 'from_chunk'))
print(pcall(function() rawset(_G, 'raw_one', 4) return raw_one end))
print(pcall(function() return string.format('%s', tostring(not_there)) end))
print(pcall(rawget, _G, 'nothing'))
print(pcall(select, 2, pcall(loadstring('return undeclared_main_chunk'))))
strict.off()
print(pcall(function() return undeclared_y end))
print(pcall(function() new_after_off = 5 return new_after_off end))
print(getmetatable(_G))
-- With a metatable of its own, _G gets strict's handlers, and loses them on off().
setmetatable(_G, {__index = function(t, k) return 'default_' .. k end})
strict.on()
print(pcall(function() return undeclared_c end))
print(pcall(function() zz = 1 end))
strict.off()
print(pcall(function() return undeclared_d end), getmetatable(_G) ~= nil, getmetatable(_G).__index)
strict.on() strict.on()
x_main = 5
strict.off() strict.on()
print(pcall(function() return x_main end))
print(pcall(function() x_main = 6 return x_main end))
print(pcall(function() return undeclared_e end))
os.exit(0)
"""


def test_strict_mode_tells_a_main_chunk_from_a_function(tmp_path):
    same_output_on_both(tmp_path, "strict.lua", STRICT, 20)


REQUIRE = r"""
local function write(name, text) local f = io.open(name .. '.lua', 'w') f:write(text) f:close() end
write('m_nil', 'x_loaded = (x_loaded or 0) + 1')
write('m_self', 'package.loaded.m_self = "self"')
write('m_err', 'error("boom")')
write('m_err2', 'error("boom2", 2)')
write('m_loop', 'return require("m_loop")')
write('m_wait', 'require("fiber").sleep(0.01) return "waited"')
write('m_cfg', 'box.cfg{} return "configured " .. type(box.space)')
print(pcall(require))
print(pcall(require, {}))
print(require('m_nil'), require('m_nil'), x_loaded)
print(require('m_self'))
local function try(name)
    local ok, e = pcall(require, name)
    print(ok, (tostring(e):gsub('^.*/', '')))
end
try('m_err')
try('m_err')
print(pcall(require, 'm_err2'))
print(pcall(require, 'm_loop'))
print((select(2, pcall(require, 'no_such_module')):match('^[^\n]*\n[^\n]*')))
-- A module may yield while it loads: wait on a fiber, or boot with box.cfg{}.
print(require('m_wait'))
print(require('m_cfg'))
print(type(require('json')), require('fiber') == package.loaded.fiber)
os.exit(0)
"""


def test_require_as_luajit_and_modules_that_yield_while_loading(tmp_path):
    # Before, a module calling box.cfg{} failed: "attempt to yield across C-call boundary".
    lines = same_output_on_both(tmp_path, "require.lua", REQUIRE, 13)
    assert lines[-2:] == ["configured table", "table\ttrue"]
