-- log: Tarantool 2.6's log module. Lines go to stderr in Tarantool's plain format
-- (`2026-01-01 12:00:00.000 [pid] main/101/main I> text`, file:line added for warnings
-- and errors) or its json format; before log.cfg{} or box.cfg{} only the text is
-- written, as there.
-- Arguments are formatted with string.format; a lone table is json-encoded.

local type = type -- the builtin, not the one user code sees (box.lua)
local native = box.internal.native
local json = require('json')
local log = {}

local LEVELS = {fatal = 0, syserror = 1, error = 2, crit = 3, warn = 4, info = 5, verbose = 6, debug = 7}
local LETTERS = {[0] = 'F', '!', 'E', 'C', 'W', 'I', 'V', 'D'}
local NAMES = {[0] = 'FATAL', 'SYSERROR', 'ERROR', 'CRIT', 'WARN', 'INFO', 'VERBOSE', 'DEBUG'}

-- The logger's settings, as 2.6's log.cfg shows them: `log` (the target, nil
-- for standard error) and `nonblock` are set once (by log.cfg{} or the first
-- box.cfg{}), `level` and `format` at any time, by log.cfg{}, log.level(),
-- log.log_format() or box.cfg{}, each shown by the other.
local settings = {level = 5, format = 'plain'}
-- Whether the target is set (log.cfg{} or a script's box.cfg{} configured the
-- logger; a server is configured from its start).
local initialized = false
local function set_up() return initialized or not box.internal.script_mode end

local function current_level()
    local level = settings.level
    if type(level) == 'string' then return LEVELS[level] or 5 end
    return tonumber(level) or 5
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

-- Keys of a logged table that the line's own fields take: 2.6 drops them from
-- the table (the caller's table, as there).
local SPECIAL_FIELDS = {'file', 'level', 'pid', 'line', 'cord_name', 'fiber_name', 'fiber_id', 'error_msg'}

-- 2.6's logger writes at most this much of a line (SAY_BUF_LEN_MAX, 16 KiB).
local MAX_LINE_BYTES = 16 * 1024 - 1

local function emit(line) native.log_write(string.sub(line, 1, MAX_LINE_BYTES)) end

local function write(level, fmt, ...)
    if level > current_level() then return end
    local msg
    if select('#', ...) ~= 0 then
        local ok, res = pcall(string.format, tostring(fmt), ...)
        -- Raised where log.info() and the others were called, as 2.6 does (they
        -- call this function in a tail call: level 2 is their caller).
        if not ok then error(res, 2) end
        msg = res
    elseif type(fmt) == 'table' then
        for _, field in ipairs(SPECIAL_FIELDS) do fmt[field] = nil end
        if settings.format == 'plain' then msg = json.encode(fmt) end
    end
    msg = msg or tostring(fmt)
    -- Until log.cfg{} or a script's box.cfg{} sets the logger up, 2.6 writes the text alone.
    if not set_up() and not box.internal.booted then
        emit(msg)
        return
    end
    -- The caller's position: error() at level 3 names it as 2.6's log does.
    local fid, fname = fiber_tag()
    local _, where = pcall(error, '', 3)
    local file, line = string.match(tostring(where), '^(.*):(%d+): $')
    file, line = file or '?', tonumber(line) or 0
    if settings.format == 'json' then
        local body
        if type(fmt) == 'table' and select('#', ...) == 0 then
            body = string.sub(json.encode(fmt), 2, -2)
        else
            body = '"message": ' .. json.encode(msg)
        end
        emit(string.format('{"time": "%s", "level": "%s", %s, "pid": %d , "cord_name": "main", ' ..
            '"fiber_id": %d, "fiber_name": %s, "file": %s, "line": %d}', timestamp('T') .. os.date('%z'),
            NAMES[level], body, native.pid(), fid, json.encode(fname), json.encode(file), line))
        return
    end
    local where = ''
    if level == LEVELS.warn or level == LEVELS.error or level == LEVELS.syserror then
        -- The file's base name, as 2.6's plain lines give it.
        where = string.format('%s:%d ', string.match(file, '([^/]+)/?$') or file, line)
    end
    emit(string.format('%s [%d] main/%d/%s %s%s> %s', timestamp(' '), native.pid(), fid, fname, where,
        LETTERS[level], msg))
end

for name, level in pairs(LEVELS) do
    if level ~= LEVELS.fatal and level ~= LEVELS.syserror and level ~= LEVELS.crit then
        log[name] = function(fmt, ...) return write(level, fmt, ...) end
    end
end

local LEVEL_LIST = 'crit,warn,info,debug,syserror,verbose,fatal,error'

local function is_syslog(target) return type(target) == 'string' and string.sub(target, 1, 7) == 'syslog:' end

-- 2.6's checks of one setting: true, or false and why.
local function check_level(level)
    if type(level) == 'string' then
        if LEVELS[level] == nil then return false, 'expected ' .. LEVEL_LIST end
    elseif type(level) ~= 'number' then
        return false, 'must be a number or a string'
    end
    return true
end

-- `target`: the log target the format is for (the one set, when nil).
local function check_format(name, target)
    if name ~= 'plain' and name ~= 'json' then return false, 'expected json,plain' end
    if name == 'json' and is_syslog(target or settings.log) then return false, "json can't be used with syslog logger" end
    return true
end

-- `log` and `nonblock` are set once.
local function check_static(key, v)
    if set_up() and settings[key] ~= v then return false, "can't be set dynamically" end
    return true
end

-- box.cfg's name of each setting.
local BOX_KEYS = {log = 'log', nonblock = 'log_nonblock', level = 'log_level', format = 'log_format'}

-- Shows a setting in box.cfg (once box.cfg{} has configured the instance).
local function show_in_box_cfg(key)
    local update = box.internal.cfg_from_log
    if update ~= nil then update(BOX_KEYS[key], settings[key]) end
end

local function set_level(level, from_box_cfg)
    settings.level = type(level) == 'string' and LEVELS[level] or level
    if not from_box_cfg then show_in_box_cfg('level') end
end

local function set_format(name, from_box_cfg)
    settings.format = name
    if not from_box_cfg then show_in_box_cfg('format') end
end

-- Points the logger at `target` (a file relative to the work directory, a pipe
-- or syslog), once.
local function set_target(target, nonblock)
    if target ~= nil then
        local ok, err = native.log_open(tostring(target))
        if not ok then error(err, 3) end
    end
    settings.log, settings.nonblock, initialized = target, nonblock or nil, true
end

-- log.cfg: the settings as fields; called with a table, it sets them, as 2.6's:
-- the target once, level and format at any time.
log.cfg = setmetatable(settings, {
    __call = function(_, opts)
        opts = opts or {}
        local target = opts.log
        if target == '' then target = nil end
        local function refuse(key, why) error(string.format("log.cfg: '%s' %s", key, why), 2) end
        if opts.format ~= nil then
            local ok, why = check_format(opts.format, target)
            if not ok then refuse('format', why) end
        end
        if opts.level ~= nil then
            local ok, why = check_level(opts.level)
            if not ok then refuse('level', why) end
        end
        if opts.nonblock ~= nil and type(opts.nonblock) ~= 'boolean' then
            error("log.cfg: 'nonblock' option must be 'true' or 'false'", 2)
        end
        if set_up() then
            for _, key in ipairs({'log', 'nonblock'}) do
                local v = key == 'log' and target or opts.nonblock
                if v ~= nil then
                    local ok, why = check_static(key, v)
                    if not ok then refuse(key, why) end
                end
            end
        else
            set_target(target, opts.nonblock)
            show_in_box_cfg('log')
            show_in_box_cfg('nonblock')
        end
        if opts.level ~= nil then set_level(opts.level) end
        if opts.format ~= nil then set_format(opts.format) end
    end,
})

-- log.level(level): sets the level (a number or a name), as 2.6's.
function log.level(level)
    local ok, why = check_level(level)
    if not ok then error(why) end
    set_level(level)
end

-- log.log_format(name): 'plain' or 'json' (not json to syslog), as 2.6's.
function log.log_format(name)
    local ok, why = check_format(name)
    if not ok then error(why) end
    set_format(name)
end

-- box.cfg's side. check(key, value, opts): whether box.cfg{} may set the log
-- option `key` (box.cfg's name) to `value`, opts being the whole call's; true,
-- or false and why.
function box.internal.log_box_check(key, value, opts)
    if key == 'log_level' then return check_level(value) end
    if key == 'log_format' then return check_format(value, opts.log) end
    if key == 'log' then return check_static('log', value) end
    if key == 'log_nonblock' then return check_static('nonblock', value) end
    return true
end

-- box.cfg{} set `key` (box.cfg's name) to `value`: the logger follows.
function box.internal.log_box_set(key, value)
    if key == 'log_level' then set_level(value, true) end
    if key == 'log_format' then set_format(value, true) end
end

-- The first box.cfg{} booted with `opts` (the server opened its `log` target):
-- the logger takes box.cfg's settings, and box.cfg shows the logger's others.
function box.internal.log_box_booted(opts)
    if not initialized then
        local target = opts.log
        if target == '' then target = nil end
        -- (box.cfg's false stays false, as 2.6's box API stores it; log.cfg's becomes nil.)
        settings.log, settings.nonblock, initialized = target, opts.log_nonblock, true
    end
    for key, box_key in pairs(BOX_KEYS) do
        if opts[box_key] ~= nil then
            box.internal.log_box_set(box_key, opts[box_key])
        else
            show_in_box_cfg(key)
        end
    end
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

-- An error line at `where` (a file:line, or none) under the running fiber's tag:
-- what 2.6 logs when an error ends a fiber.
function box.internal.log_error_at(text, where)
    if LEVELS.error > current_level() then return end
    if not set_up() and not box.internal.booted then return emit(text) end
    local fid, fname = fiber_tag()
    if settings.format == 'json' then
        local file, line = string.match(where or '', '^(.*):(%d+)$')
        return emit(string.format('{"time": "%s", "level": "ERROR", "message": %s, "pid": %d , ' ..
            '"cord_name": "main", "fiber_id": %d, "fiber_name": %s, "file": %s, "line": %d}',
            timestamp('T') .. os.date('%z'), json.encode(text), native.pid(), fid, json.encode(fname),
            json.encode(file or '?'), tonumber(line) or 0))
    end
    emit(string.format('%s [%d] main/%d/%s %sE> %s', timestamp(' '), native.pid(), fid, fname,
        where and (where .. ' ') or '', text))
end

function log.pid() return native.pid() end

-- log.rotate(): the log file is opened again (after a rename, a new one begins
-- with 2.6's line saying so).
function log.rotate()
    local ok, err = native.log_rotate()
    if not ok then error(err, 2) end
    write(LEVELS.info, 'log file has been reopened')
end

package.loaded.log = log
