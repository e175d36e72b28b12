-- msgpackffi: Tarantool 2.6's older MsgPack module (written over ffi there). Here
-- its functions are msgpack's, which produce and accept the same bytes:
-- encode(v), decode(s[, offset]), decode_unchecked(s[, offset]), on_encode,
-- NULL and the array and map metatables.

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

function msgpackffi.encode(v)
    return msgpack.encode(v)
end

function msgpackffi.decode(s, offset)
    if offset == nil then return msgpack.decode(s) end
    return msgpack.decode(s, offset)
end

function msgpackffi.decode_unchecked(s, offset)
    if offset == nil then return msgpack.decode_unchecked(s) end
    return msgpack.decode_unchecked(s, offset)
end

package.loaded.msgpackffi = msgpackffi
return msgpackffi
