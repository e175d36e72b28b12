"""Malformed and misdirected IPROTO requests, answered as Tarantool 2.6 answers them.

Each request goes on a connection of its own, as guest (granted everything on a
space `t`, id 512), to both servers; the reply's type code and body (but the
error stack, whose file and line differ) must be equal: missing and mistyped body
keys, bodies that are not maps, unknown request types, calls and evals of what
is not there, SQL with binds that are not a list, malformed authentication.
"""
from conftest import ADMIN_PASSWORD, start_oncebox, start_tarantool
from iproto_raw import Raw

SEL, INS, REP, UPD, DEL, CALL16, AUTH, EVAL, UPS, CALL, EXEC, PING = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x40

CASES = [
 ("sel-no-space", SEL, {0x11:0, 0x20:[]}),
 ("sel-space-str", SEL, {0x10:"x", 0x20:[]}),
 ("sel-no-key", SEL, {0x10:512}),
 ("sel-key-not-array", SEL, {0x10:512, 0x20:5}),
 ("sel-iter-99", SEL, {0x10:512, 0x20:[], 0x14:99}),
 ("sel-iter-str", SEL, {0x10:512, 0x20:[], 0x14:"EQ"}),
 ("sel-limit-neg", SEL, {0x10:512, 0x20:[], 0x12:-1}),
 ("sel-index-9", SEL, {0x10:512, 0x11:9, 0x20:[]}),
 ("sel-bad-space", SEL, {0x10:9999, 0x20:[]}),
 ("sel-unknown-key", SEL, {0x10:512, 0x20:[], 0x77:1}),
 ("sel-offset-str", SEL, {0x10:512, 0x20:[], 0x13:"x"}),
 ("ins-no-tuple", INS, {0x10:512}),
 ("ins-tuple-map", INS, {0x10:512, 0x21:{1:2}}),
 ("ins-tuple-int", INS, {0x10:512, 0x21:5}),
 ("ins-empty", INS, {0x10:512, 0x21:[]}),
 ("rep-str-key", REP, {0x10:512, 0x21:["x"]}),
 ("upd-no-ops", UPD, {0x10:512, 0x20:[1]}),
 ("upd-key-int", UPD, {0x10:512, 0x20:1, 0x21:[]}),
 ("del-no-key", DEL, {0x10:512}),
 ("del-partial", DEL, {0x10:512, 0x20:[]}),
 ("ups-no-ops", UPS, {0x10:512, 0x21:[1]}),
 ("ups-ops-map", UPS, {0x10:512, 0x21:[1], 0x28:{}}),
 ("eval-int", EVAL, {0x27:5, 0x21:[]}),
 ("eval-no-args", EVAL, {0x27:"return 1"}),
 ("eval-args-map", EVAL, {0x27:"return 1", 0x21:{}}),
 ("eval-syntax", EVAL, {0x27:"return (", 0x21:[]}),
 ("call-no-fn", CALL, {0x21:[]}),
 ("call-fn-int", CALL, {0x22:5, 0x21:[]}),
 ("call-missing", CALL, {0x22:"nofn", 0x21:[]}),
 ("call-args-int", CALL, {0x22:"box.info", 0x21:5}),
 ("call16-missing", CALL16, {0x22:"nofn", 0x21:[]}),
 ("body-array", SEL, [1,2]),
 ("body-int", SEL, 5),
 ("unknown-type", 99, {}),
 ("type-200", 200, {}),
 ("exec-no-sql", EXEC, {0x41:[]}),
 ("exec-bad-sql", EXEC, {0x40:"SELEKT 1", 0x41:[]}),
 ("exec-binds-int", EXEC, {0x40:"SELECT ?", 0x41:5}),
 ("auth-no-user", AUTH, {0x21:["chap-sha1", b"x"*20]}),
 ("auth-bad-method", AUTH, {0x23:"admin", 0x21:["md5", b"x"*20]}),
 ("auth-short", AUTH, {0x23:"admin", 0x21:["chap-sha1", b"x"]}),
 ("auth-nouser", AUTH, {0x23:"nouser", 0x21:["chap-sha1", b"x"*20]}),
 ("ping-body", PING, {0x10:1}),
]


SETUP = ("if box.space.t == nil then box.schema.space.create('t', {id = 512}):create_index('pk') "
         "box.schema.user.grant('guest', 'read,write,execute', 'universe') end")

def answers(server):
    """Every case's (name, reply type, body without the error stack) from `server`."""
    admin = Raw(server.host, server.port)
    admin.auth("admin", ADMIN_PASSWORD)
    admin.request(EVAL, {0x27: SETUP, 0x21: []})
    admin.close()
    out = []
    for name, rtype, body in CASES:
        conn = Raw(server.host, server.port)
        header, reply, _ = conn.request(rtype, body)
        conn.close()
        if isinstance(reply, dict):
            reply = {k: v for k, v in reply.items() if k != 0x52}
        out.append((name, header.get(0), reply))
    return out


def test_malformed_requests_get_tarantools_replies():
    servers = [start_tarantool(), start_oncebox()]
    try:
        tarantool, oncebox = (answers(s) for s in servers)
    finally:
        for s in servers:
            s.stop()
    assert [(t, o) for t, o in zip(tarantool, oncebox) if t != o] == []
    # The cases reach the checks they are about, not just the first one.
    errors = {name: body.get(0x31) for name, _, body in tarantool if isinstance(body, dict)}
    assert errors["exec-binds-int"] == "Invalid MsgPack - SQL parameter list"
    assert errors["call-missing"] == "Procedure 'nofn' is not defined"
    assert errors["sel-iter-99"] is not None and errors["auth-nouser"] is not None
