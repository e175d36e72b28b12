"""Lua over IPROTO (EVAL, CALL, CALL_16) compared with real Tarantool 2.6.

The same Lua runs on both servers as admin; replies are normalized like the
other differential tests (schema versions, error file/line) and must match. The
schema the Lua creates is compared through the catalogue views too, which proves
that box.schema writes the same system rows as Tarantool's.
"""
import pytest

from conftest import ADMIN_PASSWORD, start_oncebox, start_tarantool
from iproto_raw import CALL, CALL_16, EVAL, INSERT, SELECT, Raw
from test_differential import Pair, without_known_differences  # noqa: F401

SETUP = """
local s = box.schema.space.create('people', {format = {{'id', 'unsigned'}, {'name', 'string'},
                                                       {name = 'age', type = 'unsigned', is_nullable = true}}})
s:create_index('primary')
s:create_index('by_name', {parts = {'name'}, unique = false})
s:create_index('by_age', {parts = {{3, 'unsigned', is_nullable = true}}, unique = false})
local h = box.schema.space.create('kv', {id = 600})
h:create_index('pk', {type = 'hash', parts = {1, 'string'}})
box.schema.user.create('carol', {password = 'c'})
box.schema.user.grant('carol', 'read', 'space', 'people')
box.schema.func.create('multi')
box.schema.user.grant('carol', 'execute', 'function', 'multi')
box.schema.role.create('readers')
box.schema.user.grant('carol', 'readers')
function multi() return 1, 'two', {3} end
function seven() return 7 end
function nothing() end
function two_arrays() return {1, 2}, {3} end
function rows() return box.space.people:select{} end
function flat() return {1, 2, 3} end
function empty() return {} end
function amap() return {a = 1} end
function fail() error('boom') end
function fail_box() box.error{code = 4242, reason = 'custom reason'} end
function fail_code() box.error(box.error.NO_SUCH_SPACE, 'nowhere') end
function add(a, b) return a + b end
function echo(...) return ... end
"""


def start_pair(setup):
    """Real Tarantool 2.6 and oncebox, each after running `setup` as admin."""
    real, ours = start_tarantool(), start_oncebox()
    try:
        for inst in (real, ours):
            c = Raw(inst.host, inst.port)
            assert c.auth("admin", ADMIN_PASSWORD)[0][0] == 0
            h, b, _ = c.request(EVAL, {0x27: setup, 0x21: []})
            assert h[0] == 0, (inst.kind, b)
            c.close()
    except BaseException:
        # A failed setup must not leave both servers running.
        real.stop()
        ours.stop()
        raise
    return real, ours


def pair_fixture(setup):
    """A module-scoped fixture: the server pair of `start_pair(setup)`, stopped after the module."""
    @pytest.fixture(scope="module")
    def servers():
        real, ours = start_pair(setup)
        yield real, ours
        real.stop()
        ours.stop()
    return servers


servers = pair_fixture(SETUP)


def admin_pair(servers):
    real, ours = servers
    p = Pair(Raw(real.host, real.port), Raw(ours.host, ours.port))
    p.auth("admin", ADMIN_PASSWORD)
    return p


def ev(p, code, *args):
    return p(EVAL, {0x27: code, 0x21: list(args)})


def test_schema_rows_written_by_lua_match(servers):
    p = admin_pair(servers)
    for space in (281, 289, 305):
        p(SELECT, {0x10: space, 0x12: 1000, 0x14: 5, 0x20: [512] if space != 305 else [32]})
    p(SELECT, {0x10: 313, 0x12: 1000, 0x14: 0, 0x20: [32]})
    p(SELECT, {0x10: 297, 0x12: 1000, 0x14: 0, 0x11: 2, 0x20: ["multi"]})


def test_eval_result_shapes(servers):
    p = admin_pair(servers)
    for code in ("return 1, 'two', {3}", "return", "return nil", "return {}", "return {a = 1}", "return 1.5",
                 "return true, false", "return 2^53", "return -7", "return 'x', {1, {2, {3}}}",
                 "return box.space.people:insert{1, 'Alice', 30}", "return box.space.people:select{}",
                 "return box.space.people:get{1}", "return box.space.people:get{1}.name",
                 "return #box.space.people:get{1}", "return box.space.people:get{1}:totable()",
                 "return box.space.people:count(), box.space.people:len()"):
        ev(p, code)
    ev(p, "return ...", 1, "two", [3], {"k": "v"})
    ev(p, "local a, b = ... return a + b", 2, 3)


def test_eval_errors(servers):
    p = admin_pair(servers)
    for code in ("return 1 +", "error('boom')", "local t = nil; return t.x", "box.error{code = 4242, reason = 'r'}",
                 "box.error(box.error.NO_SUCH_SPACE, 'x')", "box.error(box.error.ILLEGAL_PARAMS, 'bad')",
                 "return box.space.people:insert{1, 'dup'}", "return box.space.nope:select{}",
                 "return box.space.people:insert{'x', 'y'}", "return box.schema.space.create('people')",
                 "return box.schema.user.create('carol')"):
        ev(p, code)


def test_call_and_call16_shapes(servers):
    p = admin_pair(servers)
    ev(p, "box.space.people:replace{2, 'Bob'} box.space.people:replace{3, 'Carl', 40}")
    for name in ("multi", "seven", "nothing", "two_arrays", "rows", "flat", "empty", "amap"):
        p(CALL, {0x22: name, 0x21: []})
        p(CALL_16, {0x22: name, 0x21: []})
    p(CALL, {0x22: "add", 0x21: [2, 40]})
    p(CALL, {0x22: "echo", 0x21: [1, "a", [1, 2], {"m": 1}, None, True, 1.25]})
    p(CALL, {0x22: "box.space.people:len", 0x21: []})
    p(CALL, {0x22: "box.space.people.index.primary:count", 0x21: [[], {}]})
    p(CALL, {0x22: "box.space.people:select", 0x21: [[2]]})
    p(CALL, {0x22: "box.space.people.index.by_name:select", 0x21: [["Bob"]]})


def test_call_errors(servers):
    p = admin_pair(servers)
    for name in ("fail", "fail_box", "fail_code", "no_such_function", "box.nope.x", "math.nope"):
        p(CALL, {0x22: name, 0x21: []})


def test_call_rights(servers):
    real, ours = servers
    p = Pair(Raw(real.host, real.port), Raw(ours.host, ours.port))
    p.auth("carol", "c")
    p(CALL, {0x22: "multi", 0x21: []})
    p(CALL, {0x22: "seven", 0x21: []})
    p(EVAL, {0x27: "return 1", 0x21: []})
    g = Pair(Raw(real.host, real.port), Raw(ours.host, ours.port))
    g(CALL, {0x22: "multi", 0x21: []})


def test_call_rights_follow_function_changes(servers):
    """CALL checks a function's `_func` row as it is now: created, recreated setuid
    and dropped between one user's calls (oncebox remembers the rows CALL looked
    up). A definition cannot be altered in place, as 2.6 says."""
    real, ours = servers
    admin = admin_pair(servers)
    carol = Pair(Raw(real.host, real.port), Raw(ours.host, ours.port))
    carol.auth("carol", "c")
    carol(CALL, {0x22: "later", 0x21: []})
    ev(admin, "function later() return box.session.euid(), box.session.uid() end "
              "box.schema.func.create('later') box.schema.user.grant('carol', 'execute', 'function', 'later')")
    carol(CALL, {0x22: "later", 0x21: []})
    ev(admin, "return box.space._func.index.name:update('later', {{'=', 4, 1}})")
    ev(admin, "return box.space._func:replace(box.space._func.index.name:get('later'))[3]")
    carol(CALL, {0x22: "later", 0x21: []})
    ev(admin, "box.schema.func.drop('later') box.schema.func.create('later', {setuid = true}) "
              "box.schema.user.grant('carol', 'execute', 'function', 'later')")
    carol(CALL, {0x22: "later", 0x21: []})
    ev(admin, "box.schema.func.drop('later')")
    carol(CALL, {0x22: "later", 0x21: []})


def test_space_methods(servers):
    p = admin_pair(servers)
    for code in ("return box.space.people:update(1, {{'+', 3, 1}})", "return box.space.people:update(99, {{'+', 3, 1}})",
                 "return box.space.people:upsert({4, 'Dan', 1}, {{'+', 3, 1}})",
                 "return box.space.people:upsert({4, 'Dan', 1}, {{'+', 3, 1}})", "return box.space.people:get(4)",
                 "return box.space.people:delete(4)", "return box.space.people:delete(4)",
                 "return box.space.people.index.by_age:select({}, {iterator = 'GE'})",
                 "return box.space.people.index.primary:select({2}, {iterator = 'LT'})",
                 "return box.space.people:select({}, {limit = 1, offset = 1})",
                 "return box.space.people.index.primary:min(), box.space.people.index.primary:max()",
                 "return box.space.people.index.by_name:get{'Bob'}",
                 "return box.space.kv:insert{'k', 1}", "return box.space.kv:get{'k'}",
                 "return box.space.kv:select({'k'}, {iterator = 'LT'})",
                 "return box.space.people.id, box.space.people.name, box.space.people.index.by_name.id",
                 "return box.space.people.index[0].name, box.space[600].name, box.space.nope"):
        ev(p, code)


def test_transactions(servers):
    p = admin_pair(servers)
    for code in ("box.begin() box.space.kv:insert{'t1', 1} box.rollback() return box.space.kv:get{'t1'}",
                 "box.begin() box.space.kv:insert{'t2', 1} box.commit() return box.space.kv:get{'t2'}",
                 "return pcall(box.atomic, function() box.space.kv:insert{'t3', 1} error('x') end)",
                 "return box.space.kv:get{'t3'}",
                 "return box.atomic(function() box.space.kv:insert{'t4', 4} return 'done' end)",
                 "return box.is_in_txn()"):
        ev(p, code)


def test_read_only_mode(servers):
    p = admin_pair(servers)
    ev(p, "box.cfg{read_only = true} local ok, e = pcall(box.space.people.insert, box.space.people, {9, 'x'}) "
          "local ro = box.info.ro box.cfg{read_only = false} return ok, tostring(e), ro, box.info.ro")


def test_session_storage_is_per_session(servers):
    one, two = admin_pair(servers), admin_pair(servers)
    ev(one, "box.session.storage.seen = (box.session.storage.seen or 0) + 1")
    ev(one, "box.session.storage.seen = box.session.storage.seen + 1 box.session.storage.name = 'one'")
    assert ev(one, "return box.session.storage.seen, box.session.storage.name")[1][0x30] == [2, "one"]
    assert ev(two, "return box.session.storage.seen, next(box.session.storage)")[1][0x30] == [None, None]
    # As in 2.6, assigning the field replaces every session's storage, until it is cleared.
    ev(two, "box.session.storage = {mine = true}")
    assert ev(one, "return box.session.storage.mine")[1][0x30] == [True]
    ev(two, "box.session.storage = nil")
    assert ev(one, "return box.session.storage.seen, box.session.storage.mine")[1][0x30] == [2, None]
    # A session that reconnects is a new session, with a new storage.
    for c in (one.a, one.b):
        c.close()
    again = admin_pair(servers)
    assert ev(again, "return box.session.storage.seen")[1][0x30] == [None]


def test_fiber_storage(servers):
    p = admin_pair(servers)
    first = "local f = require('fiber').self() f.storage.x = 1 return f.storage.x, type(f.storage), f.storage == f.storage"
    assert ev(p, first)[1][0x30] == [1, "table", True]
    # Each request runs in a fiber of its own: the storage does not carry over.
    assert ev(p, "return require('fiber').self().storage.x")[1][0x30] == [None]
    # Another fiber's storage, through its object, before and while it runs.
    assert ev(p, "local fiber = require('fiber') "
                 "local f = fiber.new(function() fiber.self().storage.y = fiber.self().storage.y + 1 fiber.sleep(0.01) end) "
                 "f:set_joinable(true) f.storage.y = 4 fiber.yield() local y = f.storage.y f:join() "
                 "return y, f:status()")[1][0x30] == [5, "dead"]
    # A dead fiber has no storage any more, as in 2.6.
    ev(p, "local fiber = require('fiber') local f = fiber.new(function() end) f.storage.z = 1 fiber.yield() "
          "return f:status(), f.storage")
    ev(p, "local fiber = require('fiber') local f = fiber.new(function() end) fiber.yield() "
          "return pcall(function() return f.storage end)")
    # Methods and fields still read through the object.
    ev(p, "local f = require('fiber').self() return f:status(), type(f:id()), f.storage.nothing, f.no_such_field")


def test_request_fibers_are_pooled(servers):
    p = admin_pair(servers)
    ev(p, "saved = require('fiber').self() saved_id = saved:id() ids = {} "
          "function note_fiber() ids[#ids + 1] = require('fiber').id() end "
          "function open_txn() box.begin() box.commit() return box.is_in_txn() end "
          "function rename() require('fiber').name('renamed') require('fiber').self().storage.k = 1 end "
          "function fiber_state() local f = require('fiber').self() return f:name(), f.storage.k, f == saved end")
    for _ in range(3):
        p(CALL, {0x22: "note_fiber", 0x21: []})
        p(CALL, {0x22: "open_txn", 0x21: []})
    # As in 2.6, requests one after the other run in the same pooled fiber: the
    # object kept from the first is the running fiber again.
    assert ev(p, "return saved:status(), saved:id() == saved_id, "
                 "ids[1] == ids[2] and ids[2] == ids[3] and ids[1] == saved_id, box.is_in_txn()"
              )[1][0x30] == ["running", True, True, False]
    # Its name stays, its storage does not.
    p(CALL, {0x22: "rename", 0x21: []})
    assert p(CALL, {0x22: "fiber_state", 0x21: []})[1][0x30] == ["renamed", None, True]


def test_box_space_follows_schema_changes(servers):
    """box.space.<name> caches space objects by schema version, which oncebox hands to
    Lua without a call per lookup: changes made earlier in the same call, by another
    request in Lua, and by IPROTO writes to the system spaces must all show."""
    p = admin_pair(servers)
    # Within one call: a space created, then an index added, then dropped.
    ev(p, "local s = box.schema.space.create('fresh') s:create_index('pk') box.space.fresh:insert{1} "
          "box.space.fresh:create_index('second', {parts = {1, 'unsigned'}}) "
          "local r = {box.space.fresh.index.second:select{}, box.space.fresh.index.second ~= nil} "
          "box.space.fresh:drop() return r, box.space.fresh")
    # A space object held across requests sees an index another request added.
    ev(p, "held = box.schema.space.create('held') held:create_index('pk') return held.index[1]")
    ev(p, "box.space.held:create_index('sk', {parts = {1, 'unsigned'}}) return box.space.held.index.sk.id")
    ev(p, "return held.index.sk.id, held.index[1] ~= nil")
    # An index made by an IPROTO INSERT into _index shows in Lua at the next lookup.
    sid = ev(p, "return box.space.held.id")[1][0x30][0]
    p(INSERT, {0x10: 288, 0x21: [sid, 2, "by_iproto", "tree", {"unique": True}, [[0, "unsigned"]]]})
    ev(p, "return box.space.held.index.by_iproto.id, held.index.by_iproto ~= nil")
    ev(p, "box.space.held:drop() return box.space.held")
