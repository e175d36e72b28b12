"""PINGs a connection's reader answers without the TX thread: the reply carries the
current schema version, on_iproto_request triggers still see every PING, a read that
mixes PINGs with other requests keeps its order, and a session TX refused never gets
an answer."""
import socket

import pytest

from conftest import ADMIN_PASSWORD
from iproto_raw import EVAL, PING, SELECT, Raw, packet

ER_WRONG_SCHEMA_VERSION = 109


def admin(inst):
    c = Raw(inst.host, inst.port)
    assert c.auth("admin", ADMIN_PASSWORD)[0][0] == 0
    return c


def ev(c, code):
    h, b, _ = c.request(EVAL, {0x27: code, 0x21: []})
    assert h[0] == 0, b
    return h, b


def test_a_ping_carries_the_schema_version_of_the_latest_change(oncebox):
    c = admin(oncebox)
    before = c.request(PING)[0][5]
    assert before == c.request(SELECT, {0x10: 272, 0x20: [], 0x12: 1})[0][5]
    h, _ = ev(c, "box.schema.space.create('t'):create_index('pk')")
    assert h[5] > before
    assert c.request(PING)[0][5] == h[5]
    # A PING stating an older schema version is refused as by Tarantool.
    h, b, _ = c.request(PING, _5=before)
    assert h[0] == 0x8000 | ER_WRONG_SCHEMA_VERSION, b
    assert c.request(PING, _5=h[5])[0][0] == 0


def test_request_triggers_see_pings_while_they_are_set(oncebox):
    c = admin(oncebox)
    ev(c, "pings = 0 function count(h) if h.type == 'PING' then pings = pings + 1 end end")
    c.request(PING)
    ev(c, "box.ctl.on_iproto_request(count)")
    for _ in range(3):
        assert c.request(PING)[0][0] == 0
    ev(c, "box.ctl.on_iproto_request(nil, count)")
    c.request(PING)
    assert ev(c, "return pings")[1][0x30] == [3]
    # A trigger that refuses PINGs refuses them.
    ev(c, "box.ctl.on_iproto_request(function(h) if h.type == 'PING' then box.error{code = 4200, reason = 'no'} end end)")
    h, b, _ = c.request(PING)
    assert h[0] == 0x8000 | 4200 and b[0x31] == "no"


def test_pipelined_pings_and_a_mixed_read(oncebox):
    c = admin(oncebox)
    c.sock.sendall(b"".join(packet(PING, 1000 + i) for i in range(200)))
    assert sorted(c.recv()[0][1] for _ in range(200)) == list(range(1000, 1200))
    # One write holding a SELECT between PINGs: answered in order, as TX answers it.
    syncs = [2001, 2002, 2003, 2004]
    c.sock.sendall(packet(PING, 2001) + packet(SELECT, 2002, {0x10: 272, 0x20: [], 0x12: 1})
                   + packet(PING, 2003) + packet(PING, 2004, {}))
    assert [c.recv()[0][1] for _ in syncs] == syncs


def test_a_bad_ping_body_is_refused(oncebox):
    c = Raw(oncebox.host, oncebox.port)
    c.sock.sendall(packet(PING, 7, raw_body=b"\x81"))  # a truncated body
    h, b = c.recv()[:2]
    assert h[1] == 7 and h[0] == 0x8000 | 20, b  # ER_INVALID_MSGPACK


def test_a_session_refused_by_on_connect_gets_no_ping_reply(oncebox):
    c = admin(oncebox)
    ev(c, "box.session.on_connect(function() if box.session.user() == 'guest' then error('go away') end end)")
    refused = Raw(oncebox.host, oncebox.port)
    refused.sock.sendall(packet(PING, 1))
    with pytest.raises((EOFError, ConnectionResetError)):
        refused.recv()


def test_the_server_closes_once_the_client_stops_sending(oncebox):
    c = Raw(oncebox.host, oncebox.port)
    c.sock.settimeout(5)
    c.sock.sendall(packet(PING, 1))
    c.sock.shutdown(socket.SHUT_WR)
    assert c.recv()[0][1] == 1
    assert c.sock.recv(1) == b"", "the reply path must not outlive the reader"
