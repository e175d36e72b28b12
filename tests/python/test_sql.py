"""SQL (`box.execute`, IPROTO EXECUTE) compared with real Tarantool 2.6.

The Lua script runs the same statements on both servers and prints each result
in a fixed order (not hanging on how each table was built): result
columns' names and types, rows, row counts and autoincremented ids, or the error's
code and message; then the catalogue rows CREATE TABLE and CREATE INDEX wrote.
Over IPROTO, each EXECUTE reply body must be byte-identical (a `double` column's
integral values travel as doubles, a varbinary as MP_BIN), errors equal but for
their C file and line. The tarantool-python connector's `execute()` sees the same
results from both; a table made by SQL survives a restart; a tokened EXECUTE is
refused, not silently run without deduplication.
"""
import io

import msgpack
import pytest
import tarantool

import subprocess

from conftest import ADMIN_PASSWORD, ONCEBOX, same_output_on_both, start_oncebox, start_tarantool
from iproto_raw import DELETE, EVAL, INSERT, SELECT, UPDATE, Raw, normalize

EXECUTE, PREPARE = 0x0B, 0x0D

SHOW = r"""
box.cfg{log_level = 1}
local json = require('json')
local function show(sql, ...)
    local r, e = box.execute(sql, ...)
    if e ~= nil then
        print(sql .. ' => ERR ' .. e.code .. ' ' .. e.message)
        return
    end
    if r.metadata ~= nil then
        local cols = {}
        for i, c in ipairs(r.metadata) do cols[i] = c.name .. ':' .. c.type end
        local rows = {}
        for i, row in ipairs(r.rows) do
            local vals = {}
            for j = 1, #r.metadata do vals[j] = json.encode(row[j]) end
            rows[i] = '[' .. table.concat(vals, ',') .. ']'
        end
        print(sql .. ' => ' .. table.concat(cols, ',') .. ' ' .. table.concat(rows, ' '))
    else
        local ids = r.autoincrement_ids and (' ids ' .. table.concat(r.autoincrement_ids, ',')) or ''
        print(sql .. ' => rows ' .. r.row_count .. ids)
    end
end
local function fields(m, keys)
    local out = {}
    for i, k in ipairs(keys) do out[i] = k .. '=' .. tostring(m[k]) end
    return table.concat(out, ' ')
end
"""

STATEMENTS = r"""
show([[create table foo (id INTEGER PRIMARY KEY AUTOINCREMENT, name varchar(20))]])
for _, f in ipairs(box.space.FOO:format()) do
    print(fields(f, {'name', 'type', 'is_nullable', 'nullable_action', 'default'}))
end
local s = box.space._space:get(box.space.FOO.id)
print(s[1], s[2], s[3], s[4], s[5], json.encode(s[6]))
for _, ix in box.space._index:pairs({box.space.FOO.id}) do
    print(ix[3], ix[4], ix[5].unique)
    for _, p in ipairs(ix[6]) do print(fields(p, {'field', 'type', 'is_nullable', 'nullable_action', 'sort_order'})) end
end
print(json.encode(box.space._sequence:select{}[1]:totable()), json.encode(box.space._space_sequence:select{}[1]:totable()))
show([[insert into foo values (:id, :name)]], {{[':id'] = box.NULL}, {[':name'] = 'Michael'}})
show([[insert into foo values (null, 'b'), (10, 'c'), (null, 'd')]])
show([[INSERT INTO foo (name) VALUES ('e')]])
show([[select * from foo]])
show([[select name, id + 1, id * 2.5 as x, 'a' || name from foo where id in (1, 11) order by name desc]])
show([[select name from foo where id in (1, 3, 5)]])
show([[select count(*), sum(id), min(id), max(name), avg(id) from foo]])
show([[select count(id), sum(id), avg(id) from foo where id > 100]])
show([[select id from foo order by id desc limit 2 offset 1]])
show([[select id from foo where name like 'c%' or name = 'b']])
show([[select id from foo where id between 2 and 11 and not id = 10]])
show([[select id from foo where name is null]])
show([[select distinct name is not null from foo]])
show([[update foo set name = 'zz' where id > 2]])
show([[select name, count(*) from foo group by name]])
show([[delete from foo where id in (4, 5, 10)]])
show([[select * from foo]])
show([[select 1, 2.5, 'x', null, true, 7 / 2, -7 / 2, 7 % 3, 7 / 2.0, 1 = 1, 1 < 2, null = 1, 1 + null]])
show([[values (1, 'a'), (2, 'b')]])
show([[select upper('ab'), lower('AB'), length('abc'), abs(-2), coalesce(null, 3), typeof(1)]])
show([[select cast(1 as text), cast('2' as integer)]])
show([[select ?, ?]], {1})
show([[select id from foo where id = :x]], {{[':x'] = 1}})
show([[select * from foo where id = ?]], {2})
show([[select ?]], {'s'})
show([[select 9223372036854775807, 18446744073709551615, 1e3, .5]])
show([[select 1;]])
show([[create table t (a int primary key, b text not null, c number default 5, d double, e boolean,
       h unsigned, i integer unique)]])
for _, f in ipairs(box.space.T:format()) do
    print(fields(f, {'name', 'type', 'is_nullable', 'nullable_action', 'default'}))
end
show([[insert into t (a, b) values (1, 'x')]])
show([[insert into t (a) values (2)]])
show([[insert into t values (3, 'y', 1.5, 2, true, 7, 9)]])
show([[insert into t (a, b) values ('4', 'z')]])
show([[insert into t (a, b) values (4.0, 'z')]])
show([[insert into t (a, b) values (5.5, 'z')]])
show([[insert into t (a, b, h) values (6, 'z', -1)]])
show([[insert into t (a, b, d) values (7, 'z', 3)]])
show([[insert into t (a, b, c) values (8, 'z', 'q')]])
show([[insert into t (a, b, e) values (9, 'z', 1)]])
show([[insert into t (a, b, i) values (10, 'z', 9)]])
show([[insert into t (a, b, zz) values (10, 'z', 9)]])
show([[insert into t (a, b) values (11)]])
show([[insert into t values (12)]])
show([[insert into t (a, b) values (20, 'm'), (1, 'dup')]])
show([[select a from t where a = 20]])
show([[select * from t]])
print(box.space.T:get(7)[4], require('msgpack').encode(box.space.T:get(7)):byte(-1))
show([[select a from t where a = '1']])
show([[select a from t where b = 1]])
show([[select zz from t]])
show([[select a from nosuch]])
show([[update t set zz = 1]])
show([[update t set a = a + 100 where a = 1]])
show([[create index ib on t (b)]])
show([[create index ib on t (b)]])
local ib = box.space._index:get{box.space.T.id, 2}
print(ib[3], ib[4], ib[5].unique, fields(ib[6][1], {'field', 'type', 'is_nullable', 'nullable_action'}))
show([[select b from t order by b limit 2]])
show([[drop index ib on t]])
show([[drop index ib on t]])
show([[create table nopk (a int)]])
show([[create table t (x int primary key)]])
show([[create table if not exists t (x int primary key)]])
show([[replace into t (a, b) values (1, 'r')]])
show([[insert or replace into t (a, b) values (30, 'n')]])
show([[select a, b from t where a in (1, 30)]])
show([[delete from t]])
show([[drop table t]])
show([[drop table t]])
show([[drop table if exists t]])
show([[create table "lower" ("id" int primary key, v string, primary key ("id"))]])
show([[create table "lower" ("id" int primary key)]])
show([[insert into "lower" values (1)]])
show([[SELECT "id" FROM "lower"]])
show([[SELECT "ID" FROM "lower"]])
show([[create table w (id int, v string, primary key (v, id))]])
local w = box.space._index:get{box.space.W.id, 0}
print(w[3], w[6][1].field, w[6][2].field)
local st = box.prepare('select id, name from foo where id > ?')
print(st.stmt_id, st.param_count, st.params[1].name, st.params[1].type, #st.metadata, st.metadata[2].name,
      st.metadata[2].type)
local r = st:execute({1})
print(#r.rows, r.rows[1][1], r.metadata[1].name)
print(#box.execute(st.stmt_id, {1}).rows)
local ins = box.prepare('insert into foo values (?, :name)')
print(ins.param_count, ins.params[2].name, ins.metadata)
print(ins:execute({box.NULL, {[':name'] = 'prepared'}}).row_count)
print(select('#', st:unprepare()))
print(box.execute(st.stmt_id, {1}))
print(pcall(box.unprepare, st.stmt_id))
print(box.prepare('selec 1'))
show([[create table ja (id int primary key, name text)]])
show([[create table jb (id int primary key, a_id int, v text)]])
show([[insert into ja values (1, 'x'), (2, 'y'), (3, 'z')]])
show([[insert into jb values (10, 1, 'p'), (11, 1, 'q'), (12, 2, 'r'), (13, 9, 's')]])
show([[select * from ja join jb on ja.id = jb.a_id]])
show([[select ja.name, jb.v from ja join jb on ja.id = jb.a_id order by jb.v desc]])
show([[select ja.name, jb.v from ja inner join jb on ja.id = jb.a_id where jb.v > 'p']])
show([[select ja.name, jb.v from ja left join jb on ja.id = jb.a_id]])
show([[select ja.name, jb.v from ja left outer join jb on ja.id = jb.a_id]])
show([[select name, v from ja, jb where ja.id = jb.a_id]])
show([[select id from ja, jb]])
show([[select ja.id, count(*) from ja join jb on ja.id = jb.a_id group by ja.id]])
show([[select x.name, y.v from ja as x join jb y on x.id = y.a_id]])
show([[select * from ja cross join jb where ja.id = 3]])
show([[select ja.*, jb.v from ja join jb on ja.id = jb.a_id]])
show([[select ja.id from ja join jb using (id)]])
show([[select count(*) from ja, jb]])
show([[select zz.id from ja]])
show([[select ja.id from ja join nope on 1]])
show([[select ja.id from ja right join jb on ja.id = jb.a_id]])
-- Subqueries: IN, scalar (correlated too), in UPDATE and DELETE, their errors.
show([[select name from ja where id in (select a_id from jb)]])
show([[select name from ja where id not in (select a_id from jb where v > 'p')]])
show([[select name, (select count(*) from jb where jb.a_id = ja.id) from ja]])
show([[select name, (select count(*) from jb where jb.a_id = ja.id) as n from ja order by n desc]])
show([[select (select max(id) from jb), (select v from jb where id = 99)]])
show([[select (select id from jb)]])
show([[select (select id, v from jb)]])
show([[select name from ja where id = (select a_id from jb where v = 'r')]])
show([[select name from ja where id in (select id, v from jb)]])
show([[select name from ja where exists (select 1 from jb where v = 's')]])
show([[select name from ja where not exists (select 1 from jb where v = 'none')]])
show([[insert into ja select id + 100, v from jb where id > 11]])
show([[delete from ja where id in (select id + 100 from jb)]])
show([[update ja set name = (select v from jb where jb.a_id = ja.id and jb.id = 10) where id = 1]])
show([[select * from ja]])
-- Compound SELECTs and derived tables.
show([[select id from ja union select a_id from jb]])
show([[select id as k from ja union all select a_id from jb order by 1]])
show([[select a_id from jb union select id from ja]])
show([[select id, name from ja union all select a_id, v from jb order by 2 desc limit 3]])
show([[select id from ja except select a_id from jb]])
show([[select id from ja intersect select a_id from jb]])
show([[select id from ja union select a_id, v from jb]])
show([[select 1 union select 2.5 union select 'x']])
show([[select name from ja union select v from jb order by name]])
show([[select id from ja union all select a_id from jb limit 2 offset 1]])
show([[values (1) union values (2)]])
show([[select id from ja order by id union select a_id from jb]])
show([[select * from (select id from ja)]])
show([[select x.id from (select id, name from ja where id > 1) as x order by x.id desc]])
show([[select count(*) from (select a_id from jb group by a_id)]])
show([[select j.name, d.n from ja j join (select a_id, count(*) as n from jb group by a_id) d on d.a_id = j.id]])
show([[select x.id, x.k, x.name from (select *, id as k from ja) as x]])
show([[select x.k, x.id, k from (select id as k, * from ja) as x]])
-- 2.6's parser limits: its stack (nesting) and the height of an expression tree.
for _, sql in ipairs({'select ' .. string.rep('(', 92) .. '1' .. string.rep(')', 92),
                      'select ' .. string.rep('(', 93) .. '1' .. string.rep(')', 93),
                      'select ' .. string.rep('-(', 46) .. '1' .. string.rep(')', 46),
                      'select ' .. string.rep('-(', 47) .. '1' .. string.rep(')', 47),
                      'select ' .. string.rep('abs(', 30) .. '1' .. string.rep(')', 30),
                      'select ' .. string.rep('abs(', 31) .. '1' .. string.rep(')', 31),
                      'select ' .. string.rep('coalesce(1, ', 18) .. '1' .. string.rep(')', 18),
                      'select ' .. string.rep('coalesce(1, ', 19) .. '1' .. string.rep(')', 19),
                      'select ' .. string.rep('abs(-', 23) .. '1' .. string.rep(')', 23),
                      'select ' .. string.rep('abs(-', 24) .. '1' .. string.rep(')', 24),
                      'select ' .. string.rep('not ', 93) .. 'true', 'select ' .. string.rep('not ', 94) .. 'true',
                      'select ' .. string.rep('1 + ', 199) .. '1', 'select ' .. string.rep('1 + ', 200) .. '1',
                      'select 1 where ' .. string.rep('1 = 1 and ', 199) .. 'true',
                      'select ' .. string.rep('(', 100000) .. '1' .. string.rep(')', 100000)}) do
    local r, e = box.execute(sql)
    print(#sql, r and 'ok' or (e.code .. ' ' .. e.message))
end
show([[selec * from bar]])
show([[select * from]])
show([[select 1 +]])
show([[select a from t; select 1]])
show([[]])
show([[select 1/0]])
show([[select a from t limit -1]])
show([[select ?, ?]], {1, 2, 3})
show([[select id from foo where id = :x]], {{x = 1}})
print(pcall(box.execute, 'select 1', nil))
os.exit()
"""


def test_statements_match_tarantool(tmp_path):
    same_output_on_both(tmp_path, "sql.lua", SHOW + STATEMENTS, 178)


FUNCTIONS = r"""
local exprs = {
    "CASE WHEN 1 > 0 THEN 1 ELSE 'a' END", "CASE WHEN 1 < 0 THEN 1 ELSE 'a' END", "CASE WHEN 1 < 0 THEN 1 END",
    "CASE 1 WHEN 1 THEN 2.5 ELSE 3 END", "CASE NULL WHEN NULL THEN 1 ELSE 2 END", "CASE WHEN 'x' THEN 1 END",
    "CASE WHEN 2 THEN 1 END", "CASE 1 WHEN '1' THEN 'eq' ELSE 'ne' END", "CASE WHEN TRUE THEN x'01' END", "CASE 1 END",
    "CASE WHEN 1 > 0 THEN NULL ELSE 1 END", "CASE WHEN 1 = 1 THEN 'x' END || 'y'", "CASE 'a' WHEN 'A' THEN 1 ELSE 0 END",
    "1 << 3", "1 << -1", "-8 >> 1", "1 << 64", "5 & 3", "5 | 3", "~5", "~NULL", "5 & NULL", "5.5 & 3", "'5' & 3",
    "TRUE & 1", "9223372036854775807 << 1", "18446744073709551615 & 1", "1 >> 64", "-1 >> 64", "-1 >> 1", "1 << 63",
    "3 >> -1", "'3' | '4'", "~0", "~9223372036854775807", "1 + 2 << 1", "1 << 2 < 5",
    "round(2.567, 2)", "round(-2.5)", "round(2.5)", "round(5)", "round(NULL)", "round(1.23456789, 20)",
    "round(1.5, -1)", "round('2.5')", "round(2.567, 2.9)", "round(2.675, 2)", "round(-0.5)", "round(1e300)",
    "round(-1.45, 1)", "round(1, 2, 3)",
    "hex('ab')", "hex(x'00ff')", "hex(12)", "hex(NULL)", "hex(1.5)", "hex(TRUE)", "hex()",
    "quote('a''b')", "quote(12)", "quote(NULL)", "quote(1.5)", "quote(x'0a')", "quote(TRUE)",
    "unicode('a')", "unicode('')", "unicode(NULL)", "unicode('\xc3\xa9')", "unicode(12)", "unicode(TRUE)",
    "char(65, 66)", "char()", "char(NULL)", "char(233)", "char(65, NULL, 66)", "char(1.5)", "char('65')",
    "greatest(1, 5, 3)", "least(1, 5, 3)", "greatest(1, 'a')", "greatest(1, NULL)", "greatest(2.5, 1)",
    "least('b', 'a')", "greatest(1)", "greatest('a', x'01')", "least(TRUE, 1)", "greatest(1, 1.5, '2')",
    "position('l', 'hello')", "position('z', 'hello')", "position(NULL, 'a')", "position('', 'abc')",
    "position(1, 'a')", "position('b', x'616263')", "position('\xc3\xa9', 'h\xc3\xa9\xc3\xa9')",
    "printf('%d-%s', 5, 'a')", "printf('%5.2f', 3.14159)", "printf('%x', 255)", "printf(NULL)", "printf('%s')",
    "printf('%%')", "printf('%05d', 42)", "printf('%c', 'hello')", "printf('%q', 'it''s')", "printf('%-5s|', 'ab')",
    "printf('%e', 1234.5)", "printf('%g', 0.0001)", "printf('%d|%5s|%-3d|%.2f|%s|%c', '7', 'ab', 3, 2, NULL, 66)",
    "printf('%i %u %o %X %E %G', 5, 6, 8, 255, 1.5, 0.00001)", "printf('%Q %Q %q', 'a''b', NULL, NULL)",
    "printf('%d', 5.7)", "printf('%s', 1.5)", "printf('%s', TRUE)", "printf('%5.1s|', 'abc')", "printf('%z')",
    "printf()",
    "typeof(randomblob(3))", "length(randomblob(4))", "randomblob(-1)", "zeroblob(2)", "zeroblob(0)", "zeroblob(NULL)",
    "typeof(random())",
    "soundex('hello')", "soundex('Robert')", "soundex('')", "soundex(NULL)", "soundex('123')", "soundex('Tymczak')",
    "soundex('Pfister')", "soundex('Ashcraft')", "soundex('Lee')",
    "likelihood(1, 0.5)", "likelihood(1, 2)", "likely(1)", "unlikely('a')",
    "trim(LEADING 'x' FROM 'xxay')", "trim(TRAILING FROM 'x  ')", "trim(BOTH 'ab' FROM 'abxba')",
    "trim('xy' FROM 'xyaxy')", "trim(LEADING FROM '  a  ')", "trim(NULL)", "trim('  a  ')", "trim('  a  ', ' a')",
    "replace('hello', 'l', 'L')", "replace('aaa', 'a', '')", "replace('abc', '', 'x')", "replace(NULL, 'a', 'b')",
    "replace(12, 1, 3)",
    "abs(-5.5)", "abs(NULL)", "abs('x')", "abs(-9223372036854775808)", "abs(x'01')",
    "ifnull(NULL, 3)", "ifnull(1, 'a')", "ifnull('a', 'b')", "'abc' LIKE 'a%'", "'a' NOT LIKE 'b'",
    "NOT 'a' LIKE 'b'", "'10' + 5", "'1.5' + 1", "1.5 + '1'", "'2' * '3'", "'2' - 1.5", "NULL + 1", "-'5'",
    "substr('hello', -3)", "substr('hello', 0)", "substr('hello', 2)", "substr('hello', -3, 2)",
    "substr(x'010203', 2)", "substr('h\xc3\xa9llo', 2, 2)", "substr('hello', 2, -1)", "substr('hello', -10, 7)",
    "upper('\xc3\xa9')", "lower('\xc3\x89')", "upper(1)", "lower(1.5)", "upper(TRUE)", "upper(x'61')", "upper(1, 2)",
    "length(x'0102')", "length(12)", "length(NULL)", "length(1.5)", "length(TRUE)", "length(-1.5)",
    "3000000000000001 * 5", "9223372036854775807 + 1", "18446744073709551615 + 1", "-9223372036854775808 - 1",
    "0 - 9223372036854775808", "18446744073709551615 - 18446744073709551614", "-1 + 18446744073709551615",
    "4294967296 * 4294967296", "-4294967296 * 2147483648", "9223372036854775807 * -1", "- -9223372036854775808",
    "-(-9223372036854775807 - 1)", "-(18446744073709551615 - 1)", "9007199254740993 - 1", "-9223372036854775808",
    "-18446744073709551615", "-(9223372036854775808)", "9223372036854775807 / -1", "18446744073709551615 / 3",
    "-9223372036854775808 / 2", "18446744073709551615 % 10", "-9223372036854775807 % 10", "7 / -2", "-7 % 3",
    "true = 1", "1 = true", "'a' = true", "2.5 <> false", "true = true", "null = true", "1 IN (true, 1)",
    "true BETWEEN 0 AND 1", "false and 'x'", "'x' and false", "'y' and 'x'", "1 and 2", "trim(from 'a')",
    "trim()", "substr()",
}
for _, e in ipairs(exprs) do show('select ' .. e) end
show([[create table fn (id int primary key, name string, n int)]])
show([[insert into fn values (1, 'ann', 5), (2, 'bob', NULL), (3, 'cy', 12)]])
show([[select row_count()]])
show([[select row_count()]])
show([[update fn set n = n + 1 where id > 1]])
show([[select row_count(), row_count()]])
show([[select id, case when n is null then 'none' when n > 10 then 'big' else 'small' end as size from fn]])
show([[select case when count(*) > 2 then 'many' else 'few' end from fn]])
show([[select name from fn order by case id when 2 then 0 else id end]])
show([[select id from fn where case when n > 5 then true else false end]])
show([[select upper(name) || printf('-%03d', id), n & 1, n << 1 from fn]])
show([[select greatest(id, n), least(id, n), coalesce(n, -1), quote(name) from fn]])
show([[select trim(leading 'a' from name), substr(name, 2), position('b', name) from fn]])
-- Collations: in column definitions, indexes and comparisons.
show([[CREATE TABLE c3 (id INT PRIMARY KEY, name TEXT COLLATE "nope")]])
show([[CREATE TABLE c4 (id INT PRIMARY KEY COLLATE "unicode")]])
show([[CREATE TABLE c5 (id INT PRIMARY KEY, a TEXT COLLATE unicode)]])
show([[CREATE TABLE co (id INT PRIMARY KEY, a TEXT COLLATE "unicode_ci" UNIQUE, b TEXT, c SCALAR COLLATE "unicode_ci")]])
for _, f in ipairs(box.space.CO:format()) do print(fields(f, {'name', 'type', 'collation'})) end
for _, ix in box.space._index:pairs({box.space.CO.id}) do
    for _, p in ipairs(ix[6]) do print(ix[3], fields(p, {'field', 'type', 'collation'})) end
end
show([[INSERT INTO co VALUES (1, 'abc', 'abc', 'abc'), (2, 'B', 'B', 'B'), (3, 'a', 'a', 'a')]])
show([[INSERT INTO co VALUES (4, 'ABC', 'x', 'x')]])
for _, sql in ipairs({
    [[SELECT id FROM co WHERE a = 'ABC']], [[SELECT id FROM co WHERE b = 'ABC']], [[SELECT id FROM co WHERE 'ABC' = a]],
    [[SELECT id FROM co WHERE b = 'ABC' COLLATE "unicode_ci"]], [[SELECT id FROM co WHERE b COLLATE "unicode_ci" = 'ABC']],
    [[SELECT id FROM co WHERE c = 'ABC']], [[SELECT id FROM co WHERE a > 'aaa' ORDER BY id]], [[SELECT a FROM co ORDER BY a]],
    [[SELECT b FROM co ORDER BY b]], [[SELECT b FROM co ORDER BY b COLLATE "unicode_ci"]], [[SELECT 'a' COLLATE "nope"]],
    [[SELECT 1 COLLATE "unicode"]], [[SELECT 'a' COLLATE "unicode" = 'A' COLLATE "unicode_ci"]], [[SELECT a = b FROM co]],
    [[SELECT id FROM co WHERE a IN ('ABC', 'b')]], [[SELECT id FROM co WHERE a LIKE 'AB%']], [[SELECT max(a), min(a) FROM co]],
    [[SELECT 'a' COLLATE "unicode_ci" AS x]], [[SELECT id FROM co WHERE a BETWEEN 'A' AND 'B' ORDER BY id]]}) do
    show(sql)
end
-- DISTINCT, GROUP BY and count(DISTINCT ...) take equal values under a column's
-- or an operand's collation as one; GROUP BY may name a result column by number.
show([[CREATE TABLE gc (id INT PRIMARY KEY, name STRING COLLATE "unicode_ci", v INT, plain STRING)]])
show([[INSERT INTO gc VALUES (1, 'a', 1, 'x'), (2, 'A', 2, 'X'), (3, 'b', 3, 'y'), (4, 'B', 4, 'x'),
       (5, 'a', 5, 'Y'), (6, 'c', 6, 'x')]])
for _, sql in ipairs({
    [[SELECT DISTINCT name FROM gc]], [[SELECT name, count(*), sum(v) FROM gc GROUP BY name]],
    [[SELECT name FROM gc GROUP BY name ORDER BY name DESC]], [[SELECT count(DISTINCT name), count(DISTINCT plain) FROM gc]],
    [[SELECT DISTINCT plain FROM gc]], [[SELECT DISTINCT plain COLLATE "unicode_ci" FROM gc]],
    [[SELECT plain COLLATE "unicode_ci", count(*) FROM gc GROUP BY 1]],
    [[SELECT plain, count(*) FROM gc GROUP BY plain COLLATE "unicode_ci"]], [[SELECT DISTINCT name, plain FROM gc]],
    [[SELECT count(DISTINCT plain COLLATE "unicode_ci") FROM gc]], [[SELECT v FROM gc GROUP BY 2]],
    [[SELECT v FROM gc GROUP BY 0]], [[SELECT v FROM gc GROUP BY -1]], [[SELECT v, id FROM gc GROUP BY 1, 3]],
    [[SELECT v FROM gc ORDER BY 2]], [[SELECT name, v FROM gc GROUP BY 2, 1 ORDER BY 2]]}) do
    show(sql)
end
show([[CREATE INDEX ib ON co (b COLLATE "unicode_ci", a)]])
for _, p in ipairs(box.space.CO.index.IB.parts) do print(p.fieldno, p.collation) end
-- Session settings: box.session.settings, _session_settings, SET SESSION, and
-- what sql_full_metadata, sql_full_column_names and sql_default_engine change.
for _, t in box.space._session_settings:pairs() do print(t[1], t[2]) end
local settings = box.space._session_settings
print(box.space._session_settings.id, box.space._session_settings.engine)
print(pcall(settings.insert, settings, {'x', 1}))
print(pcall(settings.delete, settings, {'sql_full_metadata'}))
print(pcall(settings.replace, settings, {'sql_full_metadata', true}))
print(pcall(settings.upsert, settings, {'sql_full_metadata', true}, {{'=', 2, true}}))
print(pcall(settings.update, settings, {'sql_full_metadata'}, {{'=', 2, 1}}))
print(pcall(settings.update, settings, {'sql_full_metadata'}, {{'=', 1, 'x'}}))
print(pcall(settings.update, settings, {'sql_full_metadata'}, {{'+', 2, 1}}))
print(pcall(settings.update, settings, {'nope'}, {{'=', 2, true}}))
print(settings:update({'sql_full_metadata'}, {{'=', 'value', true}}))
print(box.session.settings.sql_full_metadata, settings:get{'sql_vdbe_debug'}, settings:get{'nope'})
print(#settings:select({'sql_'}, {iterator = 'LT'}), settings.index.primary:select({'sql_full_metadata'})[1])
print(#settings:select({'sql_full'}, {iterator = 'GE', limit = 2}), settings:count())
show([[CREATE TABLE md (id INT PRIMARY KEY AUTOINCREMENT, name TEXT COLLATE "unicode_ci", n INT NOT NULL)]])
local function metadata(sql)
    local r, e = box.execute(sql)
    if r == nil then print(sql, e.code, e.message) return end
    for _, m in ipairs(r.metadata) do
        local keys = {}
        for k, v in pairs(m) do keys[#keys + 1] = k .. '=' .. tostring(v) end
        table.sort(keys)
        print(table.concat(keys, ' '))
    end
end
metadata([[SELECT id, name, n, n + 1, 'x' AS y, name || 'a', md.n FROM md]])
metadata([[SELECT * FROM md]])
print(pcall(function() box.session.settings.sql_full_metadata = 5 end))
print(pcall(function() box.session.settings.nope = true end))
print(pcall(function() return box.session.settings.nope end))
box.session.settings.sql_full_metadata = false
box.session.settings.sql_full_column_names = true
metadata([[SELECT id, md.name, n + 1, 1 AS x, m.n FROM md, md AS m]])
show([[SELECT * FROM "_session_settings" WHERE "name" = 'sql_full_column_names']])
show([[SET SESSION "sql_full_column_names" = false]])
show([[SET SESSION "sql_default_engine" = 'nope']])
show([[SET SESSION "sql_default_engine" = 5]])
show([[SET SESSION "nope" = 5]])
show([[SET SESSION "sql_default_engine" = 'vinyl']])
show([[CREATE TABLE vy (id INT PRIMARY KEY)]])
print(box.space.VY.engine, box.session.settings.sql_default_engine)
show([[UPDATE "_session_settings" SET "value" = 'memtx' WHERE "name" = 'sql_default_engine']])
print(box.session.settings.sql_default_engine)
os.exit()
"""


def test_functions_case_and_bitwise_operators_match_tarantool(tmp_path):
    same_output_on_both(tmp_path, "sql_functions.lua", SHOW + FUNCTIONS, 340)


def body_bytes(raw):
    """A reply's body as sent (after the length and the header)."""
    unpacker = msgpack.Unpacker(io.BytesIO(raw[5:]), raw=False, strict_map_key=False)
    unpacker.unpack()
    return raw[5 + unpacker.tell():]


@pytest.fixture(scope="module")
def servers():
    real, ours = start_tarantool(), start_oncebox()
    yield real, ours
    real.stop()
    ours.stop()


def test_execute_replies_are_byte_identical(servers):
    conns = []
    for inst in servers:
        c = Raw(inst.host, inst.port)
        assert c.auth("admin", ADMIN_PASSWORD)[0][0] == 0
        conns.append(c)
    statements = [
        {0x40: "create table bytes (a int primary key autoincrement, b double, c varbinary, d scalar)", 0x41: []},
        {0x40: "insert into bytes values (null, 2, x'00ff', 'x'), (5, 2.5, null, 1)", 0x41: []},
        {0x40: "insert into bytes (b) values (?)", 0x41: [3]},
        {0x40: "select a, b, b * 2, c, d from bytes"},
        {0x40: "select a from bytes where a = ?", 0x41: [1]},
        {0x40: "select :x, ?", 0x41: [{":x": "named"}, 2]},
        {0x40: "update bytes set b = 1"},
        {0x40: "delete from bytes where a > 1"},
        {0x40: "select x'0102', 1.5, true, null, 'str'"},
        {0x40: "select round(2.5), round(2.567, 2), 5 & 3, case when true then 'a' end, zeroblob(2), greatest(1, 2.5)"},
        {0x40: "select hex(c), quote(b), abs(-a), substr(c, 1, 1), char(65) from bytes"},
        {0x40: 'SET SESSION "sql_full_metadata" = true'},
        {0x40: "select a, b * 2 as x, c, d, 'lit' from bytes"},
        {0x40: 'SET SESSION "sql_full_column_names" = true'},
        {0x40: "select a, bytes.b, 1 as one from bytes"},
        {0x40: 'SET SESSION "sql_full_metadata" = false'},
        {0x40: "select * from bytes"},
        {0x40: 'SET SESSION "sql_full_column_names" = false'},
        {0x40: 'SET SESSION "nope" = false'},
        {0x40: 'SET SESSION "sql_full_metadata" = 1'},
        {0x40: "select 1", 0x2b: []},
        {0x40: "selec"},
        {0x40: "select nope from bytes"},
        {0x41: []},
        {0x43: 7},
        {0x40: "select 1", 0x43: 7},
    ]
    select_id = 4238322938  # murmur("select a, b from bytes where a > ?"), as 2.6 numbers it
    prepared = [
        {0x40: "select a, b from bytes where a > ?"},
        {0x40: "insert into bytes values (?, :x, null, null)"},
        {0x40: "SELECT ?"},
        {0x40: "values (1, 'a')"},
        {0x40: "selec"},
        {0x43: 5},
        {},
    ]
    steps = [(EXECUTE, b) for b in statements] + [(PREPARE, b) for b in prepared] + [
        (EXECUTE, {0x43: select_id, 0x41: [0]}),
        (EXECUTE, {0x43: select_id, 0x41: [0, 1]}),
        (PREPARE, {0x43: select_id}),
        (EXECUTE, {0x43: select_id, 0x41: [0]}),
        (PREPARE, {0x43: select_id}),
        (EXECUTE, {0x40: "drop table bytes"}),
    ]
    for rtype, step in steps:
        replies = [c.request(rtype, step) for c in conns]
        (h1, b1, raw1), (h2, b2, raw2) = replies
        assert normalize(h1, b1) == normalize(h2, b2), (step, b1, b2)
        if h1[0] == 0:
            assert body_bytes(raw1) == body_bytes(raw2), (step, body_bytes(raw1).hex(), body_bytes(raw2).hex())
    # A statement is prepared for its session only.
    others = [Raw(inst.host, inst.port) for inst in servers]
    for c in conns:
        c.request(PREPARE, {0x40: "select 1"})
    for o in others:
        h, b, _ = o.request(EXECUTE, {0x43: 4094013948})  # murmur("select 1")
        assert b[0x31] == "Prepared statement with id 4094013948 does not exist", b
        o.close()
    for c in conns:
        c.close()


def test_session_settings_over_iproto(servers):
    """A connector reads and sets its session's settings through _session_settings
    (asynctnt's full-metadata test does), and EXECUTE then answers as 2.6 does."""
    steps = [
        (SELECT, {0x10: 380, 0x11: 0, 0x12: 100, 0x13: 0, 0x14: 2, 0x20: []}),
        (SELECT, {0x10: 380, 0x11: 0, 0x12: 100, 0x13: 0, 0x14: 0, 0x20: ["sql_full_metadata"]}),
        (UPDATE, {0x10: 380, 0x11: 0, 0x20: ["sql_full_metadata"], 0x21: [["=", 1, True]]}),
        (EXECUTE, {0x40: "select 1 as a, 'x'"}),
        (UPDATE, {0x10: 380, 0x11: 0, 0x20: ["sql_full_metadata"], 0x21: [["=", "value", False]]}),
        (UPDATE, {0x10: 380, 0x11: 0, 0x20: ["sql_full_metadata"], 0x21: [["=", 1, 5]]}),
        (UPDATE, {0x10: 380, 0x11: 0, 0x20: ["nope"], 0x21: [["=", 1, True]]}),
        (INSERT, {0x10: 380, 0x21: ["x", 1]}),
        (DELETE, {0x10: 380, 0x11: 0, 0x20: ["sql_full_metadata"]}),
        (SELECT, {0x10: 380, 0x11: 0, 0x12: 2, 0x13: 0, 0x14: 5, 0x20: ["sql_full"]}),
        (EXECUTE, {0x40: "select 1 as a"}),
    ]
    conns = []
    for inst in servers:
        c = Raw(inst.host, inst.port)
        assert c.auth("admin", ADMIN_PASSWORD)[0][0] == 0
        conns.append(c)
    for rtype, step in steps:
        (h1, b1, raw1), (h2, b2, raw2) = [c.request(rtype, step) for c in conns]
        assert normalize(h1, b1) == normalize(h2, b2), (rtype, step, b1, b2)
        if h1[0] == 0:
            assert body_bytes(raw1) == body_bytes(raw2), (step, body_bytes(raw1).hex(), body_bytes(raw2).hex())
    for c in conns:
        c.close()


def test_python_connector_execute(servers):
    results = []
    for inst in servers:
        conn = tarantool.Connection(inst.host, inst.port, user="admin", password=ADMIN_PASSWORD)
        out = []
        r = conn.execute("create table py (id INTEGER PRIMARY KEY AUTOINCREMENT, name varchar(20))")
        out.append((r.autoincrement_ids, r.affected_row_count, r.data))
        for name in ("Michael", "Mary", "John"):
            r = conn.execute("insert into py values (:id, :name)", {"id": None, "name": name})
            out.append((r.autoincrement_ids, r.affected_row_count, r.data))
        r = conn.execute("select name from py where id in (1, 3)")
        out.append((r.autoincrement_ids, r.affected_row_count, r.data))
        r = conn.execute("select * from py where name = ?", ["Mary"])
        out.append((r.data,))
        try:
            conn.execute("select * from missing")
        except tarantool.error.DatabaseError as e:
            out.append((e.args[0], e.args[1]))
        r = conn.execute("delete from py where id in (2, 3)")
        out.append((r.autoincrement_ids, r.affected_row_count, r.data))
        conn.execute("drop table py")
        conn.close()
        results.append(out)
    assert results[0] == results[1]
    assert results[0][1] == ([1], 1, None)
    assert results[0][4] == (None, None, [["Michael"], ["John"]])


def test_a_table_made_by_sql_survives_a_restart(tmp_path):
    data = tmp_path / "data"
    inst = start_oncebox("--data-dir", str(data))
    try:
        conn = tarantool.Connection(inst.host, inst.port, user="admin", password=ADMIN_PASSWORD)
        conn.execute("create table kept (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT)")
        conn.execute("insert into kept (v) values ('one'), ('two')")
        conn.close()
    finally:
        inst.stop()
    inst = start_oncebox("--data-dir", str(data))
    try:
        conn = tarantool.Connection(inst.host, inst.port, user="admin", password=ADMIN_PASSWORD)
        assert conn.execute("select id, v from kept").data == [[1, "one"], [2, "two"]]
        r = conn.execute("insert into kept (v) values ('three')")
        assert r.autoincrement_ids == [3]
        conn.close()
    finally:
        inst.stop()


def test_tokened_sql_runs_once_and_replays(oncebox):
    """An idempotency token on EXECUTE: the first attempt runs (status 1), a retry gets
    the stored reply byte for byte (status 2) and applies nothing; another statement
    under the token is a mismatch; a failed attempt leaves no record; a replay checks
    the rights again; PREPARE and DDL take no token."""
    admin = Raw(oncebox.host, oncebox.port)
    assert admin.auth("admin", ADMIN_PASSWORD)[0][0] == 0
    admin.request(EXECUTE, {0x40: "create table tok (id int primary key, v text)"})

    def tokened(conn, token, body):
        h, b, raw = conn.request(EXECUTE, body, _12=token)
        return h.get(0x0D), b, body_bytes(raw)

    first = tokened(admin, "t1", {0x40: "insert into tok values (?, ?)", 0x41: [1, "a"]})
    again = tokened(admin, "t1", {0x40: "insert into tok values (?, ?)", 0x41: [1, "a"]})
    assert (first[0], first[1]) == (1, {0x42: {0: 1}}), first
    assert (again[0], again[2]) == (2, first[2]), again
    for _ in range(2):
        status, b, _ = tokened(admin, "t2", {0x40: "update tok set v = v || 'x' where id = 1"})
        assert b == {0x42: {0: 1}}, b
    rows = admin.request(EXECUTE, {0x40: "select v from tok"})[1][0x30]
    assert rows == [["ax"]], rows
    # Another statement, or other binds, under a known token: 4002.
    _, b, _ = tokened(admin, "t1", {0x40: "insert into tok values (?, ?)", 0x41: [2, "a"]})
    assert b[0x52][0][0][5] == 4002, b
    # A failed attempt (one row of two is a duplicate) leaves no row and no record.
    _, b, _ = tokened(admin, "t3", {0x40: "insert into tok values (5, 'e'), (1, 'dup')"})
    assert b[0x52][0][0][5] == 3, b
    status, b, _ = tokened(admin, "t3", {0x40: "insert into tok values (5, 'e')"})
    assert (status, b) == (1, {0x42: {0: 1}}), (status, b)
    # A prepared statement under a token, by its id.
    stmt = admin.request(PREPARE, {0x40: "insert into tok values (?, 'p')"})[1][0x43]
    replies = [tokened(admin, "t4", {0x43: stmt, 0x41: [7]}) for _ in range(2)]
    assert [r[0] for r in replies] == [1, 2] and replies[0][2] == replies[1][2], replies
    assert admin.request(EXECUTE, {0x40: "select count(*) from tok"})[1][0x30] == [[3]]
    # PREPARE and DDL take no token.
    _, b, _ = admin.request(PREPARE, {0x40: "select 1"}, _12="t5")
    assert b[0x52][0][0][5] == 5, b
    _, b, _ = tokened(admin, "t6", {0x40: "create table other (id int primary key)"})
    assert b[0x31] == "oncebox does not support idempotency tokens on SQL CREATE TABLE", b
    # A replay checks the rights again.
    admin.request(EVAL, {0x27: "box.schema.user.create('u', {password = 'pw'}) "
                               "box.schema.user.grant('u', 'read,write', 'space', 'TOK')", 0x21: []})
    user = Raw(oncebox.host, oncebox.port)
    assert user.auth("u", "pw")[0][0] == 0
    assert tokened(user, "t7", {0x40: "delete from tok where id = 7"})[0] == 1
    admin.request(EVAL, {0x27: "box.schema.user.revoke('u', 'write', 'space', 'TOK')", 0x21: []})
    _, b, _ = tokened(user, "t7", {0x40: "delete from tok where id = 7"})
    assert b[0x52][0][0][5] == 42, b
    user.close()
    admin.close()


RANDOM_STATEMENTS = r"""
box.cfg{log_level = 1}
box.execute([[create table t (a int primary key, b text, c double)]])
box.execute([[insert into t values (1, 'x', 1.5), (2, null, 2)]])
local words = {'select', 'insert', 'into', 'values', 'from', 't', 'a', 'b', 'c', 'where', 'and', 'or', 'not',
    '(', ')', ',', '*', '+', '-', '/', '%', '=', '<', '>', '<=', '!=', '||', '1', '2.5', "'s'", 'null', 'true',
    '?', ':x', 'order', 'by', 'limit', 'offset', 'group', 'having', 'count', '(*)', 'sum', 'update', 'set',
    'delete', 'create', 'table', 'drop', 'index', 'on', 'primary', 'key', 'int', 'text', 'in', 'between', 'like',
    'is', 'distinct', 'as', 'cast', 'integer', 'replace', "x'01'", ';', 'begin', 'commit', 'rollback', '.', 'zz',
    'unique', 'autoincrement', 'default', 'if', 'exists', 'upper', 'abs', 'coalesce', 'avg', 'min', '"a"',
    '9223372036854775808', "'", '"', '[', 'x', '@', '$y', '0x', '1e', '/*', '--', 'join', 'left', 'using', 't.a',
    't.*', 'cross', 'inner', 'outer', 'prepare', '(select', '(select a from t)', 'exists', '(select * from t where',
    'union', 'union all', 'except', 'intersect', 'from (select a from t)', 'case', 'when', 'then', 'else', 'end',
    '<<', '>>', '&', '|', '~', 'round', 'hex', 'quote', 'unicode', 'char', 'greatest', 'least', 'position',
    'printf', "'%d%s%q'", 'randomblob', 'zeroblob', 'soundex', 'likelihood', 'row_count', 'trim', 'leading',
    'trailing', 'both', 'substr', 'replace(', 'typeof', '-1', '64'}
local starts = {'select', 'insert into t', 'update t set', 'delete from t', 'select * from t where', 'values',
    'select * from t join t as u on', 'select * from t left join t u using'}
math.randomseed(42)
local internal, answered = 0, 0
for _ = 1, 20000 do
    local parts = {}
    if math.random() < 0.7 then parts[1] = starts[math.random(#starts)] end
    for _ = 1, math.random(1, 9) do parts[#parts + 1] = words[math.random(#words)] end
    local sql = table.concat(parts, ' ')
    local ok, r, e
    if sql:find('?', 1, true) or sql:find(':x', 1, true) then
        ok, r, e = pcall(box.execute, sql, {1, {[':x'] = 2}})
    else
        ok, r, e = pcall(box.execute, sql)
    end
    -- A Lua error from inside the SQL code reaches the caller as an SQL error naming the file.
    local message = not ok and tostring(r) or (r == nil and e.message)
    if not ok or message and (message:find('sql.lua', 1, true) or message:find('attempt to', 1, true)) then
        internal = internal + 1
        print('internal error: ' .. sql .. ' => ' .. tostring(message))
    else
        answered = answered + 1
    end
    if box.is_in_txn() then box.rollback() end
    if box.space.T == nil then box.execute([[create table t (a int primary key, b text, c double)]]) end
end
print('answered ' .. answered .. ', internal errors ' .. internal)
os.exit()
"""


def test_random_statements_get_sql_errors_not_internal_ones(tmp_path):
    """20,000 random token sequences: each gets a result or a box error of SQL's, never a
    Lua error from inside the SQL code (a bug) and never a crash."""
    script = tmp_path / "random.lua"
    script.write_text(RANDOM_STATEMENTS)
    r = subprocess.run([ONCEBOX, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "answered 20000, internal errors 0", r.stdout[-2000:]
