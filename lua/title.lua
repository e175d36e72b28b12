-- title: the process title's parts, as 2.6's module keeps them:
-- "<interpretor_name> <script_name> <<status>>: <custom_title>" (each part only
-- when set). box.cfg sets the status ('loading', then 'running') and
-- custom_proc_title the custom part. oncebox keeps and reports the title; it
-- does not rewrite what ps shows.

local title = {}
local parts = {}
-- The title as last updated ('' until the first update).
local current = ''

local function compose()
    local text = parts.interpretor_name or ''
    if parts.script_name ~= nil then text = text .. ' ' .. parts.script_name end
    if parts.status ~= nil then text = text .. ' <' .. parts.status .. '>' end
    if parts.custom_title ~= nil then text = text .. ': ' .. parts.custom_title end
    return text
end

-- title.update(kv): sets the parts given ({interpretor_name, script_name,
-- status, custom_title}, or a string for the custom title); the title is
-- composed again unless kv.__defer_update.
function title.update(kv)
    if type(kv) == 'string' then kv = {custom_title = kv} end
    if type(kv) ~= 'table' then return end
    for _, key in ipairs({'interpretor_name', 'script_name', 'status', 'custom_title'}) do
        if kv[key] ~= nil then parts[key] = tostring(kv[key]) end
    end
    if not kv.__defer_update then current = compose() end
end

-- title.get(): the title, and its parts.
function title.get()
    return current, {interpretor_name = parts.interpretor_name, script_name = parts.script_name,
                     status = parts.status, custom_title = parts.custom_title}
end

-- The program's and the script's names, once the script's `arg` is set.
local function started()
    if parts.interpretor_name ~= nil then return end
    parts.interpretor_name = 'tarantool'
    if parts.script_name == nil and type(arg) == 'table' and type(arg[0]) == 'string' then
        parts.script_name = arg[0]
    end
end
local update, get = title.update, title.get
function title.update(kv)
    started()
    return update(kv)
end
function title.get()
    started()
    return get()
end

package.loaded.title = title
