-- Cases for test_pickle.py: printed alike by Tarantool 2.6 and oncebox.
local pickle = require('pickle')
local ffi = require('ffi')
local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end
local function show(...) local t = {...} for i = 1, select('#', ...) do t[i] = type(t[i]) .. ':' .. tostring(t[i]) end return select('#', ...) .. ' ' .. table.concat(t, ' ') end
local ks = {} for k in pairs(pickle) do table.insert(ks, k) end table.sort(ks) print(table.concat(ks, ' '))
local vals = {1, -1, 300, 1.5, -2.5, 2^63, 2^64, -2^63, -2^63 - 2048, 1e300, 0/0, 1/0, 'x', '5', ' 7 ', true, false, box.NULL, {}, {1},
              ffi.new('int64_t', -7), ffi.new('uint64_t', 9), ffi.new('int', 3), ffi.new('uint8_t', 200), ffi.new('double', 2.5), ffi.new('bool', true)}
for _, f in ipairs({'b', 'B', 's', 'S', 'n', 'i', 'I', 'N', 'l', 'L', 'q', 'Q', 'f', 'd', 'a', 'A', 'z'}) do
  local out = {}
  for _, v in ipairs(vals) do
    local ok, r = pcall(pickle.pack, f, v)
    out[#out + 1] = ok and hex(r) or ('E:' .. tostring(r):gsub('pickle.pack: ', ''))
  end
  print(f, table.concat(out, ' '))
end
print(hex(pickle.pack('bsilnNqQfda', 1, 2, 3, 4, 5, 6, 7, 8, 1.5, 2.5, 'str')), hex(pickle.pack('')), hex(pickle.pack('a', '')))
for _, args in ipairs({{'i', nil}, {'ii', 1}, {}, {nil}, {5, 1}, {123, 1}, {'', 1, 2}, {{}, 1}}) do
  print(pcall(pickle.pack, unpack(args, 1, table.maxn(args))))
end
local packed = pickle.pack('bsnlNqfdA', 200, 65000, 258, -1, 4000000000, 2^60, 1.25, -3.5, 'tail')
print(show(pickle.unpack('bsnlNqfdA', packed)))
print(show(pickle.unpack('iA', pickle.pack('ia', 42, ''))))
for _, v in ipairs({99999999999999, 1e14, 2^53, -1}) do print(show(pickle.unpack('l', pickle.pack('l', v))), show(pickle.unpack('q', pickle.pack('q', v)))) end
for _, args in ipairs({{'i', 'ab'}, {'i', 'abcde'}, {'bi', 'abc'}, {'a', 'xyz'}, {'aa', 'xyz'}, {'B', 'x'}, {'Q', '12345678'}, {'I', 'abcd'}, {'x', 'a'}, {'', ''}, {'', 'a'}, {'i'}, {}, {1, 'a'}, {'b', 5}, {'i', {}}}) do
  local r = {pcall(pickle.unpack, unpack(args, 1, table.maxn(args)))}
  print(r[1], r[1] and show(unpack(r, 2, table.maxn(r))) or r[2])
end
print(pcall(function() local x = pickle.pack('i', 'x') return x end))
print(pcall(function() local x = pickle.unpack('i', 'x') return x end))
os.exit(0)
