-- net.box space and index objects as 2.6 builds them from _vspace, _vindex and
-- _vcollation (crud reads index parts and space:format() through them);
-- compared with Tarantool 2.6 (test_netbox.py).
box.cfg{listen = os.getenv('LISTEN') or '127.0.0.1:0', work_dir = os.getenv('WORK') or '.', log_level = 1}
box.schema.user.grant('guest', 'super', nil, nil, {if_not_exists = true})
local s = box.schema.space.create('customers', {format = {
    {name = 'id', type = 'unsigned'}, {name = 'bucket_id', type = 'unsigned'},
    {name = 'name', type = 'string', is_nullable = true}, {name = 'data', type = 'map'}}})
s:create_index('id', {parts = {'id'}})
s:create_index('bucket_id', {parts = {'bucket_id'}, unique = false})
s:create_index('name', {parts = {{'name', 'string', collation = 'unicode_ci', is_nullable = true}}, unique = false, type = 'tree'})
s:create_index('path', {parts = {{'data.k', 'unsigned'}}, unique = false})
box.schema.space.create('tmp', {temporary = true})
local function keys(t)
    local out = {}
    for k, v in pairs(t) do
        local vs = type(v) == 'table' and 'table' or tostring(v)
        -- (2.6 also has _format_cdata, a struct tuple_format pointer)
        if k ~= 'connection' and k ~= '_conn' and k ~= '_format_cdata' then out[#out + 1] = tostring(k) .. '=' .. vs end
    end
    table.sort(out)
    return table.concat(out, ' ')
end
-- JSON with sorted keys: table order differs between the two LuaJIT builds.
local function sorted_json(v)
    if type(v) ~= 'table' then return require('json').encode(v) end
    if #v > 0 then
        local out = {}
        for i, x in ipairs(v) do out[i] = sorted_json(x) end
        return '[' .. table.concat(out, ',') .. ']'
    end
    local ks = {}
    for k in pairs(v) do ks[#ks + 1] = k end
    table.sort(ks)
    local out = {}
    for _, k in ipairs(ks) do out[#out + 1] = string.format('%q:%s', k, sorted_json(v[k])) end
    return '{' .. table.concat(out, ',') .. '}'
end
local f = require('fiber').create(function()
    local c = require('net.box').connect(box.info.listen)
    local rs = c.space.customers
    print('space', keys(rs))
    print('format', sorted_json(rs._format), rs:format() == rs._format)
    print('set format', pcall(rs.format, rs, {}))
    for _, name in ipairs({'id', 'bucket_id', 'name', 'path'}) do
        local ix = rs.index[name]
        print('index', name, keys(ix))
        print('  parts', sorted_json(ix.parts))
    end
    print('tmp', keys(c.space.tmp))
    print('same', rs.index[0] == rs.index.id, rs.index.id.space == rs)
end)
f:set_joinable(true)
print(f:join())
os.exit(0)
