"""box.session.exists, peer and fd refuse extra or explicit-nil arguments with
2.6's words (compared with real Tarantool 2.6)."""
from conftest import LUA_PRINT_ROW, same_output_on_both

SCRIPT = LUA_PRINT_ROW + r"""
box.cfg{}
for _, name in ipairs({'exists', 'peer', 'fd'}) do
    p(name, 'many', pcall(box.session[name], 1, 2, 3))
    p(name, 'nil', pcall(box.session[name], nil))
    p(name, 'string', pcall(box.session[name], 'x'))
    p(name, 'unknown', pcall(box.session[name], 1234567890))
end
os.exit(0)
"""


def test_session_functions_check_their_arguments_as_2_6(tmp_path):
    same_output_on_both(tmp_path, "session_args.lua", SCRIPT, 12)
