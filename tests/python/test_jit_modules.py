"""LuaJIT's own jit.* modules, loaded at start as Tarantool 2.6 loads them: the
profiler (jit.p, jit.zone), jit.v and jit.dump for traces, jit.bc for bytecode,
jit.bcsave, the disassemblers and jit.vmdef. Compared with Tarantool 2.6."""
import os

from conftest import ONCEBOX, same_output_on_both

JIT_MODULES = r"""
local function p(...)
    local t = {}
    for i = 1, select('#', ...) do t[i] = tostring((select(i, ...))) end
    print(table.concat(t, ' | '))
end
local names = {'jit.vmdef', 'jit.bc', 'jit.bcsave', 'jit.dis_x86', 'jit.dis_x64', 'jit.dump', 'jit.v', 'jit.p',
               'jit.zone'}
for _, name in ipairs(names) do
    local m = package.loaded[name]
    p(name, type(m), require(name) == m)
end
p('sources', debug.getinfo(require('jit.v').on, 'S').source, debug.getinfo(require('jit.p').start, 'S').source)
p('vmdef', type(require('jit.vmdef').bcnames), type(require('jit.vmdef').irnames), type(require('jit.vmdef').traceerr))

local function read(path)
    local f = io.open(path)
    local text = f:read('*a')
    f:close()
    os.remove(path)
    return text
end
-- A loop of its own for each module (a loop already compiled makes no new trace).
local function new_busy()
    return loadstring('local sum = 0 for i = 1, 3000000 do sum = sum + i % 7 end return sum', '=busy')
end
local dir = os.getenv('WORK')

-- jit.v writes a line per trace.
require('jit.v').on(dir .. '/v.txt')
new_busy()()
require('jit.v').off()
p('jit.v', string.find(read(dir .. '/v.txt'), '%[TRACE%s+%d+') ~= nil)

-- jit.dump writes a trace's bytecode and IR.
require('jit.dump').on('bi', dir .. '/dump.txt')
new_busy()()
require('jit.dump').off()
local dump = read(dir .. '/dump.txt')
p('jit.dump', string.find(dump, '%-%-%-%- TRACE %d+ start') ~= nil,
  string.find(dump, '%-%-%-%- TRACE %d+ IR') ~= nil)

-- jit.p samples where the time goes (the test reads p.txt once the process is
-- gone: 2.6's profiler leaves its file open until then).
local busy = new_busy()
require('jit.p').start('fi1', dir .. '/p.txt')
for _ = 1, 20 do busy() end
require('jit.p').stop()

-- jit.bc lists a function's bytecode.
local lines = {}
local sink = {write = function(_, s) lines[#lines + 1] = s end, flush = function() end}
require('jit.bc').dump(loadstring('local a = ... return a + 1', '=f'), sink)
local text = table.concat(lines)
p('jit.bc', string.find(text, 'ADDVN') ~= nil, string.find(text, 'RET1') ~= nil)
os.exit(0)
"""


def test_jit_modules_as_2_6(tmp_path):
    """Before, `require('jit.p')` (and jit.v, jit.dump, ...) failed: module not found."""
    lines = same_output_on_both(tmp_path, "jit_modules.lua", JIT_MODULES, 14)
    assert lines[:9] == [f"{name} | table | true" for name in (
        "jit.vmdef", "jit.bc", "jit.bcsave", "jit.dis_x86", "jit.dis_x64", "jit.dump", "jit.v", "jit.p", "jit.zone")]
    assert lines[9:] == [
        "sources | @builtin/jit.v.lua | @builtin/jit.p.lua",
        "vmdef | string | string | table",
        "jit.v | true",
        "jit.dump | true | true",
        "jit.bc | true | true",
    ]
    for binary in ("tarantool", ONCEBOX):
        profile = (tmp_path / os.path.basename(binary) / "p.txt").read_text()
        assert "%  busy" in profile, (binary, profile)
