"""The tarantool-python connector (PyPI `tarantool`) used unchanged against oncebox.

Every test runs against oncebox and against real Tarantool 2.6, so the
expectations are what the real server does.
"""
import pytest
import tarantool
from tarantool.const import ITERATOR_ALL, ITERATOR_GE, ITERATOR_LT
from tarantool.error import DatabaseError, NetworkError

from conftest import ADMIN_PASSWORD

TESTER = [512, 1, "tester", "memtx", 0, {}, [{"name": "id", "type": "unsigned"}, {"name": "name", "type": "string"},
                                            {"name": "age", "type": "unsigned", "is_nullable": True}]]
TESTER_PK = [512, 0, "primary", "tree", {"unique": True}, [[0, "unsigned"]]]
TESTER_BY_NAME = [512, 1, "by_name", "tree", {"unique": False}, [{"field": 1, "type": "string", "collation": 2}]]
HASHY = [513, 1, "hashy", "memtx", 0, {}, []]
HASHY_PK = [513, 0, "pk", "hash", {"unique": True}, [[0, "unsigned"]]]


def admin(server):
    return tarantool.connect(server.host, server.port, user="admin", password=ADMIN_PASSWORD)


@pytest.fixture
def db(server):
    conn = admin(server)
    conn.insert("_space", TESTER)
    conn.insert("_index", TESTER_PK)
    conn.insert("_index", TESTER_BY_NAME)
    conn.insert("_space", HASHY)
    conn.insert("_index", HASHY_PK)
    conn.close()
    conn = admin(server)  # a fresh connection loads the new schema
    yield conn
    conn.close()


def test_guest_connects_and_pings(server):
    conn = tarantool.connect(server.host, server.port)
    assert conn.ping(notime=True) == "Success"
    with pytest.raises(DatabaseError) as e:
        conn.insert(280, [600, 1, "x", "memtx", 0, {}, []])
    assert e.value.code == 42
    conn.close()


def test_wrong_password_and_unknown_user(server):
    with pytest.raises(NetworkError) as e:
        tarantool.connect(server.host, server.port, user="admin", password="nope")
    assert "Incorrect password supplied for user 'admin'" in str(e.value)
    with pytest.raises(NetworkError) as e:
        tarantool.connect(server.host, server.port, user="nobody", password="x")
    assert "User 'nobody' is not found" in str(e.value)


def test_crud_by_name(db):
    sp = db.space("tester")
    assert sp.insert((1, "Alice", 30)).data == [[1, "Alice", 30]]
    assert sp.insert((2, "bob")).data == [[2, "bob"]]
    assert sp.replace((3, "Carol", 41)).data == [[3, "Carol", 41]]
    with pytest.raises(DatabaseError) as e:
        sp.insert((1, "again"))
    assert e.value.code == 3
    assert "Duplicate key exists in unique index 'primary' in space 'tester'" in e.value.message
    assert sp.select(1).data == [[1, "Alice", 30]]
    assert sp.select("ALICE", index="by_name").data == [[1, "Alice", 30]]
    assert sp.select(2, iterator=ITERATOR_GE).data == [[2, "bob"], [3, "Carol", 41]]
    assert sp.select(None, iterator=ITERATOR_ALL, limit=2, offset=1).data == [[2, "bob"], [3, "Carol", 41]]
    assert sp.select(3, iterator=ITERATOR_LT).data == [[2, "bob"], [1, "Alice", 30]]
    assert sp.update(1, [("+", "age", 1), ("=", "name", "Alicia")]).data == [[1, "Alicia", 31]]
    assert sp.update(1, [("+", 2, 1)]).data == [[1, "Alicia", 32]]
    assert sp.update(99, [("+", 2, 1)]).data == []
    assert sp.upsert((4, "Dan", 1), [("+", 2, 1)]).data == []
    assert sp.upsert((4, "Dan", 1), [("+", 2, 1)]).data == []
    assert sp.select(4).data == [[4, "Dan", 2]]
    assert sp.delete(4).data == [[4, "Dan", 2]]
    assert sp.delete(4).data == []
    with pytest.raises(DatabaseError) as e:
        sp.insert(("x", "y"))
    assert e.value.code == 23


def test_hash_index_and_errors(db):
    sp = db.space("hashy")
    sp.insert((1, "one"))
    sp.insert((2, b"two", [1, 2], {"k": "v"}))
    assert sp.select(2).data == [[2, b"two", [1, 2], {"k": "v"}]]
    assert sorted(sp.select(None, iterator=ITERATOR_ALL).data, key=lambda t: t[0])[0] == [1, "one"]
    with pytest.raises(DatabaseError) as e:
        sp.select(1, iterator=ITERATOR_LT)
    assert e.value.code == 112
    with pytest.raises(DatabaseError) as e:
        db.select(9999, [])
    assert e.value.code == 36
    with pytest.raises(DatabaseError) as e:
        db.call("no_such_function")
    assert e.value.code == 33


def test_created_user_with_grants(db, server):
    import base64
    import hashlib
    h2 = base64.b64encode(hashlib.sha1(hashlib.sha1(b"secret").digest()).digest()).decode()
    db.insert("_user", [40, 1, "carol", "user", {"chap-sha1": h2}])
    db.insert("_priv", [1, 40, "role", 2, 4])
    db.insert("_priv", [1, 40, "universe", 0, 24])
    db.insert("_priv", [1, 40, "space", 512, 1])
    db.space("tester").insert((7, "seven"))
    carol = tarantool.connect(server.host, server.port, user="carol", password="secret")
    assert carol.space("tester").select(7).data == [[7, "seven"]]
    with pytest.raises(DatabaseError) as e:
        carol.space("tester").insert((8, "eight"))
    assert e.value.code == 42
    assert "Write access to space 'tester' is denied for user 'carol'" in e.value.message
    with pytest.raises(DatabaseError) as e:
        carol.select("hashy", [])
    carol.close()


def test_schema_change_is_picked_up(db, server):
    other = admin(server)
    other.insert("_space", [520, 1, "late", "memtx", 0, {}, []])
    other.insert("_index", [520, 0, "pk", "tree", {"unique": True}, [[0, "string"]]])
    # The first connection learns about the new space from the 109 round trip.
    db.flush_schema()
    assert db.space("late").insert(("k", 1)).data == [["k", 1]]
    other.close()


def test_reconnect_after_close(server):
    conn = tarantool.connect(server.host, server.port)
    conn.close()
    conn.connect()
    assert conn.ping(notime=True) == "Success"
    conn.close()


def test_push_from_on_replace_trigger_during_a_plain_insert(server):
    """A push an on_replace trigger makes during an IPROTO insert reaches the client (on_push)."""
    setup = admin(server)
    setup.eval("""
        local s = box.schema.space.create('pushed', {if_not_exists = true})
        s:create_index('pk', {if_not_exists = true})
        s:on_replace(function(_, new) box.session.push({new[1], 1}) end)
    """)
    setup.close()
    conn = admin(server)
    pushed = []
    resp = conn.insert("pushed", (100,), on_push=lambda data, ctx: ctx.append(data), on_push_ctx=pushed)
    assert pushed == [[[100, 1]]]
    assert resp.data == [[100]]
    conn.close()
