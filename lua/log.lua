-- log: Tarantool 2.6's log module. Lines go to stderr in Tarantool's plain format
-- (`2026-01-01 12:00:00.000 [pid] main/101/main I> text`, file:line added for warnings
-- and errors) or its json format; before box.cfg{} only the text is written, as there.
-- Arguments are formatted with string.format; a lone table is json-encoded.

local type = type -- the builtin, not the one user code sees (box.lua)
local native = box.internal.native
local json = require('json')
local log = {}

local LEVELS = {fatal = 0, syserror = 1, error = 2, crit = 3, warn = 4, info = 5, verbose = 6, debug = 7}
local LETTERS = {[0] = 'F', '!', 'E', 'C', 'W', 'I', 'V', 'D'}
local NAMES = {[0] = 'FATAL', 'SYSERROR', 'ERROR', 'CRIT', 'WARN', 'INFO', 'VERBOSE', 'DEBUG'}

-- log.level() overrides box.cfg's log_level; the default is info.
local level_override, format = nil, 'plain'

local function current_level()
    if level_override ~= nil then return level_override end
    local ok, v = pcall(function() return box.cfg.log_level end)
    if ok and type(v) == 'string' then return LEVELS[v] or 5 end
    return ok and tonumber(v) or 5
end

-- `sep` is ' ' in plain lines and 'T' in json ones.
local function timestamp(sep)
    local s, ns = native.clock('realtime')
    return string.format('%s.%03d', os.date('%Y-%m-%d' .. sep .. '%H:%M:%S', s), math.floor(ns / 1e6))
end

-- The running fiber's id and name, as 2.6's prefix `main/<id>/<name>` shows them.
local function fiber_tag()
    local fiber = package.loaded.fiber
    if fiber == nil then return 101, 'main' end
    local ok, me = pcall(fiber.self)
    if not ok or me == nil then return 101, 'main' end
    return me:id(), me:name()
end

local function write(level, fmt, ...)
    if level > current_level() then return end
    local msg
    if select('#', ...) ~= 0 then
        local ok, res = pcall(string.format, tostring(fmt), ...)
        if not ok then error(res, 0) end
        msg = res
    elseif type(fmt) == 'table' and format == 'plain' then
        msg = json.encode(fmt)
    else
        msg = tostring(fmt)
    end
    if box.internal.op == nil then
        native.log_write(msg)
        return
    end
    -- The caller's position: error() at level 3 names it as 2.6's log does.
    local fid, fname = fiber_tag()
    local _, where = pcall(error, '', 3)
    local file, line = string.match(tostring(where), '^(.*):(%d+): $')
    file, line = file or '?', tonumber(line) or 0
    if format == 'json' then
        local body
        if type(fmt) == 'table' and select('#', ...) == 0 then
            body = string.sub(json.encode(fmt), 2, -2)
        else
            body = '"message": ' .. json.encode(msg)
        end
        native.log_write(string.format('{"time": "%s", "level": "%s", %s, "pid": %d , "cord_name": "main", ' ..
            '"fiber_id": %d, "fiber_name": %s, "file": %s, "line": %d}', timestamp('T') .. os.date('%z'),
            NAMES[level], body, native.pid(), fid, json.encode(fname), json.encode(file), line))
        return
    end
    local where = ''
    if level == LEVELS.warn or level == LEVELS.error or level == LEVELS.syserror then
        where = string.format('%s:%d ', file, line)
    end
    native.log_write(string.format('%s [%d] main/%d/%s %s%s> %s', timestamp(' '), native.pid(), fid, fname, where,
        LETTERS[level], msg))
end

for name, level in pairs(LEVELS) do
    if level ~= LEVELS.fatal and level ~= LEVELS.syserror and level ~= LEVELS.crit then
        log[name] = function(fmt, ...) return write(level, fmt, ...) end
    end
end

local function parse_level(level)
    if type(level) == 'string' then return LEVELS[level] or error("log: unknown level '" .. level .. "'", 3) end
    if type(level) ~= 'number' then error('log.level: expected a number or a level name', 3) end
    return level
end

log.cfg = setmetatable({level = 5, format = 'plain'}, {
    __call = function(self, opts)
        opts = opts or {}
        if opts.level ~= nil then level_override = parse_level(opts.level) self.level = level_override end
        if opts.format ~= nil then format = opts.format self.format = format end
        if opts.log ~= nil then
            local ok, err = native.log_to_file(tostring(opts.log))
            if not ok then error(err, 2) end
            self.log = opts.log
        end
    end,
})

function log.level(level)
    if level == nil then return current_level() end
    level_override = parse_level(level)
    log.cfg.level = level_override
end

function log.log_format(name)
    if name ~= 'plain' and name ~= 'json' then error("log_format: expected 'plain' or 'json'", 2) end
    format = name
    log.cfg.format = name
end

-- A script's main fiber failed after box.cfg{}: 2.6's logger writes the error
-- (`main <where> E> <text>`, `where` being where it was raised) and then
-- `main F> fatal error, exiting the event loop`, under the cord's name alone.
function box.internal.log_script_failure(text, where)
    local function line(level, located)
        if level > current_level() then return end
        native.log_write(string.format('%s [%d] main %s%s> %s', timestamp(' '), native.pid(),
            located and (where .. ' ') or '', LETTERS[level], level == LEVELS.fatal and
            'fatal error, exiting the event loop' or text))
    end
    line(LEVELS.error, where ~= nil)
    line(LEVELS.fatal, false)
end

-- The script ended and the process stays up: 2.6 logs it at crit level under
-- the cord's name (before box.cfg{}, the text alone).
function box.internal.log_entering_event_loop()
    if LEVELS.crit > current_level() then return end
    local text = 'entering the event loop'
    if not box.internal.booted then return native.log_write(text) end
    native.log_write(string.format('%s [%d] main C> %s', timestamp(' '), native.pid(), text))
end

function log.pid() return native.pid() end
function log.rotate() return true end

package.loaded.log = log
