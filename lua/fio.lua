-- fio: Tarantool's file I/O module. File handles (`fio.open`), the file system
-- calls (stat, mkdir, rename, glob...), path helpers and fio.c's constants, with
-- 2.6's results: a failed call returns nil or false and "fio: <strerror>" and
-- sets errno(); wrong arguments raise 2.6's usage errors, with the position in
-- 2.6's builtin/fio.lua that its messages carry.

local type = type -- the builtin, not the one user code sees (box.lua)
local ffi = require('ffi')
local errno = require('errno')
local native = box.internal.fio

local fio = {}

fio.c = {
    flag = {
        O_RDONLY = 0, O_WRONLY = 1, O_RDWR = 2, O_CREAT = 64, O_EXCL = 128, O_NOCTTY = 256, O_TRUNC = 512,
        O_APPEND = 1024, O_NONBLOCK = 2048, O_NDELAY = 2048, O_ASYNC = 8192, O_DIRECT = 16384,
        O_LARGEFILE = 0, O_DIRECTORY = 65536, O_NOFOLLOW = 131072, O_NOATIME = 262144,
        O_CLOEXEC = 524288, O_SYNC = 1052672, O_PATH = 2097152, O_TMPFILE = 4259840,
    },
    mode = {
        S_IRWXU = 448, S_IRUSR = 256, S_IWUSR = 128, S_IXUSR = 64,
        S_IRWXG = 56, S_IRGRP = 32, S_IWGRP = 16, S_IXGRP = 8,
        S_IRWXO = 7, S_IROTH = 4, S_IWOTH = 2, S_IXOTH = 1,
    },
    seek = {SEEK_SET = 0, SEEK_CUR = 1, SEEK_END = 2, SEEK_DATA = 3, SEEK_HOLE = 4},
}

-- An error 2.6 raises from its builtin/fio.lua, with the line it names.
local function usage(line, message)
    error(('builtin/fio.lua:%d: %s'):format(line, message), 0)
end

-- An error 2.6 raises from C (no position).
local function c_usage(message)
    error(message, 0)
end

-- A native call's failure as 2.6 reports it: `fail` (nil or false) and
-- "fio: <strerror>", errno() set.
local function failed(fail, text, code)
    if code ~= nil then errno(code) end
    return fail, 'fio: ' .. tostring(text)
end

-- The result of a native call, `fail` in place of its nil on failure.
local function result(fail, value, text, code)
    if value == nil then return failed(fail, text, code) end
    return value
end

-- A path argument as 2.6's C functions take it (a number becomes a string).
local function path_arg(path, message)
    if type(path) == 'number' then return tostring(path) end
    if type(path) ~= 'string' then c_usage(message) end
    return path
end

-- stat results: the fields, and is_reg()...is_sock() from the type bits.
local S_IFMT = 61440
local stat_methods = {}
for name, bits in pairs{is_reg = 32768, is_dir = 16384, is_chr = 8192, is_blk = 24576, is_fifo = 4096,
                        is_link = 40960, is_sock = 49152} do
    stat_methods[name] = function(st) return bit.band(st.mode, S_IFMT) == bits end
end
local stat_mt = {__index = stat_methods}

local function stat_result(st, text, code)
    if st == nil then return failed(nil, text, code) end
    return setmetatable(st, stat_mt)
end

function fio.stat(path)
    return stat_result(native.stat(path_arg(path, 'Usage: fio.stat(pathname)')))
end

function fio.lstat(path)
    return stat_result(native.lstat(path_arg(path, 'Usage: fio.lstat(pathname)')))
end

-- File handles: 2.6's `struct fio_handle`, a descriptor with methods.
ffi.cdef[[
    struct fio_handle {
        int fh;
    };
]]

local handle_methods = {}

function handle_methods.read(self, size)
    if size == nil then
        local st, err = self:stat()
        if st == nil then return nil, err end
        size = st.size
    end
    return result(nil, native.read(self.fh, size))
end

function handle_methods.pread(self, size, offset)
    return result(nil, native.pread(self.fh, size, offset))
end

-- A pipe or socket that cannot take everything at once is waited for in this
-- fiber (the server goes on), as 2.6 writes from a thread while the fiber waits:
-- a reader in another fiber of this server (luatest's output capture) drains it.
function handle_methods.write(self, data)
    data = tostring(data)
    local from = 0
    while true do
        local written, blocked, code = native.write(self.fh, data, from)
        if written == nil then return failed(false, blocked, code) end
        from = from + written
        if blocked ~= true then return true end
        require('socket').iowait(self.fh, 'W')
    end
end

function handle_methods.pwrite(self, data, offset)
    local written, text, code = native.pwrite(self.fh, tostring(data), offset)
    if written == nil then return failed(false, text, code) end
    return written >= 0
end

function handle_methods.truncate(self, length)
    return result(nil, native.ftruncate(self.fh, length or 0))
end

function handle_methods.seek(self, offset, whence)
    whence = whence or 'SEEK_SET'
    if type(whence) == 'string' then
        if fio.c.seek[whence] == nil then usage(136, 'fio.seek(): unknown whence: ' .. whence) end
        whence = fio.c.seek[whence]
    else
        whence = tonumber(whence)
    end
    local position, text, code = native.lseek(self.fh, tonumber(offset), whence)
    if position == nil then
        -- lseek(2)'s own -1, as 2.6 returns it.
        errno(code)
        return -1
    end
    return position
end

function handle_methods.close(self)
    local ok, text, code = native.close(self.fh)
    if ok == nil then return failed(false, text, code) end
    self.fh = -1
    return ok
end

function handle_methods.fsync(self)
    return result(nil, native.fsync(self.fh))
end

function handle_methods.fdatasync(self)
    return result(nil, native.fdatasync(self.fh))
end

function handle_methods.stat(self)
    return stat_result(native.fstat(self.fh))
end

function handle_methods.__serialize(self)
    return {fh = self.fh}
end

ffi.metatype('struct fio_handle', {
    __index = handle_methods,
    -- A handle dropped without close() closes its file (not while the state
    -- closes: the process is ending, and native functions are going).
    __gc = function(handle)
        if handle.fh >= 0 and not box.internal.closing then native.close(handle.fh) end
    end,
})

function fio.open(path, flags, mode)
    if type(path) ~= 'string' then usage(189, 'Usage: fio.open(path[, flags[, mode]])') end
    if type(flags) ~= 'table' then flags = {flags} end
    -- 2.6 passes its umask as the default mode.
    if type(mode) ~= 'table' then mode = {mode or bit.band(0x1FF, fio.umask())} end
    local iflag, imode = 0, 0
    for _, flag in pairs(flags) do
        if type(flag) == 'number' then
            iflag = bit.bor(iflag, flag)
        else
            local value = fio.c.flag[flag]
            if value == nil then usage(204, 'fio.open(): unknown flag: ' .. tostring(flag)) end
            iflag = bit.bor(iflag, value)
        end
    end
    for _, m in pairs(mode) do
        if type(m) == 'string' then
            local value = fio.c.mode[m]
            if value == nil then usage(213, 'fio.open(): unknown mode: ' .. m) end
            imode = bit.bor(imode, value)
        else
            imode = bit.bor(imode, tonumber(m))
        end
    end
    local fd, text, code = native.open(path, iflag, imode)
    if fd == nil then return failed(nil, text, code) end
    return ffi.new('struct fio_handle', fd)
end

-- The calls 2.6 answers with true, or false and the error.
local function boolean_call(name, message, arity)
    return function(...)
        local args = {...}
        for i = 1, arity do
            if args[i] == nil then c_usage(message) end
        end
        args[1] = path_arg(args[1], message)
        return result(false, native[name](unpack(args, 1, select('#', ...))))
    end
end

fio.rmdir = boolean_call('rmdir', 'Usage: fio.rmdir(pathname)', 1)
fio.unlink = boolean_call('unlink', 'Usage: fio.unlink(pathname)', 1)
fio.rename = boolean_call('rename', 'Usage: fio.rename(oldpath, newpath)', 2)
fio.link = boolean_call('link', 'Usage: fio.link(target, linkpath)', 2)
fio.symlink = boolean_call('symlink', 'Usage: fio.symlink(target, linkpath)', 2)
fio.chmod = boolean_call('chmod', 'Usage: fio.chmod(pathname, mode)', 2)

function fio.mkdir(path, mode)
    path = path_arg(path, 'Usage fio.mkdir(pathname[, mode])')
    return result(false, native.mkdir(path, tonumber(mode) or 511))
end

function fio.truncate(path, length)
    path = path_arg(path, 'Usage: fio.truncate(pathname[, newlen])')
    return result(false, native.truncate(path, tonumber(length) or 0))
end

function fio.chown(path, owner, group)
    if path == nil or owner == nil or group == nil then c_usage('Usage: fio.chown(pathname, owner, group)') end
    return result(false, native.chown(path_arg(path, 'Usage: fio.chown(pathname, owner, group)'), tonumber(owner),
        tonumber(group)))
end

function fio.readlink(path)
    return result(nil, native.readlink(path_arg(path, 'Usage: fio.readlink(pathname)')))
end

function fio.glob(pattern)
    if type(pattern) ~= 'string' then c_usage('Usage: fio.glob(pattern)') end
    return native.glob(pattern)
end

function fio.tempdir()
    return result(nil, native.tempdir())
end

function fio.cwd()
    return result(nil, native.cwd())
end

function fio.sync()
    return native.sync()
end

function fio.umask(mask)
    return native.umask(tonumber(mask))
end

function fio.chdir(path)
    if type(path) ~= 'string' then usage(351, 'Usage: fio.chdir(path)') end
    return native.chdir(path)
end

function fio.listdir(path)
    if type(path) ~= 'string' then usage(358, 'Usage: fio.listdir(path)') end
    local names, text, code = native.listdir(path)
    if names == nil then
        local _, err = failed(nil, text, code)
        return nil, ("can't listdir %s: %s"):format(path, err)
    end
    return names
end

local function check_time(time, name)
    if time ~= nil and type(time) ~= 'number' then
        usage(name == 'atime' and 513 or 514, 'fio.utime: ' .. name .. ' should be a number')
    end
end

function fio.utime(path, atime, mtime)
    if type(path) ~= 'string' then usage(510, 'Usage: fio.utime(filepath[, atime[, mtime]])') end
    check_time(atime, 'atime')
    check_time(mtime, 'mtime')
    atime = atime or require('fiber').time()
    mtime = mtime or atime
    return result(false, native.utime(path, atime, mtime))
end

function fio.pathjoin(...)
    local count = select('#', ...)
    local path
    local i = 1
    -- The first part that is not empty starts the path.
    while i <= count do
        local part = select(i, ...)
        if part == nil then usage(241, 'fio.pathjoin(): undefined path part ' .. i) end
        part = tostring(part)
        i = i + 1
        if part ~= '' then
            path = part
            break
        end
    end
    if path == nil then return '.' end
    while i <= count do
        local part = select(i, ...)
        if part == nil then usage(261, 'fio.pathjoin(): undefined path part ' .. i) end
        part = tostring(part)
        if part ~= '' then path = path .. '/' .. part end
        i = i + 1
    end
    path = path:gsub('/+', '/')
    if path ~= '/' then path = path:gsub('/$', '') end
    return path
end

function fio.basename(path, suffix)
    if type(path) ~= 'string' then usage(282, 'Usage: fio.basename(path[, suffix])') end
    path = path:gsub('.*/', '')
    if suffix ~= nil then
        suffix = tostring(suffix)
        -- As 2.6: the suffix's characters, each as a one-character class, removed
        -- wherever that sequence occurs.
        if #suffix > 0 then path = path:gsub((suffix:gsub('(.)', '[%1]')), '') end
    end
    return path
end

-- dirname(3) as glibc's: the path without its last component and the slashes
-- before it; a root of exactly two slashes stays `//`.
function fio.dirname(path)
    if type(path) ~= 'string' then usage(301, 'Usage: fio.dirname(path)') end
    local trimmed = path:gsub('/+$', '')
    if trimmed == '' then
        if path == '' then return '.' end
        return #path == 2 and '//' or '/'
    end
    local parent = trimmed:match('^(.*)/[^/]*$')
    if parent == nil then return '.' end
    local kept = parent:gsub('/+$', '')
    if kept == '' then return #parent == 1 and '//' or '/' end
    return kept
end

function fio.abspath(path)
    if path == nil then usage(329, 'Usage: fio.abspath(path)') end
    local joined = path
    if path:sub(1, 1) ~= '/' then joined = fio.pathjoin(fio.cwd(), path) end
    local parts = {}
    for part in joined:gmatch('[^/]+') do
        if part == '..' then
            table.remove(parts)
        elseif part ~= '.' then
            parts[#parts + 1] = part
        end
    end
    return '/' .. table.concat(parts, '/')
end

function fio.mktree(path, mode)
    if type(path) ~= 'string' then usage(377, 'Usage: fio.mktree(path[, mode])') end
    local current = '/'
    for _, dir in ipairs(fio.abspath(path):gsub('^/', ''):split('/')) do
        current = fio.pathjoin(current, dir)
        local st = fio.stat(current)
        if st == nil then
            local _, err = fio.mkdir(current, mode)
            -- Made meanwhile by someone else: no error.
            if err ~= nil and not fio.path.is_dir(current) then
                return false, ('Error creating directory %s: %s'):format(current, tostring(err))
            end
        elseif not st:is_dir() then
            return false, ('Error creating directory %s: %s'):format(current, errno.strerror(errno.EEXIST))
        end
    end
    return true
end

function fio.rmtree(path)
    if type(path) ~= 'string' then usage(408, 'Usage: fio.rmtree(path)') end
    path = fio.abspath(path)
    local names, err = fio.listdir(path)
    if names == nil then return nil, err end
    for _, name in ipairs(names) do
        local inner = fio.pathjoin(path, name)
        local st = fio.lstat(inner)
        if st then
            if st:is_dir() then
                _, err = fio.rmtree(inner)
            else
                _, err = fio.unlink(inner)
            end
            if err ~= nil then return nil, err end
        end
    end
    local _, rm_err = fio.rmdir(path)
    if rm_err ~= nil then return false, ('failed to remove %s: %s'):format(path, rm_err) end
    return true
end

function fio.copyfile(from, to)
    if type(from) ~= 'string' or type(to) ~= 'string' then usage(438, 'Usage: fio.copyfile(from, to)') end
    local st = fio.stat(to)
    if st and st:is_dir() then to = fio.pathjoin(to, fio.basename(from)) end
    local ok, text, code = native.copyfile(from, to)
    if ok == nil then
        local _, err = failed(nil, text, code)
        return false, ('failed to copy %s to %s: %s'):format(from, to, err)
    end
    return true
end

function fio.copytree(from, to)
    if type(from) ~= 'string' or type(to) ~= 'string' then usage(453, 'Usage: fio.copytree(from, to)') end
    local st = fio.stat(from)
    if not st then return false, ('Directory %s does not exist'):format(from) end
    if not st:is_dir() then return false, errno.strerror(errno.ENOTDIR) end
    local names, err = fio.listdir(from)
    if names == nil then return false, err end
    local _, reason = fio.mktree(to)
    if reason ~= nil then return false, reason end
    for _, name in ipairs(names) do
        local source, target = fio.pathjoin(from, name), fio.pathjoin(to, name)
        local entry = fio.lstat(source)
        if entry and entry:is_dir() then
            _, reason = fio.copytree(source, target)
            if reason ~= nil then return false, reason end
        elseif entry and entry:is_reg() then
            _, reason = fio.copyfile(source, target)
            if reason ~= nil then return false, reason end
        elseif entry and entry:is_link() then
            local link_to
            link_to, reason = fio.readlink(source)
            if reason ~= nil then return false, reason end
            _, reason = fio.symlink(link_to, target)
            if reason ~= nil then return false, "can't create symlink in place of existing file " .. target end
        end
    end
    return true
end

fio.path = {}

function fio.path.is_file(path)
    local st = fio.stat(path)
    return st ~= nil and st:is_reg() or false
end

function fio.path.is_link(path)
    local st = fio.lstat(path)
    return st ~= nil and st:is_link() or false
end

function fio.path.is_dir(path)
    local st = fio.stat(path)
    return st ~= nil and st:is_dir() or false
end

function fio.path.exists(path)
    return fio.stat(path) ~= nil
end

function fio.path.lexists(path)
    return fio.lstat(path) ~= nil
end

package.loaded.fio = fio
