-- uuid: Tarantool 2.6's uuid module. A uuid is a `struct tt_uuid` cdata, as in 2.6,
-- so `ffi.istype('struct tt_uuid', u)` holds (tarantool/checks asks that) and its
-- memory is 2.6's: the first three fields in host byte order. Random and parsed
-- uuids come from Rust (`make`, below) as their 16 bytes in network order; msgpack
-- reads and writes them as MP_EXT type 2 (src/lua/uuid.rs).

local type = type -- the builtin, not the one user code sees (box.lua)
local ffi = require('ffi')
local make = ...

pcall(ffi.cdef, [[
struct tt_uuid {
    uint32_t time_low;
    uint16_t time_mid;
    uint16_t time_hi_and_version;
    uint8_t clock_seq_hi_and_reserved;
    uint8_t clock_seq_low;
    uint8_t node[6];
};
]])

local uuid_t = ffi.typeof('struct tt_uuid')
local UUID_LEN = 16

local function is_uuid(v) return type(v) == 'cdata' and ffi.istype(uuid_t, v) end

-- 16 bytes in the other byte order: the first three fields reversed.
local function swapped(b)
    return b:sub(4, 4) .. b:sub(3, 3) .. b:sub(2, 2) .. b:sub(1, 1) .. b:sub(6, 6) .. b:sub(5, 5) .. b:sub(8, 8)
        .. b:sub(7, 7) .. b:sub(9)
end

local function host_bytes(u) return ffi.string(ffi.cast('const char *', u), UUID_LEN) end

local function from_host(b)
    local u = ffi.new(uuid_t)
    ffi.copy(u, b, UUID_LEN)
    return u
end

local function from_network(b) return from_host(swapped(b)) end

-- Whether bytes in `order` need swapping from host order (2.6's need_bswap).
local function need_bswap(order)
    if order == nil or order == 'l' or order == 'h' or order == 'host' then return false end
    if order == 'b' or order == 'n' or order == 'network' then return true end
    error('builtin/uuid.lua:54: invalid byteorder, valid is l, b, h, n', 0)
end

local function uuid_str(u)
    if not is_uuid(u) then error('Usage: uuid:str()', 0) end
    local n = u.node
    return string.format('%08x-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x', u.time_low, u.time_mid,
        u.time_hi_and_version, u.clock_seq_hi_and_reserved, u.clock_seq_low, n[0], n[1], n[2], n[3], n[4], n[5])
end

local function uuid_bin(u, order)
    if not is_uuid(u) then error('Usage: uuid:bin([byteorder])', 0) end
    local b = host_bytes(u)
    if need_bswap(order) then return swapped(b) end
    return b
end

local function uuid_isnil(u)
    if not is_uuid(u) then error('Usage: uuid:isnil()', 0) end
    return host_bytes(u) == string.rep('\0', UUID_LEN)
end

local function uuid_eq(a, b)
    if not is_uuid(b) then return false end
    if not is_uuid(a) then error('Usage: uuid == var', 0) end
    return host_bytes(a) == host_bytes(b)
end

ffi.metatype(uuid_t, {
    __tostring = uuid_str,
    __eq = uuid_eq,
    __index = {isnil = uuid_isnil, bin = uuid_bin, str = uuid_str},
})

local function uuid_new() return from_network(make('new')) end

local uuid = setmetatable({
    NULL = ffi.new(uuid_t),
    new = uuid_new,
    str = function() return uuid_str(uuid_new()) end,
    bin = function(order) return uuid_bin(uuid_new(), order) end,
    fromstr = function(s)
        if type(s) ~= 'string' then error('builtin/uuid.lua:38: fromstr(str)', 0) end
        local b = make('fromstr', s)
        return b and from_network(b)
    end,
    frombin = function(b, order)
        if type(b) ~= 'string' or #b ~= UUID_LEN then error('builtin/uuid.lua:73: frombin(bin, [byteorder])', 0) end
        if need_bswap(order) then return from_network(b) end
        return from_host(b)
    end,
}, {__call = uuid_new})

-- For Rust (src/lua/uuid.rs): a zeroed uuid to fill, and the test for one.
local helpers = {new = function() return ffi.new(uuid_t) end, is = is_uuid}
return uuid, helpers
