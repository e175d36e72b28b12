"""internal.argparse (what tarantoolctl parses its command line with), compared
with real Tarantool 2.6 on the cases of 2.6's own argparse tests and a few more."""
from conftest import LUA_PRINT_ROW, LUA_SHOW_SORTED, same_output_on_both

CASES = LUA_PRINT_ROW + LUA_SHOW_SORTED + r"""
local argparse = require('internal.argparse').parse
local function try(args, options)
    local ok, res = pcall(argparse, args, options)
    p(ok, ok and show(res) or (tostring(res):gsub('^.-:%d+: ', '')))
end
try()
try({[0] = 'tarantoolctl', 'start', 'instance'})
try({'tarantoolctl', 'start', 'instance', '--start'})
try({'tarantoolctl', 'start', 'instance', '--start', '--stop'})
try({'tarantoolctl', 'start', 'instance', '--start', '--stop', '--stop'})
try({'tarantoolctl', 'start', 'instance', '-baobab'})
try({'tarantoolctl', 'start', 'instance', '-vovov'})
try({'tarantoolctl', 'start', 'instance', '--start=lalochka'})
try({'tarantoolctl', 'start', 'instance', '--start', 'lalochka'})
try({'tarantoolctl', 'start', 'instance', '--start', '--', 'lalochka'})
try({'tarantoolctl', 'start', 'instance', '--start', '-', 'lalochka'})
for _, ty in ipairs({'number', 'number+', 'string', 'string+', 'boolean', 'boolean+'}) do
    try({'--verh=42'}, {{'verh', ty}})
end
try({'--verh=42'}, {{'verh'}})
try({'--verh=42'}, {'verh'})
try({'--verh=42'}, {'niz'})
try({'--verh=x'}, {{'verh', 'number'}})
try({'--verh'}, {{'verh', 'number'}})
try({'--verh', '1', '--verh', '2'}, {{'verh', 'number'}})
try({'--verh', '1', '--verh', '2'}, {{'verh', 'number+'}})
try({'--verh=1'}, {{'verh', 'float'}})
try({'--super-option'})
try({'--1x'})
try({'-a1'})
try({'--=x'})
try({'tarantoolctl', 'start', 'instance', '--start=lalochka', 'option', '-', 'another option'})
try({'--flag1', 'positional value', '--flag2'}, {{'flag1', 'boolean'}, {'flag2', 'boolean'}, {'flag3', 'boolean'}})
try({'--foo', '--foo'}, {{'foo', 'boolean'}})
try({'--foo', '--foo'}, {{'foo', 'boolean+'}})
try({'--foo', 'positional value', '--foo'}, {{'foo', 'boolean+'}})
try({'--foo=bar'}, {{'foo', 'boolean'}})
try({'--foo=bar'}, {{'foo', 'boolean+'}})
os.exit(0)
"""


def test_argparse_matches_2_6(tmp_path):
    lines = same_output_on_both(tmp_path, "argparse.lua", CASES, 36)
    assert 'true | {1="start", 2="instance"}' in lines
    assert 'false | Bad value for parameter "verh". No value expected, got "42"' in lines
