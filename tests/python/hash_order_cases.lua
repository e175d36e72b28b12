-- A HASH index's scan order (select{}, pairs(), GT) compared with Tarantool 2.6
-- (test_index_reads.py): where 2.6's table puts each key follows from its hash
-- and from the inserts, replaces and deletes before, so a random mix of them
-- (a fixed generator, the same on both) over several key types.
box.cfg{work_dir = os.getenv('WORK') or '.', log_level = 1}
local seed = 777
local function rnd(n) seed = (seed * 1103515245 + 12345) % 2147483648 return math.floor(seed / 65536) % n end
local function dump(t, f)
    local r = {}
    for _, x in ipairs(t) do r[#r + 1] = tostring(x[f or 1]) end
    return table.concat(r, ',')
end

-- Unsigned keys, small and large: replaces, deletes, and inserts that fail on a
-- duplicate (2.6 takes the tuple it found out and puts it back).
for _, mode in ipairs({'replace', 'delete', 'insert'}) do
    local s = box.schema.space.create('u_' .. mode)
    s:create_index('pk', {type = 'hash'})
    for i = 1, 300 do
        local k = rnd(3) == 0 and rnd(100000) * 1000003 or rnd(500)
        if mode == 'replace' then
            s:replace{k, i}
        elseif mode == 'delete' then
            if rnd(4) == 0 then s:delete{k} else s:replace{k, i} end
        else
            pcall(s.insert, s, {k, i})
            if rnd(4) == 0 then s:delete{k} end
        end
    end
    print(mode, s:len(), dump(s:select{}))
end

-- Strings, integers with strings, numbers, scalars.
local function fill(name, parts, gen, n)
    local s = box.schema.space.create(name)
    s:create_index('pk', {type = 'hash', parts = parts})
    for i = 1, n do
        local t = gen(i)
        if rnd(6) == 0 then s:delete{t[1]} else s:replace(t) end
    end
    print(name, s:len(), dump(s:select{}))
    return s
end
fill('str', {1, 'string'}, function(i) return {'k' .. rnd(150) .. string.rep('x', rnd(5)), i} end, 200)
local m = box.schema.space.create('multi')
m:create_index('pk', {type = 'hash', parts = {{1, 'integer'}, {2, 'string'}}})
for i = 1, 150 do m:replace{rnd(60) - 30, 's' .. rnd(5), i} end
print('multi', m:len(), dump(m:select{}, 3))
fill('num', {1, 'number'}, function(i) return {rnd(2) == 0 and rnd(50) or rnd(50) + 0.5, i} end, 100)
fill('scalar', {1, 'scalar'}, function(i)
    local c = rnd(4)
    return {c == 0 and rnd(40) or c == 1 and ('v' .. rnd(40)) or c == 2 and (rnd(2) == 0) or -rnd(40), i}
end, 100)

-- Secondary HASH indexes through replaces, updates (new key in first, old out
-- after) and deletes; one built over the tuples there.
local two = box.schema.space.create('two')
two:create_index('pk')
two:create_index('h', {type = 'hash', parts = {2, 'unsigned'}})
two:create_index('hs', {type = 'hash', parts = {3, 'string'}})
for _ = 1, 200 do
    local op, k = rnd(10), rnd(150) + 1
    if op < 5 then
        pcall(two.replace, two, {k, rnd(100000) * 7919, 's' .. rnd(100000)})
    elseif op < 7 then
        pcall(two.update, two, k, {{'=', 2, rnd(100000) * 13}, {'=', 3, 'u' .. rnd(1000)}})
    elseif op < 8 then
        pcall(two.update, two, k, {{'+', 4, 1}})
    else
        two:delete{k}
    end
end
print('h', dump(two.index.h:select{}))
print('hs', dump(two.index.hs:select{}))
two:create_index('h2', {type = 'hash', parts = {2, 'unsigned', 1, 'unsigned'}})
print('h2', dump(two.index.h2:select{}))
print('gt', dump(two.index.h:select({two:select{}[5][2]}, {iterator = 'GT', limit = 10})))
print('gt missing', dump(two.index.h:select({123456789}, {iterator = 'GT'})))
print('pairs', dump(two.index.hs:pairs():take(5):totable()))
os.exit(0)
