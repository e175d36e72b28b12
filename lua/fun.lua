-- fun: a functional iterator library with the API of luafun, which Tarantool ships
-- as `fun` (written for oncebox). An iterator is a gen, param, state triplet as in
-- Lua's generic for; the functions here return it wrapped in an object that also
-- works in `for _, x in fun.range(3) do` and chains methods:
-- `fun.iter({1, 2, 3}):map(f):filter(g):totable()`.
-- Iterators are pure: states are never changed in place, so one can be run twice.

local type = type -- the builtin, not the one user code sees (box.lua)
local fun = {}
local methods = {}
local iterator_mt = {
    __index = methods,
    __call = function(self, param, state) return self.gen(param, state) end,
    __tostring = function() return '<generator>' end,
}

local function wrap(gen, param, state)
    return setmetatable({gen = gen, param = param, state = state}, iterator_mt), param, state
end

local function empty_gen() return nil end

local function array_gen(t, i)
    i = i + 1
    local v = t[i]
    if v == nil then return nil end
    return i, v
end

local function map_gen(t, k)
    local key, value = next(t, k)
    return key, key, value
end

local function string_gen(s, i)
    i = i + 1
    if i > #s then return nil end
    return i, string.sub(s, i, i)
end

-- The raw triplet for anything iterable.
local function raw(obj, param, state)
    local ty = type(obj)
    if ty == 'table' then
        if getmetatable(obj) == iterator_mt then return obj.gen, obj.param, obj.state end
        if #obj > 0 then return array_gen, obj, 0 end
        return map_gen, obj, nil
    elseif ty == 'function' then
        return obj, param, state
    elseif ty == 'string' then
        if #obj == 0 then return empty_gen, nil, nil end
        return string_gen, obj, 0
    end
    error(string.format('object %s of type "%s" is not iterable', tostring(obj), ty))
end

function fun.iter(obj, param, state) return wrap(raw(obj, param, state)) end
fun.wrap = wrap

-- Registers `f(gen, param, state)` (or `f(a, gen, param, state)`, `f(a, b, gen, ...)`
-- with `nargs` leading arguments) as a module function and as an iterator method.
local function export(name, nargs, f)
    if nargs == 0 then
        fun[name] = function(g, p, s) return f(raw(g, p, s)) end
        methods[name] = function(self) return f(self.gen, self.param, self.state) end
    elseif nargs == 1 then
        fun[name] = function(a, g, p, s) return f(a, raw(g, p, s)) end
        methods[name] = function(self, a) return f(a, self.gen, self.param, self.state) end
    else
        fun[name] = function(a, b, g, p, s) return f(a, b, raw(g, p, s)) end
        methods[name] = function(self, a, b) return f(a, b, self.gen, self.param, self.state) end
    end
end

local function alias(name, ...)
    for _, other in ipairs({...}) do
        fun[other], methods[other] = fun[name], methods[name]
    end
end

--------------------------------------------------------------------------------
-- Generators
--------------------------------------------------------------------------------

local function range_up(p, i)
    i = i + p[2]
    if i > p[1] then return nil end
    return i, i
end

local function range_down(p, i)
    i = i + p[2]
    if i < p[1] then return nil end
    return i, i
end

function fun.range(start, stop, step)
    if step == nil then
        if stop == nil then
            -- As luafun: range(0) is a bare (unwrapped) empty triplet.
            if start == 0 then return empty_gen, nil, nil end
            stop = start
            start = stop > 0 and 1 or -1
        end
        step = start <= stop and 1 or -1
    end
    assert(step ~= 0, 'step must not be zero')
    return wrap(step > 0 and range_up or range_down, {stop, step}, start - step)
end

local function dup_one(x) return 0, x end
local function dup_many(xs) return 0, unpack(xs, 1, xs.n) end

function fun.duplicate(...)
    if select('#', ...) <= 1 then return wrap(dup_one, (...), 0) end
    return wrap(dup_many, {n = select('#', ...), ...}, 0)
end
fun.xrepeat, fun.replicate = fun.duplicate, fun.duplicate

local function tabulate_gen(f, i) return i + 1, f(i) end
function fun.tabulate(f)
    assert(type(f) == 'function', 'invalid first argument to tabulate')
    return wrap(tabulate_gen, f, 0)
end

function fun.zeros() return fun.duplicate(0) end
function fun.ones() return fun.duplicate(1) end

local function rands_gen(p, _)
    if p[1] == nil then return 0, math.random() end
    return 0, math.random(p[1], p[2])
end

function fun.rands(n, m)
    if n == nil and m == nil then return wrap(rands_gen, {}, 0) end
    assert(type(n) == 'number', 'invalid first argument to rands')
    if m == nil then n, m = 0, n - 1 else assert(type(m) == 'number', 'invalid second argument to rands') end
    assert(n < m, 'empty interval')
    return wrap(rands_gen, {n, m - 1}, 0)
end

--------------------------------------------------------------------------------
-- Slicing
--------------------------------------------------------------------------------

local function values_of(state, ...)
    if state == nil then return nil end
    return ...
end

export('nth', 1, function(n, gen, param, state)
    assert(n > 0, 'invalid first argument to nth')
    if gen == array_gen and state == 0 then return param[n] end
    if gen == string_gen and state == 0 then
        if n <= #param then return string.sub(param, n, n) end
        return nil
    end
    for _ = 1, n - 1 do
        state = gen(param, state)
        if state == nil then return nil end
    end
    return values_of(gen(param, state))
end)

local function head_of(state, ...)
    if state == nil then error('head: iterator is empty') end
    return ...
end
export('head', 0, function(gen, param, state) return head_of(gen(param, state)) end)
alias('head', 'car')

export('tail', 0, function(gen, param, state)
    state = gen(param, state)
    if state == nil then return wrap(empty_gen, nil, nil) end
    return wrap(gen, param, state)
end)
alias('tail', 'cdr')

local function take_n_step(i, state, ...)
    if state == nil then return nil end
    return {i + 1, state}, ...
end

local function take_n_gen(p, s)
    if s[1] >= p[1] then return nil end
    return take_n_step(s[1], p[2](p[3], s[2]))
end

local function take_n(n, gen, param, state)
    assert(n >= 0, 'invalid first argument to take_n')
    return wrap(take_n_gen, {n, gen, param}, {0, state})
end
export('take_n', 1, take_n)

local function take_while_step(f, state, ...)
    if state == nil or not f(...) then return nil end
    return state, ...
end

local function take_while_gen(p, s) return take_while_step(p[1], p[2](p[3], s)) end

local function take_while(f, gen, param, state)
    assert(type(f) == 'function', 'invalid first argument to take_while')
    return wrap(take_while_gen, {f, gen, param}, state)
end
export('take_while', 1, take_while)

local function take(n_or_f, gen, param, state)
    if type(n_or_f) == 'number' then return take_n(n_or_f, gen, param, state) end
    return take_while(n_or_f, gen, param, state)
end
export('take', 1, take)

local function drop_n(n, gen, param, state)
    assert(n >= 0, 'invalid first argument to drop_n')
    for _ = 1, n do
        state = gen(param, state)
        if state == nil then return wrap(empty_gen, nil, nil) end
    end
    return wrap(gen, param, state)
end
export('drop_n', 1, drop_n)

local function drop_while_step(f, state, ...)
    if state == nil then return nil, false end
    return state, f(...) and true or false
end

local function drop_while(f, gen, param, state)
    assert(type(f) == 'function', 'invalid first argument to drop_while')
    while true do
        local next_state, dropped = drop_while_step(f, gen(param, state))
        if next_state == nil then return wrap(empty_gen, nil, nil) end
        if not dropped then return wrap(gen, param, state) end
        state = next_state
    end
end
export('drop_while', 1, drop_while)

local function drop(n_or_f, gen, param, state)
    if type(n_or_f) == 'number' then return drop_n(n_or_f, gen, param, state) end
    return drop_while(n_or_f, gen, param, state)
end
export('drop', 1, drop)

export('span', 1, function(n_or_f, gen, param, state)
    return (take(n_or_f, gen, param, state)), (drop(n_or_f, gen, param, state))
end)
alias('span', 'split', 'split_at')

--------------------------------------------------------------------------------
-- Indexing
--------------------------------------------------------------------------------

export('index', 1, function(x, gen, param, state)
    local i, v = 0, nil
    while true do
        state, v = gen(param, state)
        if state == nil then return nil end
        i = i + 1
        if v == x then return i end
    end
end)
alias('index', 'index_of', 'elem_index')

local function indexes_gen(p, s)
    local x, gen, param = p[1], p[2], p[3]
    local i, state, v = s[1], s[2], nil
    while true do
        state, v = gen(param, state)
        if state == nil then return nil end
        i = i + 1
        if v == x then return {i, state}, i end
    end
end

export('indexes', 1, function(x, gen, param, state) return wrap(indexes_gen, {x, gen, param}, {0, state}) end)
alias('indexes', 'indices', 'elem_indexes', 'elem_indices')

--------------------------------------------------------------------------------
-- Filtering
--------------------------------------------------------------------------------

local function filter_step(f, gen, param, state, ...)
    if state == nil then return nil end
    if f(...) then return state, ... end
    return filter_step(f, gen, param, gen(param, state))
end

local function filter_gen(p, s) return filter_step(p[1], p[2], p[3], p[2](p[3], s)) end

local function filter(f, gen, param, state)
    return wrap(filter_gen, {f, gen, param}, state)
end
export('filter', 1, filter)
alias('filter', 'remove_if')

local function matcher(pattern)
    if type(pattern) == 'function' then return pattern end
    return function(x) return type(x) == 'string' and string.find(x, pattern) ~= nil end
end

export('grep', 1, function(pattern, gen, param, state) return filter(matcher(pattern), gen, param, state) end)

export('partition', 1, function(f, gen, param, state)
    local function negated(...) return not f(...) end
    return (filter(f, gen, param, state)), (filter(negated, gen, param, state))
end)

--------------------------------------------------------------------------------
-- Reducing
--------------------------------------------------------------------------------

local function fold_step(f, acc, state, ...)
    if state == nil then return nil, acc end
    return state, f(acc, ...)
end

export('foldl', 2, function(f, acc, gen, param, state)
    while true do
        state, acc = fold_step(f, acc, gen(param, state))
        if state == nil then return acc end
    end
end)
alias('foldl', 'reduce')

export('length', 0, function(gen, param, state)
    if (gen == array_gen or gen == string_gen) and state == 0 then return #param end
    local n = 0
    while true do
        state = gen(param, state)
        if state == nil then return n end
        n = n + 1
    end
end)

export('is_null', 0, function(gen, param, state) return gen(param, state) == nil end)

function fun.is_prefix_of(prefix, it)
    local g1, p1, s1 = raw(prefix)
    local g2, p2, s2 = raw(it)
    local a, b
    while true do
        s1, a = g1(p1, s1)
        s2, b = g2(p2, s2)
        if s1 == nil then return true end
        if s2 == nil or a ~= b then return false end
    end
end
methods.is_prefix_of = function(self, it) return fun.is_prefix_of(self, it) end

local function test_step(f, state, ...)
    if state == nil then return nil end
    return state, f(...)
end

export('all', 1, function(f, gen, param, state)
    local ok
    while true do
        state, ok = test_step(f, gen(param, state))
        if state == nil then return true end
        if not ok then return false end
    end
end)
alias('all', 'every')

export('any', 1, function(f, gen, param, state)
    local ok
    while true do
        state, ok = test_step(f, gen(param, state))
        if state == nil then return false end
        if ok then return true end
    end
end)
alias('any', 'some')

local function accumulate(start, combine)
    return function(gen, param, state)
        local acc, v = start, nil
        while true do
            state, v = gen(param, state)
            if state == nil then return acc end
            acc = combine(acc, v)
        end
    end
end
export('sum', 0, accumulate(0, function(s, r) return s + r end))
export('product', 0, accumulate(1, function(p, r) return p * r end))

local function extreme(name, pick_number, pick_other)
    return function(gen, param, state)
        local best
        state, best = gen(param, state)
        if state == nil then error(name .. ': iterator is empty') end
        local pick = type(best) == 'number' and pick_number or pick_other
        local v
        while true do
            state, v = gen(param, state)
            if state == nil then return best end
            best = pick(best, v)
        end
    end
end
export('min', 0, extreme('min', math.min, function(m, n) if n < m then return n end return m end))
alias('min', 'minimum')
export('max', 0, extreme('max', math.max, function(m, n) if n > m then return n end return m end))
alias('max', 'maximum')

local function extreme_by(name)
    return function(cmp, gen, param, state)
        local best, v
        state, best = gen(param, state)
        if state == nil then error(name .. ': iterator is empty') end
        while true do
            state, v = gen(param, state)
            if state == nil then return best end
            best = cmp(best, v)
        end
    end
end
export('min_by', 1, extreme_by('min'))
alias('min_by', 'minimum_by')
export('max_by', 1, extreme_by('max'))
alias('max_by', 'maximum_by')

export('totable', 0, function(gen, param, state)
    local t, v = {}, nil
    while true do
        state, v = gen(param, state)
        if state == nil then return t end
        t[#t + 1] = v
    end
end)

export('tomap', 0, function(gen, param, state)
    local t, k, v = {}, nil, nil
    while true do
        state, k, v = gen(param, state)
        if state == nil then return t end
        t[k] = v
    end
end)

local function each_step(f, state, ...)
    if state == nil then return nil end
    f(...)
    return state
end

export('each', 1, function(f, gen, param, state)
    repeat state = each_step(f, gen(param, state)) until state == nil
end)
alias('each', 'for_each', 'foreach')

--------------------------------------------------------------------------------
-- Transformations and compositions
--------------------------------------------------------------------------------

local function map_step(f, state, ...)
    if state == nil then return nil end
    return state, f(...)
end

local function mapped_gen(p, s) return map_step(p[1], p[2](p[3], s)) end

export('map', 1, function(f, gen, param, state) return wrap(mapped_gen, {f, gen, param}, state) end)

local function enumerate_step(i, state, ...)
    if state == nil then return nil end
    return {i, state}, i, ...
end

local function enumerate_gen(p, s) return enumerate_step(s[1] + 1, p[1](p[2], s[2])) end

export('enumerate', 0, function(gen, param, state) return wrap(enumerate_gen, {gen, param}, {0, state}) end)

-- intersperse(x, it): x after each element.
local function intersperse_gen(p, s)
    if s[1] then return {false, s[2]}, p[1] end
    local state, v = p[2](p[3], s[2])
    if state == nil then return nil end
    return {true, state}, v
end

export('intersperse', 1, function(x, gen, param, state)
    return wrap(intersperse_gen, {x, gen, param}, {false, state})
end)

-- zip(it1, it2, ...): the first values of each, until the shortest ends.
local function zip_gen(p, s)
    local states, values = {}, {}
    for i = 1, p.n do
        local state, v = p[i][1](p[i][2], s[i])
        if state == nil then return nil end
        states[i], values[i] = state, v
    end
    return states, unpack(values, 1, p.n)
end

-- The iterators passed to zip and chain; an iterator object followed by its own param
-- and state (an unparenthesized call as the last argument) counts once.
local function iterators(...)
    local n, i, out = select('#', ...), 1, {}
    while i <= n do
        local it = select(i, ...)
        out[#out + 1] = {raw(it)}
        if getmetatable(it) == iterator_mt and i + 2 == n and select(i + 1, ...) == it.param
                and select(i + 2, ...) == it.state then
            i = i + 3
        else
            i = i + 1
        end
    end
    return out
end

function fun.zip(...)
    local its = iterators(...)
    local p, s = {n = #its}, {}
    for i, it in ipairs(its) do p[i], s[i] = {it[1], it[2]}, it[3] end
    return wrap(zip_gen, p, s)
end
methods.zip = function(self, ...) return fun.zip(self, ...) end

local function cycle_step(p, state, ...)
    if state ~= nil then return state, ... end
    return p[1](p[2], p[3])
end

local function cycle_gen(p, s) return cycle_step(p, p[1](p[2], s)) end

export('cycle', 0, function(gen, param, state)
    if gen(param, state) == nil then return wrap(empty_gen, nil, nil) end
    return wrap(cycle_gen, {gen, param, state}, state)
end)

-- chain(it1, it2, ...): one after another.
local function chain_step(p, i, state, ...)
    if state ~= nil then return {i, state}, ... end
    i = i + 1
    if i > p.n then return nil end
    return chain_step(p, i, p[i][1](p[i][2], p[i][3]))
end

local function chain_gen(p, s) return chain_step(p, s[1], p[s[1]][1](p[s[1]][2], s[2])) end

function fun.chain(...)
    local p = iterators(...)
    p.n = #p
    if p.n == 0 then return wrap(empty_gen, nil, nil) end
    return wrap(chain_gen, p, {1, p[1][3]})
end
methods.chain = function(self, ...) return fun.chain(self, ...) end

--------------------------------------------------------------------------------
-- Operators
--------------------------------------------------------------------------------

local operator = {
    lt = function(a, b) return a < b end,
    le = function(a, b) return a <= b end,
    eq = function(a, b) return a == b end,
    ne = function(a, b) return a ~= b end,
    ge = function(a, b) return a >= b end,
    gt = function(a, b) return a > b end,
    add = function(a, b) return a + b end,
    sub = function(a, b) return a - b end,
    mul = function(a, b) return a * b end,
    div = function(a, b) return a / b end,
    truediv = function(a, b) return a / b end,
    floordiv = function(a, b) return math.floor(a / b) end,
    intdiv = function(a, b)
        local q = a / b
        if q >= 0 then return math.floor(q) end
        return math.ceil(q)
    end,
    mod = function(a, b) return a % b end,
    pow = function(a, b) return a ^ b end,
    unm = function(a) return -a end,
    concat = function(a, b) return a .. b end,
    len = function(a) return #a end,
    land = function(a, b) return a and b end,
    lor = function(a, b) return a or b end,
    lnot = function(a) return not a end,
    truth = function(a) return not not a end,
}
-- As luafun: `neq` is negation (not inequality).
operator.neq, operator.length = operator.unm, operator.len
fun.operator, fun.op = operator, operator

package.loaded.fun = fun
