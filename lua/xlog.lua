-- xlog: reads Tarantool's own write-ahead logs and snapshots (.xlog, .snap),
-- as 2.6's module: `for lsn, record in xlog.pairs(path)`, each record
-- {HEADER = {type, lsn, replica_id, timestamp, ...}, BODY = {space_id, tuple, ...}}.
-- What tarantoolctl cat and play read files with. (The file is read whole.)

local msgpack = require('msgpack')
local table_new = require('table.new')
local tuple_from_msgpack = box.internal.native.tuple_from_msgpack

local TYPE_NAMES = {'SELECT', 'INSERT', 'REPLACE', 'UPDATE', 'DELETE', 'CALL_16', 'AUTH', 'EVAL', 'UPSERT', 'CALL',
                    'EXECUTE', 'NOP', 'PREPARE'}
-- Body keys are named in the rows of data changes (and NOPs); others keep their numbers.
local DML = {[1] = true, [2] = true, [3] = true, [4] = true, [5] = true, [9] = true, [12] = true}
local BODY_KEYS = {[0x10] = 'space_id', [0x11] = 'index_id', [0x12] = 'limit', [0x13] = 'offset',
                   [0x14] = 'iterator', [0x15] = 'index_base', [0x20] = 'key', [0x21] = 'tuple',
                   [0x22] = 'function_name', [0x23] = 'user_name', [0x25] = 'cluster_uuid',
                   [0x26] = 'vector_clock', [0x28] = 'operations', [0x29] = 'ballot', [0x2a] = 'tuple_meta'}
local KEY, TUPLE = 0x20, 0x21
-- Header keys.
local H_TYPE, H_SYNC, H_REPLICA_ID, H_LSN, H_TIMESTAMP, H_GROUP_ID, H_TSN, H_FLAGS = 0, 1, 2, 3, 4, 7, 8, 9
local FLAG_COMMIT = 1

local function header_of(raw)
    local h = msgpack.decode(raw)
    local ty, lsn = h[H_TYPE] or 0, h[H_LSN] or 0
    -- A statement of a longer transaction carries its distance to the first one's
    -- lsn, and the last one the commit flag.
    local tsn, commit = lsn, true
    if h[H_TSN] ~= nil then
        tsn = lsn - h[H_TSN]
        commit = bit.band(h[H_FLAGS] or 0, FLAG_COMMIT) ~= 0
    end
    -- Made and filled as 2.6 fills it, so that its keys iterate (and print) in 2.6's order.
    local header = table_new(0, 8)
    header.type = TYPE_NAMES[ty] or ty
    if (h[H_SYNC] or 0) ~= 0 then header.sync = h[H_SYNC] end
    if lsn ~= 0 then header.lsn = lsn end
    if (h[H_REPLICA_ID] or 0) ~= 0 then header.replica_id = h[H_REPLICA_ID] end
    if (h[H_GROUP_ID] or 0) ~= 0 then header.group_id = h[H_GROUP_ID] end
    if (h[H_TIMESTAMP] or 0) ~= 0 then header.timestamp = h[H_TIMESTAMP] end
    if tsn ~= lsn or not commit then header.tsn = tsn end
    if commit and tsn ~= lsn then header.commit = true end
    return lsn, ty, header
end

-- The body's fields in the map's order (as 2.6 fills its table); the key and the
-- tuple as tuples of their bytes.
local function body_of(ty, pairs_list)
    local body = {}
    for i = 1, #pairs_list, 2 do
        local k, raw = pairs_list[i], pairs_list[i + 1]
        local v = (k == KEY or k == TUPLE) and tuple_from_msgpack(raw) or nil
        if v == nil then v = msgpack.decode(raw) end
        body[DML[ty] and BODY_KEYS[k] or k] = v
    end
    return body
end

local xlog = {}

-- xlog.pairs(path): an iterator over the file's rows: lsn, record.
function xlog.pairs(...)
    local path = ...
    if select('#', ...) ~= 1 or (type(path) ~= 'string' and type(path) ~= 'number') then
        error('Usage: parser.open(log_filename)')
    end
    local cursor, err = box.internal.xlog.open(tostring(path))
    if cursor == nil then error(err, 0) end
    local function next_row(c)
        local raw_header, raw_body = c:next()
        if raw_header == nil then return end
        local lsn, ty, header = header_of(raw_header)
        local record = table_new(0, 8)
        record.HEADER = header
        if raw_body ~= nil then record.BODY = body_of(ty, raw_body) end
        return lsn, record
    end
    return next_row, cursor, 0
end

package.loaded.xlog = xlog
