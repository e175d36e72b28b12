-- RTREE indexes compared with Tarantool 2.6 (test_index_reads.py): definitions
-- and their errors, fields checked as points or boxes, every search with a box and
-- with a point key (flat or nested), NEIGHBOR by euclidean and manhattan distance,
-- counts, and the list order while the tree has one page. Past that (the 200
-- entries at the end) 2.6 walks its pages: the sets and distances are compared.
box.cfg{work_dir = os.getenv('WORK'), log_level = 1}
local function try(...) local ok, e = pcall(...) print(ok, ok and '' or (tostring(e) .. ' ' .. tostring(type(e) == 'cdata' and e.code))) end
local function ids(list) local r = {} for _, x in ipairs(list) do r[#r + 1] = x[1] end return table.concat(r, ',') end
local s = box.schema.space.create('s')
s:create_index('pk')
try(s.create_index, s, 'r0', {type = 'rtree', unique = true})
try(s.create_index, s, 'r1', {type = 'rtree', parts = {2, 'array', 3, 'array'}})
try(s.create_index, s, 'r2', {type = 'rtree', parts = {2, 'unsigned'}})
try(s.create_index, s, 'r3', {type = 'rtree', parts = {{2, 'array', is_nullable = true}}})
try(s.create_index, s, 'r4', {type = 'rtree', dimension = 0})
try(s.create_index, s, 'r5', {type = 'rtree', dimension = 21})
try(s.create_index, s, 'r6', {type = 'rtree', distance = 'chebyshev'})
try(s.create_index, s, 'r', {type = 'rtree'})
print(s.index.r.type, s.index.r.parts[1].fieldno, s.index.r.parts[1].type, s.index.r.unique, s.index.r.dimension, s.index.r.distance)
local r = box.space._index:get{s.id, s.index.r.id}
print(require('json').encode(r[5]))
try(s.insert, s, {1, {1}})
try(s.insert, s, {1, {1, 2, 3}})
try(s.insert, s, {1, {1, 'a'}})
try(s.insert, s, {1, 5})
for i = 1, 12 do s:replace{i, {i % 5, i % 3}} end
s:replace{20, {0, 0, 10, 10}}
s:replace{21, {2, 1, 3, 2}}
try(s.insert, s, {22, {5, 5, 1, 1}})
print('all', ids(s.index.r:select{}))
for _, it in ipairs({'EQ', 'GT', 'GE', 'LT', 'LE', 'OVERLAPS', 'NEIGHBOR', 'ALL', 'REQ'}) do
  local ok, res = pcall(s.index.r.select, s.index.r, {2, 1, 3, 2}, {iterator = it})
  print(it, ok, ok and ids(res) or tostring(res))
  local ok2, res2 = pcall(s.index.r.select, s.index.r, {2, 1}, {iterator = it})
  print(it .. ' point', ok2, ok2 and ids(res2) or tostring(res2))
end
print('nested', ids(s.index.r:select({{2, 1}}, {iterator = 'NEIGHBOR', limit = 5})))
try(s.index.r.select, s.index.r, {1, 2, 3}, {iterator = 'EQ'})
try(s.index.r.select, s.index.r, {}, {iterator = 'EQ'})
print('count', s.index.r:count({0, 0, 2, 2}, {iterator = 'LE'}), s.index.r:count())
s:delete{3} s:delete{7}
s:replace{30, {1, 1}}
s:replace{4, {9, 9}}
print('after', ids(s.index.r:select{}))
print('neigh', ids(s.index.r:select({0, 0}, {iterator = 'NEIGHBOR'})))
local m = box.schema.space.create('m')
m:create_index('pk')
m:create_index('r', {type = 'rtree', distance = 'manhattan', dimension = 3, parts = {2, 'array'}})
for i = 1, 10 do m:replace{i, {i, 10 - i, i % 4}} end
print('m neigh', ids(m.index.r:select({5, 5, 0}, {iterator = 'NEIGHBOR'})))
print('m all', ids(m.index.r:select({}, {iterator = 'ALL'})))
try(m.index.r.get, m.index.r, {1, 1, 1})
try(m.index.r.min, m.index.r)
for i = 1, 200 do m:replace{i, {i % 17, (i * 7) % 23, i % 5}} end

local function sorted_ids(list)
    local r = {}
    for _, x in ipairs(list) do r[#r + 1] = x[1] end
    table.sort(r)
    return table.concat(r, ',')
end
print('m big', sorted_ids(m.index.r:select({0, 0, 0, 8, 8, 4}, {iterator = 'LE'})))
local distances = {}
for _, x in ipairs(m.index.r:select({3, 3, 3}, {iterator = 'NEIGHBOR', limit = 20})) do
    local p = x[2]
    distances[#distances + 1] = math.abs(p[1] - 3) + math.abs(p[2] - 3) + math.abs(p[3] - 3)
end
print('m big neigh', table.concat(distances, ','))
-- A part at a path inside a field.
local g = box.schema.space.create('g', {format = {{'id', 'unsigned'}, {'m', 'map'}}})
g:create_index('pk')
try(g.create_index, g, 'r', {type = 'rtree', parts = {{2, 'array', path = 'geo'}}})
try(g.insert, g, {1, {geo = {1, 2}}})
try(g.insert, g, {2, {geo = {3, 4, 5, 6}}})
try(g.insert, g, {3, {geo = {1}}})
try(g.insert, g, {4, {other = 1}})
print('path', ids(g.index.r:select({0, 0}, {iterator = 'NEIGHBOR'})), ids(g.index.r:select({0, 0, 2, 2}, {iterator = 'LE'})))
os.exit(0)
