-- help() and tutorial(): the console's interactive help, as globals (2.6 defines
-- them so). help() returns a list holding the help screen (the console's `\help`
-- shows it); tutorial([action]) walks a short tutorial one screen at a time:
-- 'start', 'next' (or 'more'), 'prev', or a screen's number.

local HELP = [[
To get help, see the Tarantool manual at https://tarantool.io/en/doc/
To start the interactive Tarantool tutorial, type 'tutorial()' here.

Available backslash commands:

  \set language <language>   -- set language (lua or sql)
  \set output <format>       -- set output format (lua[,line|block] or yaml)
  \set delimiter <delimiter> -- set expression delimiter
  \help                      -- show this screen
  \quit                      -- quit interactive console
]]

-- Each screen: a title, then what to type and what it shows.
local SCREENS = {
    {'Values', [[
Whatever you type is run as Lua, and what it returns is shown
as YAML. Type a few values separated by commas:

1, 'two', {3, 4}

and each comes back as an item of a list.]]},
    {'Configuration', [[
box.cfg{} starts the database: it opens (or creates) the data
in the working directory and, with listen = port, accepts
connections. Type:

box.cfg{}

The second and later calls change settings at run time, such
as box.cfg{idempotency_lifetime = 600}.]]},
    {'A space', [[
Data lives in spaces, made of tuples, found through indexes.
Create a space and its primary index:

s = box.schema.space.create('tutorial', {if_not_exists = true})
s:create_index('primary', {parts = {1, 'unsigned'}, if_not_exists = true})]]},
    {'Tuples', [[
Insert, read and change tuples:

s:insert{1, 'Moon', 384400}
s:get{1}
s:update({1}, {{'+', 3, 1}})
s:select{}

A second insert under the same key is refused: use replace to
overwrite, or upsert to update or insert.]]},
    {'Transactions', [[
box.atomic runs a function as one transaction: all of it or
nothing of it.

box.atomic(function() s:replace{2, 'Mars'} s:replace{3, 'Venus'} end)
s:len()]]},
    {'Writes that run once', [[
A client that times out does not know whether its write ran.
Send the write again under the same idempotency token and it
runs at most once: a retry gets the first outcome back.

box.atomic({idempotent_token = 'order-42'}, function() return s:update({1}, {{'+', 3, 1}}) end)
box.atomic({idempotent_token = 'order-42'}, function() return s:update({1}, {{'+', 3, 1}}) end)
box.stat.idempotency()

Connectors send the token in the request header instead (key
0x0c): see protocol-docs/ in the oncebox repository.]]},
    {'Going on', [[
Lua functions you define here can be called by clients over
the network (box.schema.func.create, then CALL), and scripts
given on the command line run the same Lua at start-up.

The Tarantool manual covers the rest:
https://tarantool.io/en/doc/

That was the last screen: tutorial('start') goes back to the first.]]},
}

local function screen(n)
    local title, body = SCREENS[n][1], SCREENS[n][2]
    local heading = string.format('Tutorial -- Screen #%d -- %s', n, title)
    local text = heading .. '\n' .. string.rep('=', #heading) .. '\n\n' .. body .. '\n'
    if n < #SCREENS then
        text = text .. '\nWhen you are ready for the next screen, enter <tutorial("next")>.\n'
    end
    return text
end

help = setmetatable({HELP}, {__call = function(self) return self end})

local at = 1
tutorial = setmetatable({HELP}, {__call = function(_, action)
    if action == 'start' then
        at = 1
    elseif action == 'next' or action == 'more' then
        at = at + 1
    elseif action == 'prev' then
        at = at - 1
    elseif type(action) == 'number' and action % 1 == 0 then
        at = action
    elseif action ~= nil then
        error('Usage: tutorial("start" | "next" | "prev" | 1 .. ' .. #SCREENS .. ')')
    end
    at = math.max(1, math.min(at, #SCREENS))
    return screen(at)
end})

package.loaded.help = {help = help, tutorial = tutorial}
