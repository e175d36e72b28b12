-- clock: Tarantool 2.6's clock module. The plain functions return seconds as numbers,
-- the *64 ones nanoseconds as uint64 cdata, as in Tarantool.

local native_clock = box.internal.native.clock
local clock = {}

local function seconds(kind)
    local s, ns = native_clock(kind)
    return s + ns / 1e9
end

local function nanoseconds(kind)
    local s, ns = native_clock(kind)
    -- LuaJIT's 64-bit literals make uint64 cdata without the ffi module.
    return (0ULL + s) * 1000000000 + ns
end

function clock.realtime() return seconds('realtime') end
function clock.realtime64() return nanoseconds('realtime') end
function clock.monotonic() return seconds('monotonic') end
function clock.monotonic64() return nanoseconds('monotonic') end
function clock.proc() return seconds('process') end
function clock.proc64() return nanoseconds('process') end
function clock.thread() return seconds('thread') end
function clock.thread64() return nanoseconds('thread') end
clock.time = clock.realtime
clock.time64 = clock.realtime64

-- bench(fun, ...): {process CPU seconds spent, fun's results...}.
function clock.bench(fun, ...)
    local overhead = clock.proc()
    overhead = clock.proc() - overhead
    local start = clock.proc()
    local res = {0, fun(...)}
    res[1] = clock.proc() - start - overhead
    return res
end

package.loaded.clock = clock
