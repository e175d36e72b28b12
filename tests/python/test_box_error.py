"""box.error objects compared with Tarantool 2.6: where they say they were raised,
and what the ffi says they are."""
import textwrap

from conftest import LUA_PRINT_ROW, same_output_on_both

SCRIPT = LUA_PRINT_ROW + textwrap.dedent("""\
    -- Raised by box.error called straight from pcall: the frame is C's.
    local _, e = pcall(box.error, box.error.NO_SUCH_SPACE, 'q')
    p(e.code, e.type, e.message, #e.trace, e.trace[1].file, e.trace[1].line)
    -- Raised from a Lua function: its file and line.
    local _, e2 = pcall(function() box.error(box.error.NO_SUCH_SPACE, 'q') end)
    p(e2.trace[1].file:match('[^/]*$'), e2.trace[1].line)
    local e3 = box.error.new({code = 555, reason = 'r'})
    p(e3.code, e3.type, e3.message, e3.trace[1].line)
    local _, e4 = pcall(error, e3)
    p(e4 == e3, e4.trace[1].line)
    os.exit(0)
""")


def test_trace_of_box_errors(tmp_path):
    same_output_on_both(tmp_path, "box_error.lua", SCRIPT, 4)


FFI_SCRIPT = LUA_PRINT_ROW + textwrap.dedent("""\
    local ffi = require('ffi')
    -- 2.6's errors are `const struct error &` cdata; tarantool/checks' checks('error')
    -- is ffi.istype('struct error', v).
    local e = box.error.new(box.error.UNKNOWN)
    p(type(e), ffi.istype('struct error', e), ffi.istype('const struct error', e), ffi.istype('struct error &', e))
    p(tostring(ffi.typeof('struct error')), tostring(ffi.typeof(e)))
    p(ffi.istype(ffi.typeof(e), e), ffi.istype(ffi.typeof('struct error'), e), ffi.istype('struct error *', e))
    p(ffi.istype('struct error', {}), ffi.istype('struct error', 1), ffi.istype('int', e), ffi.istype('struct error', nil))
    local _, caught = pcall(box.error, box.error.ILLEGAL_PARAMS, 'x')
    p(ffi.istype('struct error', caught), ffi.istype('struct error', box.error.new({code = 5, reason = 'r'})))
    p(ffi.istype('int64_t', 1LL), ffi.typeof(1LL) == ffi.typeof('int64_t'), pcall(ffi.typeof, {}))
    local ok, msg = pcall(function() return ffi.istype('no such type', e) end)
    p(ok, msg)
    os.exit(0)
""")


def test_ffi_sees_box_errors_as_2_6_does(tmp_path):
    """ffi.istype('struct error', e) holds for a box error (checks('error') relies on
    it), ffi.typeof(e) is 2.6's ctype, other values and types are unaffected."""
    lines = same_output_on_both(tmp_path, "box_error_ffi.lua", FFI_SCRIPT, 7)
    assert lines[0] == "cdata | true | true | true"
