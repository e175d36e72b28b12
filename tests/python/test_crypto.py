"""The crypto module compared with real Tarantool 2.6 line for line: digests (md5,
sha1, sha224, sha256, sha384, sha512) as functions and as :new() contexts (update,
result, init, free), HMAC and its _hex form for each, AES-128/192/256 in CBC, CFB
and OFB encrypting and decrypting texts of 0 to 100 bytes, the `none` cipher, the
module's keys and id tables, and the errors: usage, unknown names, key and IV
sizes, a missing key or IV, bad padding and length, and what Debian's 2.6 (OpenSSL
3) refuses (md4, DES); ripemd160 digests and HMAC. Positions inside the module are compared without
their line numbers.
"""
from conftest import LUA_PRINT_COUNTED, same_output_on_both

SCRIPT = LUA_PRINT_COUNTED + r"""
local crypto = require('crypto')
local digest = require('digest')
local function b(x) return type(x) == 'string' and digest.base64_encode(x, {nowrap = true}) or tostring(x) end
local function clean(...)
    local out = {}
    for i = 1, select('#', ...) do
        local v = select(i, ...)
        if type(v) == 'string' then v = string.gsub(v, 'builtin/crypto.lua:%d+:', 'builtin/crypto.lua:N:') end
        out[i] = v
    end
    return unpack(out, 1, select('#', ...))
end
local function keys(t)
    local k = {}
    for n, v in pairs(t) do table.insert(k, tostring(n) .. (type(v) == 'number' and '=' .. v or '')) end
    table.sort(k)
    return table.concat(k, ',')
end
p('module', keys(crypto), keys(crypto.cipher_algo), keys(crypto.cipher_mode))
p('tables', keys(crypto.digest), keys(crypto.hmac))
p('ciphers', keys(crypto.cipher), keys(crypto.cipher.aes128), keys(crypto.cipher.aes256.ofb))
local texts = {'', 'a', 'hello world', string.rep('x', 100), '\0\1\2\255'}
for _, algo in ipairs({'md5', 'sha1', 'sha224', 'sha256', 'sha384', 'sha512'}) do
    local d = crypto.digest[algo]
    p('digest', algo, b(d('')), b(d('abc')), b(d(string.rep('x', 1000))))
    local ctx = d:new()
    ctx:update('a')
    ctx:update('bc')
    local r1 = ctx:result()
    p('context', algo, r1 == d('abc'), clean(pcall(ctx.update, ctx, 'x')))
    ctx:init()
    ctx:update('x')
    p('init', algo, ctx:result() == d('x'))
    p('hmac', algo, b(crypto.hmac[algo]('key', 'abc')), crypto.hmac[algo .. '_hex']('', ''),
      b(crypto.hmac[algo](string.rep('k', 200), 'long key')))
end
local key = {aes128 = '0123456789abcdef', aes192 = string.rep('k', 24), aes256 = string.rep('K', 32)}
local iv = 'fedcba9876543210'
for _, algo in ipairs({'aes128', 'aes192', 'aes256'}) do
    for _, mode in ipairs({'cbc', 'cfb', 'ofb'}) do
        local c = crypto.cipher[algo][mode]
        local out = {}
        for _, t in ipairs(texts) do
            local e = c.encrypt(t, key[algo], iv)
            table.insert(out, #e .. ':' .. b(e) .. ':' .. tostring(c.decrypt(e, key[algo], iv) == t))
        end
        p('cipher', algo, mode, table.concat(out, ' '))
    end
end
p('none', crypto.cipher.none.cbc.encrypt('hello', '', ''), crypto.cipher.none.ofb.decrypt('x', '', ''))
p('errors', clean(pcall(crypto.digest.sha1, 5)))
p('errors', clean(pcall(crypto.digest.sha256)))
p('errors', clean(pcall(crypto.hmac.sha256, 'k')))
p('errors', clean(pcall(crypto.hmac.sha1, nil, 'x')))
p('errors', clean(pcall(crypto.hmac.sha512_hex, 'k', 5)))
p('errors', clean(pcall(function() return crypto.digest.nosuch end)))
p('errors', clean(pcall(function() return crypto.hmac.nosuch end)))
p('errors', clean(pcall(function() return crypto.cipher.nosuch end)))
p('errors', clean(pcall(function() return crypto.cipher.aes128.nosuch end)))
p('errors', clean(pcall(crypto.cipher.aes128.cbc.encrypt, 'x', 'short', iv)))
p('errors', clean(pcall(crypto.cipher.aes256.cfb.encrypt, 'x', key.aes256, 'shortiv')))
p('errors', clean(pcall(crypto.cipher.aes128.ecb.encrypt, 'x', key.aes128, iv)))
p('errors', clean(pcall(crypto.cipher.aes128.cbc.encrypt, 'x', nil, iv)))
p('errors', clean(pcall(crypto.cipher.aes128.cbc.encrypt, 'x', key.aes128)))
p('errors', clean(pcall(crypto.cipher.aes128.cbc.encrypt, nil, key.aes128, iv)))
p('errors', clean(pcall(crypto.cipher.aes128.cbc.decrypt, 'garbage', key.aes128, iv)))
p('errors', clean(pcall(crypto.cipher.aes128.cbc.decrypt, string.rep('a', 16), key.aes128, iv)))
p('errors', clean(pcall(crypto.cipher.aes192.cbc.decrypt, crypto.cipher.aes192.cbc.encrypt('abc', key.aes192, iv), key.aes192, string.rep('x', 16))))
p('errors', clean(pcall(crypto.cipher.none.cbc.encrypt, 'x', key.aes128, iv)))
p('retired', clean(pcall(crypto.digest.md4, 'abc')))
p('ripemd160', b(crypto.digest.ripemd160('abc')), b(crypto.hmac.ripemd160('k', 'abc')), crypto.hmac.ripemd160_hex('', ''))
p('retired', clean(pcall(crypto.cipher.des.cbc.encrypt, 'abc', '12345678', '12345678')))
os.exit(0)
"""


def test_crypto_matches_2_6(tmp_path):
    same_output_on_both(tmp_path, "crypto.lua", SCRIPT, 59)
