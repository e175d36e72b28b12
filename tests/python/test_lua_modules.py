"""Tarantool's Lua modules (digest, clock, log, fun, yaml, tap) compared with real Tarantool 2.6.

Every case EVALs the same Lua on both servers (as admin) and the replies must be
equal; runtime-volatile values (clocks, random bytes) are compared as booleans
computed in Lua. Errors compare by message, without the `file:line:` prefix
(Tarantool's modules are named `builtin/x.lua`). Log lines are compared by
running the same script under `tarantool` and `oncebox`.
"""
import os
import re
import subprocess
import textwrap

import pytest

from conftest import ADMIN_PASSWORD, ONCEBOX, start_oncebox, start_tarantool
from iproto_raw import EVAL, Raw

PRELUDE = ("local digest, clock, log, fun, yaml, json, tap = require('digest'), require('clock'), require('log'), "
           "require('fun'), require('yaml'), require('json'), require('tap') ")


@pytest.fixture(scope="module")
def conns():
    real, ours = start_tarantool(), start_oncebox()
    pair = []
    for inst in (real, ours):
        c = Raw(inst.host, inst.port)
        assert c.auth("admin", ADMIN_PASSWORD)[0][0] == 0
        pair.append(c)
    yield pair
    for c in pair:
        c.close()
    real.stop()
    ours.stop()


def run(conn, code, args=()):
    header, body, _ = conn.request(EVAL, {0x27: PRELUDE + code, 0x21: list(args)})
    if header[0] == 0:
        return ("ok", body.get(0x30))
    message = body.get(0x31, "")
    return ("error", re.sub(r"^[\w/.\-]+:\d+: ", "", message))


def same(conns, code, *args):
    real, ours = conns
    expected, actual = run(real, code, args), run(ours, code, args)
    assert actual == expected, f"{code}\n tarantool: {expected}\n oncebox:   {actual}"
    return expected


def same_ok(conns, code, *args):
    """As `same`, and the code must succeed with at least one value."""
    status, values = same(conns, code, *args)
    assert status == "ok" and values, (code, values)
    return values


# -- digest -----------------------------------------------------------------

HASHES = ["sha1", "sha224", "sha256", "sha384", "sha512", "md5"]
INPUTS = ["", "abc", "The quick brown fox jumps over the lazy dog", "\x00\xff binary \x01"]


@pytest.mark.parametrize("algo", HASHES)
def test_digest_hashes(conns, algo):
    for s in INPUTS:
        same_ok(conns, f"local s = ... return digest.{algo}_hex(s), digest.{algo}(s)", s)


def test_digest_known_values(conns):
    # Checked against the published test vectors, not only against Tarantool.
    values = same_ok(conns, "return digest.sha256_hex('abc'), digest.md5_hex(''), digest.sha1_hex('abc')")
    assert values == ["ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
                      "d41d8cd98f00b204e9800998ecf8427e", "a9993e364706816aba3e25717850c26c9cd0d89d"]


def test_digest_crc32_is_castagnoli(conns):
    values = same_ok(conns, """
        local c = digest.crc32.new() c:update('a') local copy = c:copy() c:update('bc')
        return digest.crc32('abc'), digest.crc32(''), digest.crc32(string.rep('x', 1000)),
               digest.crc32_update(0, 'abc'), digest.crc32_update(digest.crc32.crc_begin, 'abc'),
               digest.crc32_update(digest.crc32('ab'), 'c'), c:result(), copy:result(), digest.crc32.crc_begin""")
    assert values[0] == 3384066120  # CRC-32C, not zlib's CRC-32 (891568578)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 53, 54, 55, 100, 108, 200])
def test_digest_base64_encode(conns, n):
    values = same_ok(conns, """
        local s = string.rep('xyz', 100):sub(1, ...) .. string.char(255, 254)
        return digest.base64_encode(s), digest.base64_encode(s, {nopad = true}),
               digest.base64_encode(s, {nowrap = true}), digest.base64_encode(s, {urlsafe = true}),
               digest.base64_encode(s, {nopad = true, nowrap = true}),
               digest.base64_decode(digest.base64_encode(s)) == s""", n)
    assert values[-1] is True


def test_digest_base64_decode(conns):
    for text in ["YWJj", "YWI", "YW\nI=", "_-8", "+/8=", "!!!", "", "YWJjZA==garbage", "Y W J j"]:
        same_ok(conns, "return digest.base64_decode(...)", text)


def test_digest_murmur_guava_pbkdf2(conns):
    same_ok(conns, """
        local m = digest.murmur.new() m:update('a') local mc = m:copy() m:update('bc')
        local m2 = digest.murmur.new({seed = 5}) m2:update('abc')
        return digest.murmur('abc'), digest.murmur(''), digest.murmur('abcd'), digest.murmur('abc', {seed = 5}),
               m:result(), mc:result(), m2:result(), digest.murmur.default_seed""")
    same_ok(conns, "local r = {} for s = -5, 300, 7 do r[#r + 1] = digest.guava(s, 13) end "
                   "return r, digest.guava(5, 0), digest.guava(123456789, 1000)")
    same_ok(conns, "return digest.pbkdf2_hex('pass', 'salt', 10, 16), #digest.pbkdf2('pass', 'salt', 1), "
                   "digest.pbkdf2('p', 's', 2, 8) == digest.pbkdf2('p', 's', 2, 8)")


def test_digest_urandom_and_errors(conns):
    same_ok(conns, "local a, b = digest.urandom(16), digest.urandom(16) return #a, a ~= b, #digest.urandom(0)")
    for call in ["digest.sha1(5)", "digest.sha256_hex()", "digest.md5_hex({})", "digest.crc32(5)",
                 "digest.base64_encode(5)", "digest.base64_decode(nil)", "digest.murmur(5)", "digest.pbkdf2(5)",
                 "digest.pbkdf2('a', 'b', 'c')"]:
        status, _ = same(conns, f"return {call}")
        assert status == "error", call


# -- clock ------------------------------------------------------------------

def test_clock_functions(conns):
    values = same_ok(conns, """
        local r = {}
        for _, f in ipairs{'time', 'realtime', 'monotonic', 'proc', 'thread'} do
            local a, b = clock[f](), clock[f]()
            local a64, b64 = clock[f .. '64'](), clock[f .. '64']()
            r[#r + 1] = {f, type(a), a > 0, b >= a, type(a64), b64 >= a64, tostring(a64):match('^%d+ULL$') ~= nil}
        end
        local t, t64 = clock.time(), clock.time64()
        r[#r + 1] = math.abs(tonumber(t64) / 1e9 - t) < 1
        r[#r + 1] = math.abs(clock.time() - os.time()) < 2
        return r""")
    assert values[0][0] == ["time", "number", True, True, "cdata", True, True]


def test_clock_bench_and_int64_results(conns):
    same_ok(conns, """
        local r = clock.bench(function(a, b) return a + b, 'x' end, 1, 2)
        return #r, type(r[1]), r[2], r[3]""")
    values = same_ok(conns, "local t = clock.monotonic64() return t - t, t > 0, (t + 1) - t")
    assert values == [0, True, 1]
    status, message = same(conns, "return clock.bench()")
    assert status == "error" and "call" in message


# -- log --------------------------------------------------------------------

def test_log_calls(conns):
    same_ok(conns, """
        log.info('x %d %s', 5, 'y') log.info({a = 1, b = {1, 2}}) log.info('plain %d') log.info(nil)
        log.warn('w') log.error('e') log.verbose('v') log.debug('d') log.info(12) log.info('a', 'b')
        return type(log.info), type(log.warn), type(log.error), type(log.verbose), type(log.debug),
               type(log.level), type(log.log_format), type(log.pid), type(log.rotate), type(log.cfg),
               log.crit == nil, log.syserror == nil""")
    # The reference server logs at level 2: info is dropped before formatting, error is formatted.
    assert same(conns, "log.level(2) log.info('%d', 'x') return true") == ("ok", [True])
    assert same(conns, "log.error('%d', 'x')") == ("error", "bad argument #2 to '?' (number expected, got string)")


LOG_SCRIPT = textwrap.dedent("""\
    local log = require('log')
    log.info('x %d %s', 5, 'y')
    log.info({1, 2, {3}})
    log.info('plain %d')
    log.warn('w') log.error('e %s', 'f')
    log.verbose('hidden') log.debug('hidden too')
    log.info(nil) log.info(true) log.info(12.5)
    box.cfg{work_dir = os.getenv('WORK'), log_level = 5}
    log.info('after cfg %d', 1)
    log.warn('a warning')
    log.verbose('not shown')
    os.exit(0)
    """)

LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \[\d+\] \S+ (\S+:\d+ )?([A-Z!])> (.*)$")


def log_lines(cmd, tmp_path):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=tmp_path,
                         env=dict(os.environ, WORK=str(tmp_path)))
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    before = lines[:lines.index("true") + 2]
    after = [m.groups() for m in map(LINE.match, lines) if m and m.group(3) in ("after cfg 1", "a warning")]
    return before, after


def test_log_lines_match_tarantool(tmp_path):
    if not shutil_which("tarantool"):
        pytest.skip("real tarantool is not installed")
    (tmp_path / "real").mkdir()
    (tmp_path / "ours").mkdir()
    for d in ("real", "ours"):
        (tmp_path / d / "app.lua").write_text(LOG_SCRIPT)
    expected = log_lines(["tarantool", "app.lua"], tmp_path / "real")
    actual = log_lines([ONCEBOX, "app.lua"], tmp_path / "ours")
    assert expected[0] == ["x 5 y", "[1,2,[3]]", "plain %d", "w", "e f", "nil", "true", "12.5"]
    assert actual == expected
    assert [kind for _, kind, _ in actual[1]] == ["I", "W"]


def shutil_which(name):
    import shutil
    return shutil.which(name)


# -- fun --------------------------------------------------------------------

FUN_CASES = [
    "return fun.iter({1, 2, 3}):map(function(x) return x * 2 end):filter(function(x) return x > 2 end):totable()",
    "local r = {} for _, x in fun.range(3) do r[#r + 1] = x end return r",
    "local r = {} for _, k, v in fun.iter({a = 1}) do r[#r + 1] = k .. v end return r",
    "local r = {} for _, c in fun.iter('abc') do r[#r + 1] = c end return r",
    "return fun.range(1, 10, 3):totable(), fun.range(-3):totable(), fun.range(5, 1):totable(), "
    "fun.range(0, 1, 0.25):totable(), fun.range(2, 8, -1):totable()",
    "return fun.iter('abc'):totable(), fun.iter('hello'):length(), fun.length({1, 2, 3}), fun.length({}), "
    "fun.range(10):sum(), fun.range(5):product(), fun.sum({})",
    "return fun.range(10):reduce(function(a, x) return a + x end, 0), "
    "fun.foldl(function(a, x) return a * x end, 1, {1, 2, 3, 4}), fun.reduce(function(a, k, v) return a + v end, 0, "
    "{a = 1, b = 2})",
    "return fun.zip({1, 2, 3}, {'a', 'b'}):totable(), "
    "fun.zip((fun.range(3)), 'xyz'):map(function(a, b) return a .. b end):totable()",
    "return fun.chain({1, 2}, 'ab', (fun.range(2))):totable()",
    "return fun.take_n(2, {5, 6, 7}):totable(), fun.take(function(x) return x < 3 end, fun.range(10)):totable(), "
    "fun.drop_n(2, {5, 6, 7}):totable(), fun.drop_while(function(x) return x < 3 end, fun.range(5)):totable(), "
    "fun.take(2, {1, 2, 3}):totable(), fun.drop(1, 'abc'):totable(), fun.take_while(function(x) return x < 0 end, "
    "{1}):totable(), fun.take_n(0, {1}):totable()",
    "return fun.enumerate({'a', 'b'}):totable(), fun.duplicate('x'):take(3):totable(), "
    "fun.range(3):cycle():take(7):totable(), fun.zeros():take(2):totable(), fun.ones():take(2):totable(), "
    "fun.tabulate(function(i) return i * 10 end):take(3):totable(), fun.xrepeat(5):take(2):totable()",
    "return fun.head({9, 8}), fun.nth(2, {9, 8}), fun.nth(5, {9, 8}), fun.nth(2, fun.range(5)), fun.car('xy'), "
    "fun.nth(3, 'abc'), fun.tail({1, 2, 3}):totable(), fun.cdr({}):totable()",
    "return fun.head({})",
    "return fun.min({})",
    "return fun.iter(5)",
    "return fun.any(function(x) return x > 2 end, {1, 2, 3}), fun.all(function(x) return x > 2 end, {1, 2, 3}), "
    "fun.some(function(x) return x > 5 end, {1}), fun.every(function(x) return x > 0 end, {}), "
    "fun.min({3, 1, 2}), fun.max({'a', 'c', 'b'}), fun.minimum({5}), fun.maximum(fun.range(4)), "
    "fun.index(3, {1, 2, 3}), fun.index_of('z', {'a'}), fun.elem_index('b', 'abc')",
    "return fun.grep('^a', {'ab', 'ba', 'ac'}):totable(), fun.tomap(fun.zip({'a', 'b'}, {1, 2})), "
    "fun.indexes('a', {'a', 'b', 'a'}):totable(), fun.remove_if(function(x) return x % 2 == 0 end, "
    "fun.range(5)):totable(), fun.grep(function(x) return x > 1 end, {1, 2, 3}):totable()",
    "local a, b = fun.partition(function(x) return x % 2 == 0 end, fun.range(6)) return a:totable(), b:totable()",
    "local x, y = fun.span(2, {1, 2, 3, 4}) local z, w = fun.split(function(v) return v < 3 end, fun.range(5)) "
    "return x:totable(), y:totable(), z:totable(), w:totable()",
    "return fun.intersperse('x', {'a', 'b', 'c'}):totable(), fun.is_null({}), fun.is_null({1}), "
    "fun.is_prefix_of({1, 2}, {1, 2, 3}), fun.is_prefix_of({1, 3}, {1, 2, 3})",
    "local r = {} fun.each(function(a, b) r[#r + 1] = a + b end, fun.zip({1, 2}, {3, 4})) "
    "fun.for_each(function(x) r[#r + 1] = x end, 'ab') fun.range(2):foreach(function(x) r[#r + 1] = -x end) return r",
    "return fun.range(5):map(fun.op.unm):totable(), fun.op.add(1, 2), fun.op.floordiv(-7, 2), fun.op.intdiv(-7, 2), "
    "fun.op.mod(-7, 2), fun.op.truediv(7, 2), fun.op.truth(nil), fun.op.land(1, 2), fun.op.lor(nil, 3), "
    "fun.op.concat('a', 'b'), fun.op.len('abc'), fun.op.neq(1, 2), fun.operator.lt(1, 2)",
    "local it = fun.range(3):map(function(x) return x * x end) return it:totable(), it:totable(), it:sum()",
    "return fun.iter({a = 1}):map(function(k, v) return k .. v end):totable(), "
    "fun.min_by(function(a, b) if a < b then return a end return b end, {5, 2, 8}), "
    "fun.max_by(function(a, b) if a > b then return a end return b end, {5, 2, 8})",
    "return tostring(fun.range(3)), fun.rands(5):take(4):map(function(x) return x >= 0 and x < 5 end):totable(), "
    "fun.wrap(ipairs({7, 8})):totable()",
    "return fun.iter({1, 2, 3, 4, 5, 6}):filter(function(x) return x % 2 == 0 end):map(function(x) return x * x end)"
    ":reduce(function(a, x) return a + x end, 0), fun.range(100):drop(90):take(3):totable(), "
    "fun.range(3):zip(fun.range(4, 6)):totable(), fun.range(2):chain({'a'}):totable()",
    "local t = {} for _, i, x in fun.enumerate({'p', 'q'}) do t[#t + 1] = tostring(i) .. x end return t",
]


@pytest.mark.parametrize("code", FUN_CASES)
def test_fun(conns, code):
    same(conns, code)


def test_fun_cases_are_not_all_errors(conns):
    ok = [code for code in FUN_CASES if run(conns[0], code)[0] == "ok"]
    assert len(ok) >= len(FUN_CASES) - 3


# -- yaml -------------------------------------------------------------------

YAML_VALUES = [
    "{1, 2}", "{a = 1}", "5", "'str'", "{}", "{a = {b = {1, 2}}}", "{c = 'x y'}", "true", "''", "{{1, 2}, {a = 1}}",
    "setmetatable({1, 2}, {__serialize = 'seq'})", "setmetatable({a = 1}, {__serialize = 'map'})", "'multi\\nline'",
    "{a = 'multi\\nline'}", "string.rep('word ', 30)", "{k = {}}", "{{}}", "{a = ''}", "{''}", "1.5", "'123'",
    "-0.0", "1e100", "2^53", "0.1", "-5", "{1, box.NULL, 3}", "box.NULL", "'null'", "'yes'", "'on'", "'Null'", "'- x'",
    "'-x'", "'a: b'", "' lead'", "'#x'", "'x#'", "'@x'", "\"it's\"", "'0x10'", "{['key with: colon'] = 1}",
    "{[true] = 1}", "'tab\\there'", "'\\1ctl'", "{a = {b = {c = {d = 'deep'}}}}", "{'a', {'b', {'c'}}}", "1e15",
    "2^63", "-2^63", "1/3", "'é'", "{x = {1, {y = 2}, {}}}", "clock and 12345678901234ULL",
]


@pytest.mark.parametrize("value", YAML_VALUES)
def test_yaml_encode(conns, value):
    values = same_ok(conns, f"local clock = require('clock') return yaml.encode({value})")
    assert values[0].startswith("---")


YAML_DOCS = [
    "---\n- 1\n- 2\n...\n", "a: 1\nb: [1, 2]\nc: {x: y}\n", "- a\n- b: 1\n  c: 2\n", "'quoted'", '"dq\\n"', "null",
    "~", "true", "1.5", "0x10", "abc def", "[1, [2, 3], {a: b}]", "a:\n  - 1\n  - 2\nb:\n  c: d\n",
    'key: "va: lue"', "- yes\n- no\n- on\n- Off\n- True", "a: |\n  line1\n  line2\nb: 2", "# comment\na: 1 # trailing\n",
    "1e3", "-7", "'it''s'", "--- 5\n...", "inf", "nan", "012", "+5", "1_000", "2001-12-14", "-0",
    "a: >\n  x\n  y\n\n  z\nb: 1", "a: |-\n  x\n", "a: |+\n  x\n\n", "'a\n  b'", '"a\n  b"', '"\\u00e9\\t\\x41"',
    "a:\n- 1\n- 2", "- - 1\n  - 2\n- 3", "{a: [1, {b: c}], d: \"e\"}", "[a, \"b, c\", 'd']", "- a # c\n- \"b\" # d",
    "a: 1\na: 2", "? x\n: y", "!!str 5", "&a x", "a: {}", "a: []", "[]", "{}", "- \n- x", "key:    spaced   ",
    '"x": 1', "'y': 2", "a: b:c", "url: http://x.y/z", "-", "---", "--- |\n  lit\n", "a b\n  c d\n",
    "servers:\n  - host: a\n    port: 1\n  - host: b\n    port: 2\nname: app\n", "a:\n  b:\n    c:\n      - 1\n",
    "a: b: c", "[1, 2", "{a: 1", "- a\n b: 1", "a: 'unterminated",
]


@pytest.mark.parametrize("doc", YAML_DOCS)
def test_yaml_decode(conns, doc):
    same(conns, "local ok, v = pcall(yaml.decode, ...) if ok then return 'ok', v ~= v and 'nan' or v end "
                "return 'error', v ~= nil", doc)


def test_yaml_round_trip_and_mts(conns):
    values = same_ok(conns, """
        local v = {name = 'app', list = {1, 2.5, 'three', true}, nested = {deep = {x = 'y z'}}, empty = {}}
        local back = yaml.decode(yaml.encode(v))
        return back, yaml.decode(yaml.encode(back)).nested.deep.x == 'y z', getmetatable(yaml.decode('a: 1')) == yaml.map_mt,
               getmetatable(yaml.decode('[1]')) == yaml.array_mt, yaml.decode('a: ~').a == yaml.NULL,
               select('#', yaml.decode('- 1\\n---\\n- 2\\n')), yaml.decode(5), type(yaml.new), type(yaml.cfg)""")
    assert values[1] is True


# -- tap --------------------------------------------------------------------

TAP_SCRIPT = textwrap.dedent("""\
    local tap = require('tap')
    local test = tap.test('top')
    test:plan(14)
    print(test:ok(true, 'ok true'))
    print(test:ok(false, 'ok false'))
    test:is(1, 1, 'is equal')
    test:is(1, 2, 'is not equal')
    test:isnt(1, 2, 'isnt')
    test:is_deeply({1, {a = 2}}, {1, {a = 2}}, 'deep')
    test:is_deeply({1, {a = 2}}, {1, {a = 3}}, 'deep fail')
    test:is_deeply({1, 2}, {1, 2, 3}, 'deep missing')
    test:like('hello', 'h.l', 'like')
    test:unlike('hello', 'x', 'unlike')
    test:diag('a diag %d', 5)
    print(test:test('sub', function(t) t:plan(2) t:ok(true, 'inner') t:is('a', 'b', 'inner is') end))
    print(test:test('sub2', function(t, x)
        t:plan(2) t:is(x, 7, 'arg passed')
        t:test('subsub', function(s) s:plan(1) s:ok(true, 'deep inside') end)
    end, 7))
    test:skip('skipped thing')
    test:fail('explicit fail')
    print(test:check())
    local t2 = tap.test('noplan')
    t2:ok(true)
    t2:isnil(nil, 'isnil') t2:isnumber(5, 'isnumber') t2:isstring('s') t2:istable({}) t2:isboolean(true)
    t2:isfunction(print, 'isfunction') t2:isudata(1, 'x', 'isudata') t2:iscdata(1, 'int', 'iscdata')
    t2:ok(true, 'with extra', {a = 1})
    t2:is(nil, box.NULL, 'nil vs NULL')
    t2:isstring(5, 'not a string')
    print(t2:check())
    print((pcall(t2.check, t2)))
    local t3 = tap.test('good')
    t3:plan(2) t3:ok(1, 'truthy') t3:is_deeply({a = {b = {1}}}, {a = {b = {1}}}, 'deep ok')
    print(t3:check())
    print(tap.test('withfn', function(t) t:plan(1) t:ok(true, 'in fn') end))
    """)


TAP_DEEP_SCRIPT = textwrap.dedent("""\
    local tap = require('tap')
    local ffi = require('ffi')
    local test = tap.test('deep')
    test:plan(14)
    test:is('line one\\nline two\\n', 'line one\\nline 2\\n', 'multi-line strings')
    test:is_deeply({a = 1, b = box.NULL}, {a = 1}, 'NULL where got has no key')
    test:is_deeply({a = 1}, {a = 1, b = box.NULL}, 'NULL where expected has no key')
    test:is_deeply({foo = {f1 = {int = 1}, f2 = box.NULL}}, {foo = {f2 = box.NULL, f1 = {int = 1}}}, 'NULL on both')
    test:is_deeply({0 / 0}, {0 / 0}, 'NaN')
    test:is_deeply({1}, {1LL}, 'number and int64')
    test:is_deeply({ffi.new('bool', true)}, {true}, 'ffi bool')
    test:is_deeply({a = {b = 1}}, {a = {b = 2}}, 'nested difference')
    test:is_deeply({a = 1}, {a = 1, c = 2}, 'a key missing')
    test:is_deeply(1, 2, 'scalars')
    test:is_deeply('x', 'x', 'strings')
    test:is(1, 1LL, 'is: number and int64')
    test:isnt(nil, box.NULL, 'isnt: nil and NULL')
    test:is(nil, box.NULL, 'is: nil and NULL')
    local strict = tap.test('strict')
    strict.strict = true
    strict:plan(5)
    strict:is_deeply({a = 1}, {a = 1, b = box.NULL}, 'strict: NULL where got has no key')
    strict:is(nil, box.NULL, 'strict: is nil and NULL')
    strict:isnt(nil, box.NULL, 'strict: isnt nil and NULL')
    strict:is_deeply({1}, {'1'}, 'strict: types')
    strict:is_deeply({a = {1}}, {a = {1}}, 'strict: equal')
    """)


def test_tap_deep_comparison_matches_tarantool(tmp_path):
    """is_deeply, is and isnt by 2.6's rules: box.NULL against a missing key (equal
    unless strict), NaN, int64 and ffi booleans, and where a difference is reported."""
    if not shutil_which("tarantool"):
        pytest.skip("real tarantool is not installed")
    (tmp_path / "t.lua").write_text(TAP_DEEP_SCRIPT)
    expected, real_blocks = tap_output(["tarantool", "t.lua"], tmp_path)
    actual, our_blocks = tap_output([ONCEBOX, "t.lua"], tmp_path)
    assert "ok - NULL where expected has no key" in expected
    assert actual == expected
    # (The blocks themselves: test_tap_output_matches_tarantool_line_for_line.)
    assert len(our_blocks) == len(real_blocks)

def tap_output(cmd, cwd):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=cwd)
    assert out.returncode == 0, out.stderr
    lines, blocks, block = [], [], None
    for line in out.stdout.splitlines():
        if line.strip() == "---":
            block = []
        elif line.strip() == "..." and block is not None:
            blocks.append(block)
            block = None
        elif block is not None:
            block.append(line.strip())
        else:
            lines.append(line)
    return lines, blocks


def test_tap_output_matches_tarantool(tmp_path):
    if not shutil_which("tarantool"):
        pytest.skip("real tarantool is not installed")
    (tmp_path / "t.lua").write_text(TAP_SCRIPT)
    expected, real_blocks = tap_output(["tarantool", "t.lua"], tmp_path)
    actual, our_blocks = tap_output([ONCEBOX, "t.lua"], tmp_path)
    assert expected[:3] == ["TAP version 13", "1..14", "ok - ok true"]
    assert actual == expected
    # (The blocks themselves: test_tap_output_matches_tarantool_line_for_line.)
    assert len(our_blocks) == len(real_blocks)


TAP_TYPES_SCRIPT = textwrap.dedent("""\
    local fiber = require('fiber')
    local test = require('tap').test('types')
    test:plan(12)
    test:isnil(nil, 'nil')
    test:isnil(false, 'false counts as nil')
    test:isnil(0, 'zero')
    test:isnil('x', 'a string')
    test:is({f = print}, 1, 'a function in the details')
    test:isudata(fiber.self(), 'fiber', 'a fiber')
    test:isudata(fiber.self(), 'socket', 'a fiber for a socket')
    test:isudata(1, 'fiber', 'a number')
    test:isboolean(false, 'isboolean')
    local ffi = require('ffi')
    test:iscdata(ffi.new('int', 1), 'int', 'an int')
    test:iscdata(ffi.new('unsigned int', 1), 'int', 'an unsigned int for an int')
    test:iscdata(10, 'int', 'a number for an int')
    os.exit(0)
    """)


def test_tap_type_checks_match_tarantool(tmp_path):
    """isnil takes false, as 2.6's; isudata names the userdata's type; iscdata
    tells ctypes apart (and shows them, not their ids); a function in the
    details is written as its tostring() (it stopped the script)."""
    if not shutil_which("tarantool"):
        pytest.skip("real tarantool is not installed")
    (tmp_path / "t.lua").write_text(TAP_TYPES_SCRIPT)
    expected, real_blocks = tap_output(["tarantool", "t.lua"], tmp_path)
    actual, our_blocks = tap_output([ONCEBOX, "t.lua"], tmp_path)
    assert "ok - false counts as nil" in expected and "ok - a fiber" in expected
    assert actual == expected
    assert len(our_blocks) == len(real_blocks) == 7
    for ours, real in zip(our_blocks, real_blocks):
        assert set(ours) <= set(real), (ours, real)


# -- box.tuple extras, strict, errno -----------------------------------------

TUPLE_CASES = [
    "local t = box.tuple.new{1, 'a', {2, 3}, 'a'} return t:bsize(), t:find('a'), t:find(2, 'a'), t:findall('a'), "
    "t:findall(2, 'a'), t:find('zz')",
    "local t = box.tuple.new{1, 'a', {2, 3}, 'a'} local r = {} for i, v in t:pairs() do r[#r + 1] = {i, v} end "
    "for i, v in t:ipairs() do r[#r + 1] = i end return r, t:next(), t:next(2), t:next(4)",
    "local t = box.tuple.new{1, 2, 3, 4} return t:transform(2, 1), t:transform(1, 0, 'x', 'y'), t:transform(-1, 1), "
    "t:transform(2, 10), t:transform(5, 0, 'end')",
    "local t = box.tuple.new{1, 'a', 5} return t:update{{'=', 2, 'b'}}, t:update{{'+', 1, 5}, {'!', 1, 0}}, "
    "t:upsert{{'+', 1, 5}}, t:update{{'#', 1, 1}}, t:upsert{{'+', 2, 1}, {'-', 3, 1}}, t",
    "local t = box.tuple.new{1} return t:update{{'=', 10, 1}}",
    "local t = box.tuple.new{1} return t:update{{'+', 1, 'x'}}",
    "return tostring(box.tuple.new{1, 'a', {2, 3}, {a = 1}, true, box.NULL, 1.5, \"it's\"}), tostring(box.tuple.new{})",
    "return box.tuple.new(1, 2, 3), box.tuple.new{}, box.tuple.new({'a', {b = 1}}), box.tuple.is(box.tuple.new{1})",
]


@pytest.mark.parametrize("code", TUPLE_CASES)
def test_tuple_methods(conns, code):
    status, _ = same(conns, code)
    expect_error = "{'=', 10, 1}" in code or "{'+', 1, 'x'}" in code
    assert status == ("error" if expect_error else "ok")


def test_strict_and_errno(conns):
    same_ok(conns, """
        local strict, errno = require('strict'), require('errno')
        local before = {pcall(function() return undefined_global_x end)}
        strict.on()
        local on = {pcall(function() return undefined_global_x end)}
        rawset(_G, 'declared_zz', 1)
        local declared = {pcall(function() return declared_zz end)}
        strict.off()
        local after = {pcall(function() return undefined_global_x end)}
        rawset(_G, 'declared_zz', nil)
        return before, on[1], on[2]:match("variable 'undefined_global_x' is not declared") ~= nil, declared, after""")
    same_ok(conns, """
        local errno = require('errno')
        return errno.EINVAL, errno.ENOENT, errno.EAGAIN, errno.ECONNREFUSED, errno.ETIMEDOUT, errno.EADDRINUSE,
               errno.strerror(2), errno.strerror(errno.EINVAL), type(errno()), errno.NOT_AN_ERRNO""")


# -- sparse arrays (msgpack, json, yaml and the console share the rule) -------

SPARSE = ["{[1] = 'a', [3] = 'b'}", "{[2] = 1}", "{[20] = 1}", "{[1] = 1, [2] = 2, [4] = 4}", "{1, 2, nil, 4}",
          "{nil, nil, 3}", "{[0] = 1}", "{[-1] = 1}", "{[10] = 1}", "{[11] = 1}", "{[1] = 1, [2] = 2, [3] = 3, [12] = 4}",
          "{[1] = 1, [2] = 2, [3] = 3, [4] = 4, [5] = 5, [6] = 6, [12] = 7}"]


@pytest.mark.parametrize("table", SPARSE)
def test_sparse_tables_serialize_as_in_tarantool(conns, table):
    status, values = same(conns, f"local t = {table} return t, (next(t, next(t)) == nil or #t > 0) "
                                 "and {json.encode(t), yaml.encode(t)} or nil")
    assert status == "ok"


def test_digest_aes256cbc(conns):
    values = same_ok(conns, """
        local key, iv = string.rep('k', 32), string.rep('i', 16)
        local r = {}
        for _, s in ipairs({'', 'hello world', string.rep('x', 16), string.rep('y', 100)}) do
            local e = digest.aes256cbc.encrypt(s, key, iv)
            r[#r + 1] = {digest.base64_encode(e), digest.aes256cbc.decrypt(e, key, iv) == s}
        end
        return r""")
    assert values[0][1] == ["ioKNFMhJ1U5QPG7Ri3bZnA==", True]
    assert same(conns, "return digest.aes256cbc.encrypt('x', 'short', string.rep('i', 16))") == \
        ("error", "key size expected 32, got 5")
    # A bad block fails on both (the OpenSSL error text differs).
    bad = "return digest.aes256cbc.decrypt('garbage!', string.rep('k', 32), string.rep('i', 16))"
    assert run(conns[0], bad)[0] == run(conns[1], bad)[0] == "error"


def test_space_pairs_is_a_fun_iterator(conns):
    values = same_ok(conns, """
        local s = box.schema.space.create('fun_pairs', {if_not_exists = true})
        s:create_index('pk', {if_not_exists = true})
        s:truncate()
        for i = 1, 5 do s:replace{i, i * i} end
        local seen = {}
        for _, t in s:pairs() do seen[#seen + 1] = t[2] end
        local r = {seen, s:pairs():map(function(t) return t[1] end):totable(),
                   s:pairs({3}, {iterator = 'GE'}):filter(function(t) return t[2] > 10 end):length(),
                   s.index.pk:pairs():reduce(function(acc, t) return acc + t[2] end, 0),
                   fun.iter(s:select{}):take(2):map(function(t) return t[2] end):totable(),
                   s:pairs({99}):totable()}
        s:drop()
        return r""")
    assert values[0][0] == [1, 4, 9, 16, 25]


YAML_FRAGMENTS = [
    "a: 1", "b:", "- x", "- ", "  - y", "  c: d", "[1, 2]", "{e: f}", "'q'", '"dq"', "# c", "", "g: |", "  lit", "h: >",
    "    fold", "- - z", "i: [1, {j: k}]", "---", "...", "k: 'multi", "  line'", "l: null", "m: ~", "n: yes", "o: 0x1f",
    "p: -3.5", "? q", ": r", "  s: t", "    u: v", "- w: 1", "  x: 2", "y: &a z", "zz: !!str 1",
    "key with spaces: value with spaces", "t:\tab", "url: http://a/b",
]


@pytest.mark.parametrize("seed", [1, 2])
def test_yaml_decode_random_documents(conns, seed):
    """Documents glued from fragments, valid or not: the same value, or an error on both."""
    import random
    rng = random.Random(seed)
    code = ("local r = {pcall(yaml.decode, ...)} if not r[1] then return 'ERR' end "
            "if r[2] ~= r[2] then return 'nan' end return unpack(r, 2, #r)")
    errors = 0
    for _ in range(200):
        doc = "\n".join(rng.choice(YAML_FRAGMENTS) for _ in range(rng.randint(1, 6)))
        status, values = same(conns, code, doc)
        errors += values == ["ERR"]
    assert 0 < errors < 200


TRICKY_STRINGS = [
    "", "a", "a b", "a: b", "- x", "-x", "#x", "x #y", "null", "Null", "yes", "on", "1", "1.5", "0x10", "1e5", " x", "x ",
    "it's", 'say "hi"', "multi\nline", "tab\there", "é", "\x01", "{x}", "[x]", "a,b", "?", ":", "x:", "@x", "`x", "|",
    ">", "!x", "&x", "*x", "%x", "~", "true", "a" * 100, "word " * 20, "inf", "nan", "-", "--", "---", "...", "a\n\nb",
    "trailing\n", "a \nb", "x\n\n y", " a\n\nb", "a\n\n\nb\n\n",
]
NUMBERS = ["0", "1", "-1", "1.5", "-0.25", "1e20", "2^53", "2^63", "1/0", "-1/0", "123456789", "0.1", "1e-10",
           "3.14159265358979"]


def lua_string(s):
    return '"' + "".join(c if c.isalnum() or c in " :-#.,'@`|>!&*%~?{}[]" else "\\%d" % ord(c) for c in s
                         if ord(c) < 128) + '"' if s.isascii() else '"' + s + '"'


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_yaml_and_json_encode_random_values(conns, seed):
    """Random nests of tricky strings, numbers, arrays and one-key maps (one key: no hash order)."""
    import random
    rng = random.Random(seed)

    def gen(depth):
        r = rng.random()
        if depth > 3 or r < 0.4:
            if rng.random() < 0.5:
                return lua_string(rng.choice(TRICKY_STRINGS))
            return rng.choice(NUMBERS + ["true", "false", "box.NULL"])
        if r < 0.7:
            return "{" + ", ".join(gen(depth + 1) for _ in range(rng.randint(0, 3))) + "}"
        return "{[" + lua_string(rng.choice(TRICKY_STRINGS)) + "] = " + gen(depth + 1) + "}"

    for _ in range(150):
        same_ok(conns, f"local v = {gen(0)} return yaml.encode(v), json.encode(v), "
                         "yaml.encode(yaml.decode(yaml.encode(v))) == yaml.encode(v)")


def test_tap_output_matches_tarantool_line_for_line(tmp_path):
    """Whole TAP output, details blocks included: their keys in 2.6's order, the
    frames of the stack 2.6 records (`trace`, `filename`, `line`), and no block
    when there is nothing to tell; only the line numbers of the tap module's own
    frames may differ (its source is not 2.6's)."""
    if not shutil_which("tarantool"):
        pytest.skip("real tarantool is not installed")

    def normalized(cmd):
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        return re.sub(r"line: \d+(\n\s+source: '@builtin/tap\.lua')", r"line: N\1", out.stdout).splitlines()

    for n, script in enumerate((TAP_SCRIPT, TAP_DEEP_SCRIPT)):
        (tmp_path / f"t{n}.lua").write_text(script)
        expected = normalized(["tarantool", f"t{n}.lua"])
        assert any("trace:" in line for line in expected)
        assert normalized([ONCEBOX, f"t{n}.lua"]) == expected
