-- errno: Tarantool's errno module: the Linux error constants (errno.ENOENT...),
-- errno() for the last error (the C errno; the socket module sets it too) and
-- errno.strerror(n).

local native = box.internal.native
local codes = {
    EPERM = 1, ENOENT = 2, ESRCH = 3, EINTR = 4, EIO = 5, ENXIO = 6, E2BIG = 7, ENOEXEC = 8, EBADF = 9, ECHILD = 10,
    EAGAIN = 11, EWOULDBLOCK = 11, ENOMEM = 12, EACCES = 13, EFAULT = 14, ENOTBLK = 15, EBUSY = 16, EEXIST = 17,
    EXDEV = 18, ENODEV = 19, ENOTDIR = 20, EISDIR = 21, EINVAL = 22, ENFILE = 23, EMFILE = 24, ENOTTY = 25,
    ETXTBSY = 26, EFBIG = 27, ENOSPC = 28, ESPIPE = 29, EROFS = 30, EMLINK = 31, EPIPE = 32, EDOM = 33, ERANGE = 34,
    EDEADLK = 35, ENAMETOOLONG = 36, ENOLCK = 37, ENOSYS = 38, ENOTEMPTY = 39, ELOOP = 40, ENOMSG = 42, EIDRM = 43,
    ENOSTR = 60, ENODATA = 61, ETIME = 62, ENOSR = 63, EREMOTE = 66, ENOLINK = 67, EPROTO = 71, EMULTIHOP = 72,
    EBADMSG = 74, EOVERFLOW = 75, EILSEQ = 84, EUSERS = 87, ENOTSOCK = 88, EDESTADDRREQ = 89, EMSGSIZE = 90,
    EPROTOTYPE = 91, ENOPROTOOPT = 92, EPROTONOSUPPORT = 93, ESOCKTNOSUPPORT = 94, EOPNOTSUPP = 95, ENOTSUP = 95,
    EPFNOSUPPORT = 96, EAFNOSUPPORT = 97, EADDRINUSE = 98, EADDRNOTAVAIL = 99, ENETDOWN = 100, ENETUNREACH = 101,
    ENETRESET = 102, ECONNABORTED = 103, ECONNRESET = 104, ENOBUFS = 105, EISCONN = 106, ENOTCONN = 107,
    ESHUTDOWN = 108, ETOOMANYREFS = 109, ETIMEDOUT = 110, ECONNREFUSED = 111, EHOSTDOWN = 112, EHOSTUNREACH = 113,
    EALREADY = 114, EINPROGRESS = 115, ESTALE = 116, EDQUOT = 122, ECANCELED = 125, EOWNERDEAD = 130,
    ENOTRECOVERABLE = 131,
}

-- errno() is the C errno of the TX thread, as 2.6's (ffi.errno): what a failed
-- ffi call (ffi.C.kill) left is seen too. errno(n) sets it and returns the one before.
local ffi = require('ffi')
local errno = setmetatable({}, {
    __index = function(_, name) return codes[name] end,
    __call = function(_, n)
        if n ~= nil then return ffi.errno(n) end
        return ffi.errno()
    end,
})

-- errno.strerror([n]): the text of error `n`, of the last error without one.
rawset(errno, 'strerror', function(n)
    if n == nil then n = ffi.errno() end
    return native.strerror(n)
end)

package.loaded.errno = errno
