"""The `uri` module, compared with real Tarantool 2.6 line for line: what
uri.parse makes of the URIs people write (ports, hosts, IPv4 and IPv6,
logins and passwords, schemes, paths, queries, fragments, Unix sockets in all
three spellings, service names), what it refuses, and uri.format with and
without the password; net.box.connect reading its address the same way
(usage errors, `host, port` arguments, a refused connection's message).
"""
from conftest import same_output_on_both

SCRIPT = r"""
local uri = require('uri')
local KEYS = {'scheme', 'login', 'password', 'host', 'service', 'path', 'query', 'fragment', 'ipv4', 'ipv6', 'unix'}
local cases = {
  '3301', '0', '00003301', 'localhost', 'localhost:3301', 'LOCALHOST:3301', 'user@localhost:3301',
  'user:pass@localhost:3301', 'user:@localhost', 'user@host', '127.0.0.1:3301', '127.0.0.1', '0.0.0.0:3301',
  '999.999.999.999:1', '1.2.3:4', '1.2.3.4.5', '1.2.3.4:65535', '*:3301', '[::1]:3301', '[::1]', '[::]:1',
  '[::ffff:127.0.0.1]:5', '[::ffff:1.2.3.4]', '[1:2:3:4:5:6:7:8]:1', '[1:2:3:4:5:6:7:8:9]:1', '[ABCD::1]:1',
  '[fe80::1%eth0]:1', 'user@[::1]:3301', '[::1]x', '[::1]/p', '[::1', '::1',
  'unix/:/tmp/sock', 'unix/:./sock', 'unix/:/var/run/tarantool/app.sock', 'admin:pw@unix/:/var/run/t.sock',
  'user:pass@unix/:/tmp/sock', 'login@unix/:/a/b:', 'unix/:relative', '/tmp/sock', '/var/run/x.sock', '/a//b',
  '/', '//', '/tmp/sock:', '/tmp/a:b', 'user:pass@/tmp/sock', 'user@/var/run/x.sock', './sock',
  'tcp://localhost:3301', 'TCP://H:1', 'tcp://h', 'tarantool://admin:secret@db.example.com:3301',
  'tcp://user:pass@host:3301/path?query=1#frag', 'http://example.com/a/b?x=1&y=2#top',
  'http://h:8080/p/a/t/h?query=string&x=1#hash', 'ftp://ftp.is.co.za/rfc/rfc1808.txt',
  'ldap://[2001:db8::7]/c=GB?objectClass?one', 'telnet://192.0.2.16:80/', 'https://user:p%40ss@host.com',
  'http://[::1]:80/x', 'a+b://h', '1a://h', 'http://-', 'scheme:path', 'mailto:user@host', 'localhost:http',
  'HOST:ABC', 'localhost:abc', 'h:01', 'host:svc9', 'host:', 'x:', ':3301', '', ' ', 'a b', 'host:3301/path',
  'h:3301/', 'host/path', 'a/b', 'h:1/a:b|c@d', 'h/a?b/c?d', 'u@h/p?q#f', 'user:p:w@host', 'user:pa ss@h',
  'a@b@c', '@host', 'user@', 'user:pass@', 'ho_st.ex-ample~:1', 'h.:1', '-h-:1', '%41host:1', 'ho%2st',
  'host%:1', 'host%%:1', 'host%u00e9:1', 'host%zz:1', 'localhost:3301?q', 'localhost#f', 'host:3301?',
  'host#', 'host?#', '?q', '#f', 'h:1?a=b?c/d#e#f', 'h:1#a?b', 'host:3301:3302', 'a:b:c', '//host:1',
  'h:' .. string.rep('9', 255), 'h:' .. string.rep('9', 256), string.rep('9', 256),
  string.rep('a', 1024) .. ':1', string.rep('b', 1025) .. ':1',
}
for _, c in ipairs(cases) do
  local r = uri.parse(c)
  local parts, n = {}, 0
  if r then
    for _, k in ipairs(KEYS) do
      if r[k] ~= nil then table.insert(parts, k .. '=' .. (#r[k] > 40 and '#' .. #r[k] or r[k])) end
    end
    for _ in pairs(r) do n = n + 1 end
  end
  print(#c > 40 and '#' .. #c or string.format('%q', c), r == nil and 'nil' or table.concat(parts, ' '), n,
        r and uri.format(r):sub(1, 60) or '', r and uri.format(r, true):sub(1, 60) or '')
end
print(select(2, pcall(uri.parse)):match('Usage.*'))
print(uri.format({}), uri.format({host = 'h', service = '1', login = 'l', password = 'p'}),
      uri.format({host = 'h', service = '1', login = 'l', password = 'p'}, true), uri.format({login = 'l', path = '/p'}),
      uri.format({scheme = 's', path = '/p', query = 'q', fragment = 'f'}),
      uri.format({host = 'h', scheme = '', login = '', path = ''}))

-- net.box reads its address with uri.parse
local net_box = require('net.box')
local listen = os.getenv('LISTEN')
local host, port = listen:match('^(.*):(%d+)$')
for _, address in ipairs({'a b', 'host:svc9', '', '3301x', 'localhost', 'user@', listen, 'guest@' .. listen,
                          'tcp://' .. listen, host .. ':99999', host .. ':0'}) do
  local ok, c = pcall(net_box.connect, address, {connect_timeout = 5})
  print(address == listen and 'LISTEN' or (address:gsub(port, 'PORT')), ok, ok and c.state or c,
        ok and tostring(c.error) or '')
end
local c = net_box.connect(host, tonumber(port))
print(c.state, c.error)
box.cfg{listen = listen}
box.schema.user.grant('guest', 'execute', 'universe')
for _, conn in ipairs({net_box.connect(listen), net_box.connect('guest@' .. listen), net_box.connect(host, port),
                       net_box.connect(host, tonumber(port), {connect_timeout = 5})}) do
  print(conn.state, conn:ping(), conn:eval('return 1 + 1'))
  conn:close()
end
os.exit(0)
"""


def test_uri_parse_and_format_and_net_box_addresses(tmp_path):
    same_output_on_both(tmp_path, "uri.lua", SCRIPT, 134)
