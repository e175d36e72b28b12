-- digest: Tarantool 2.6's digest module (SHA family, MD5, base64, CRC32-C, murmur,
-- guava, pbkdf2, urandom), over the pure Rust functions in box.internal.native.
-- Not provided: md4 (OpenSSL 3 builds of Tarantool refuse it too).

local type = type -- the builtin, not the one user code sees (box.lua)
local native = box.internal.native
local digest = {}

local function usage(text) error(text, 3) end

for _, algo in ipairs({'sha1', 'sha224', 'sha256', 'sha384', 'sha512', 'md5'}) do
    local name, hex_name = 'digest.' .. algo, 'digest.' .. algo .. '_hex'
    digest[algo] = function(s)
        if type(s) ~= 'string' then usage('Usage: ' .. name .. '(string)') end
        return native.hash(algo, s)
    end
    digest[algo .. '_hex'] = function(s)
        if type(s) ~= 'string' then usage('Usage: ' .. hex_name .. '(string)') end
        return native.hex(native.hash(algo, s))
    end
end

function digest.base64_encode(s, opts)
    if type(s) ~= 'string' then usage('Usage: digest.base64_encode(string[, table])') end
    local urlsafe, nopad, nowrap = false, false, false
    if opts ~= nil then
        urlsafe, nopad, nowrap = opts.urlsafe and true or false, opts.nopad and true or false,
            opts.nowrap and true or false
    end
    return native.base64_encode(s, urlsafe, nopad, nowrap)
end

function digest.base64_decode(s)
    if type(s) ~= 'string' then usage('Usage: digest.base64_decode(string)') end
    return native.base64_decode(s)
end

function digest.urandom(n)
    if type(n) ~= 'number' then usage('Usage: digest.urandom(number)') end
    return native.urandom(n)
end

local CRC32_BEGIN = 4294967295

local function to_crc(crc)
    local n = tonumber(crc)
    if n == nil then error("bad argument #1 to '?' (cannot convert 'nil' to 'unsigned int')", 3) end
    return n % 4294967296
end

function digest.crc32_update(crc, s)
    return native.crc32c(to_crc(crc), tostring(s))
end

local crc32_methods = {}
crc32_methods.__index = crc32_methods
function crc32_methods:update(s)
    self.value = native.crc32c(to_crc(self.value), tostring(s))
end
function crc32_methods:result() return self.value end
function crc32_methods:clear() self.value = CRC32_BEGIN end
function crc32_methods:copy() return setmetatable({value = self.value}, crc32_methods) end

digest.crc32 = setmetatable({
    crc_begin = CRC32_BEGIN,
    new = function() return setmetatable({value = CRC32_BEGIN}, crc32_methods) end,
}, {
    __call = function(_, s)
        if type(s) ~= 'string' then usage('Usage digest.crc32(string)') end
        return native.crc32c(CRC32_BEGIN, s)
    end,
})

-- A murmur object keeps what it was fed: the hash is taken over all of it at result().
local MURMUR_SEED = 13
local murmur_methods = {}
murmur_methods.__index = murmur_methods
function murmur_methods:update(s) self.parts[#self.parts + 1] = tostring(s) end
function murmur_methods:result() return native.murmur(table.concat(self.parts), self.seed) end
function murmur_methods:clear() self.parts = {} end
function murmur_methods:copy()
    return setmetatable({seed = self.seed, parts = {table.concat(self.parts)}}, murmur_methods)
end

local function murmur_seed(opts)
    if type(opts) == 'table' and opts.seed ~= nil then return tonumber(opts.seed) % 4294967296 end
    return MURMUR_SEED
end

digest.murmur = setmetatable({
    default_seed = MURMUR_SEED,
    new = function(opts) return setmetatable({seed = murmur_seed(opts), parts = {}}, murmur_methods) end,
}, {
    -- As Tarantool: the one-shot form always uses the default seed.
    __call = function(_, s)
        if type(s) ~= 'string' then usage('Usage: digest.murhash(string)') end
        return native.murmur(s, MURMUR_SEED)
    end,
})

function digest.guava(state, buckets)
    local s, b = tonumber(state), tonumber(buckets)
    if s == nil then error("bad argument #1 to '?' (cannot convert 'nil' to 'int64_t')", 2) end
    if b == nil then error("bad argument #2 to '?' (cannot convert 'nil' to 'int')", 2) end
    return native.guava(s, b)
end

function digest.pbkdf2(pass, salt, iters, digest_len)
    if type(pass) ~= 'string' or type(salt) ~= 'string' then
        usage('Usage: digest.pbkdf2(pass, salt[,iters][,digest_len])')
    end
    if iters ~= nil and type(iters) ~= 'number' then usage('iters must be a number') end
    if digest_len ~= nil and type(digest_len) ~= 'number' then usage('digest_len must be a number') end
    return native.pbkdf2(pass, salt, iters or 100000, digest_len or 128)
end

function digest.pbkdf2_hex(pass, salt, iters, digest_len)
    if type(pass) ~= 'string' or type(salt) ~= 'string' then
        usage('Usage: digest.pbkdf2_hex(pass, salt[,iters][,digest_len])')
    end
    return native.hex(digest.pbkdf2(pass, salt, iters, digest_len))
end

-- aes256cbc.encrypt/decrypt(data, key, iv): AES-256-CBC, PKCS#7 padding, 32-byte key, 16-byte iv.
local function aes(encrypt)
    return function(data, key, iv)
        if type(data) ~= 'string' or type(key) ~= 'string' or type(iv) ~= 'string' then
            error('Usage: digest.aes256cbc.' .. (encrypt and 'encrypt' or 'decrypt') .. '(string, key, iv)', 2)
        end
        local out, err = native.aes256cbc(encrypt, data, key, iv)
        if out == nil then error(err, 0) end
        return out
    end
end
digest.aes256cbc = {encrypt = aes(true), decrypt = aes(false)}

package.loaded.digest = digest
