-- space:before_replace, compared line for line with Tarantool 2.6 (see
-- test_before_replace.py): each trigger outcome on each request type, from Lua
-- and over IPROTO (net.box to this instance), with on_replace beside.
box.cfg{listen = os.getenv('LISTEN')}
box.schema.user.grant('guest', 'read,write,execute', 'universe', nil, {if_not_exists = true})
local function p(...)
    local t = {}
    for i = 1, select('#', ...) do t[i] = tostring((select(i, ...))) end
    print(select('#', ...) .. ': ' .. table.concat(t, ' | '))
end
local s = box.schema.space.create('t', {format = {{'id', 'unsigned'}, {'v', 'any'}, {'w', 'any', is_nullable = true}}})
s:create_index('pk')
s:create_index('by_v', {parts = {2, 'unsigned'}, unique = false})
s:on_replace(function(old, new, name, req) p('  on_replace', old, new, name, req) end)
local mode
local f = s:before_replace(function(old, new, name, req)
    p('  before', old, new, name, req, new ~= nil and new.id or nil, old ~= nil and old.id or nil)
    if mode == 'same' then return new
    elseif mode == 'none' then return
    elseif mode == 'nil' then return nil
    elseif mode == 'null' then return box.NULL
    elseif mode == 'old' then return old
    elseif mode == 'tuple' then return box.tuple.new{(new or old)[1], 77, 'x'}
    elseif mode == 'pk' then return box.tuple.new{(new or old)[1] + 100, 1}
    elseif mode == 'table' then return {1, 2}
    elseif mode == 'number' then return 5
    elseif mode == 'error' then error('boom', 0)
    end
end)
p(type(f), #s:before_replace())
local function try(label, fn, ...)
    local r = {pcall(fn, ...)}
    if not r[1] and type(r[2]) ~= 'string' then r[2] = tostring(r[2].code) .. ' ' .. tostring(r[2].message) end
    p(label, unpack(r, 1, table.maxn(r)))
end
local function rows()
    local out = {}
    for _, t in s:pairs() do out[#out + 1] = tostring(t) end
    p('rows', table.concat(out, ' '))
end
local function reset()
    s:truncate()
    mode = 'same'
    s:replace{1, 10}
    s:replace{2, 20}
end
local modes = {'same', 'none', 'nil', 'null', 'old', 'tuple', 'pk', 'table', 'number', 'error'}
for _, m in ipairs(modes) do
    reset()
    mode = m
    p('== lua', m)
    try('insert new', s.insert, s, {3, 30})
    try('insert dup', s.insert, s, {1, 11})
    try('replace', s.replace, s, {2, 21})
    try('update', s.update, s, 1, {{'=', 2, 12}})
    try('update by_v', s.index.by_v.update, s.index.by_v, 20, {{'+', 2, 1}})
    try('update missing', s.update, s, 9, {{'=', 2, 12}})
    try('upsert old', s.upsert, s, {1, 0}, {{'+', 2, 1}})
    try('upsert new', s.upsert, s, {5, 50}, {{'+', 2, 1}})
    try('delete', s.delete, s, 2)
    try('delete missing', s.delete, s, 9)
    rows()
end
local c = require('net.box').connect(os.getenv('LISTEN'))
local r = c.space.t
for _, m in ipairs({'same', 'nil', 'old', 'tuple', 'pk', 'number', 'error'}) do
    reset()
    mode = m
    p('== iproto', m)
    try('insert new', r.insert, r, {3, 30})
    try('insert dup', r.insert, r, {1, 11})
    try('replace', r.replace, r, {2, 21})
    try('update', r.update, r, 1, {{'=', 2, 12}, {'=', 'w', 'u'}})
    try('update missing', r.update, r, 9, {{'=', 2, 12}})
    try('upsert old', r.upsert, r, {1, 0}, {{'+', 2, 1}})
    try('delete', r.delete, r, 2)
    rows()
end
c:close()
mode = 'same'
-- In a transaction: a rolled-back statement takes its trigger's writes with it.
local log = box.schema.space.create('log')
log:create_index('pk', {sequence = true})
local g = s:before_replace(function(old, new)
    log:insert{box.NULL, tostring(new)}
    if new ~= nil and new[2] == 666 then error('refused', 0) end
    return new
end)
s:truncate()
box.begin()
s:replace{1, 1}
try('refused', s.replace, s, {2, 666})
box.commit()
p('log', log:count(), s:count())
box.begin() s:replace{3, 3} box.rollback()
p('log after rollback', log:count(), s:count())
s:before_replace(nil, g)
s:before_replace(nil, f)
p('removed', #s:before_replace())
-- Several triggers: the newest runs first, each given what the one before returned.
s:before_replace(function(old, new) p('  first set', new) return box.tuple.new{new[1], new[2] + 1} end)
s:before_replace(function(old, new) p('  second set', new) return box.tuple.new{new[1], new[2] * 10} end)
p('chain', s:replace{7, 1})
try('reset a missing one', s.before_replace, s, nil, print)
try('not a function', s.before_replace, s, 5)
os.exit(0)
