"""box.error's and box.schema's constants compared with real Tarantool 2.6: every
error code by name (all 217 of errcode.h, as fields pairs() lists), box.schema's
ids and limits, box.error raised with a constant, and the id a new user gets.
"""
from conftest import same_output_on_both

SCRIPT = r"""
box.cfg{}
local function sorted_numbers(t)
    local out = {}
    for k, v in pairs(t) do if type(v) == 'number' then out[#out + 1] = k .. '=' .. v end end
    table.sort(out)
    return out
end
local errors = sorted_numbers(box.error)
print(#errors)
for i = 1, #errors, 8 do print(table.concat(errors, ' ', i, math.min(i + 7, #errors))) end
local schema = sorted_numbers(box.schema)
print(#schema)
for i = 1, #schema, 8 do print(table.concat(schema, ' ', i, math.min(i + 7, #schema))) end
print(box.error.TUPLE_FOUND, box.error.BEFORE_REPLACE_RET, box.error.CANT_UPDATE_PRIMARY_KEY, box.error.NOSUCH)
local ok, e = pcall(box.error, box.error.NO_SUCH_SPACE, 'x')
print(e.code, e.message)
box.schema.user.create('u1')
print(box.space._user.index.name:get('u1')[1])
os.exit(0)
"""


def test_error_and_schema_constants_as_2_6(tmp_path):
    same_output_on_both(tmp_path, "constants", SCRIPT, 39)
