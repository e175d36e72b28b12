-- iconv: Tarantool 2.6's character set conversion over glibc's iconv(3), through
-- ffi. iconv.new(to, from) returns a converter (a cdata) that is called with a
-- string and returns it converted; failures raise 2.6's texts.

local type = type -- the builtin, not the one user code sees (box.lua)
local ffi = require('ffi')
local errno = require('errno')

ffi.cdef[[
    typedef struct iconv_converter { void *cd; } iconv_converter_t;
    void *iconv_open(const char *tocode, const char *fromcode);
    size_t iconv(void *cd, const char **inbuf, size_t *inleft, char **outbuf, size_t *outleft);
    int iconv_close(void *cd);
]]

local C = ffi.C
local FAILED = ffi.cast('void *', -1)
local E2BIG, EINVAL, EILSEQ = 7, 22, 84
-- 2.6's texts, which name EINVAL (input cut short) and EILSEQ (a byte sequence
-- that is no character, or has none in the target set) the other way round.
local FAILURES = {[EINVAL] = 'Invalid multibyte sequence', [EILSEQ] = 'Incomplete multibyte sequence'}

local iconv = {}

local function convert(self, data)
    if type(data) ~= 'string' then
        error(string.format("attempt to index local 'data' (a %s value)", type(data)))
    end
    -- Back to the initial shift state, then the whole string.
    C.iconv(self.cd, nil, nil, nil, nil)
    local input = ffi.new('const char *[1]')
    input[0] = data
    local inleft = ffi.new('size_t[1]', #data)
    local room = math.max(#data * 2, 64)
    local chunks = {}
    while true do
        local buf = ffi.new('char[?]', room)
        local output = ffi.new('char *[1]', buf)
        local outleft = ffi.new('size_t[1]', room)
        local rc = C.iconv(self.cd, input, inleft, output, outleft)
        chunks[#chunks + 1] = ffi.string(buf, room - tonumber(outleft[0]))
        if rc ~= ffi.cast('size_t', -1) then break end
        local e = ffi.errno()
        if e ~= E2BIG then error(FAILURES[e] or errno.strerror(e)) end
        room = room * 2
    end
    return table.concat(chunks)
end

local converter_t = ffi.metatype('iconv_converter_t', {
    __call = convert,
    __gc = function(self)
        if self.cd ~= nil then
            C.iconv_close(self.cd)
            self.cd = nil
        end
    end,
})

function iconv.new(to, from)
    if type(to) ~= 'string' or type(from) ~= 'string' then
        error('Usage: iconv.new("CP1251", "KOI8-R")')
    end
    local cd = C.iconv_open(to, from)
    if cd == FAILED then error('iconv: ' .. errno.strerror(ffi.errno())) end
    return converter_t(cd)
end

package.loaded.iconv = iconv
return iconv
