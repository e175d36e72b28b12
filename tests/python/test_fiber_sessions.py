"""A fiber made by fiber.create or fiber.new runs, as in 2.6, in a background
session of its own and as admin, whoever made it: its session id is new, its
type 'background', its box.session.storage its own, and a fiber a limited user's
EVAL starts may write where that user may not; box.session.exists sees the
session while the fiber lives. Compared with Tarantool 2.6."""
from conftest import run_script_on_both

SCRIPT = r"""
local fiber = require('fiber')
box.cfg{log_level = 1, listen = os.getenv('LISTEN')}
box.schema.user.create('u', {password = 'p'})
box.schema.user.grant('u', 'execute', 'universe')
box.schema.space.create('secret'):create_index('pk')
local main_sid = box.session.id()
box.session.storage.mark = 'main'
local ch = fiber.channel(10)
fiber.create(function()
    ch:put({'inline', box.session.id() ~= main_sid, box.session.type(), box.session.user(),
            box.session.storage.mark == nil, box.session.peer() == nil})
    fiber.yield()
    ch:put({'after a yield', box.session.id() ~= main_sid, box.session.type(), box.session.user()})
end)
print(unpack(ch:get()))
print(unpack(ch:get()))
print('the creator', box.session.id() == main_sid, box.session.type(), box.session.user(), box.session.storage.mark)
fiber.new(function() ch:put({'fiber.new', box.session.id() ~= main_sid, box.session.type(), box.session.user()}) end)
print(unpack(ch:get()))
local two = {}
for i = 1, 2 do fiber.create(function() two[i] = box.session.id() end) end
print('two fibers, two sessions', two[1] ~= two[2])
local c = require('net.box').connect(box.info.listen, {user = 'u', password = 'p'})
print(c:eval([[
    local fiber = require('fiber')
    local ch = fiber.channel(1)
    local mine = box.session.id()
    fiber.create(function()
        local ok1, e1 = pcall(box.space.secret.replace, box.space.secret, {1})
        local inline = {box.session.id() ~= mine, box.session.user(), box.session.type()}
        fiber.yield()
        local ok2, e2 = pcall(box.space.secret.replace, box.space.secret, {2})
        ch:put({ok1, tostring(e1), ok2, tostring(e2), box.session.user(), inline[1], inline[2], inline[3],
                box.session.id() ~= mine})
    end)
    local r = ch:get()
    return box.session.user(), box.session.id() == mine, unpack(r)
]]))
print(pcall(c.eval, c, "return box.space.secret:replace({3})"))
print(box.space.secret:count())
-- A fiber's session exists while the fiber lives.
local sid
local f = fiber.new(function() sid = box.session.id() fiber.sleep(0.2) end)
fiber.sleep(0.01)
print('exists while it lives', box.session.exists(sid), box.session.exists(999999))
fiber.sleep(0.3)
print('and then', box.session.exists(sid))
os.exit(0)
"""


def test_a_fiber_runs_in_a_background_session_of_its_own_as_admin(tmp_path):
    tarantool, oncebox = run_script_on_both(tmp_path, "fiber_sessions.lua", SCRIPT)
    assert oncebox == tarantool
    assert "exists while it lives\ttrue\tfalse" in tarantool and "and then\tfalse" in tarantool
    assert tarantool[:5] == [
        "inline\ttrue\tbackground\tadmin\ttrue\ttrue",
        "after a yield\ttrue\tbackground\tadmin",
        "the creator\ttrue\tbackground\tadmin\tmain",
        "fiber.new\ttrue\tbackground\tadmin",
        "two fibers, two sessions\ttrue",
    ]
    # The user's own request is refused; the fiber it started, as admin, is not.
    assert tarantool[5].startswith("u\ttrue\ttrue\t[1]\ttrue\t[2]\tadmin"), tarantool[5]
    assert "Write access to space 'secret' is denied for user 'u'" in tarantool[6], tarantool[6]
    assert tarantool[7] == "2"


SCRIPT_SESSION = r"""
print(box.session.id(), box.session.type())
box.cfg{log_level = 1}
print(box.session.id(), box.session.type(), box.session.exists(box.session.id()), box.session.uid(), box.session.user())
require('fiber').create(function() print('fiber', box.session.id(), box.session.type()) end)
print(box.session.peer(), box.session.fd(), box.session.sync())
os.exit(0)
"""


def test_the_script_runs_in_session_1_and_its_fibers_after_it(tmp_path):
    """2.6 gives the script's session the first id, 1 (box-tap session.test.lua
    checks it is above 0), before and after box.cfg{}; a fiber's comes next."""
    tarantool, oncebox = run_script_on_both(tmp_path, "script_session.lua", SCRIPT_SESSION)
    assert oncebox == tarantool
    assert tarantool[:3] == ["1\tbackground", "1\tbackground\ttrue\t1\tadmin", "fiber\t2\tbackground"]
