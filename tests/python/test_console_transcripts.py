"""Console sessions line by line, as Tarantool's own test-run drives them: the
same lines on a text console of Tarantool 2.6 and of oncebox, the same YAML
replies (the checks come from 2.6's test/box suite: access_misc,
access_escalation)."""
from conftest import console_transcripts_on_both

SU_AND_DROPS = [
    "session = box.session",
    "box.schema.user.create('testus')",
    "s = box.schema.space.create('admin_space')",
    "index = s:create_index('primary', {type = 'hash', parts = {1, 'unsigned'}})",
    "s:insert({1})",
    "box.schema.user.grant('testus', 'read', 'space', 'admin_space')",
    # su without a function: the session's user for its later lines.
    "session.su('testus')",
    "session.user(), session.effective_user()",
    "s:select(1)",
    "s:insert({3})",
    "s:drop()",
    "session.su('admin')",
    "session.user()",
    "s:insert({3})",
    # Dropping what is gone.
    "t = box.schema.space.create('test')",
    "t:drop()",
    "t:drop()",
    "box.schema.space.drop(t.id)",
    "box.schema.space.drop(t.id, 'test')",
    "box.schema.space.drop(t.id, 'test', {if_exists = true})",
    "box.schema.space.drop('x')",
    # net.box's connect called as a method.
    "net = require('net.box')",
    "c = net:connect(os.getenv('LISTEN'))",
    "c:ping()",
    "c:close()",
    "c = net.connect(os.getenv('LISTEN'))",
    "c:ping()",
    "c:close()",
]


def test_su_drops_and_connect_on_the_console_as_2_6(tmp_path):
    tarantool, oncebox = console_transcripts_on_both(tmp_path, SU_AND_DROPS)
    assert oncebox == tarantool
    assert tarantool[7] == "---\n- testus\n- testus\n...\n"
    assert tarantool[9] == "---\n- error: Write access to space 'admin_space' is denied for user 'testus'\n...\n"
    assert tarantool[16] == "---\n- error: Space 'test' does not exist\n...\n"


def test_su_over_iproto_lasts_for_the_connection_as_2_6():
    """box.session.su(user) in an EVAL: the connection's later requests run as
    that user (2.6 resets the session's credentials)."""
    from conftest import ADMIN_PASSWORD, start_oncebox, start_tarantool
    from iproto_raw import EVAL, Raw
    outcomes = []
    for start in (start_tarantool, start_oncebox):
        inst = start()
        try:
            c = Raw(inst.host, inst.port)
            c.auth("admin", ADMIN_PASSWORD)
            steps = []
            for expr in ("box.schema.user.create('su_iproto', {if_not_exists = true})",
                         "box.schema.user.grant('su_iproto', 'execute', 'universe', nil, {if_not_exists = true})",
                         "box.session.su('su_iproto')", "return box.session.user()",
                         "return box.space._user:count()", "box.session.su('admin')"):
                h, b, _ = c.request(EVAL, {0x27: expr, 0x21: []})
                steps.append((h[0], b.get(0x30), b.get(0x31)))
            c.close()
            outcomes.append(steps)
        finally:
            inst.stop()
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][3] == (0, ["su_iproto"], None)
