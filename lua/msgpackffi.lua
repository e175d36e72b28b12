-- msgpackffi: Tarantool 2.6's older MsgPack module (written over ffi there). Here
-- its functions are msgpack's, which produce and accept the same bytes:
-- encode(v), decode(s[, offset]), decode_unchecked(s[, offset]), on_encode,
-- NULL and the array and map metatables, and internal.encode_r, encode_fix,
-- encode_array.

local msgpack = require('msgpack')

local msgpackffi = {
    NULL = msgpack.NULL,
    array_mt = msgpack.array_mt,
    map_mt = msgpack.map_mt,
    internal = {},
}

-- Encoders registered for other ctypes (`on_encode(ffi.typeof(...), fn(buf, v))`)
-- are recorded in `internal.encoders` only: msgpack's encoder does not call them,
-- and such a cdata encodes as msgpack encodes it.
local encoders = {}
function msgpackffi.on_encode(ctype, fn)
    encoders[ctype] = fn
end
msgpackffi.internal.encoders = encoders

-- The internal encoders 2.6's tests and modules call: encode_r(buf, obj, level)
-- appends obj to an ibuf; encode_fix(buf, code, num) one byte code|num;
-- encode_array(buf, size) an array header.
function msgpackffi.internal.encode_r(buf, obj, _)
    msgpack.encode(obj, buf)
end

function msgpackffi.internal.encode_fix(buf, code, num)
    local p = buf:alloc(1)
    p[0] = bit.bor(code, tonumber(num))
end

function msgpackffi.internal.encode_array(buf, size)
    if size <= 0xf then
        msgpackffi.internal.encode_fix(buf, 0x90, size)
        return
    end
    local wide = size > 0xffff
    local p = buf:alloc(wide and 5 or 3)
    p[0] = wide and 0xdd or 0xdc
    local bytes = wide and 4 or 2
    for i = bytes, 1, -1 do
        p[i] = bit.band(size, 0xff)
        size = bit.rshift(size, 8)
    end
end

function msgpackffi.encode(v)
    return msgpack.encode(v)
end

function msgpackffi.decode_unchecked(s, offset)
    if offset == nil then return msgpack.decode_unchecked(s) end
    return msgpack.decode_unchecked(s, offset)
end
-- As in 2.6, decode is decode_unchecked (a pointer needs no size).
msgpackffi.decode = msgpackffi.decode_unchecked

package.loaded.msgpackffi = msgpackffi
return msgpackffi
