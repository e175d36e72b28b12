-- buffer: Tarantool 2.6's ibuf, a growable byte buffer in C memory that
-- msgpack.encode writes into and msgpack.decode reads from (`buf.rpos`).
-- `struct ibuf` keeps 2.6's field layout (`buf`, `rpos`, `wpos`, `epos`); its
-- memory is a LuaJIT-owned array, kept alive here by the struct's address.

local type = type -- the builtin, not the one user code sees (box.lua)
local ffi = require('ffi')

local ibuf_t = ffi.typeof('struct ibuf')

-- The array behind each ibuf, by the struct's address.
local memory = {}

local function address(buf)
    return tonumber(ffi.cast('uintptr_t', ffi.cast('struct ibuf *', buf)))
end

local function size(buf) return tonumber(buf.wpos - buf.rpos) end
local function capacity(buf) return tonumber(buf.epos - buf.buf) end
local function unused(buf) return tonumber(buf.epos - buf.wpos) end

-- Makes room for `n` more bytes after wpos: moves the unread bytes to the
-- front when that is enough, else moves them to a larger array.
local function reserve_slow(buf, n)
    local used = size(buf)
    local want = used + n
    if buf.buf ~= nil and capacity(buf) >= want then
        -- The unread bytes to the front (through a copy: the ranges may overlap).
        local unread = ffi.string(buf.rpos, used)
        ffi.copy(buf.buf, unread, used)
    else
        local cap = math.max(tonumber(buf.start_capacity), 16)
        while cap < want do cap = cap * 2 end
        local mem = ffi.new('char[?]', cap)
        if used > 0 then ffi.copy(mem, buf.rpos, used) end
        memory[address(buf)] = mem
        buf.buf = mem
        buf.epos = buf.buf + cap
    end
    buf.rpos = buf.buf
    buf.wpos = buf.buf + used
    return buf.wpos
end

local function reserve(buf, n)
    if buf.wpos + n <= buf.epos then return buf.wpos end
    return reserve_slow(buf, n)
end

local methods = {}
function methods.size(buf) return size(buf) end
function methods.capacity(buf) return capacity(buf) end
function methods.unused(buf) return unused(buf) end
function methods.pos(buf) return tonumber(buf.rpos - buf.buf) end
function methods.reserve(buf, n) return reserve(buf, n) end
function methods.alloc(buf, n)
    local wpos = reserve(buf, n)
    buf.wpos = wpos + n
    return wpos
end
function methods.checksize(buf, n)
    reserve(buf, n)
    return buf.rpos
end
function methods.read(buf, n)
    if n > size(buf) then
        error(string.format('Attempt to read out of range bytes: needed=%d size=%d', n, size(buf)), 2)
    end
    local rpos = buf.rpos
    buf.rpos = rpos + n
    return rpos
end
-- Frees the memory.
function methods.recycle(buf)
    memory[address(buf)] = nil
    buf.buf, buf.rpos, buf.wpos, buf.epos = nil, nil, nil, nil
end
-- Empties the buffer, keeping its memory.
function methods.reset(buf)
    buf.rpos = buf.buf
    buf.wpos = buf.buf
end

ffi.metatype(ibuf_t, {__index = methods})

local DEFAULT_CAPACITY = 16320

local function new(start_capacity)
    local buf = ffi.gc(ffi.new(ibuf_t), function(b) memory[address(b)] = nil end)
    buf.start_capacity = start_capacity or DEFAULT_CAPACITY
    return buf
end

-- A buffer for everyone's short-lived use, given as a pointer (2.6's type); the
-- struct is kept alive with the arrays.
local shared = new()
memory.shared = shared

-- static_alloc(type[, n]): room for `n` (1) values of C `type` in a static
-- area, as 2.6's: for a result used at once (it is handed out again by later
-- calls); what the area cannot hold is allocated anew.
local STATIC_SIZE = 12288 -- 2.6's static area
local static_area = ffi.new('char[?]', STATIC_SIZE)
local static_used = 0
local function static_alloc(ctype, n)
    local bytes = (n or 1) * ffi.sizeof(ctype)
    if bytes > STATIC_SIZE then return ffi.new(ctype .. '[?]', n or 1) end
    local align = ffi.alignof(ctype)
    local from = math.ceil(static_used / align) * align
    if from + bytes > STATIC_SIZE then from = 0 end
    static_used = from + bytes
    return ffi.cast(ctype .. ' *', static_area + from)
end
memory.static_area = static_area

-- Two scratch registers for C calls that return values through pointers (2.6's
-- reg1 and reg2), one allocation.
pcall(ffi.cdef, [[
union c_register {
    size_t as[1];
    void *ap[1];
    int ai[1];
    char ac[1];
    const unsigned char *acucp[1];
    unsigned long aul[1];
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    int64_t i64;
    int64_t ai64[1];
};
]])
local reg_array = ffi.new('union c_register[?]', 2)

local buffer = {
    ibuf = new,
    READAHEAD = 16320,
    IBUF_SHARED = ffi.cast('struct ibuf *', shared),
    static_alloc = static_alloc,
    reg_array = reg_array,
    reg1 = reg_array[0],
    reg2 = reg_array[1],
}
package.loaded.buffer = buffer
return buffer
