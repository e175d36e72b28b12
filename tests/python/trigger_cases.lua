-- internal.trigger, the trigger lists modules build their on_* setters with
-- (vshard does), compared with Tarantool 2.6 (test_box_misc.py).
local trigger = require('internal.trigger')
local t = trigger.new('on_x')
local function a(...) print('a', ...) end
local function b(...) print('b', ...) end
print('add', t(a))
print('add', t(b))
print('list', #t(), t()[1] == a, t()[2] == b)
t:run(1, 2)
print('replace', t(function(...) print('c', ...) end, a) == a)
t:run(3)
print('del', t(nil, b) == b)
print(pcall(t, nil, b))
print(pcall(t, a, b))
print(pcall(t, 1))
print(pcall(t, nil, 1))
print('name', t.name, #t)
local called = setmetatable({}, {__call = function(self, x) print('callable', x) end})
t(called)
t:run(5)
print(pcall(t.run, t, 'err'))
os.exit(0)
