-- crypto: Tarantool 2.6's crypto module. crypto.digest.<algo>(s) and :new() contexts,
-- crypto.hmac.<algo>(key, s), <algo>_hex and :new(key) contexts, and
-- crypto.cipher.<algo>.<mode>.encrypt/decrypt(data, key, iv) for AES-128/192/256 in
-- CBC, CFB, OFB and ECB (and `none`, which copies). The work is in Rust
-- (box.internal.native.hash, box.internal.crypto); names, usage errors and OpenSSL's
-- texts are 2.6's. md4 and DES fail as they do in Debian's 2.6, whose OpenSSL 3 no
-- longer offers them.

local type = type -- the builtin, not the one user code sees (box.lua)
local native = box.internal.native
local internal = box.internal.crypto

local DIGESTS = {'md4', 'md5', 'ripemd160', 'sha1', 'sha224', 'sha256', 'sha384', 'sha512'}
local retired = {md4 = true}
local UNSUPPORTED = 'error:0308010C:digital envelope routines::unsupported'

-- A context of `update`s: what they gave is hashed by `result`, after which (or
-- after `free`) it needs `init` again.
local function context_methods(finish)
    local methods = {}
    function methods:init(...)
        self.parts, self.ready = {}, true
        if select('#', ...) > 0 then self.key = ... end
        return self
    end
    function methods:update(s)
        if not self.ready then error('Digest not initialized', 2) end
        if type(s) ~= 'string' then error('Usage: ' .. self.kind .. ':update(string)', 2) end
        table.insert(self.parts, s)
    end
    function methods:result()
        if not self.ready then error('Digest not initialized', 2) end
        self.ready = false
        return finish(self, table.concat(self.parts))
    end
    function methods:free() self.ready = false end
    return {__index = methods}
end

local digest_ctx_mt = context_methods(function(self, s) return native.hash(self.algo, s) end)
local hmac_ctx_mt = context_methods(function(self, s) return internal.hmac(self.algo, self.key, s) end)

local digest = setmetatable({}, {__index = function(_, name)
    error(string.format('Digest method "%s" is not supported', tostring(name)), 2)
end})
local hmac = setmetatable({}, {__index = function(_, name)
    error(string.format('HMAC method "%s" is not supported', tostring(name)), 2)
end})

for _, algo in ipairs(DIGESTS) do
    local function check_supported(what)
        if retired[algo] then error("Can't init " .. what .. ': ' .. UNSUPPORTED) end
    end
    digest[algo] = setmetatable({
        new = function()
            check_supported('digest')
            return setmetatable({algo = algo, kind = 'digest'}, digest_ctx_mt):init()
        end,
    }, {__call = function(_, s)
        check_supported('digest')
        if type(s) ~= 'string' then error('Usage: digest.' .. algo .. '(string)') end
        return native.hash(algo, s)
    end})
    local function mac(key, s, name)
        if key == nil then error('Key should be specified for HMAC operations') end
        check_supported('HMAC')
        if type(s) ~= 'string' then error('Usage: hmac.' .. name .. '(key, string)') end
        return internal.hmac(algo, tostring(key), s)
    end
    hmac[algo] = setmetatable({
        new = function(_, key)
            if key == nil then error('Key should be specified for HMAC operations') end
            check_supported('HMAC')
            return setmetatable({algo = algo, kind = 'hmac', key = tostring(key)}, hmac_ctx_mt):init()
        end,
    }, {__call = function(_, key, s) return mac(key, s, algo) end})
    hmac[algo .. '_hex'] = function(key, s) return native.hex(mac(key, s, algo .. '_hex')) end
end

local cipher_algo = {none = 0, aes128 = 1, aes192 = 2, aes256 = 3, des = 4}
local cipher_mode = {ecb = 0, cbc = 1, cfb = 2, ofb = 3}

local function run_cipher(algo, mode, encrypt, data, key, iv)
    if algo == 'des' then error('OpenSSL error: error:03000086:digital envelope routines::initialization error', 0) end
    if type(data) ~= 'string' then error('Usage: cipher:update(string)') end
    -- 2.6 sets a cipher up only given a key and an IV (ECB's too, where it then refuses
    -- any IV: ECB does not work there; here it does, without one).
    if key == nil or iv == nil and mode ~= 'ecb' and algo ~= 'none' then error('Cipher not initialized') end
    local out, err = internal.cipher(algo, mode, encrypt, data, key == nil and '' or tostring(key),
                                     iv == nil and '' or tostring(iv))
    if out == nil then error(err, 0) end
    return out
end

local cipher = setmetatable({}, {__index = function(_, name)
    error(string.format('Cipher method "%s" is not supported', tostring(name)), 2)
end})
for algo in pairs(cipher_algo) do
    local modes = setmetatable({}, {__index = function(_, name)
        error(string.format('Cipher mode %s is not supported', tostring(name)))
    end})
    for mode in pairs(cipher_mode) do
        modes[mode] = {
            encrypt = function(data, key, iv) return run_cipher(algo, mode, true, data, key, iv) end,
            decrypt = function(data, key, iv) return run_cipher(algo, mode, false, data, key, iv) end,
        }
    end
    cipher[algo] = modes
end

-- As in 2.6, only the two tables of ids are the module's own keys.
package.loaded.crypto = setmetatable({cipher_algo = cipher_algo, cipher_mode = cipher_mode},
                                     {__index = {digest = digest, hmac = hmac, cipher = cipher}})
