-- pwd: Tarantool 2.6's module over the user and group databases (getpwuid(3),
-- getgrnam(3) and the like, called through ffi). pwd.getpw(uid or name) and
-- pwd.getgr(gid or name) give a table (nil when there is none; the current
-- user's or group without an argument); pwd.getpwall() and pwd.getgrall() list
-- them all. A user's table holds its group's.

local type = type -- the builtin, not the one user code sees (box.lua)
local ffi = require('ffi')

ffi.cdef[[
    struct passwd {
        char *pw_name; char *pw_passwd; uint32_t pw_uid; uint32_t pw_gid;
        char *pw_gecos; char *pw_dir; char *pw_shell;
    };
    struct group { char *gr_name; char *gr_passwd; uint32_t gr_gid; char **gr_mem; };
    struct passwd *getpwuid(uint32_t uid);
    struct passwd *getpwnam(const char *name);
    struct passwd *getpwent(void);
    void setpwent(void);
    void endpwent(void);
    struct group *getgrgid(uint32_t gid);
    struct group *getgrnam(const char *name);
    struct group *getgrent(void);
    void setgrent(void);
    void endgrent(void);
    uint32_t getuid(void);
    uint32_t getgid(void);
]]

local C = ffi.C
local pwd = {}

local function group_table(gr)
    local members = {}
    local i = 0
    while gr.gr_mem[i] ~= nil do
        members[#members + 1] = ffi.string(gr.gr_mem[i])
        i = i + 1
    end
    return {id = tonumber(gr.gr_gid), name = ffi.string(gr.gr_name), members = members}
end

local function user_table(pw)
    local user = {
        id = tonumber(pw.pw_uid), name = ffi.string(pw.pw_name),
        workdir = ffi.string(pw.pw_dir), shell = ffi.string(pw.pw_shell),
    }
    local gr = C.getgrgid(pw.pw_gid)
    if gr ~= nil then user.group = group_table(gr) end
    return user
end

-- An entry by number or name (numbers given as strings are names, as in 2.6);
-- nil, and the usage error, for a key of another type.
local function lookup(key, by_id, by_name, what)
    if type(key) == 'number' then return by_id(key) end
    if type(key) == 'string' then return by_name(key) end
    return nil, string.format("Bad type of %s (expected 'string'/'number')", what)
end

function pwd.getpw(uid)
    if uid == nil then uid = C.getuid() end
    local pw, usage = lookup(uid, C.getpwuid, C.getpwnam, 'uid')
    if usage then error(usage) end
    if pw == nil then return nil end
    return user_table(pw)
end

function pwd.getgr(gid)
    if gid == nil then gid = C.getgid() end
    local gr, usage = lookup(gid, C.getgrgid, C.getgrnam, 'gid')
    if usage then error(usage) end
    if gr == nil then return nil end
    return group_table(gr)
end

-- Every entry of a database, in its order.
local function all(open, next_entry, close, convert)
    local list = {}
    open()
    while true do
        local entry = next_entry()
        if entry == nil then break end
        list[#list + 1] = convert(entry)
    end
    close()
    return list
end

function pwd.getpwall()
    -- The entries first: a user's group lookup would move the group database's cursor.
    local users = all(C.setpwent, C.getpwent, C.endpwent, function(pw)
        return {uid = pw.pw_uid, name = ffi.string(pw.pw_name)}
    end)
    local list = {}
    for _, u in ipairs(users) do
        local pw = C.getpwuid(u.uid)
        if pw ~= nil then list[#list + 1] = user_table(pw) end
    end
    return list
end

function pwd.getgrall()
    return all(C.setgrent, C.getgrent, C.endgrent, group_table)
end

package.loaded.pwd = pwd
return pwd
