-- yaml.encode over generated values (nested tables, sparse arrays, numbers with
-- ties, 64-bit cdata, strings with control and multi-byte characters, line and
-- paragraph separators, complex keys) under several options, then long sentences of
-- multi-byte words in plain, single-quoted and multi-line scalars, in blocks and in
-- flow collections: libyaml folds lines at 80 columns counted in characters, a line
-- separator written raw starts its column again, and a complex key past the width
-- puts its colon on a line of its own. Run on Tarantool 2.6 and on oncebox; the
-- lines must match.
-- (The values come from generated_values.lua, run first.)
local yaml = require('yaml')
for i = 1, 3000 do
  local v = gen(0)
  local o = optsets[i % #optsets + 1]
  local ok, r = pcall(function() local s = yaml.encode(v, o) return s end)
  print(i, ok, (tostring(r):gsub('^[^:]*:%d+: ', 'at: ')))
end
local words = {'κλειδί', 'é', 'ab', '€€', 'x', 'plain', 'слово', '日本語'}
local function sentence(n)
  local t = {}
  for i = 1, n do t[i] = words[math.random(#words)] end
  return table.concat(t, ' ')
end
for i = 1, 400 do
  local s = sentence(math.random(5, 40))
  local text = (i % 3 == 0) and ("'" .. s) or (i % 3 == 1) and s or (s .. '\n' .. s)
  local v = ({text, {text}, {k = text}, {{text, 1}}, {[text:sub(1, 30)] = {text, text}}})[i % 5 + 1]
  print(i, yaml.encode(v))
end
os.exit(0)
