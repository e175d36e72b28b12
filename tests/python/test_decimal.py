"""Decimals (MP_EXT type 1) compared with real Tarantool 2.6 line for line: the
`decimal` module (construction from numbers, strings and 64-bit integers; 2.6's
range of 38 digits; printing; arithmetic, comparisons and equality mixed with
numbers and strings through the cdata metatype; rounding, rescaling, precision and
scale; the messages of each failure, with and without a position); decimals as
numbers in `number`, `decimal` and `scalar` fields and in TREE indexes (ordered
among integers and doubles, found by an equal integer or double, a duplicate when
equal to a stored integer or double); UPDATE '+' and '-' with decimal operands and
decimal overflow; and how YAML, JSON, msgpack and a tuple's tostring show them.
After a restart, decimal keys are found and replaced by the numbers they equal.
"""
from conftest import LUA_PRINT_COUNTED, same_output_on_both, scripts_in_turn_on_both

PRINT_HELPER = LUA_PRINT_COUNTED + "local decimal = require('decimal')\n"

MODULE = r"""
box.cfg{log_level = 1}
""" + PRINT_HELPER + r"""
local d = decimal.new('1.250')
p(type(d), d, decimal.is_decimal(d), decimal.is_decimal(1), decimal.is_decimal('1'))
p(decimal.new(0.1), decimal.new(1/3), decimal.new(10), decimal.new(1e20), decimal.new(123456789012345678))
p(decimal.new(-0.0), decimal.new(2^53), decimal.new(1ULL), decimal.new(-5LL), decimal.new(1e-300))
for _, s in ipairs({'1e10', '1e37', '1e38', '1e-30', '1e-38', '1.5e-38', '1e-39', '1e-999', '0.000', '-0',
                    '1.0e2', '.5', '5.', '+5', ' 1', '1 ', '0x10', 'inf', 'nan', '',
                    '12345678901234567890123456789012345678', '123456789012345678901234567890123456789',
                    '1.23456789012345678901234567890123456789', '-99999999999999999999999999999999999999'}) do
    local ok, v = pcall(decimal.new, s)
    if ok then p(s, v, decimal.precision(v), decimal.scale(v)) else p(s, v) end
end
p(d + 1, 1 + d, d * 2, d / 3, d - '0.25', d % 1, d ^ 2, -d, d + 1LL)
p(decimal.new(7) % 3, decimal.new(-7) % 3, decimal.new(1) / 3 * 3, decimal.new('0.1') + 0.2)
p(decimal.new(2) ^ 100, decimal.new(2) ^ 0.5, decimal.new(4) ^ -1)
p(d == 1.25, d < 2, 2 > d, d <= 1.25, d == decimal.new('1.25'), d == nil, d ~= 1, d == '1.25', d == box.NULL)
p(decimal.new(1) <= 1.0, decimal.new(-1) < -0.5, decimal.new('0.1') == 0.1, decimal.new(3) > 2LL)
p(decimal.precision(d), decimal.scale(d), decimal.round(d, 1), decimal.trim(d), decimal.rescale(d, 5))
p(decimal.round(decimal.new('2.5'), 0), decimal.round(decimal.new('-2.5'), 0), decimal.round(decimal.new('1e10'), 2))
p(decimal.round(decimal.new('123.456'), -1), decimal.round(decimal.new('0.005'), 2), decimal.round(decimal.new('9.99'), 1))
p(decimal.rescale(decimal.new('1e10'), 2), decimal.rescale(decimal.new('1.5'), 40), decimal.rescale(decimal.new('1.555'), 2))
p(decimal.trim(decimal.new('100')), decimal.trim(decimal.new('1.500')), decimal.trim(decimal.new('0.000')))
p(decimal.sqrt(2), decimal.ln(10), decimal.log10(1000), decimal.exp(1), decimal.abs(-d), decimal.abs('-3'))
p(decimal.ln(decimal.new('1.0000000001')), decimal.log10(2), decimal.exp(0), decimal.sqrt(0.25))
p(pcall(decimal.new, 'abc'))
p(pcall(decimal.new, {}))
p(pcall(decimal.new, true))
p(pcall(decimal.new))
p(pcall(decimal.new, 1/0))
p(pcall(decimal.new, 0/0))
p(pcall(decimal.new, 1e300))
p(pcall(function() return d / 0 end))
p(pcall(function() return decimal.new('1e30') * decimal.new('1e10') end))
p(pcall(function() return decimal.new(10) ^ 38 end))
p(pcall(function() return d < nil end))
p(pcall(function() return d < 'abc' end))
p(pcall(function() return d + {} end))
p(pcall(function() return d == 'abc' end))
p(pcall(decimal.ln, 0))
p(pcall(decimal.sqrt, -1))
p(pcall(decimal.log10, -1))
p(pcall(decimal.round, 1.5, 1))
p(pcall(decimal.round, 1LL, 1))
p(pcall(decimal.round, d))
p(pcall(decimal.precision, 5))
p(pcall(decimal.scale))
p(pcall(decimal.abs))
p(pcall(function() return decimal.abs('x') end))
os.exit(0)
"""


def test_the_decimal_module_matches_2_6(tmp_path):
    same_output_on_both(tmp_path, "decimal_module.lua", MODULE, 63)


STORAGE = r"""
box.cfg{log_level = 1}
""" + PRINT_HELPER + r"""
local yaml, json, msgpack = require('yaml'), require('json'), require('msgpack')
local s = box.schema.space.create('t', {format = {{'id', 'number'}, {'d', 'decimal', is_nullable = true}}})
s:create_index('pk', {parts = {{1, 'number'}}})
for _, v in ipairs({decimal.new('1.5'), 2, 1.25, decimal.new('-3'), decimal.new('1.2500001'), 1e20}) do
    p('insert', pcall(s.insert, s, {v}))
end
p('dup double', pcall(s.insert, s, {1.5}))
p('dup decimal', pcall(s.insert, s, {decimal.new('2.000')}))
p('dup huge', pcall(s.insert, s, {decimal.new('1e20')}))
p('not decimal', pcall(s.insert, s, {10, 5}))
p('not decimal', pcall(s.insert, s, {11, 'x'}))
p('decimal field', pcall(s.insert, s, {12, decimal.new('7.70')}))
for _, t in s:pairs() do p(t, t[1], type(t[1]), decimal.is_decimal(t[1]), t[2]) end
p('get', s:get{decimal.new('1.50')}, s:get{1.5}, s:get{decimal.new(2)}, s:get{-3}, s:get{decimal.new('1e20')})
p('ge', #s:select({1.3}, {iterator = 'GE'}), s:select({decimal.new('1.2500001')}, {iterator = 'GT'})[1][1])
p('lt', s:select({2}, {iterator = 'LT', limit = 1})[1][1], s:select({decimal.new(2)}, {iterator = 'LE'})[1][1])
p('count', s:count({decimal.new('1.25')}, {iterator = 'GE'}), s.index.pk:min()[1], s.index.pk:max()[1])
p('replace', s:replace{decimal.new('2.0'), decimal.new(1)}, s:len())
p('delete', s:delete{decimal.new('-3.00')}, s:len())
p('set', s:update({2}, {{'=', 2, decimal.new('3.3')}}))
p('add', s:update({2}, {{'+', 2, decimal.new('0.7')}})[2], s:update({2}, {{'+', 2, 1}})[2])
p('sub', s:update({2}, {{'-', 2, 0.5}})[2], s:update({2}, {{'-', 2, 10LL}})[2])
p('overflow', pcall(s.update, s, {2}, {{'=', 2, decimal.new('9e37')}}))
p('overflow', pcall(s.update, s, {2}, {{'+', 2, decimal.new('9e37')}}))
p('int + decimal', box.tuple.new{5}:update({{'+', 1, decimal.new('0.5')}})[1])
p('double - decimal', box.tuple.new{5.5}:update({{'-', 1, decimal.new('0.25')}})[1])
p('decimal + double', box.tuple.new{decimal.new(1)}:update({{'+', 1, 0.1}})[1])
p('upsert', pcall(s.upsert, s, {2, decimal.new(0)}, {{'+', 2, decimal.new('100')}}), s:get{2}[2])
p('upsert', pcall(s.upsert, s, {2, decimal.new(0)}, {{'+', 2, decimal.new('9e37')}}), s:get{2}[2])
local sc = box.schema.space.create('sc')
sc:create_index('pk', {parts = {{1, 'scalar'}}})
for _, v in ipairs({'a', 3, decimal.new('2.5'), true, 1.5, decimal.new(4), -1, decimal.new('-0.5')}) do sc:insert{v} end
for _, t in sc:pairs() do p(t[1]) end
local u = box.schema.space.create('u')
u:create_index('pk', {parts = {{1, 'decimal'}}})
p('decimal index', pcall(u.insert, u, {1}))
u:insert{decimal.new('0.10')}
u:insert{decimal.new('-0.01')}
p('decimal index', pcall(u.insert, u, {decimal.new('0.1')}))
for _, t in u:pairs() do p(t[1]) end
local d = decimal.new('-1.50')
local t = box.tuple.new{d, 1, {d}}
p(t, tostring(t), t[1], t[3][1], select("#", t:unpack()))
p(yaml.encode(t))
p(yaml.encode({d, {x = d}}))
p(json.encode({d, t}))
local packed = msgpack.encode(d)
p(#packed, msgpack.decode(packed), decimal.is_decimal(msgpack.decode(packed)), #msgpack.encode({d, 1}))
p(yaml.encode(t:totable()), yaml.encode(box.tuple.new{1, {2}}:totable(1, 1)))
os.exit(0)
"""


def test_decimals_are_numbers_in_spaces_as_in_2_6(tmp_path):
    same_output_on_both(tmp_path, "decimal_storage.lua", STORAGE, 63)


BEFORE_RESTART = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local decimal = require('decimal')
local s = box.schema.space.create('t')
s:create_index('pk', {parts = {{1, 'number'}}})
s:insert{decimal.new('1.50'), 'a'}
s:insert{decimal.new('2'), 'b'}
s:insert{decimal.new('0.1'), 'c'}
s:insert{decimal.new('1.2345678901234567890123'), 'd'}
s:insert{3, decimal.new('-7.25')}
os.exit(0)
"""

AFTER_RESTART = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local decimal = require('decimal')
local s = box.space.t
local out = {}
for _, t in s:pairs() do table.insert(out, tostring(t[1]) .. '=' .. tostring(t[2])) end
print(table.concat(out, ' '))
s:replace{1.5, 'A'}
s:replace{2, 'B'}
s:replace{0.1, 'C'}
s:replace{decimal.new('1.23456789012345678901230'), 'D'}
print(s:len(), s:get{1.5}[2], s:get{decimal.new(2)}[2], s:get{0.1}[2], s:get{decimal.new('1.2345678901234567890123')}[2])
os.exit(0)
"""


def test_decimal_keys_survive_a_restart(tmp_path):
    tarantool, oncebox = scripts_in_turn_on_both(tmp_path, (("before.lua", BEFORE_RESTART), ("after.lua", AFTER_RESTART)))
    assert tarantool == oncebox
    assert tarantool == ["0.1=c 1.2345678901234567890123=d 1.50=a 2=b 3=-7.25", "5\tA\tB\tC\tD"]
