"""The asyncio connector asynctnt (PyPI `asynctnt`) used unchanged against oncebox.

Every test runs against oncebox and against real Tarantool 2.6 (the `server`
fixture), with the same expectations: what the real server does.
"""
import asyncio
import decimal
import uuid

import asynctnt
import pytest
from asynctnt.exceptions import TarantoolDatabaseError

from conftest import ADMIN_PASSWORD

SETUP = """
local s = box.schema.space.create('tester', {format = {
    {name = 'id', type = 'unsigned'}, {name = 'name', type = 'string'},
    {name = 'age', type = 'unsigned', is_nullable = true}}})
s:create_index('primary')
s:create_index('by_name', {unique = false, parts = {{2, 'string'}}})
function double(x) return x * 2, box.space.tester:get{1} end
function many(...) return ... end
box.schema.func.create('double')
box.schema.user.create('alice', {password = 'secret'})
box.schema.user.grant('alice', 'read,write', 'space', 'tester')
box.schema.user.grant('alice', 'execute', 'function', 'double')
"""


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


def rows(res):
    """A response's tuples as plain lists."""
    return [list(t) for t in res]


async def connect(server, user="admin", password=ADMIN_PASSWORD, **kw):
    conn = asynctnt.Connection(host=server.host, port=server.port, username=user, password=password, **kw)
    await conn.connect()
    return conn


async def wait_space(conn, name, indexes=("pk",)):
    """Waits until asynctnt's schema has the space and its indexes.

    asynctnt refetches the schema by itself when a reply's schema id moves, and on
    Tarantool a refetch can interleave with a DDL eval (DDL yields there) and see it
    half done. So: poll, and now and then force a refetch, bounded in time, since a
    forced refetch beside a running one can hang."""
    for attempt in range(300):
        space = conn.schema.spaces.get(name) if name in conn.schema.spaces else None
        if space is not None and all(ix in space.indexes for ix in indexes):
            return
        if attempt % 50 == 49:
            try:
                await asyncio.wait_for(conn.refetch_schema(), 2)
            except (asyncio.TimeoutError, asynctnt.exceptions.TarantoolError):
                pass
        await asyncio.sleep(0.01)
    raise AssertionError(f"space {name} with indexes {indexes} never appeared in asynctnt's schema")


async def setup(server):
    conn = await connect(server)
    await conn.eval(SETUP)
    await wait_space(conn, "tester", ("primary", "by_name"))
    return conn


def test_connect_auth_and_schema(server):
    """Admin and a created user authenticate; the schema read from _vspace/_vindex names spaces and fields."""
    async def main():
        conn = await setup(server)
        assert conn.is_fully_connected
        assert conn.version[:2] == (2, 6)
        space = conn.schema.spaces["tester"]
        assert conn.schema.spaces[512] is space
        assert (space.sid, space.name, space.engine) == (512, "tester", "memtx")
        assert [(f.name, f.type, f.is_nullable) for f in space.metadata.fields] == [
            ("id", "unsigned", None), ("name", "string", None), ("age", "unsigned", True)]
        assert sorted(k for k in space.indexes if isinstance(k, str)) == ["by_name", "primary"]
        by_name = space.indexes["by_name"]
        assert (by_name.iid, by_name.index_type, by_name.unique) == (1, "tree", {"unique": False})
        assert conn.schema.spaces["_vspace"].sid == 281
        await conn.disconnect()

        alice = await connect(server, "alice", "secret")
        assert alice.schema.spaces["tester"].sid == 512
        assert rows(await alice.insert("tester", [1, "Alice", 30])) == [[1, "Alice", 30]]
        assert rows(await alice.select("tester")) == [[1, "Alice", 30]]
        assert list(await alice.call("double", [4])) == [8, [1, "Alice", 30]]
        with pytest.raises(TarantoolDatabaseError) as e:
            await alice.eval("return 1")
        assert e.value.code == 42
        assert e.value.message == "Execute access to universe '' is denied for user 'alice'"
        await alice.disconnect()

        guest = await connect(server, None, None)
        assert "tester" not in guest.schema.spaces
        with pytest.raises(TarantoolDatabaseError) as e:
            await guest.select(512)
        assert e.value.code == 42
        assert e.value.message == "Read access to space 'tester' is denied for user 'guest'"
        await guest.disconnect()

        with pytest.raises(TarantoolDatabaseError) as e:
            await connect(server, "admin", "nope", reconnect_timeout=0)
        assert e.value.code == 47
        assert e.value.message == "Incorrect password supplied for user 'admin'"
    run(main())


def test_crud_by_name(server):
    """insert/select/replace/update/upsert/delete by space and index name."""
    async def main():
        conn = await setup(server)
        assert rows(await conn.insert("tester", [1, "Alice", 30])) == [[1, "Alice", 30]]
        res = await conn.insert("tester", {"id": 2, "name": "bob"})
        assert rows(res) == [[2, "bob", None]]
        assert res[0]["name"] == "bob" and dict(res[0].items()) == {"id": 2, "name": "bob", "age": None}
        assert rows(await conn.replace("tester", [3, "Carol", 41])) == [[3, "Carol", 41]]
        assert rows(await conn.replace("tester", [2, "Bob"])) == [[2, "Bob"]]
        assert rows(await conn.insert("tester", [4, "Bob", 7], replace=True)) == [[4, "Bob", 7]]

        assert rows(await conn.select("tester", [1])) == [[1, "Alice", 30]]
        assert rows(await conn.select("tester", ["Bob"], index="by_name")) == [[2, "Bob"], [4, "Bob", 7]]
        assert rows(await conn.select("tester", [2], iterator="GE", limit=2)) == [[2, "Bob"], [3, "Carol", 41]]
        assert rows(await conn.select("tester", [], offset=3)) == [[4, "Bob", 7]]
        assert rows(await conn.select("tester", [3], iterator=asynctnt.Iterator.LT)) == [[2, "Bob"], [1, "Alice", 30]]
        assert rows(await conn.select("tester", ["Carol"], index=1, iterator="LT")) == [[4, "Bob", 7], [2, "Bob"],
                                                                                       [1, "Alice", 30]]
        assert rows(await conn.select("tester", [99])) == []

        assert rows(await conn.update("tester", [1], [["+", "age", 5], ["=", "name", "Alicia"]])) == [[1, "Alicia", 35]]
        assert rows(await conn.update("tester", [1], [["-", 2, 1]])) == [[1, "Alicia", 34]]
        assert rows(await conn.update("tester", [99], [["+", 2, 1]])) == []
        assert rows(await conn.upsert("tester", [5, "Dan", 1], [["+", "age", 1]])) == []
        assert rows(await conn.upsert("tester", [5, "Dan", 1], [["+", "age", 1]])) == []
        assert rows(await conn.select("tester", [5])) == [[5, "Dan", 2]]
        assert rows(await conn.delete("tester", [5])) == [[5, "Dan", 2]]
        assert rows(await conn.delete("tester", [5])) == []
        assert rows(await conn.delete("tester", [4], index="primary")) == [[4, "Bob", 7]]
        assert rows(await conn.select("tester")) == [[1, "Alicia", 34], [2, "Bob"], [3, "Carol", 41]]
        await conn.disconnect()
    run(main())


def test_call_eval_call16(server):
    """call returns a function's values, call16 wraps each in a tuple, eval takes arguments."""
    async def main():
        conn = await setup(server)
        await conn.insert("tester", [1, "Alice", 30])
        assert list(await conn.call("double", [21])) == [42, [1, "Alice", 30]]
        assert list(await conn.call("many", [1, "two", [3], {"k": "v"}])) == [1, "two", [3], {"k": "v"}]
        assert list(await conn.call("many")) == []
        assert list(await conn.call16("double", [21])) == [[42], [1, "Alice", 30]]
        assert list(await conn.call16("many", [1, "two"])) == [[1], ["two"]]
        assert list(await conn.call("box.space.tester:get", [1])) == [[1, "Alice", 30]]
        assert list(await conn.eval("return 1 + ...", [2])) == [3]
        assert list(await conn.eval("return ...", [None, True, 1.5, "x"])) == [None, True, 1.5, "x"]
        assert list(await conn.eval("return box.space.tester:select{}")) == [[[1, "Alice", 30]]]
        assert list(await conn.eval("return")) == []
        res = await conn.ping()
        assert res.code == 0 and res.rowcount == 0
        await conn.disconnect()
    run(main())


def test_errors(server):
    """Server errors arrive as TarantoolDatabaseError with 2.6's code and message."""
    async def main():
        conn = await setup(server)
        await conn.insert("tester", [1, "Alice", 30])
        cases = [
            (conn.insert("tester", [1, "again"]), 3,
             "Duplicate key exists in unique index 'primary' in space 'tester'"),
            (conn.insert("tester", ["x", "y"]), 23, "Tuple field 1 type does not match one required by operation: "
                                                    "expected unsigned"),
            (conn.call("no_such_function"), 33, "Procedure 'no_such_function' is not defined"),
            (conn.eval("error('boom')"), 32, "eval:1: boom"),
            (conn.eval("box.error{code = 4242, reason = 'custom'}"), 4242, "custom"),
            (conn.select(600), 36, "Space '600' does not exist"),
            (conn.select("tester", [1], index=7), 35, "No index #7 is defined in space 'tester'"),
            (conn.replace("_vspace", [1]), 113, "View '_vspace' is read-only"),
            (conn.update("tester", ["Alice"], [["=", 2, 1]], index="by_name"), 41,
             "Get() doesn't support partial keys and non-unique indexes"),
        ]
        for coro, code, message in cases:
            with pytest.raises(TarantoolDatabaseError) as e:
                await coro
            assert (e.value.code, e.value.message) == (code, message)
        # The connection stays usable after errors.
        assert rows(await conn.select("tester")) == [[1, "Alice", 30]]
        await conn.disconnect()
    run(main())


def test_schema_auto_refetch(server):
    """A DDL request moves the schema id; asynctnt notices and refetches the schema on its own."""
    async def main():
        conn = await setup(server)
        old = conn.schema_id
        res = await conn.eval("box.schema.space.create('later'):create_index('pk')")
        assert res.schema_id > old
        for _ in range(100):
            if "later" in conn.schema.spaces:
                break
            await conn.ping()
            await asyncio.sleep(0.02)
        assert conn.schema_id == res.schema_id
        assert conn.schema.spaces["later"].indexes["pk"].iid == 0
        assert rows(await conn.insert("later", [7, "x"])) == [[7, "x"]]
        await conn.disconnect()
    run(main())


def test_disconnect_then_fresh_connection(server):
    """After disconnect() requests fail; connect() again and a new connection sees the same data."""
    async def main():
        conn = await setup(server)
        await conn.insert("tester", [1, "Alice", 30])
        await conn.disconnect()
        assert not conn.is_connected
        with pytest.raises(asynctnt.exceptions.TarantoolNotConnectedError):
            await conn.ping()
        await conn.connect()
        assert rows(await conn.select("tester")) == [[1, "Alice", 30]]
        await conn.reconnect()
        assert rows(await conn.select("tester", ["Alice"], index="by_name")) == [[1, "Alice", 30]]
        await conn.disconnect()
        other = await connect(server)
        assert rows(await other.select("tester")) == [[1, "Alice", 30]]
        await other.disconnect()
    run(main())


class DroppingProxy:
    """A TCP proxy to the server whose client sockets the test can cut at will."""

    def __init__(self, server):
        self.server = server
        self.writers = []
        self.accepted = 0

    async def start(self):
        self.listener = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        self.port = self.listener.sockets[0].getsockname()[1]

    async def handle(self, reader, writer):
        self.accepted += 1
        up_reader, up_writer = await asyncio.open_connection(self.server.host, self.server.port)
        self.writers += [writer, up_writer]

        async def pump(src, dst):
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                dst.close()

        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))

    def drop_all(self):
        for w in self.writers:
            w.transport.abort()
        self.writers = []

    async def close(self):
        self.listener.close()
        self.drop_all()
        await self.listener.wait_closed()


def test_auto_reconnect_after_dropped_socket(server):
    """A connection cut under asynctnt is re-established, re-authenticated and usable again."""
    async def main():
        conn = await setup(server)
        await conn.insert("tester", [1, "Alice", 30])
        await conn.disconnect()
        proxy = DroppingProxy(server)
        await proxy.start()
        conn = asynctnt.Connection(host="127.0.0.1", port=proxy.port, username="admin", password=ADMIN_PASSWORD,
                                   reconnect_timeout=0.05)
        await conn.connect()
        assert rows(await conn.select("tester")) == [[1, "Alice", 30]]
        for _ in range(2):
            accepted = proxy.accepted
            proxy.drop_all()
            for _ in range(500):
                if conn.is_fully_connected and proxy.accepted > accepted:
                    break
                await asyncio.sleep(0.02)
            assert proxy.accepted > accepted and conn.is_fully_connected
            await asyncio.wait_for(conn.ping(), 5)
            assert rows(await conn.select("tester", ["Alice"], index="by_name")) == [[1, "Alice", 30]]
            assert list(await conn.eval("return box.session.user()")) == ["admin"]
        await conn.disconnect()
        await proxy.close()
    run(main())


def test_pipelined_concurrent_requests(server):
    """200 requests in flight on one connection; every response matches its own request."""
    async def main():
        conn = await setup(server)
        inserts = [conn.insert("tester", [i, f"name{i}", i % 7]) for i in range(1, 101)]
        assert [rows(r) for r in await asyncio.gather(*inserts)] == [[[i, f"name{i}", i % 7]] for i in range(1, 101)]
        mixed = []
        for j in range(200):
            kind, k = j % 4, j // 4 + 1
            if kind == 0:
                mixed.append(conn.select("tester", [k]))
            elif kind == 1:
                mixed.append(conn.eval("return ...", [j, str(j)]))
            elif kind == 2:
                mixed.append(conn.call("double", [j]))
            else:
                mixed.append(conn.update("tester", [50 + k], [["=", "age", j]]))
        results = await asyncio.gather(*mixed)
        assert len(results) == 200
        for j, res in enumerate(results):
            kind, k = j % 4, j // 4 + 1
            if kind == 0:
                assert rows(res) == [[k, f"name{k}", k % 7]]
            elif kind == 1:
                assert list(res) == [j, str(j)]
            elif kind == 2:
                assert list(res) == [2 * j, [1, "name1", 1]]
            else:
                assert rows(res) == [[50 + k, f"name{50 + k}", j]]
        assert rows(await conn.select("tester", [51], iterator="GE", limit=2)) == [[51, "name51", 3], [52, "name52", 7]]
        assert list(await conn.eval("return box.space.tester:count()")) == [100]
        await conn.disconnect()
    run(main())


def oncebox_lacks(request, server, reason):
    """Marks this run as a strict expected failure on oncebox only (Tarantool 2.6 must pass)."""
    if server.kind == "oncebox":
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))


UUID = uuid.UUID("f47ac10b-58cc-4372-a567-0e02b2c3d479")


def test_decimal_and_uuid_round_trip(server):
    """asynctnt's Decimal and UUID (MP_EXT 1 and 2) are stored and returned unchanged."""
    async def main():
        conn = await setup(server)
        await conn.eval("box.schema.space.create('ext'):create_index('pk')")
        await wait_space(conn, "ext")
        row = [1, decimal.Decimal("-12.345"), UUID, [decimal.Decimal("1E+3")], {"u": UUID}]
        assert rows(await conn.insert("ext", row)) == [row]
        assert rows(await conn.select("ext", [1])) == [row]
        assert list(await conn.eval("return ...", row)) == row
        assert list(await conn.call("many", [decimal.Decimal("0.1"), UUID])) == [decimal.Decimal("0.1"), UUID]
        await conn.disconnect()
    run(main())


def test_decimal_in_a_number_index(server):
    """Decimals are numbers in 2.6: a `number` index orders them among integers and doubles."""
    async def main():
        conn = await setup(server)
        await conn.eval("box.schema.space.create('num'):create_index('pk', {parts = {{1, 'number'}}})")
        await wait_space(conn, "num")
        for v in [5, decimal.Decimal("1.25"), 3.5, -3, decimal.Decimal("7")]:
            await conn.insert("num", [v])
        assert rows(await conn.select("num")) == [[-3], [decimal.Decimal("1.25")], [3.5], [5], [decimal.Decimal("7")]]
        assert rows(await conn.select("num", [7])) == [[decimal.Decimal("7")]]
        await conn.disconnect()
    run(main())


def test_sql_execute(request, server):
    """asynctnt's execute() is IPROTO_EXECUTE: SQL DDL, DML with bindings and a SELECT with metadata."""

    async def main():
        conn = await setup(server)
        res = await conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
        assert res.rowcount == 1
        res = await conn.execute("INSERT INTO t VALUES (?, ?), (?, ?)", [1, "a", 2, "b"])
        assert res.rowcount == 2
        res = await conn.execute("SELECT * FROM t WHERE id > ?", [0])
        assert rows(res) == [[1, "a"], [2, "b"]]
        assert [f.name for f in res.metadata.fields] == ["ID", "V"]
        await conn.disconnect()
    run(main())


def test_session_push(request, server):
    """box.session.push() sends IPROTO_CHUNK messages that asynctnt delivers before the final answer."""

    async def main():
        conn = await setup(server)
        fut = conn.eval("box.session.push('one') box.session.push({2}) return 'done'", push_subscribe=True)
        pushes = [p async for p in asynctnt.PushIterator(fut)]
        assert pushes == [["one"], [[2]]]  # each push arrives as an IPROTO_DATA array
        assert list(await fut) == ["done"]
        await conn.disconnect()
    run(main())


def test_uuid_is_not_a_scalar(request, server):
    """In 2.6 a `scalar` field takes decimals but not uuids (error 23)."""
    oncebox_lacks(request, server, "oncebox's scalar field accepts any extension value, uuid included "
                  "(_idempotency's token key is a scalar, and uuid tokens must fit it)")

    async def main():
        conn = await setup(server)
        await conn.eval("box.schema.space.create('sc'):create_index('pk', {parts = {{1, 'scalar'}}})")
        await wait_space(conn, "sc")
        assert rows(await conn.insert("sc", [decimal.Decimal("2.5")])) == [[decimal.Decimal("2.5")]]
        with pytest.raises(TarantoolDatabaseError) as e:
            await conn.insert("sc", [UUID])
        assert (e.value.code, e.value.message) == (
            23, "Tuple field 1 type does not match one required by operation: expected scalar")
        await conn.disconnect()
    run(main())
