-- What the tarantool docker image's entrypoint adds to an instance script, for
-- the npm tarantool-driver's suite (which ran its instances in that image): once
-- the script's first box.cfg{} has run, guest may read, write and execute
-- everything. Run as `tarantool docker_entrypoint.lua SCRIPT`.
local script = assert(arg[1], 'usage: tarantool docker_entrypoint.lua SCRIPT')
local configure = box.cfg
box.cfg = function(options)
    configure(options)
    box.once('docker-entrypoint', function()
        box.schema.user.grant('guest', 'read,write,execute', 'universe', nil, {if_not_exists = true})
    end)
end
dofile(script)
