-- Cases for test_csv.py: printed alike by Tarantool 2.6 and oncebox.
local csv = require('csv')
local function show(rows)
  local out = {}
  for i, row in pairs(rows) do
    local fields = {}
    for j, f in pairs(row) do fields[#fields + 1] = j .. '=' .. string.format('%q', f):gsub('\n', 'n') end
    out[#out + 1] = i .. ':[' .. table.concat(fields, ',') .. ']'
  end
  table.sort(out)
  return #out .. ' ' .. table.concat(out, ' ')
end
local inputs = {'', 'a', 'a\n', 'a,b,c\n1,2,3\n', 'a,b\r\nc,d\r\n', 'a,b\n\rc,d', 'a\r\rb', 'a\n\nb', '\n', '\n\n', '\r\n\r\n',
  ' a , b ,c  \n', '"a","b"', '"a,b",c', '"a""b",c', '""', '""""', 'a""b', 'ab"cd"e', '"a\nb",c\n', '"unterminated\n1,2', 'x\n"bad',
  'a,,b', ',', ',,', 'a,', ',a', '  ', '   \n', '"  spaced  "', '"a"  ,b', '"a" x,b', ' "a" ', 'a b c,d e', '\t a\t,b',
  'a,b\n c , d \n"e"', '1,2\n3', 'é,ü\n', 'a;b;c', '"a"b"c"', '"""a"""', 'x"', 'x"y', '\r', 'a\r', 'a\n\r\n\rb', 'a,"b\r\nc"\r\nd'}
for _, s in ipairs(inputs) do print(string.format('%q', s):gsub('\n', 'n'), show(csv.load(s))) end
print(show(csv.load('a;b;"c;d"\n1;2;3', {delimiter = ';'})))
print(show(csv.load("a,'b,c',d", {quote_char = "'"})))
print(show(csv.load('h1,h2\nh3\n1,2\n3,4', {skip_head_lines = 2})))
print(show(csv.load('h1,h2\n1,2', {skip_head_lines = 5})))
print(show(csv.load('a b  c', {delimiter = ' '})))
-- a readable, in pieces of every size
local text = 'id,name\n1,"Smith, John"\r\n2,"say ""hi"""\n3, spaced \n4,"multi\nline"\n5,last'
for _, size in ipairs({1, 2, 3, 5, 7, 4096}) do
  local pos = 1
  local readable = {read = function(self, n) local piece = text:sub(pos, pos + n - 1) pos = pos + n return piece end}
  print(size, show(csv.load(readable, {chunk_size = size})))
end
local rows = {}
for i, row in csv.iterate('a,b\nc,d\ne,f', {skip_head_lines = 1}) do rows[#rows + 1] = i .. '=' .. table.concat(row, '|') end
print(table.concat(rows, ' '))
print(select(2, pcall(csv.load, 5)):match(': (.*)'))
print(select(2, pcall(csv.load, {})):match(': (.*)'))
-- dump
print((csv.dump({'a', 'b', 'c'}):gsub('\n', 'N')))
print((csv.dump({{'a', 'b'}, {1, 2.5}, {'x,y', 'q"uote', 'new\nline', 'cr\rx', ''}, {true, false}}):gsub('\n', 'N'):gsub('\r', 'R')))
print((csv.dump({{'a;b', 'c,d'}}, {delimiter = ';'}):gsub('\n', 'N')))
print((csv.dump({{"it's", 'a,b'}}, {quote_char = "'"}):gsub('\n', 'N')))
print((csv.dump({{'nul\0after', 'x\0,y'}}):gsub('\n', 'N'):gsub('%z', 'Z')))
print((csv.dump({}):gsub('\n', 'N')), (csv.dump({{}}):gsub('\n', 'N')))
local written = {}
print(csv.dump({{'a', 'b'}, {'c'}}, nil, {write = function(self, s) written[#written + 1] = s end}), #written, (table.concat(written):gsub('\n', 'N')))
print(select(2, pcall(csv.dump, 'x')):match(': (.*)'))
print(select(2, pcall(csv.dump, {'a'}, {}, {})):match(': (.*)'))
print(show(csv.load(csv.dump({{'a,b', 'c"d', ' e '}, {'f\ng'}}))))
os.exit(0)
