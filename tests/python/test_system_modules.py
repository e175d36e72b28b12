"""pwd, iconv and msgpackffi, built-in modules of 2.6 that scripts require, run by
tarantool 2.6 and oncebox line for line (error positions masked: the lines of
`builtin/x.lua` differ)."""

from conftest import LUA_SHOW_SORTED, run_script_on_both, same_output_on_both

SCRIPT = LUA_SHOW_SORTED + r"""
local function try(label, f, ...)
    local r = {pcall(f, ...)}
    local parts = {}
    for i = 2, table.maxn(r) do parts[#parts + 1] = show(r[i]) end
    local text = label .. (r[1] and ' => ' or ' => RAISE ') .. table.concat(parts, ', ')
    print((text:gsub('lua:%d+:', 'lua:N:')))
end
local pwd = require('pwd')
try('getpw', pwd.getpw)
try('getpw 0', pwd.getpw, 0)
try('getpw root', pwd.getpw, 'root')
try('getpw missing', pwd.getpw, 'no-such-user-here')
try('getpw 54321', pwd.getpw, 54321)
try('getpw table', pwd.getpw, {})
try('getgr', pwd.getgr)
try('getgr root', pwd.getgr, 'root')
try('getgr table', pwd.getgr, {})
local users, groups = pwd.getpwall(), pwd.getgrall()
print('all', #users > 0, #groups > 0, show(users[1]), show(groups[1]))
print('all sizes equal getent', #users == tonumber(io.popen('getent passwd | wc -l'):read('*a')),
      #groups == tonumber(io.popen('getent group | wc -l'):read('*a')))

local iconv = require('iconv')
local utf16 = iconv.new('UTF-16LE', 'UTF-8')
print('iconv', type(utf16), #utf16('hello'), iconv.new('UTF-8', 'latin1')('\xe9') == '\xc3\xa9')
print('iconv long', #iconv.new('UTF-32', 'UTF-8')(string.rep('x', 10000)))
try('iconv cut short', utf16, 'ab\xc3')
try('iconv invalid', utf16, 'ab\xffcd')
try('iconv unrepresentable', iconv.new('ASCII', 'UTF-8'), 'h\xc3\xa9llo')
try('iconv number', utf16, 1)
try('iconv unknown charset', iconv.new, 'nope', 'UTF-8')
try('iconv usage', iconv.new, 'UTF-8')

local mf = require('msgpackffi')
print('msgpackffi', mf.decode(mf.encode({1, 2, {a = 3}}))[3].a, select(2, mf.decode(mf.encode(5))),
      mf.decode_unchecked(mf.encode('x')), mf.NULL == box.NULL,
      mf.array_mt == require('msgpack').array_mt, mf.encode({1, 'a'}) == require('msgpack').encode({1, 'a'}))
print('msgpackffi offset', show({mf.decode(mf.encode(7) .. mf.encode(8), 2)}))
os.exit(0)
"""


def test_pwd_iconv_msgpackffi_as_2_6(tmp_path):
    tarantool, oncebox = run_script_on_both(tmp_path, "system_modules.lua", SCRIPT)
    assert oncebox == tarantool
    assert len(tarantool) == 21
    assert tarantool[1].startswith("getpw 0 => {group={id=0, members={}, name=\"root\"}, id=0")
    assert 'iconv invalid => RAISE "builtin/iconv.lua:N: Incomplete multibyte sequence"' in tarantool


ERRNO_AND_BUFFER = """
local errno, buffer, ffi = require('errno'), require('buffer'), require('ffi')
-- errno(n) sets the error and returns the one before (2.6's app-tap errno test).
errno(0)
print(errno(errno.EBADF), errno(), errno(errno.EINVAL), errno(), errno.strerror())
-- errno() is the C errno: what a failed ffi call left (popen's tests wait on it).
pcall(ffi.cdef, 'int kill(int pid, int sig);')
local rc = ffi.C.kill(2147483647, 0)
print(rc, errno() == errno.ESRCH, errno.strerror())
-- buffer.static_alloc: room in the static area (12288 bytes, all of it at most).
local p = buffer.static_alloc('char', 12288)
ffi.fill(p, 12288, string.byte('x'))
print(ffi.istype('char *', p), ffi.string(p, 3), ffi.string(p + 12285, 3))
local q = buffer.static_alloc('int', 4)
q[3] = 7
print(ffi.istype('int *', q), q[3], ffi.istype('char *', buffer.static_alloc('char', 20000)))
-- The registers for C calls: reg1 and reg2 of reg_array, union c_register.
buffer.reg1.u64 = 5
buffer.reg2.ai[0] = -3
print(ffi.sizeof('union c_register'), tonumber(buffer.reg_array[0].u64), buffer.reg_array[1].ai[0])
os.exit(0)
"""


def test_errno_and_buffer_helpers_as_2_6(tmp_path):
    """errno() is the C errno and errno(n) returns the previous one; buffer.static_alloc, reg1, reg2 and
    reg_array exist as in 2.6 (its uri module and app-tap tests use them)."""
    lines = same_output_on_both(tmp_path, "errno_buffer.lua", ERRNO_AND_BUFFER, 5)
    assert lines[0] == "0\t9\t9\t22\tInvalid argument"
