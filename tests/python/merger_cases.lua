-- The merger module (2.6): sources, merging, select and pairs, errors.
local merger = require('merger')
local key_def_lib = require('key_def')
local buffer = require('buffer')
local msgpack = require('msgpack')
local fun = require('fun')

local function show(v)
    if type(v) == 'cdata' or type(v) == 'userdata' then
        if box.tuple.is(v) then return 'tuple' .. require('json').encode(v:totable()) end
        return type(v)
    end
    if type(v) == 'table' then
        local parts = {}
        for i, x in ipairs(v) do parts[i] = show(x) end
        return '{' .. table.concat(parts, ', ') .. '}'
    end
    return tostring(v)
end
local function try(name, f, ...)
    local r = {pcall(f, ...)}
    if r[1] then
        local out = {}
        for i = 2, table.maxn(r) do out[#out + 1] = show(r[i]) end
        print(name, 'ok', table.concat(out, ' '))
    else
        local e = r[2]
        print(name, 'error', type(e), (tostring(e):gsub('0x%x+', '0x<address>')))
    end
end

local kd = key_def_lib.new({{fieldno = 1, type = 'unsigned'}})
local kd2 = key_def_lib.new({{fieldno = 2, type = 'string'}, {fieldno = 1, type = 'unsigned'}})

local function tables(...)
    local chunks = {...}
    return merger.new_source_fromtable(chunks[1])
end

-- Module contents
local names = {}
for k in pairs(merger) do names[#names + 1] = k end
table.sort(names)
print('module', table.concat(names, ' '))

-- Merging tables.
local s1 = merger.new_source_fromtable({{1, 'a'}, {4, 'd'}, {7, 'g'}})
local s2 = merger.new_source_fromtable({{2, 'b'}, {5, 'e'}})
local s3 = merger.new_source_fromtable({{3, 'c'}, {6, 'f'}, {8, 'h'}, {9, 'i'}})
print('source type', type(s1))
local m = merger.new(kd, {s1, s2, s3})
print('merger type', type(m))
try('select', m.select, m)
try('select again', m.select, m)
-- limit, reverse
local function three() return {merger.new_source_fromtable({{1}, {4}, {7}}), merger.new_source_fromtable({{2}, {5}}), merger.new_source_fromtable({{3}, {6}})} end
local m2 = merger.new(kd, three())
try('limit', m2.select, m2, {limit = 2})
try('after limit', m2.select, m2)
local rv = function() return {merger.new_source_fromtable({{7}, {4}, {1}}), merger.new_source_fromtable({{5}, {2}}), merger.new_source_fromtable({{6}, {3}})} end
try('reverse', function() return merger.new(kd, rv(), {reverse = true}):select() end)
try('reverse false', function() return merger.new(kd, three(), {reverse = false}):select() end)
-- ties: equal keys from several sources
local ties = {merger.new_source_fromtable({{1, 'a1'}, {2, 'a2'}, {2, 'a3'}}), merger.new_source_fromtable({{1, 'b1'}, {2, 'b2'}}),
              merger.new_source_fromtable({{1, 'c1'}, {1, 'c2'}, {2, 'c3'}}), merger.new_source_fromtable({{2, 'd1'}})}
try('ties', function() return merger.new(kd, ties):select() end)
local rties = {merger.new_source_fromtable({{2, 'a1'}, {1, 'a2'}}), merger.new_source_fromtable({{2, 'b1'}, {2, 'b2'}, {1, 'b3'}}),
               merger.new_source_fromtable({{1, 'c1'}})}
try('reverse ties', function() return merger.new(kd, rties, {reverse = true}):select() end)
-- multipart key
try('two parts', function()
    return merger.new(kd2, {merger.new_source_fromtable({{2, 'a'}, {1, 'b'}, {3, 'b'}}), merger.new_source_fromtable({{5, 'a'}, {2, 'b'}, {0, 'c'}})}):select()
end)
-- pairs / ipairs
local m3 = merger.new(kd, three())
local got = {}
for _, t in m3:pairs() do got[#got + 1] = t[1] end
print('pairs', table.concat(got, ','))
local m4 = merger.new(kd, three())
try('ipairs take', function() return m4:ipairs():take(3):totable() end)
try('pairs map', function() return merger.new(kd, three()):pairs():map(function(t) return t[1] * 10 end):totable() end)
-- An empty source, no sources
try('empty source', function() return merger.new(kd, {merger.new_source_fromtable({}), merger.new_source_fromtable({{1}})}):select() end)
try('no sources', function() return merger.new(kd, {}):select() end)
-- Tuple sources and chunked table sources
local function gen_tuples(param, state)
    state = state + 1
    if state > #param then return nil end
    return state, box.tuple.new(param[state])
end
try('tuple source', function()
    return merger.new(kd, {merger.new_tuple_source(gen_tuples, {{1}, {3}}, 0), merger.new_tuple_source(gen_tuples, {{2}, {4}, {5}}, 0)}):select()
end)
try('tuple source tables', function()
    return merger.new(kd, {merger.new_tuple_source(function(p, s) if s < 2 then return s + 1, {s * 2} end end, nil, 0)}):select()
end)
try('table source chunks', function()
    local chunks = {{{1}, {3}}, {}, {{5}}}
    return merger.new(kd, {merger.new_table_source(function(p, s) s = s + 1 if chunks[s] then return s, chunks[s] end end, nil, 0),
                          merger.new_source_fromtable({{2}, {4}})}):select()
end)
try('fun iterator source', function()
    return merger.new(kd, {merger.new_table_source(fun.iter({{{1}, {2}}, {{3}}})), merger.new_source_fromtable({{0}})}):select()
end)
-- Buffer sources
local function buf_of(tuples)
    local buf = buffer.ibuf()
    msgpack.encode(tuples, buf)
    return buf
end
try('buffer source', function()
    return merger.new(kd, {merger.new_source_frombuffer(buf_of({{1}, {4}})), merger.new_source_frombuffer(buf_of({{2}, {3}}))}):select()
end)
try('buffer chunks', function()
    local bufs = {buf_of({{1}}), buf_of({}), buf_of({{3}, {5}})}
    return merger.new(kd, {merger.new_buffer_source(fun.iter(bufs)), merger.new_source_frombuffer(buf_of({{2}, {4}}))}):select()
end)
try('empty buffer', function() return merger.new(kd, {merger.new_source_frombuffer(buffer.ibuf())}):select() end)
try('bad buffer', function()
    local buf = buffer.ibuf() msgpack.encode({a = 1}, buf)
    return merger.new(kd, {merger.new_source_frombuffer(buf)}):select()
end)
-- select into a buffer
local out = buffer.ibuf()
try('select buffer', function() return merger.new(kd, three()):select({buffer = out, limit = 4}) end)
print('buffer holds', show(msgpack.decode(out.rpos, out:size())))
-- A merger is a source: merging mergers
try('nested', function()
    return merger.new(kd, {merger.new(kd, three()), merger.new_source_fromtable({{0}, {10}})}):select()
end)
-- Errors
try('new no args', merger.new)
try('new bad key_def', merger.new, {}, {})
try('new bad sources', merger.new, kd, 1)
try('new bad opts', merger.new, kd, {}, 1)
try('new bad reverse', merger.new, kd, {}, {reverse = 1})
try('new bad source', merger.new, kd, {1})
try('new bad source 2', merger.new, kd, {s1, {}})
try('fromtable bad', merger.new_source_fromtable, 1)
try('frombuffer bad', merger.new_source_frombuffer, {})
try('table_source bad', merger.new_table_source, 1)
try('table_source none', merger.new_table_source)
try('select bad opts', function() return merger.new(kd, three()):select(1) end)
try('select bad limit', function() return merger.new(kd, three()):select({limit = 'x'}) end)
try('select bad buffer', function() return merger.new(kd, three()):select({buffer = 1}) end)
try('pairs bad', function() return m.pairs(1) end)
try('bad field type', function() return merger.new(kd, {merger.new_source_fromtable({{'x'}})}):select() end)
try('missing field', function() return merger.new(kd2, {merger.new_source_fromtable({{1}})}):select() end)
try('not a table tuple', function() return merger.new(kd, {merger.new_source_fromtable({1})}):select() end)
try('gen wrong count', function() return merger.new(kd, {merger.new_table_source(function() return 1 end, nil, 0)}):select() end)
try('gen raises', function() return merger.new(kd, {merger.new_table_source(function() error('gen failed') end, nil, 0)}):select() end)
try('tuple gen wrong', function() return merger.new(kd, {merger.new_tuple_source(function() return 1, 2, 3 end, nil, 0)}):select() end)
try('buffer gen wrong', function() return merger.new(kd, {merger.new_buffer_source(function(p, s) if s == 0 then return 1, 'x' end end, nil, 0)}):select() end)
-- A chunk iterator whose state is box.NULL goes on (only nil ends it); one that
-- ends may be called again by a later use of the source.
local function reusable(param)
    local idx = param.idx or 1
    if idx > table.maxn(param.chunks) then return end
    param.idx = idx + 1
    local chunk = param.chunks[idx]
    if chunk == nil then return end
    return box.NULL, chunk
end
for _, kind in ipairs({'tuple', 'table'}) do
    local chunks = kind == 'tuple' and {{1}, {2}, nil, {3}, {4}} or {{{1}}, {{2}}, {}, nil, {{3}}, {{4}}}
    local source = merger['new_' .. kind .. '_source'](reusable, {chunks = chunks})
    for use = 1, 3 do
        print(kind .. ' use ' .. use, require('json').encode(source:pairs():map(box.tuple.totable):totable()))
    end
end
-- A NULL pointer is a chunk (of the wrong kind), and a wrong buffer.
local null = require('ffi').new('char *')
try('null buffer chunk', function() return merger.new_buffer_source(function(_, s) if s == 0 then return 1, null end end, nil, 0):select() end)
try('null tuple chunk', function() return merger.new_tuple_source(function(_, s) if s == 0 then return 1, null end end, nil, 0):select() end)
try('null opts.buffer', function() return merger.new(kd, {}):select({buffer = null}) end)
-- msgpackffi's internal encoder into a buffer, and decode from a pointer.
local msgpackffi = require('msgpackffi')
local ibuf = require('buffer').ibuf()
msgpackffi.internal.encode_array(ibuf, 2)
msgpackffi.internal.encode_r(ibuf, {1, 'a'}, 0)
msgpackffi.internal.encode_r(ibuf, {2, 'b'}, 0)
print('decode pointer', require('json').encode((msgpackffi.decode(ibuf.rpos))))
print('encode_r', require('json').encode(merger.new_source_frombuffer(ibuf):pairs():map(box.tuple.totable):totable()))
os.exit(0)
