"""box.error objects compared with Tarantool 2.6: where they say they were raised."""
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
