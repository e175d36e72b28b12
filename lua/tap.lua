-- tap: Tarantool 2.6's TAP (Test Anything Protocol) module for test scripts.
-- tap.test(name[, fn, ...]) makes a test; its methods print `ok - name` /
-- `not ok - name` lines (TAP version 13, subtests indented by four spaces) with a
-- YAML block of details after a failure: the checked values (expected, got,
-- path...) and, as 2.6 adds them, the stack (`trace`: each frame's source, the
-- line its function begins at, what and name) with the `filename` and `line` of
-- its outermost frame. The details are filled in 2.6's order, so that they print
-- in its order (the frames of this module carry its own line numbers).

local type = type -- the builtin, not the one user code sees (box.lua)
-- As 2.6's: the details encode any Lua value (a function as its tostring()).
local ffi = require('ffi')
local yaml = require('yaml').new()
yaml.cfg{
    encode_invalid_numbers = true,
    encode_load_metatables = true,
    encode_use_tostring = true,
    encode_invalid_as_nil = true,
}
local tap = {}
local methods = {}
local test_mt = {__index = methods}

local function indent(t) return string.rep(' ', 4 * t.level) end

local function write(t, line) io.write(indent(t), line, '\n') end

-- The frames from `level` out, as 2.6's tap records them.
local function traceback(level)
    local trace = {}
    level = level or 3
    while true do
        local info = debug.getinfo(level, 'nSl')
        if not info then break end
        -- oncebox runs a script's main chunk through xpcall in a wrapper of its
        -- own; 2.6 runs it from C, so the main chunk is the last frame.
        if info.source == '=script' then
            if #trace > 0 and trace[#trace].what == 'C' then table.remove(trace) end
            break
        end
        local frame = {
            source = info.source,
            src = info.short_src,
            line = info.linedefined or 0,
            what = info.what,
            name = info.name,
            namewhat = info.namewhat,
            filename = info.source:sub(1, 1) == '@' and info.source:sub(2) or 'eval',
        }
        table.insert(trace, frame)
        level = level + 1
    end
    return trace
end

function methods:ok(cond, name, extra)
    self.total = self.total + 1
    if cond then
        write(self, 'ok - ' .. tostring(name))
        return true
    end
    self.failed = self.failed + 1
    write(self, 'not ok - ' .. tostring(name))
    extra = type(extra) == 'table' and extra or {}
    if self.trace then
        extra.trace = traceback()
        extra.filename = extra.trace[#extra.trace].filename
        extra.line = extra.trace[#extra.trace].line
    end
    if next(extra) == nil then return false end
    for line in yaml.encode(extra):gmatch('[^\n]+') do io.write(indent(self), '  ', line, '\n') end
    return false
end

function methods:fail(name, extra) return self:ok(false, name, extra) end

function methods:skip(name, extra) return self:ok(true, tostring(name) .. ' # skip', extra) end

function methods:plan(n)
    if type(n) ~= 'number' then error('tap: plan expects a number', 2) end
    self.planned = n
    write(self, '1..' .. n)
end

function methods:diag(fmt, ...)
    local msg = select('#', ...) > 0 and string.format(fmt, ...) or tostring(fmt)
    write(self, '# ' .. msg)
end

-- is/isnt compare with ==, so nil and box.NULL are equal; a strict test also
-- wants both values of one type.
function methods:is(got, expected, name, extra)
    extra = extra or {}
    extra.got = got
    extra.expected = expected
    local same = (self.strict == false or type(got) == type(expected)) and got == expected
    return self:ok(same, name, extra)
end

function methods:isnt(got, unexpected, name, extra)
    extra = extra or {}
    extra.got = got
    extra.unexpected = unexpected
    local differ = (self.strict == true and type(got) ~= type(unexpected)) or got ~= unexpected
    return self:ok(differ, name, extra)
end


-- Whether `got` and `expected` are deeply equal, by 2.6's rules: numbers by value
-- (NaN equals NaN), ffi booleans as booleans, tables key by key (keys `got` lacks
-- may be box.NULL in `expected` unless the test is strict), anything else by ==.
-- The first difference is left in `extra`: got, expected and the path walked to it.
local function deep_equal(got, expected, extra)
    if type(got) == 'number' or type(expected) == 'number' then
        extra.got = got
        extra.expected = expected
        -- NaN is the only value not equal to itself.
        if got ~= got and expected ~= expected then return true end
        return got == expected
    end
    if ffi.istype('bool', got) then got = got == 1 end
    if ffi.istype('bool', expected) then expected = expected == 1 end
    if extra.strict and type(got) ~= type(expected) then
        extra.got = type(got)
        extra.expected = type(expected)
        return false
    end
    if type(got) ~= 'table' or type(expected) ~= 'table' then
        extra.got = got
        extra.expected = expected
        return got == expected
    end
    local path = extra.path or '/'
    local seen = {}
    for k, v in pairs(got) do
        seen[k] = true
        extra.path = path .. '/' .. k
        if not deep_equal(v, expected[k], extra) then return false end
    end
    for k, v in pairs(expected) do
        if not seen[k] and (extra.strict or v ~= box.NULL) then
            extra.expected = 'key ' .. tostring(k)
            extra.got = 'nil'
            return false
        end
    end
    extra.path = path
    return true
end

function methods:is_deeply(got, expected, name, extra)
    extra = extra or {}
    extra.got = got
    extra.expected = expected
    extra.strict = self.strict
    return self:ok(deep_equal(got, expected, extra), name, extra)
end

function methods:like(got, pattern, name, extra)
    extra = extra or {}
    extra.got = got
    extra.expected = pattern
    return self:ok(string.match(tostring(got), pattern) ~= nil, name, extra)
end

function methods:unlike(got, pattern, name, extra)
    extra = extra or {}
    extra.got = got
    extra.expected = pattern
    return self:ok(string.match(tostring(got), pattern) == nil, name, extra)
end

for _, ty in ipairs({'number', 'string', 'table', 'boolean', 'function'}) do
    -- (As 2.6's, through is().)
    methods['is' .. ty] = function(self, v, name, extra)
        return self:is(type(v), ty, name, extra)
    end
end

-- As 2.6's: false passes too, and a failure shows the value itself.
function methods:isnil(v, name, extra)
    return self:is(not v and 'nil' or v, 'nil', name, extra)
end

-- As 2.6's: the userdata's metatable names its type (oncebox's fiber objects,
-- userdata to user code, are tables whose metatable has the name as __name).
function methods:isudata(v, utype, name, extra)
    extra = extra or {}
    extra.expected = 'userdata<' .. tostring(utype) .. '>'
    if _G.type(v) ~= 'userdata' then
        extra.got = _G.type(v)
        return self:ok(false, name, extra)
    end
    local mt = getmetatable(v)
    if type(mt) == 'table' then mt = rawget(mt, '__name') or mt end
    extra.got = 'userdata<' .. tostring(mt) .. '>'
    return self:ok(mt == utype, name, extra)
end

-- As 2.6's: the value's ctype against `ctype` (a name or a ctype).
function methods:iscdata(v, ctype, name, extra)
    extra = extra or {}
    extra.expected = ffi.typeof(ctype)
    if type(v) == 'cdata' then
        extra.got = ffi.typeof(v)
        return self:ok(ffi.istype(ctype, v), name, extra)
    end
    -- (A tuple or a box.error object is cdata to user code, and no ctype here.)
    extra.got = _G.type(v)
    return self:ok(false, name, extra)
end

local function new_test(parent, name, fun, ...)
    -- (As 2.6's: a subtest is not strict whatever its parent is, and records
    -- frames if its parent does.)
    local t = setmetatable({
        parent = parent, name = name, level = parent and parent.level + 1 or 0,
        total = 0, failed = 0, planned = 0, trace = parent == nil and true or parent.trace, strict = false,
    }, test_mt)
    if fun == nil then return t end
    t:diag('%s', tostring(name))
    fun(t, ...)
    t:diag('%s: end', tostring(name))
    return t:check()
end

function methods:test(name, fn, ...) return new_test(self, name, fn, ...) end

-- Ends a test: reports a bad plan or failures (to the parent for a subtest).
function methods:check()
    if self.checked then error('check called twice') end
    self.checked = true
    local parent = self.parent
    if self.planned ~= self.total then
        if parent then
            parent:ok(false, 'bad plan', {planned = self.planned, run = self.total})
        else
            self:diag('bad plan: planned %d run %d', self.planned, self.total)
        end
    elseif self.failed > 0 then
        if parent then
            parent:ok(false, 'failed subtests', {failed = self.failed, planned = self.planned})
        else
            self:diag('failed subtest: %d', self.failed)
        end
    elseif parent then
        parent:ok(true, self.name)
    end
    return self.planned == self.total and self.failed == 0
end

function tap.test(name, fn, ...)
    io.write('TAP version 13\n')
    return new_test(nil, name, fn, ...)
end

package.loaded.tap = tap
