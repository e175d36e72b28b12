"""Values against field types and index order, compared with Tarantool 2.6 line for line.

SCALAR keys of every class in one TREE (booleans, numbers of every encoding,
decimals, strings), nullable parts and their nil order, unsigned/integer/double/
number fields given values of other types, and update arithmetic at the edges.
(A uuid in a SCALAR field, which 2.6.0 refuses and oncebox takes, is a named gap:
test_asynctnt.py's test_uuid_is_not_a_scalar.)
"""
from conftest import same_output_on_both

SCRIPT = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local json = require('json')
local function show(label, ...) local r = {pcall(...)} local v = r[2]
  if type(v) == 'table' then local ok, j = pcall(json.encode, v) v = ok and j or tostring(v) end
  local m, n = tostring(v), 1
  while n > 0 do m, n = m:gsub('^[%w/_.]+%.lua:%d+: ', '') end
  print(label, r[1], type(r[2]), m) end
local s = box.schema.space.create('sc')
s:create_index('pk', {parts = {1, 'scalar'}})
for _, v in ipairs({1, -1, 1.5, 'a', 'B', true, false, 2^53, -2^63, 18446744073709551615ULL, '1', require('decimal').new('1.25')}) do
  show('ins', s.insert, s, {v})
end
show('dup1', s.insert, s, {1.0})
show('all', function() local out = {} for _, t in s:pairs() do out[#out+1] = tostring(t[1]) end return table.concat(out, ' ') end)
show('ge', function() local out = {} for _, t in s:pairs({1}, {iterator='GE'}) do out[#out+1] = tostring(t[1]) end return table.concat(out, ' ') end)
show('lt', function() local out = {} for _, t in s:pairs({'a'}, {iterator='LT'}) do out[#out+1] = tostring(t[1]) end return table.concat(out, ' ') end)
local n = box.schema.space.create('nn')
n:create_index('pk')
n:create_index('sk', {parts = {{2, 'integer', is_nullable = true}}, unique = false})
for i, v in ipairs({5, box.NULL, -3, box.NULL, 7}) do n:insert{i, v} end
n:insert{6}
show('nulls', function() local out = {} for _, t in n.index.sk:pairs() do out[#out+1] = t[1] end return table.concat(out, ' ') end)
show('nullsrev', function() local out = {} for _, t in n.index.sk:pairs(nil, {iterator='REQ'}) do out[#out+1] = t[1] end return table.concat(out, ' ') end)
show('nulleq', function() local out = {} for _, t in n.index.sk:pairs({box.NULL}) do out[#out+1] = t[1] end return table.concat(out, ' ') end)
show('cnt', n.index.sk.count, n.index.sk, {box.NULL})
show('cntlt', n.index.sk.count, n.index.sk, {0}, {iterator = 'LT'})
local u = box.schema.space.create('u')
u:create_index('pk')
show('neg', u.insert, u, {-1})
show('flt', u.insert, u, {1.5})
show('big', u.insert, u, {18446744073709551615ULL})
u:insert{1, 9223372036854775807LL, 'abc', 1.5}
show('ovf', u.update, u, {1}, {{'+', 2, 1}})
show('ovf2', u.update, u, {1}, {{'-', 2, -1}})
show('strop', u.update, u, {1}, {{'+', 3, 1}})
show('fltop', u.update, u, {1}, {{'+', 4, 1}})
show('splice', u.update, u, {1}, {{':', 3, 2, 10, 'Z'}})
show('bitop', u.update, u, {1}, {{'&', 4, 1}})
show('intflt', u.update, u, {1}, {{'+', 4, 0.5}})
show('dec', function() return u:update({1}, {{'+', 4, require('decimal').new('0.1')}})[4] end)
local i = box.schema.space.create('ii')
i:create_index('pk', {parts = {1, 'integer'}})
show('iflt', i.insert, i, {1.0})
show('iflt2', i.insert, i, {2.5})
local d = box.schema.space.create('dd')
d:create_index('pk', {parts = {1, 'double'}})
show('dint', d.insert, d, {1})
show('dflt', d.insert, d, {1.0})
show('dsel', function() return d:select{1} end)
local nm = box.schema.space.create('nm')
nm:create_index('pk', {parts = {1, 'number'}})
show('n1', nm.insert, nm, {1})
show('n2', nm.insert, nm, {1.0})
show('n3', nm.insert, nm, {require('decimal').new(1)})
show('n4', nm.insert, nm, {0/0})
os.exit(0)
"""


def test_values_and_orders_match_tarantool(tmp_path):
    tarantool = same_output_on_both(tmp_path, "field_values.lua", SCRIPT, 41)
    assert any("Duplicate key" in line for line in tarantool)
    assert any(line.startswith("all\ttrue") for line in tarantool)
