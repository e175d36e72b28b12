-- fiber: Tarantool's fibers as Lua coroutines, scheduled on the TX thread.
--
-- Each CALL/EVAL runs in a fiber of its own; `fiber.create` starts another at once
-- (the creator waits until the new fiber yields or ends), `fiber.new` queues it.
-- A fiber runs until it sleeps, yields or waits on a channel or a condition; then
-- control goes back to whoever resumed it: the creator, or the server's scheduler
-- (src/lua/mod.rs), which resumes ready fibers between requests with each fiber's
-- own session and user bound to box.internal.op. As in Tarantool 2.6, a yield
-- inside a transaction aborts it (box.commit then fails with error 154).

local type = type -- the builtin, not the one user code sees (box.lua)
local internal = box.internal
local native = internal.native
-- The globals a CALL names functions in (whatever a script later assigns to `_G`).
local globals = _G

local function now()
    local s, ns = native.clock('monotonic')
    return s + ns / 1e9
end

local fiber = {}
local fiber_mt = {}
-- A fiber's `storage` table is made when first read (as 2.6 makes it): a request's
-- fiber that never reads it costs one table less, and its own table stays at eight
-- fields (LuaJIT's smallest hash part that holds them). Other missing fields are
-- methods, or nil; the scheduler reads the fields most fibers lack with rawget.
local rawget, rawset = rawget, rawset
fiber_mt.__index = function(f, key)
    if key == 'storage' then
        if f.state == 'dead' then error('the fiber is dead', 2) end
        local storage = {}
        rawset(f, 'storage', storage)
        return storage
    end
    return fiber_mt[key]
end

local fibers = {}     -- fid -> fiber, while alive
local sleeping = {}   -- fiber -> true, for fibers with a wake-up time
local current = nil   -- the running fiber; nil outside fibers (triggers, boot)
local next_fid = 104
local alive_count = 0
local reported_count = 0

-- The fibers to resume at the next scheduling point, first in first out:
-- ready[ready_head .. ready_tail] (a queue of thousands costs no more per fiber
-- than one of two).
local ready, ready_head, ready_tail = {}, 1, 0

local function ready_count() return ready_tail - ready_head + 1 end

local function ready_push(f)
    ready_tail = ready_tail + 1
    ready[ready_tail] = f
end

local function ready_pop()
    if ready_head > ready_tail then return nil end
    local f = ready[ready_head]
    ready[ready_head] = nil
    ready_head = ready_head + 1
    if ready_head > ready_tail then ready_head, ready_tail = 1, 0 end
    return f
end

-- The sleepers by wake-up time (then by when they went to sleep), as a binary
-- heap in three arrays, so that finding who is due looks at the due alone, as
-- 2.6's timers do. A fiber woken early leaves its entry behind: an entry counts
-- only while its fiber sleeps until that very time, and the heap is rebuilt from
-- `sleeping` when stale entries outnumber the live ones.
local heap_at, heap_seq, heap_f, heap_n, heap_serial = {}, {}, {}, 0, 0
local sleeping_count = 0

local function heap_before(i, j)
    local a, b = heap_at[i], heap_at[j]
    return a < b or (a == b and heap_seq[i] < heap_seq[j])
end

local function heap_swap(i, j)
    heap_at[i], heap_at[j] = heap_at[j], heap_at[i]
    heap_seq[i], heap_seq[j] = heap_seq[j], heap_seq[i]
    heap_f[i], heap_f[j] = heap_f[j], heap_f[i]
end

local function heap_push(at, f)
    heap_serial = heap_serial + 1
    heap_n = heap_n + 1
    local i = heap_n
    heap_at[i], heap_seq[i], heap_f[i] = at, heap_serial, f
    while i > 1 do
        local parent = math.floor(i / 2)
        if not heap_before(i, parent) then break end
        heap_swap(i, parent)
        i = parent
    end
end

local function heap_pop()
    heap_swap(1, heap_n)
    heap_at[heap_n], heap_seq[heap_n], heap_f[heap_n] = nil, nil, nil
    heap_n = heap_n - 1
    local i = 1
    while true do
        local left, smallest = 2 * i, i
        if left <= heap_n and heap_before(left, smallest) then smallest = left end
        if left + 1 <= heap_n and heap_before(left + 1, smallest) then smallest = left + 1 end
        if smallest == i then return end
        heap_swap(i, smallest)
        i = smallest
    end
end

-- Whether the heap's first entry is a fiber sleeping until that time.
local function heap_top_live()
    local f = heap_f[1]
    return sleeping[f] == true and f.wake_at == heap_at[1]
end

-- Drops the stale entries at the top; returns the earliest live wake-up time.
local function soonest_wake_up()
    while heap_n > 0 and not heap_top_live() do heap_pop() end
    return heap_at[1]
end

local function sleep_until(f, deadline)
    if not sleeping[f] then sleeping_count = sleeping_count + 1 end
    sleeping[f] = true
    if heap_n > 2 * sleeping_count + 64 then
        heap_at, heap_seq, heap_f, heap_n = {}, {}, {}, 0
        for other in pairs(sleeping) do
            if other ~= f and other.wake_at ~= nil then heap_push(other.wake_at, other) end
        end
    end
    heap_push(deadline, f)
end

local function stop_sleeping(f)
    if sleeping[f] then
        sleeping[f] = nil
        sleeping_count = sleeping_count - 1
    end
end

-- The server reads the number of live fibers (none: the scheduler costs nothing).
-- A request's fiber that ends at once changes nothing, so it is not reported.
local function report_count()
    if alive_count ~= reported_count then
        reported_count = alive_count
        native.fiber_count(alive_count)
    end
end

-- State that Tarantool keeps per fiber and box.lua reads through internal.fiber_locals():
-- the open transaction (`txn`) and the session user while box.session.su runs. It
-- lives on the fiber object; outside fibers, here.
local outside = {txn = {}}
function internal.fiber_locals()
    return current or outside
end

local function pack(...) return {n = select('#', ...), ...} end

-- box.internal.op for the fiber scheduler's operations, by number where the
-- server gave it one (dispatch.rs's OP_CODES: no string crosses into Rust).
local function session_op(name, ...)
    local codes = internal.op_codes
    return internal.op(codes ~= nil and codes[name] or name, ...)
end

-- The effective user and the session of the running code, when box is bound.
local function bound(name)
    if internal.op == nil then return nil end
    local ok, v = session_op(name)
    if ok then return v end
    return nil
end

local function cancelled_error()
    return internal.make_error(nil, 'fiber is cancelled', 'FiberIsCancelled')
end

-- A request's fiber runs in a pooled coroutine: it runs one request, yields this
-- marker with the results, and waits to run the next one (no coroutine is made and
-- collected per CALL, as Tarantool keeps a pool of fibers for requests).
local WORKER_DONE = {}
local idle_workers = {}
local MAX_IDLE_WORKERS = 64

-- The end of a request's fiber: a transaction left open is rolled back and fails
-- the call. Takes and returns pcall's results (no table: one CALL makes as little
-- garbage as it can).
local function request_end(ok, ...)
    local open = internal.txn_leave(current)
    -- rawget, here and in ended(): fields most fibers lack, read without a metatable lookup.
    if rawget(current, 'atomic_aborted') then
        return false, internal.make_error(154, 'Transaction has been aborted by a fiber yield')
    end
    if ok and open then
        return false, internal.make_error(30, 'Transaction is active at return from function')
    end
    return ok, ...
end

local function worker(fn, ...)
    return worker(coroutine.yield(WORKER_DONE, request_end(pcall(fn, ...))))
end

-- The idle worker coroutine last put back, taken from the pool (nil when none).
local function idle_worker()
    local n = #idle_workers
    if n == 0 then return nil end
    local co = idle_workers[n]
    idle_workers[n] = nil
    return co
end

-- A request's fiber (fn == nil) takes an idle worker coroutine, and is listed in
-- `fibers` only if it yields (most end at once). Fields a fiber rarely has (a
-- transaction, a wake-up time, a joiner) are added when needed: a request's fiber
-- stays small, which matters at one per CALL.
-- `sync`: the request's (box.session.sync()), 0 for fibers Lua makes; set here, as
-- a field added later would regrow the table.
local function new_fiber(fn, name, session_id, uid, sync)
    local f = setmetatable({fid = next_fid, name_ = name, state = 'suspended', session_id = session_id,
                            uid = uid or false, request = fn == nil, sync = sync or 0,
                            co = fn and coroutine.create(fn) or idle_worker() or coroutine.create(worker)},
                           fiber_mt)
    next_fid = next_fid + 1
    if fn ~= nil then fibers[f.fid] = f end
    alive_count = alive_count + 1
    return f
end

-- Request fibers are pooled, as 2.6's are: a request's fiber that ended serves the
-- next request, with its id, its object and its name (2.6 keeps a renamed pool
-- fiber's name), its storage and its other fields gone. A CALL then makes no
-- garbage of its own. A fiber the scheduler may still hold (it waited, or was
-- queued: a waiters' list may keep it after an error) is not reused.
local spare_request_fiber = nil
local held = setmetatable({}, {__mode = 'k'})
-- The fields a request's fiber may have gained beyond new_fiber's.
local OPTIONAL_FIELDS = {'txn', 'su_uid', 'atomic', 'atomic_aborted', 'queued', 'wake_at', 'woken', 'joiner',
                         'joinable', 'cancelled', 'exiting', 'result', 'storage', 'script'}

local function request_fiber(session_id, uid, sync)
    local f = spare_request_fiber
    if f == nil then return new_fiber(nil, 'main', session_id, uid, sync) end
    spare_request_fiber = nil
    f.state, f.session_id, f.uid, f.sync = 'suspended', session_id, uid or false, sync or 0
    f.co = idle_worker() or coroutine.create(worker)
    alive_count = alive_count + 1
    return f
end

-- A request's fiber `f` ended (`done`): unless the scheduler may hold it, it is
-- kept for the next request.
local function spare_unheld(f, done)
    if not done or held[f] then return end
    for i = 1, #OPTIONAL_FIELDS do
        local key = OPTIONAL_FIELDS[i]
        if rawget(f, key) ~= nil then rawset(f, key, nil) end
    end
    spare_request_fiber = f
end

-- The sessions of fibers made by Lua: id -> true while the fiber lives.
local background_sessions = {}
function internal.is_background_session(id) return background_sessions[id] ~= nil end

-- A fiber made by Lua (fiber.create/new) runs, as in 2.6, in a background session
-- of its own and as admin (user 1), whoever made it. Before box.cfg{} there are
-- no sessions: it runs in the server's own (1).
local function new_lua_fiber(fn)
    local f
    if internal.op ~= nil then
        local _, session_id = session_op('new_session_id')
        f = new_fiber(fn, 'lua', session_id, 1)
        f.own_session = true
        background_sessions[session_id] = true
    else
        f = new_fiber(fn, 'lua', current and current.session_id or 1, false)
    end
    report_count()
    return f
end

local function make_ready(f)
    if f.state == 'dead' or rawget(f, 'queued') then return end
    held[f] = true
    f.queued = true
    stop_sleeping(f)
    f.wake_at = nil
    ready_push(f)
end

local wake

-- The resumer of a fiber is switched back in: for it, the fiber's run was a yield.
-- The event loop's time (fiber.time() below), as last read.
local loop_tick
local seen_tick, realtime, monotonic = -1, nil, nil
-- A sleep ends in a later turn of the loop: the next read takes the time again.
local function time_moves() realtime = nil end

local function switch_back(prev)
    current = prev
    if prev ~= nil then
        prev.state = 'running'
        internal.txn_on_resume(prev)
    end
end

-- A fiber ended.
local function ended(f)
    f.state = 'dead'
    -- Its storage goes with it: reading it now raises, as in 2.6. (Setting a
    -- missing key, even to nil, adds it: a full table would be rehashed.)
    if rawget(f, 'storage') ~= nil then rawset(f, 'storage', nil) end
    fibers[f.fid] = nil
    stop_sleeping(f)
    alive_count = alive_count - 1
    local joiner = rawget(f, 'joiner')
    if joiner then wake(joiner) end
    -- A Lua fiber's session goes with it (its box.session.storage too).
    if rawget(f, 'own_session') then
        background_sessions[f.session_id] = nil
        if internal.forget_session then internal.forget_session(f.session_id) end
    end
end

-- After a request's worker ran: true and pcall's results when the request ended,
-- false when it waits. A worker that ended its request goes back to the pool.
local function worker_ran(f, prev, ok, marker, ...)
    switch_back(prev)
    if ok and marker == WORKER_DONE then
        local co = f.co
        f.co = nil
        if #idle_workers < MAX_IDLE_WORKERS then idle_workers[#idle_workers + 1] = co end
        ended(f)
        return true, ...
    elseif not ok then
        ended(f)
        return true, false, marker
    end
    f.state = 'suspended'
    return false
end

-- `err` as a box.error: itself, or a LuajitError of its text.
local function as_box_error(err)
    if box.error ~= nil and box.error.is(err) then return err end
    if type(err) == 'table' and err.type == 'FiberIsCancelled' then return err end
    return internal.make_error(nil, tostring(err), 'LuajitError')
end

-- Logs the error that ended the running fiber as 2.6 does: `LuajitError: text` at
-- utils.c:1005 for a Lua error, `ER_NAME: message` (or `Custom type %s: message`)
-- where a box.error was made.
local function log_fiber_error(err)
    if internal.log_error_at == nil then return end
    local text, where
    if err.base_type == 'LuajitError' or err.type == 'LuajitError' then
        text, where = 'LuajitError: ' .. tostring(err.message), 'utils.c:1005'
    else
        if err.base_type == 'CustomError' then
            text = 'Custom type %s: ' .. tostring(err.message)
        else
            local name = 'UNKNOWN'
            for n, code in pairs(internal.error_codes or {}) do
                if code == err.code then name = n break end
            end
            text = string.format('ER_%s: %s', name, tostring(err.message))
        end
        local frame = type(err.trace) == 'table' and err.trace[1]
        if type(frame) == 'table' and frame.file ~= nil then
            where = string.format('%s:%s', string.match(frame.file, '([^/]+)$') or frame.file, frame.line)
        end
    end
    internal.log_error_at(text, where)
end

-- Resumes f until it yields or ends. Returns true and how it ended (`ok, results...`,
-- as pcall's) when it ended, false when it waits.
local function resume(f, ...)
    local prev = current
    if prev ~= nil then
        -- The resumer is switched out: for it, this is a yield (Tarantool aborts its transaction).
        internal.txn_on_yield(prev)
        prev.state = 'suspended'
    end
    current = f
    f.state = 'running'
    if rawget(f, 'queued') then f.queued = false end
    local co = f.co
    if f.request and not rawget(f, 'script') then
        return worker_ran(f, prev, coroutine.resume(co, ...))
    end
    local r = pack(coroutine.resume(co, ...))
    local dead = coroutine.status(co) == 'dead'
    if dead and not f.request and not r[1] then
        -- What ends a plain fiber is a box.error when joined, as in 2.6 (error() of
        -- anything else makes a LuajitError of its text).
        r[2] = as_box_error(r[2])
        local cancelled = r[2].type == 'FiberIsCancelled'
        if not f.joinable and not cancelled then
            -- Logged as the fiber itself, as 2.6 logs it (still the running one here).
            log_fiber_error(r[2])
        end
    end
    switch_back(prev)
    if not dead then
        f.state = 'suspended'
        return false
    end
    if not f.request then f.result = r end
    ended(f)
    if not f.request then report_count() end
    return true, unpack(r, 1, r.n)
end

-- A script's main chunk before box.cfg is not resumed by the server's scheduler:
-- it waits by running the other fibers itself (there is no engine yet).
local function inline_main()
    if current == nil and internal.script_mode and not internal.booted then return internal.main_fiber end
    return nil
end

-- The fiber that runs: the running one, or the script's main chunk before box.cfg.
local function running() return current or inline_main() end

-- The fiber that would wait, for a list that keeps it (waiters, a joiner): it is
-- not reused for another request.
local function me()
    local f = running()
    if f ~= nil then held[f] = true end
    return f
end

local wait -- (below)

-- Whether the script's main chunk waits by running the other fibers itself.
local main_waits_inline = false
function internal.fiber_main_waits() return main_waits_inline end

local function wait_inline(f, deadline)
    f.woken = false
    while true do
        main_waits_inline = true
        internal.fiber_run_unbound()
        main_waits_inline = false
        if internal.pending_boot ~= nil then
            -- A fiber called the first box.cfg{}: this chunk boots with its options
            -- (its yield reaches the server), and goes on waiting as fiber 103.
            internal.boot_pending()
            if f.woken then return true end
            return wait(deadline)
        end
        if f.woken then return true end
        local t = now()
        if deadline ~= nil and t >= deadline then return false end
        local pause = internal.fiber_delay()
        if deadline ~= nil then pause = math.min(pause or math.huge, deadline - t) end
        -- Waits for what other threads report (a socket, net.box, a child) until
        -- `pause` ends; with no pause, until something comes. A stop signal
        -- ends the script as 2.6's event loop does: shutdown triggers, status 0.
        if native.wait_events(pause) then os.exit(0) end
    end
end

-- Gives up the processor until woken or until `deadline` (monotonic seconds; nil:
-- forever). Returns true if woken, false on time-out. Raises if cancelled.
-- Times code asked to yield (sleep, yield, any wait), wherever it ran: a statement
-- whose triggers yielded is aborted, as in 2.6 (see box.lua's run_replace_triggers).
local yields = 0
function internal.fiber_yields() return yields end

wait = function(deadline)
    yields = yields + 1
    local f = current
    if f ~= nil then held[f] = true end
    if f == nil then
        local main = inline_main()
        if main ~= nil then return wait_inline(main, deadline) end
        -- Outside a fiber (a trigger) there is no one to switch to: the wait ends at
        -- once, as timed out.
        return false
    end
    -- As in Tarantool, cancellation is seen when the fiber wakes (a cancel before
    -- the wait does not shorten it).
    if rawget(f, 'atomic') then
        -- A tokened CALL/EVAL is one transaction, which a yield would abort.
        f.atomic_aborted = true
        error(internal.make_error(154, 'Transaction has been aborted by a fiber yield'), 0)
    end
    f.woken = false
    f.wake_at = deadline
    if deadline ~= nil then sleep_until(f, deadline) else stop_sleeping(f) end
    -- The user box.session.su switched to stays for the next resume.
    f.uid = bound('uid') or f.uid
    internal.txn_on_yield(f)
    f.state = 'suspended'
    coroutine.yield()
    internal.txn_on_resume(f)
    if f.cancelled then error(cancelled_error(), 0) end
    return f.woken
end

function wake(f)
    if f.state == 'dead' then return end
    f.woken = true
    if f.inline then return end
    make_ready(f)
end

--------------------------------------------------------------------------------
-- The module
--------------------------------------------------------------------------------

local function check_fn(fn, what)
    if type(fn) ~= 'function' and not (type(fn) == 'table' and getmetatable(fn) and getmetatable(fn).__call) then
        error(what .. '(function, ...): bad arguments', 3)
    end
end

local function body(fn, ...)
    local args = {n = select('#', ...), ...}
    return function() return fn(unpack(args, 1, args.n)) end
end

-- Runs `f` at once (fiber.create) in its own session and as its user; the code
-- that made it gets its own back when `f` yields or ends.
local function resume_in_own_session(f)
    if not rawget(f, 'own_session') or internal.op == nil then return resume(f) end
    local session_id, uid = bound('session_id'), bound('uid')
    session_op('enter_session', f.session_id, f.uid or 1)
    resume(f)
    if internal.op ~= nil then session_op('enter_session', session_id, uid) end
end

function fiber.create(fn, ...)
    check_fn(fn, 'fiber.create')
    local f = new_lua_fiber(body(fn, ...))
    -- The script's main chunk before box.cfg{} runs the new fiber itself: should
    -- it call the first box.cfg{}, the chunk boots as soon as it is back.
    local by_main = current == nil and inline_main() ~= nil
    if by_main then main_waits_inline = true end
    resume_in_own_session(f)
    if by_main then
        main_waits_inline = false
        if internal.pending_boot ~= nil then internal.boot_pending() end
    end
    return f
end

function fiber.new(fn, ...)
    check_fn(fn, 'fiber.new')
    local f = new_lua_fiber(body(fn, ...))
    make_ready(f)
    return f
end

-- A fiber serving the running fiber's session, as its user (a console client's
-- fiber, which 2.6 keeps for the client's whole session), scheduled to run.
function internal.session_fiber(fn, name)
    local f = new_fiber(fn, name, current and current.session_id or 1, current and current.uid)
    report_count()
    make_ready(f)
    return f
end

-- Fiber `f` runs as the running fiber's user from now on (its session's user may
-- have changed since it was made: box.session.su).
function internal.fiber_take_user(f)
    if current ~= nil then rawset(f, 'uid', current.uid) end
end

function fiber.sleep(delay)
    if type(delay) ~= 'number' then error('fiber.sleep(delay): bad arguments', 2) end
    if delay < 0 then delay = 0 end
    yields = yields + 1
    if running() == nil then
        time_moves()
        return
    end
    -- f:wakeup() ends a sleep early, as in Tarantool.
    wait(now() + delay)
    -- A sleep ends in a later turn of the loop: the time has moved (the fibers
    -- that ran meanwhile, in this turn, saw the time of the turn).
    time_moves()
end

function fiber.yield()
    yields = yields + 1
    if current == nil then
        local main = inline_main()
        if main ~= nil then wait_inline(main, now()) end
        return
    end
    make_ready(current)
    wait(nil)
end

-- Whether the running code may let the statements it committed go now (box.lua's
-- after_write, in a long run of writes): it runs in a fiber the scheduler runs,
-- in the fiber's own coroutine (a yield inside a coroutine the code made would
-- go to that coroutine's resumer) where a yield is allowed (not under a C call),
-- and not as a tokened request (one transaction) or a trigger the server runs
-- inside its own statement.
function internal.fiber_may_commit()
    return current ~= nil and not rawget(current, 'atomic') and coroutine.running() == current.co
        and coroutine.isyieldable()
end

function fiber.self()
    return current or internal.main_fiber
end
function fiber.id() return fiber.self():id() end
function fiber.name(name, opts) return fiber.self():name(name, opts) end
function fiber.status(f) return (f or fiber.self()):status() end
function fiber.find(id)
    if fibers[id] == nil and id == internal.main_fiber.fid then return internal.main_fiber end
    if fibers[id] == nil and current ~= nil and current.fid == id then return current end
    return fibers[id]
end
function fiber.kill(id)
    local f = fibers[id]
    if f == nil then error('the fiber is dead', 2) end
    f:cancel()
end
-- The live fiber `f` names (a fiber or its id), as 2.6's module functions take it.
local function live(f)
    local found = type(f) == 'number' and fiber.find(f) or f
    if type(found) ~= 'table' or found.state == 'dead' then error('the fiber is dead', 3) end
    return found
end
function fiber.cancel(f) live(f):cancel() end
function fiber.wakeup(f) live(f):wakeup() end
function fiber.set_joinable(f, yes) live(f):set_joinable(yes) end
function fiber.join(f)
    if type(f) == 'number' then f = fiber.find(f) end
    if type(f) ~= 'table' then error('the fiber is dead', 2) end
    return f:join()
end
-- fiber.top(): off until fiber.top_enable(), as in 2.6; oncebox keeps no per-fiber
-- CPU figures, so each fiber shows zeros.
local top_enabled = false
function fiber.top_enable() top_enabled = true end
function fiber.top_disable() top_enabled = false end
function fiber.testcancel()
    local f = current
    if f and f.cancelled then error(cancelled_error(), 0) end
end
-- One fiber's entry of fiber.info(), with 2.6's fields set in its order (so that
-- it iterates and prints as there); the figures are zeros here, the backtrace
-- (a list of frames in 2.6) empty.
local function fiber_stat(fid, name, backtrace)
    local stat = {}
    stat.name = name
    stat.fid = fid
    stat.csw = 0
    stat.time = 0
    local memory = {}
    memory.used = 0
    memory.total = 0
    stat.memory = memory
    if backtrace then stat.backtrace = {} end
    return stat
end

-- fiber.info([{backtrace = bool}]) (or `bt`), as 2.6: every fiber by id, in block style.
function fiber.info(opts)
    local backtrace = true
    if type(opts) == 'table' then
        local wanted = opts.backtrace
        if wanted == nil then wanted = opts.bt end
        if wanted ~= nil then backtrace = wanted ~= false end
    end
    local t = {}
    for fid, f in pairs(fibers) do t[fid] = fiber_stat(fid, f.name_, backtrace) end
    -- A script's main chunk before box.cfg is a fiber too (it joins `fibers` at box.cfg).
    local main = inline_main()
    if main ~= nil and t[main.fid] == nil then t[main.fid] = fiber_stat(main.fid, main.name_, backtrace) end
    return setmetatable(t, {__serialize = 'mapping'})
end
function fiber.top()
    if not top_enabled then error('fiber.top() is disabled. Enable it with fiber.top_enable() first', 2) end
    local cpu = {['1/sched'] = {average = 0, instant = 0, time = 0}}
    for fid, f in pairs(fiber.info()) do cpu[fid .. '/' .. f.name] = {average = 0, instant = 0, time = 0} end
    return {cpu_misses = 0, cpu = cpu}
end

-- fiber.time() and fiber.clock() are the event loop's time, as in 2.6: read once,
-- then the same until the TX loop takes its next message (box.internal.loop_tick
-- counts those) or a fiber sleeps; fibers switching within one turn of the loop
-- see the same time.
local function loop_time()
    if loop_tick == nil then
        loop_tick = require('ffi').cast('const uint32_t *', internal.loop_tick)
    end
    local tick = loop_tick[0]
    if tick ~= seen_tick or realtime == nil then
        seen_tick = tick
        realtime = {native.clock('realtime')}
        monotonic = {native.clock('monotonic')}
    end
end
function fiber.time()
    loop_time()
    return realtime[1] + realtime[2] / 1e9
end
function fiber.time64()
    loop_time()
    return (0LL + realtime[1]) * 1000000 + math.floor(realtime[2] / 1000)
end
function fiber.clock()
    loop_time()
    return monotonic[1] + monotonic[2] / 1e9
end
function fiber.clock64()
    loop_time()
    return (0LL + monotonic[1]) * 1000000 + math.floor(monotonic[2] / 1000)
end

-- The fiber object

-- As 2.6: a fiber that ended (and is not waiting to be joined) is gone, and its
-- object's methods say so.
local function check_alive(f)
    if f.state == 'dead' and not f.joinable then error('the fiber is dead', 3) end
end

function fiber_mt:id() return self.fid end
-- 2.6's FIBER_NAME_MAX, the terminating zero included.
local FIBER_NAME_MAX = 256
function fiber_mt:name(name, opts)
    check_alive(self)
    if name ~= nil then
        if type(name) ~= 'string' then error('fiber.name(): bad arguments', 2) end
        if #name >= FIBER_NAME_MAX and not (type(opts) == 'table' and opts.truncate == true) then
            error('Fiber name is too long', 2)
        end
        self.name_ = string.sub(name, 1, FIBER_NAME_MAX - 1)
    end
    return self.name_
end
function fiber_mt:status()
    if self == running() then return 'running' end
    return self.state == 'dead' and 'dead' or 'suspended'
end
function fiber_mt:cancel()
    check_alive(self)
    if self.state == 'dead' then return end
    self.cancelled = true
    if self ~= running() then
        wake(self)
    elseif self == current then
        -- As 2.6: cancelling oneself is noticed at once.
        error(cancelled_error(), 0)
    end
end
function fiber_mt:wakeup()
    check_alive(self)
    if self.state ~= 'dead' and self ~= running() then wake(self) end
end
function fiber_mt:set_joinable(...)
    if select('#', ...) ~= 1 or type(self) ~= 'table' then error('fiber.set_joinable(id, yesno): bad arguments', 2) end
    self.joinable = (...) and true or false
end
function fiber_mt:join()
    if self.state == 'dead' and not self.joinable then error('the fiber is dead', 2) end
    if not self.joinable then error('the fiber is not joinable', 2) end
    while self.state ~= 'dead' do
        self.joiner = me()
        if self.joiner == nil then error('fiber:join() outside a fiber would block the server', 2) end
        wait(nil)
    end
    self.joinable = false
    local r = self.result
    if r[1] then return true, unpack(r, 2, r.n) end
    return false, r[2]
end
fiber_mt.__tostring = function(self) return 'fiber: ' .. self.fid end
fiber_mt.__serialize = function(self) return {id = self.fid, name = self.name_, status = self:status()} end
-- 2.6's fiber objects are userdata: the serializers and the type() user code sees
-- take a table with this metatable for one.
fiber_mt.__fiber = true
-- The name 2.6's getmetatable() gives, as tap's isudata reads it.
fiber_mt.__name = 'fiber'

--------------------------------------------------------------------------------
-- Channels and conditions
--------------------------------------------------------------------------------

local channel_mt = {}
channel_mt.__index = channel_mt

function fiber.channel(size)
    size = size == nil and 0 or tonumber(size)
    if size == nil then error('fiber.channel(size): bad arguments', 2) end
    if size < 0 then error('fiber.channel(size): negative size', 2) end
    size = size >= 0 and math.floor(size) or math.ceil(size)
    return setmetatable({cap = size, buf = {}, head = 1, tail = 0, readers = {}, writers = {}, closed = false},
                        channel_mt)
end

local function deadline_of(timeout)
    if timeout == nil or timeout == math.huge then return nil end
    return now() + math.max(timeout, 0)
end

-- A channel's or a condition's time-out as 2.6 takes it (a number, or a string
-- of one, not negative), or `usage` raised at the caller's caller.
local function checked_timeout(timeout, usage)
    if timeout == nil then return nil end
    local t = tonumber(timeout)
    if t == nil or t < 0 then error('usage: ' .. usage, 3) end
    return t
end

local function wake_first(list)
    while #list > 0 do
        local f = table.remove(list, 1)
        if f.state ~= 'dead' then
            wake(f)
            return
        end
    end
end

local function drop(list, f)
    for i, x in ipairs(list) do
        if x == f then
            table.remove(list, i)
            return
        end
    end
end

function channel_mt:count() return self.tail - self.head + 1 end
function channel_mt:size() return self.cap end
function channel_mt:is_empty() return self:count() == 0 end
function channel_mt:is_full() return self:count() >= self.cap end
function channel_mt:has_readers() return #self.readers > 0 end
function channel_mt:has_writers() return #self.writers > 0 end
function channel_mt:is_closed() return self.closed end

function channel_mt:put(...)
    local usage = 'channel:put(var [, timeout])'
    if getmetatable(self) ~= channel_mt or select('#', ...) < 1 then error('usage: ' .. usage, 2) end
    local value, timeout = ...
    local deadline = deadline_of(checked_timeout(timeout, usage))
    while true do
        if self.closed then return false end
        -- Room in the buffer, or (an unbuffered channel) a reader waiting for this value.
        if self:count() < self.cap or #self.readers > self:count() then
            self.tail = self.tail + 1
            self.buf[self.tail] = value
            wake_first(self.readers)
            return true
        end
        local self_fiber = me()
        if timeout == 0 or self_fiber == nil then return false end
        table.insert(self.writers, self_fiber)
        local woken = wait(deadline)
        drop(self.writers, self_fiber)
        if not woken and deadline and now() >= deadline then return false end
    end
end

function channel_mt:get(timeout)
    if getmetatable(self) ~= channel_mt then error('usage: channel:get([timeout])', 2) end
    local deadline = deadline_of(checked_timeout(timeout, 'channel:get([timeout])'))
    while true do
        if self:count() > 0 then
            local v = self.buf[self.head]
            self.buf[self.head] = nil
            self.head = self.head + 1
            wake_first(self.writers)
            return v
        end
        if self.closed then return nil end
        local self_fiber = me()
        if timeout == 0 or self_fiber == nil then return nil end
        table.insert(self.readers, self_fiber)
        -- An unbuffered channel's writer waits for a reader: let one in.
        wake_first(self.writers)
        local woken = wait(deadline)
        drop(self.readers, self_fiber)
        if not woken and deadline and now() >= deadline and self:count() == 0 then return nil end
    end
end

function channel_mt:close()
    -- As in Tarantool, what is still buffered is dropped.
    self.closed = true
    self.buf, self.head, self.tail = {}, 1, 0
    for _, f in ipairs(self.readers) do wake(f) end
    for _, f in ipairs(self.writers) do wake(f) end
    self.readers, self.writers = {}, {}
end
channel_mt.__tostring = function(self) return 'channel: ' .. self:count() end

local cond_mt = {}
cond_mt.__index = cond_mt

function fiber.cond() return setmetatable({waiters = {}}, cond_mt) end
-- As 2.6's luaT_checkfibercond: a method called without its condition ('.' for
-- ':') gives its usage, with another value 2.6's argument error.
local function check_cond(usage, ...)
    if select('#', ...) == 0 then error('usage: ' .. usage, 0) end
    local self = ...
    if getmetatable(self) ~= cond_mt then
        error(string.format("bad argument #1 to '?' (fiber.cond expected, got %s)", type(self)), 0)
    end
    return self
end
function cond_mt.wait(...)
    local self = check_cond('cond:wait([timeout])', ...)
    local timeout = checked_timeout((select(2, ...)), 'cond:wait([timeout])')
    local self_fiber = me()
    if self_fiber == nil then return false end
    table.insert(self.waiters, self_fiber)
    local woken = wait(deadline_of(timeout))
    drop(self.waiters, self_fiber)
    return woken
end
function cond_mt.signal(...) wake_first(check_cond('cond:signal()', ...).waiters) end
function cond_mt.broadcast(...)
    local self = check_cond('cond:broadcast()', ...)
    local list = self.waiters
    self.waiters = {}
    for _, f in ipairs(list) do wake(f) end
end
cond_mt.__tostring = function() return 'cond' end

--------------------------------------------------------------------------------
-- The scheduler's side (called from Rust)
--------------------------------------------------------------------------------

-- The main fiber: the script (or, for requests, the fiber each one gets).
internal.main_fiber = setmetatable({fid = 103, name_ = 'main', txn = outside.txn, state = 'running', inline = true,
                                    storage = {}},
                                   fiber_mt)

-- The engine's `op`, which a request's fiber binds while it runs (set once by the server).
local request_op = nil
function internal.set_request_op(op) request_op = op end

-- A request's fiber left (ended or waits): the end-of-call checks run and `op` is unbound.
local function request_left(f, done, ...)
    if not done then fibers[f.fid] = f end
    report_count()
    -- A request's code runs in its fiber, so what runs outside fibers is as every
    -- entry leaves it (internal.end_call resets it): checked, and reset if not.
    local open = false
    if outside.txn.mark ~= nil or outside.su_uid ~= nil then open = internal.end_call() end
    internal.op = nil
    if done then return true, open, ... end
    return false, open, f.fid
end

-- request_left, after which a fiber that ended is kept for the next request.
local function request_ended(f, done, ...)
    spare_unheld(f, done)
    return request_left(f, done, ...)
end

-- Starts a request's fiber: runs fn(...) under pcall until it yields or ends, with
-- `op` bound. `fn` may be a global's name. Returns true, in_txn, ok, results... when
-- it ended; false, in_txn, fid when it waits; nil when there is no such global.
-- (`in_txn`: the call left a transaction open outside any fiber; it is rolled back.)
-- `session_uid`: the session's own user while `uid` is a setuid function's owner
-- (as under box.session.su), or false.
function internal.fiber_sync() return current ~= nil and current.sync or 0 end


function internal.fiber_request(session_id, uid, session_uid, atomic, sync, fn, ...)
    internal.op = request_op
    if type(fn) == 'string' then
        fn = globals[fn]
        if fn == nil then
            internal.op = nil
            return nil
        end
    end
    if current ~= nil then
        local f = new_fiber(nil, 'main', session_id, uid, sync)
        if atomic then f.atomic = true end
        if session_uid then f.su_uid = session_uid end
        return request_left(f, resume(f, fn, ...))
    end
    local f = request_fiber(session_id, uid, sync)
    if atomic then f.atomic = true end
    if session_uid then f.su_uid = session_uid end
    -- Started by the server, outside any fiber: resume's first run, without its
    -- cases for a resumer and for other kinds of fiber.
    current = f
    f.state = 'running'
    return request_ended(f, worker_ran(f, nil, coroutine.resume(f.co, fn, ...)))
end

-- Adopts the script's coroutine as the main fiber, run by the scheduler from now on.
-- The same fiber object goes on: whoever holds it (fiber.self(), a list of
-- waiters the chunk was in while it booted) holds the fiber the scheduler runs.
function internal.fiber_adopt(co, name)
    local f = internal.main_fiber
    f.name_, f.txn, f.state, f.request, f.script, f.session_id, f.co = name, {}, 'suspended', true, true, 1, co
    f.inline = nil
    fibers[103] = f
    alive_count = alive_count + 1
    report_count()
    internal.main_fiber = f
    return f.fid
end

-- Children that ended are reaped at scheduling points, as 2.6's event loop reaps
-- them (src/children): the flag is read through ffi, the reaping done in Rust.
local children_exited
local function reap_children()
    if children_exited == nil then
        if internal.popen == nil then return end
        children_exited = require('ffi').cast('const uint32_t *', internal.popen.exited)
    end
    if children_exited[0] ~= 0 then internal.popen.reap() end
end

-- The next fiber to run now: its id, session id and user id (nil when none is due).
-- Expired sleepers join the ready queue first.
function internal.fiber_next(limit)
    reap_children()
    local t = now()
    while heap_n > 0 and heap_at[1] <= t do
        local f = heap_f[1]
        local live = heap_top_live()
        heap_pop()
        if live then make_ready(f) end
    end
    while true do
        local f = ready_pop()
        if f == nil then return nil end
        f.queued = false
        if f.state ~= 'dead' then return f.fid, f.session_id, f.uid or nil end
    end
end

local function resumed(f, done, ...)
    report_count()
    -- The script's own coroutine has no pcall around it: its first result says how it ended.
    if done and f.request then return true, ... end
    return done
end

-- Resumes fiber `fid` (with the bound engine). Returns true, ok, results... when a
-- request's fiber ended, true when another fiber ended, false when it waits again.
function internal.fiber_resume(fid)
    local f = fibers[fid]
    if f == nil then return true end
    return resumed(f, resume(f))
end

-- Whether other fibers wait to run now (a poller then yields to them rather than sleep).
function internal.fiber_others_ready() return ready_count() > 0 end

-- Seconds until the scheduler has work: 0 when a fiber is ready, nil when none waits on a time.
function internal.fiber_delay()
    if ready_count() > 0 then return 0 end
    local soonest = soonest_wake_up()
    if soonest == nil then return nil end
    return math.max(soonest - now(), 0)
end

-- Runs the fibers that are due with no engine bound (a script without box.cfg).
-- Returns the seconds until the next is due (nil: none waits on a time).
function internal.fiber_run_unbound()
    for _ = 1, 1000 do
        local fid = internal.fiber_next()
        if fid == nil then break end
        if fibers[fid] ~= nil then resume(fibers[fid]) end
        -- A fiber called the first box.cfg{} once the main chunk had ended: the
        -- loop stops here to boot (see LuaRuntime::run_unbound_fibers).
        if internal.pending_boot ~= nil then return 0 end
        -- What other threads reported meanwhile (a socket ready, a reply) is
        -- delivered between two fibers, as 2.6's loop polls between its turns.
        native.wait_events(0)
    end
    return internal.fiber_delay()
end

-- Whether the running code is the script's main chunk (not a fiber it started).
function internal.fiber_in_main() return current == nil or current.script == true end

-- Whether the script runs before its box.cfg{} (its fibers run without the executor).
function internal.fiber_loop_unbound()
    return internal.script_mode and not internal.booted or false
end

-- Whether the running code may wait for something (a net.box reply) by yielding:
-- it is a fiber, and not a tokened call (one transaction, which must not yield).
function internal.fiber_can_yield()
    if current == nil then
        -- A script's main chunk before box.cfg waits by running the event loop itself.
        return inline_main() ~= nil
    end
    return not current.atomic
end

-- How many fibers are alive (the script's main fiber included).
function internal.fiber_count() return alive_count end

-- The effective user a fiber switched to with box.session.su, kept for its next resume.
function internal.fiber_save_uid(uid)
    if current ~= nil then current.uid = uid end
end

-- os.exit: the server first finishes the commits it has (what the script wrote
-- before exiting is durable, as tarantool's WAL wait makes it), then exits.
local process_exit = os.exit
function os.exit(code)
    if internal.run_shutdown_triggers ~= nil then internal.run_shutdown_triggers() end
    io.stdout:flush()
    io.stderr:flush()
    local status = code
    if code == true or code == nil then status = 0 elseif code == false then status = 1 end
    if internal.op == nil or current == nil then return process_exit(status) end
    internal.call_op('exit', status)
    -- This fiber never runs again: the process ends once the commits are durable.
    current.cancelled = false
    current.exiting = true
    coroutine.yield()
end

-- os.setenv(name, value): sets a variable of the process's environment, or
-- removes it when value is nil (2.6's addition to os).
function os.setenv(name, value)
    if type(name) ~= 'string' then error("bad argument #1 to 'setenv' (string expected)", 2) end
    if value ~= nil and type(value) ~= 'string' and type(value) ~= 'number' then
        error("bad argument #2 to 'setenv' (string expected)", 2)
    end
    native.setenv(name, value ~= nil and tostring(value) or nil)
end

-- Outcomes another thread delivers (net.box replies, socket I/O), by ticket:
-- `await(ticket, timeout)` parks the calling fiber until `deliver(ticket, ...)`
-- and returns true and what was delivered, or false on time-out. Each user makes
-- its own pair, so tickets of different counters never meet.
function internal.ticket_waiters()
    local waiting = {}
    local function await(ticket, timeout)
        local w = {cond = fiber.cond()}
        waiting[ticket] = w
        local deadline = timeout and (fiber.clock() + timeout)
        while w.outcome == nil do
            local left = deadline and (deadline - fiber.clock())
            if left ~= nil and left <= 0 then
                waiting[ticket] = nil
                return false
            end
            w.cond:wait(left)
        end
        return true, unpack(w.outcome, 1, w.outcome.n)
    end
    local function deliver(ticket, ...)
        local w = waiting[ticket]
        if w == nil then return end
        waiting[ticket] = nil
        w.outcome = {n = select('#', ...), ...}
        w.cond:signal()
    end
    return await, deliver
end

package.loaded.fiber = fiber
