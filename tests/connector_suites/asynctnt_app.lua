-- The instance script asynctnt's own test suite expects as tests/files/app.lua
-- (its PyPI source distribution leaves the file out). Written for oncebox from
-- what the suite's tests use: the spaces, users and functions they name. It runs
-- on Tarantool 2.6 too, so the suite can be run against both.
--
-- The suite's instance wrapper puts box.cfg{} (listen, console) before this.

local fiber = require('fiber')
local uuid = require('uuid')

-- Versions are compared as numbers, part by part ("2.6.0-0-g47aa4e01e" -> 2, 6, 0).
local function version_at_least(wanted)
    local have = {}
    for part in box.info.version:gmatch('%d+') do
        table.insert(have, tonumber(part))
    end
    for i, w in ipairs(wanted) do
        local h = have[i] or 0
        if h ~= w then
            return h > w
        end
    end
    return true
end

box.once('asynctnt-suite-users-and-spaces', function()
    box.schema.user.create('t1', {password = 't1'})
    for _, user in ipairs({'t1', 'guest'}) do
        box.schema.user.grant(user, 'read,write,execute,create,drop,alter', 'universe')
    end

    local tester = box.schema.space.create('tester', {format = {
        {name = 'f1', type = 'unsigned'},
        {name = 'f2', type = 'string'},
        {name = 'f3', type = 'unsigned'},
        {name = 'f4', type = 'unsigned'},
        {name = 'f5', type = '*'},
    }})
    tester:create_index('primary')
    tester:create_index('txt', {unique = false, parts = {2, 'string'}})

    local loose = box.schema.space.create('no_schema_space')
    loose:create_index('primary')
    loose:create_index('primary_hash', {type = 'hash', parts = {1, 'unsigned'}})

    box.execute([[CREATE TABLE sql_space (id INT PRIMARY KEY, name TEXT COLLATE "unicode")]])
    box.execute([[CREATE TABLE sql_space_autoincrement (id INT PRIMARY KEY AUTOINCREMENT, name TEXT)]])
    box.execute([[CREATE TABLE sql_space_autoincrement_multiple (id INT PRIMARY KEY AUTOINCREMENT, name TEXT)]])

    -- Spaces of msgpack extension types, where the version has the type.
    local ext_spaces = {
        {'tester_ext_dec', {2, 2}, {{name = 'f1', type = 'unsigned'}, {name = 'f2', type = 'decimal'}}},
        {'tester_ext_uuid', {2, 4, 1}, {{name = 'f1', type = 'unsigned'}, {name = 'f2', type = 'uuid'}}},
        {'tester_ext_datetime', {2, 10}, {{name = 'id', type = 'unsigned'}, {name = 'dt', type = 'datetime'}}},
    }
    for _, ext in ipairs(ext_spaces) do
        local name, since, format = unpack(ext)
        if version_at_least(since) then
            box.schema.space.create(name, {format = format}):create_index('primary')
        end
    end
end)

-- Adds a sixth field to tester's format (a schema change the client must notice).
function change_format()
    box.space.tester:format({
        {name = 'f1', type = 'unsigned'},
        {name = 'f2', type = 'string'},
        {name = 'f3', type = 'unsigned'},
        {name = 'f4', type = 'unsigned'},
        {name = 'f5', type = '*'},
        {name = 'f6', type = '*'},
    })
end
box.schema.func.create('change_format', {setuid = true, if_not_exists = true})

-- A unique index on tester's third field; returns {its id}.
function make_third_index(name)
    return {box.space.tester:create_index(name, {parts = {3, 'unsigned'}}).id}
end

-- Empties a space by deleting its tuples one by one (truncate needs more rights).
local function delete_all(space)
    if space == nil then
        return
    end
    local keys = space:pairs():map(function(t) return t[1] end):totable()
    for _, key in ipairs(keys) do
        space:delete({key})
    end
end

-- What each test's tearDown calls: every space the tests write to, emptied.
function truncate()
    for _, name in ipairs({'tester', 'no_schema_space', 'tester_ext_dec', 'tester_ext_uuid',
                           'tester_ext_datetime'}) do
        delete_all(box.space[name])
    end
    for _, name in ipairs({'SQL_SPACE', 'SQL_SPACE_AUTOINCREMENT', 'SQL_SPACE_AUTOINCREMENT_MULTIPLE'}) do
        if box.space[name] ~= nil then
            box.execute('DELETE FROM ' .. name)
        end
    end
end

_G.fiber = fiber

function func_long(seconds)
    fiber.sleep(seconds)
    return 'ok'
end

function func_param(p)
    return {p}
end

function func_param_bare(p)
    return p
end

function func_hello()
    return {'hello'}
end

function func_hello_bare()
    return 'hello'
end

-- Inserts a tuple whose string field holds 16 random bytes.
function func_load_bin_str()
    return box.space.tester:insert({100, uuid.bin(), 12, 15, 'hello'})
end

function raise()
    box.error({reason = 'my reason'})
end

-- Five pushes 10 ms apart, then the return value.
function async_action()
    for i = 1, 5 do
        box.session.push('hello_' .. i)
        fiber.sleep(0.01)
    end
    return 'ret'
end
