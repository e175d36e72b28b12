-- csv: Tarantool's CSV module.
-- * csv.iterate(input[, opts]) walks the rows of a string, or of an object
--   whose read(n) returns the next piece ('' at the end), as a generic for:
--   `for i, row in csv.iterate(s) do ... end`, each row a table of strings;
-- * csv.load(input[, opts]) returns all the rows as one table;
-- * csv.dump(rows[, opts, writable]) writes rows (or one row) as CSV lines,
--   to `writable:write` or returned as a string.
-- Options: delimiter (','), quote_char ('"'), chunk_size (4096),
-- skip_head_lines (0).
--
-- The reader keeps 2.6's rules: spaces around an unquoted field are dropped;
-- a quote may open anywhere in a field, and two quotes stand for one; "\r\n"
-- and "\n\r" end a line once; an empty line is a row of one empty field; input
-- ending inside quotes logs "CSV file has errors" and ends the rows before
-- the broken one.

local type = type -- the builtin, not the one user code sees (box.lua)
local log = require('log')

local csv = {}

local USAGE_LOAD = 'Usage: load(string or object with method read(num)returns string)'

-- Reader states.
local LEADING_SPACES, UNQUOTED, QUOTED, QUOTE_OPENED, QUOTE_CLOSED = 1, 2, 3, 4, 5

local SPACE, CR, LF = 32, 13, 10

-- Each byte's one-character string, made once (the reader's inner loop stays
-- free of calls LuaJIT cannot compile).
local CHAR = {}
for b = 0, 255 do
    CHAR[b] = string.char(b)
end

-- A reader fed piece by piece: `feed` turns characters into fields and row
-- ends, kept in `events` until taken.
local function new_reader(delimiter, quote)
    return {
        delimiter = delimiter,
        quote = quote,
        state = LEADING_SPACES,
        field = nil,     -- characters of the field being read; nil between lines
        trailing = 0,    -- spaces at its end (dropped if it ends unquoted)
        previous = nil,  -- the last character seen
        events = {},     -- fields (strings) and row ends (false), in order
        count = 0,       -- how many events there have been
    }
end

local function emit(r, event)
    r.count = r.count + 1
    r.events[r.count] = event
end

local function end_field(r)
    local text = table.concat(r.field)
    emit(r, text:sub(1, #text - r.trailing))
    r.trailing = 0
end

-- A character in a field's own states: unquoted (it may end the field or the
-- row, or open quotes) or quoted (a quote may close them).
local function read_character(r, c, line_end)
    if r.state == UNQUOTED then
        if line_end or c == r.delimiter then
            end_field(r)
            r.state = LEADING_SPACES
            if line_end then
                r.field = nil
                emit(r, false)
            else
                r.field = {}
            end
            return
        elseif c == r.quote then
            r.state = QUOTE_OPENED
        else
            r.field[#r.field + 1] = CHAR[c]
        end
        r.trailing = c == SPACE and r.trailing + 1 or 0
    elseif r.state == QUOTED then
        if c == r.quote then
            r.state = QUOTE_CLOSED
        else
            r.field[#r.field + 1] = CHAR[c]
        end
    end
end

-- A character in the states between fields and around quotes; true when
-- it is used up there, false when it is still to be read as part of a field.
local function read_transition(r, c)
    if r.state == LEADING_SPACES then
        r.field = {}
        if c == SPACE then
            return true
        end
        r.state = UNQUOTED
    elseif r.state == QUOTE_OPENED then
        if c == r.quote and r.field then
            r.field[#r.field + 1] = CHAR[c]
            r.state = UNQUOTED
            return true
        end
        r.state = QUOTED
    elseif r.state == QUOTE_CLOSED then
        if c == r.quote then
            r.field[#r.field + 1] = CHAR[c]
            r.state = QUOTED
            return true
        end
        r.state = UNQUOTED
    end
    return false
end

local function feed(r, text)
    for i = 1, #text do
        local c = text:byte(i)
        local line_end = c == LF or c == CR
        -- The second character of "\r\n" or "\n\r" outside quotes is skipped.
        if line_end and r.state ~= QUOTED and c ~= r.previous and (r.previous == LF or r.previous == CR) then
            r.previous = nil
        else
            r.previous = c
            if not read_transition(r, c) then
                read_character(r, c, line_end)
            end
        end
    end
end

-- The end of the input: the last field and row end, unless the input ended
-- inside quotes (false then).
local function finish(r)
    if r.field == nil then
        return true
    end
    if r.state == QUOTED then
        return false
    end
    end_field(r)
    r.field = nil
    emit(r, false)
    return true
end

local function byte_of(option, default)
    return string.byte(option or default)
end

function csv.iterate(readable, opts)
    opts = opts or {}
    if type(readable) ~= 'string' and type(readable.read) ~= 'function' then
        error(USAGE_LOAD)
    end
    opts.chunk_size = opts.chunk_size or 4096
    opts.delimiter = opts.delimiter or ','
    opts.quote_char = opts.quote_char or '"'
    opts.skip_head_lines = opts.skip_head_lines or 0
    local first
    if type(readable) == 'string' then
        first, readable = readable, nil
    else
        first = readable:read(opts.chunk_size)
    end
    if not first then
        error(USAGE_LOAD)
    end
    local reader = new_reader(byte_of(opts.delimiter), byte_of(opts.quote_char))
    feed(reader, first)
    local taken, ended = 0, false
    -- The next event, reading on (or finishing) when none is left; nil at the end.
    local function next_event()
        while taken >= reader.count do
            if ended then
                return nil
            end
            local more = readable and readable:read(opts.chunk_size)
            if more ~= nil and more ~= '' then
                feed(reader, more)
            else
                ended = true
                if not finish(reader) then
                    log.warn('CSV file has errors')
                    return nil
                end
            end
        end
        taken = taken + 1
        local event = reader.events[taken]
        reader.events[taken] = nil
        return event
    end
    local function step(_, i)
        local row = {}
        while true do
            local event = next_event()
            if event == nil then
                return nil
            elseif event == false then
                i = i + 1
                if i > 0 then
                    return i, row
                end
            elseif i >= 0 then
                row[#row + 1] = event
            end
        end
    end
    return step, reader, -opts.skip_head_lines
end

function csv.load(readable, opts)
    local rows = {}
    for i, row in csv.iterate(readable, opts or {}) do
        rows[i] = row
    end
    return rows
end

-- One field as written: quotes doubled, the whole quoted when it holds the
-- delimiter or a line end; a field ends at a NUL byte, as in 2.6.
local function escape(field, delimiter, quote)
    local wrap = field:find(delimiter, 1, true) or field:find('[\n\r]')
    local escaped = field:match('^[^%z]*'):gsub(quote:gsub('%p', '%%%0'), function() return quote .. quote end)
    return wrap and quote .. escaped .. quote or escaped
end

function csv.dump(rows, opts, writable)
    opts = opts or {}
    opts.delimiter = opts.delimiter or ','
    opts.quote_char = opts.quote_char or '"'
    if (writable ~= nil and type(writable.write) ~= 'function') or type(rows) ~= 'table' then
        error('Usage: dump(table[, opts, writable])')
    end
    local delimiter, quote = opts.delimiter:sub(1, 1), opts.quote_char:sub(1, 1)
    if type(rows[1]) ~= 'table' then
        rows = { rows }
    end
    local lines = {}
    for _, row in pairs(rows) do
        local fields = {}
        for _, field in pairs(row) do
            fields[#fields + 1] = escape(tostring(field), delimiter, quote)
        end
        local line = table.concat(fields, delimiter) .. '\n'
        if writable then
            writable:write(line)
        else
            lines[#lines + 1] = line
        end
    end
    if not writable then
        return table.concat(lines)
    end
end

package.loaded.csv = csv
