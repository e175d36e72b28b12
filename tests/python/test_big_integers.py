"""Large integers from msgpack and JSON into Lua, compared with Tarantool 2.6: from a
magnitude of 10^14 they are 64-bit integer cdata (`5ULL`, `-5LL`), exact, where a
Lua number would round them past 2^53 (tuple fields holding 64-bit ids)."""
from conftest import same_output_on_both

SCRIPT = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local m, json = require('msgpack'), require('json')
local s = box.schema.space.create('t')
s:create_index('pk')
s:insert{1, 1152921504606846977ULL, -1152921504606846977LL, 9007199254740993ULL, 18446744073709551615ULL}
local t = s:get(1)
for i = 2, 5 do print('field', i, type(t[i]), tostring(t[i])) end
print('sum', tostring(t[2] + 1), json.encode(t:totable()))
for _, v in ipairs({2^40, 1e14 - 1, 1e14, 2^47, 2^53, -1e14 + 1, -1e14, -2^53}) do
  local d = m.decode(m.encode(v))
  print('msgpack', string.format('%.0f', v), type(d), tostring(d))
end
for _, s in ipairs({'123', '99999999999999', '100000000000000', '9007199254740993', '-9007199254740993',
                    '18446744073709551615', '18446744073709551616', '-9223372036854775809', '1.5e20',
                    '[9007199254740993,{"a":-100000000000001}]'}) do
  local r = json.decode(s)
  local v = type(r) == 'table' and r[1] or r
  print('json', s, type(v), tostring(v), json.encode(r))
end
os.exit(0)
"""


def test_large_integers_reach_lua_exactly_as_in_tarantool(tmp_path):
    tarantool = same_output_on_both(tmp_path, "big_integers.lua", SCRIPT, 23)
    assert "field\t4\tcdata\t9007199254740993ULL" in tarantool
