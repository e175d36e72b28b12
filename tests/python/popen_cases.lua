-- popen and child reaping, run by tarantool 2.6 and by oncebox (test_popen.py
-- compares the lines). Pids, descriptors and addresses are masked.
local popen = require('popen')
local fiber = require('fiber')
local ffi = require('ffi')
ffi.cdef[[ int kill(int pid, int sig); int fork(void); void _exit(int status); ]]

local pids = {}
local function mask(s)
    for _, pid in ipairs(pids) do s = s:gsub('%f[%d]' .. pid .. '%f[%D]', '<pid>') end
    return (s:gsub('0x%x+', '<addr>'):gsub('fd %d+', 'fd <n>'))
end
local show
show = function(v)
    local t = type(v)
    if t == 'string' then return mask(string.format('%q', v)) end
    if (t == 'cdata' or t == 'table') and type(v.message) == 'string' and v.type ~= nil then
        return string.format('E(%s, %s, errno=%s)', v.type, mask(v.message), tostring(v.errno))
    end
    if t == 'userdata' then return 'userdata<' .. tostring(getmetatable(v)) .. '>' end
    if t ~= 'table' then return mask(tostring(v)) end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    local out = {}
    for _, k in ipairs(keys) do out[#out + 1] = tostring(k) .. '=' .. show(v[k]) end
    return '{' .. table.concat(out, ', ') .. '}'
end
local function try(label, f, ...)
    local r = {n = select('#', ...) + 1, pcall(f, ...)}
    local parts = {}
    for i = 2, math.max(r.n, 2) do parts[#parts + 1] = show(r[i]) end
    print(label .. (r[1] and ' => ' or ' => RAISE ') .. table.concat(parts, ', '))
end
local function new(...)
    local ph, err = popen.new(...)
    if ph then pids[#pids + 1] = ph.pid end
    return ph, err
end
local function shell(...)
    local ph = popen.shell(...)
    pids[#pids + 1] = ph.pid
    return ph
end
local function dead(pid) return ffi.C.kill(pid, 0) ~= 0 end

-- The module.
print('constants', show(popen.opts), show(popen.state), show(popen.stream))
print('signals', popen.signal.SIGTERM, popen.signal.SIGKILL, popen.signal.SIGIOT, popen.signal.SIGPOLL)
-- Argument checks.
try('new()', popen.new)
try('new string', popen.new, '/bin/true')
try('new argv[2]', popen.new, {'/bin/echo', 1})
try('new opts', popen.new, {'/bin/true'}, 'r')
try('stdin number', popen.new, {'/bin/true'}, {stdin = 1})
try('stdout PIPE', popen.new, {'/bin/true'}, {stdout = 'PIPE'})
try('env values', popen.new, {'/bin/true'}, {env = {A = 1}})
try('setsid string', popen.new, {'/bin/true'}, {setsid = 'yes'})
try('group without setsid', popen.new, {'/bin/true'}, {group_signal = true})
try('opts before argv', popen.new, {1}, {stdin = 'y'})
try('shell mode', popen.shell, 'true', 'rx')
try('shell command', popen.shell, 1)
-- Prefixes name the stream modes.
for _, mode in ipairs({'', 'p', 'd', 'c', 'inherit'}) do
    local ph = new({'/bin/true'}, {stdout = mode})
    print('stdout=' .. mode, ph.opts.stdout)
    ph:wait() ph:close()
end

-- A handle: fields, info, serialization.
local ph = new({'/bin/sleep', '30'}, {stdin = 'pipe', stdout = 'pipe', stderr = 'devnull'})
print('handle', type(ph), getmetatable(ph), mask(tostring(ph)), ph.command)
print('fields', show(ph.opts), show(ph.status), ph.stdin, ph.stdout, ph.stderr, ph.nosuch)
try('info', ph.info, ph)
print('yaml has command', require('yaml').encode(ph):find('command: /bin/sleep 30', 1, true) ~= nil)
print('json has command', require('json').encode(ph):find('"command"') ~= nil)
try('index by number', function() return ph[1] end)
try('read usage', ph.read)
try('read both', ph.read, ph, {stdout = true, stderr = true})
try('read stderr not piped', ph.read, ph, {stderr = true})
try('read timeout', ph.read, ph, {timeout = 0.05})
try('read bad timeout', ph.read, ph, {timeout = -1})
try('write number', ph.write, ph, 42)
try('write empty', ph.write, ph, '', {timeout = 0.05})
try('shutdown nothing', ph.shutdown, ph, {})
try('shutdown stdin', ph.shutdown, ph, {stdin = true})
try('write after shutdown', ph.write, ph, 'x')
try('signal string', ph.signal, ph, 'x')
try('signal 0', ph.signal, ph, 0)
try('signal 1000', ph.signal, ph, 1000)
try('close', ph.close, ph)
try('close again', ph.close, ph)
print('closed', getmetatable(ph), type(ph.read))
try('pid after close', function() return ph.pid end)
try('read after close', ph.read, ph)
try('serialize after close', function() return require('yaml').encode(ph) end)

-- Pipes both ways, EOF, 4096-byte reads, stderr.
ph = new({'/bin/cat'}, {stdin = 'pipe', stdout = 'pipe'})
try('write', ph.write, ph, 'hello\n')
try('read', ph.read, ph)
ph:shutdown({stdin = true})
try('read at EOF', ph.read, ph)
ph:close()
ph = shell('head -c 10000 /dev/zero; echo err >&2', 'rR')
ph:wait()
local sizes = {}
for _ = 1, 4 do sizes[#sizes + 1] = #ph:read() end
print('read sizes', table.concat(sizes, ' '))
try('stderr', ph.read, ph, {stderr = true})
ph:close()
ph = new({'/bin/true'}, {stdin = 'pipe'})
ph:wait()
try('write to an exited child', ph.write, ph, 'x')
ph:close()

-- Ends, statuses, signals.
for _, code in ipairs({0, 3, 300}) do
    ph = new({'/bin/sh', '-c', 'exit ' .. code})
    try('exit ' .. code, ph.wait, ph)
    print('after wait', show(ph.status), ph.pid)
    try('signal the exited', ph.signal, ph, 15)
    ph:close()
end
for _, signo in ipairs({15, 9, 6, 29, 34}) do
    ph = new({'/bin/sleep', '30'})
    -- Sent at once: the child must already run the program, not a copy of the server.
    ph:signal(signo)
    try('killed by ' .. signo, ph.wait, ph)
    ph:close()
end
ph = new({'/bin/sleep', '30'})
try('terminate', ph.terminate, ph)
try('wait', ph.wait, ph)
ph:close()
for _, argv in ipairs({{'/nonexistent'}, {'true'}, {'/etc/passwd'}}) do
    ph = new(argv)
    try('cannot execute ' .. argv[1], ph.wait, ph)
    ph:close()
end

-- Options at work.
local function output(argv, opts)
    opts = opts or {}
    opts.stdout = 'pipe'
    local p = new(argv, opts)
    local chunks = {}
    repeat
        local chunk = p:read()
        chunks[#chunks + 1] = chunk
    until chunk == '' or chunk == nil
    local status = p:wait()
    p:close()
    return table.concat(chunks), status
end
print('shell argv', show({output({'echo "$0|$1|$2"', 'a', 'b c'}, {shell = true})}))
print('shell command', new({'echo "$0"', 'a b'}, {shell = true}).command)
print('env', show({output({'/usr/bin/env'}, {env = {FOO = 'bar'}})}))
print('stdin devnull', show({output({'/bin/sh', '-c', 'read x; echo rc=$?'}, {stdin = 'devnull'})}))
print('setsid', show({output({'/bin/sh', '-c', 'test $(ps -o sid= -p $$) -eq $$ && echo new || echo same'},
                            {setsid = true})}))
print('close_fds', show({output({'/bin/sh', '-c', 'ls /proc/self/fd | wc -l'})}))
print('signal mask', show({output({'/bin/sh', '-c', "grep -E '^Sig(Blk|Ign)' /proc/self/status | tr '\\n' ' '"})}))
for _, group in ipairs({false, true}) do
    ph = new({'/bin/sh', '-c', 'sleep 30 & echo $!; wait'}, {stdout = 'pipe', setsid = true, group_signal = group})
    local grandchild = tonumber(ph:read():match('%d+'))
    ph:kill() ph:wait() fiber.sleep(0.2)
    print('group_signal', group, 'grandchild dead', dead(grandchild))
    if not dead(grandchild) then ffi.C.kill(grandchild, 9) end
    ph:close()
end
for _, keep in ipairs({false, true}) do
    ph = new({'/bin/sleep', '30'}, {keep_child = keep})
    local pid = ph.pid
    ph:close() fiber.sleep(0.2)
    print('keep_child', keep, 'child dead', dead(pid))
    if not dead(pid) then ffi.C.kill(pid, 9) end
end

-- Every child is reaped, as tarantool's event loop reaps them.
local pid = ffi.C.fork()
if pid == 0 then ffi.C._exit(3) end
fiber.sleep(0.2)
print('forked child gone', dead(pid))
print('os.execute', os.execute('exit 5'))
local f = io.popen('echo hi')
print('io.popen close at once', f:close())
f = io.popen('echo hi')
fiber.sleep(0.2)
print('io.popen after a yield', f:read('*a'), f:close())

-- A fiber writing more than a pipe holds, one line per yield, to a pipe another
-- fiber reads with socket.iowait: the reader keeps up.
ffi.cdef[[ int pipe(int fds[2]); long write(int fd, const char *buf, size_t n);
           long read(int fd, char *buf, size_t n); ]]
local fds = ffi.new('int[2]')
ffi.C.pipe(fds)
local line = string.rep('x', 99) .. '\n'
local got = 0
local reader = fiber.new(function()
    local buf = ffi.new('char[4096]')
    while got < 2000 * #line do
        if require('socket').iowait(fds[0], 'R', 5) == 'R' then got = got + tonumber(ffi.C.read(fds[0], buf, 4096)) end
    end
end)
reader:set_joinable(true)
local writer = fiber.new(function()
    for _ = 1, 2000 do ffi.C.write(fds[1], line, #line) fiber.yield() end
end)
writer:set_joinable(true)
writer:join() reader:join()
print('pipe through fibers', got)
os.exit(0)
