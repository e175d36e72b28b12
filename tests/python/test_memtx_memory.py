"""`box.cfg{memtx_memory}` is a quota: a write that would take the tuples' memory
past it fails with 2.6's OutOfMemory error (ER_MEMORY_ISSUE, errno ENOMEM), from
Lua and over IPROTO, while deletes, truncation and a larger quota make room.

2.6 charges slabs of size classes, so the exact tuple where it stops differs;
the scripts print what both agree on (that the limit is reached well past half
the quota, the error, and what makes room again).
"""
import os
import subprocess

from conftest import ADMIN_PASSWORD, ONCEBOX, same_output_on_both, start_oncebox
from iproto_raw import CALL, DELETE, EVAL, INSERT, REPLACE, Raw

SCRIPT = r"""
box.cfg{work_dir = os.getenv('WORK'), log_level = 1, memtx_memory = 32 * 1024 * 1024}
local s = box.schema.space.create('t')
s:create_index('pk')
local big = string.rep('x', 1000)
local function fill(space, from)
    local n = from
    while true do
        local ok, e = pcall(space.insert, space, {n, big})
        if not ok then return n - from, e end
        n = n + 1
    end
end
local n, err = fill(s, 0)
print('filled', n > 14000 and n < 33000, s:len() == n)
print('error', err.type, err.base_type, err.errno, err.message)
print('tostring', tostring(err))
local u = err:unpack()
print('unpack', u.type, u.base_type, u.errno, u.message)
print('last', box.error.last() == err)
local info = box.slab.info()
print('slab', info.quota_size, info.quota_used <= info.quota_size)
print('again', pcall(s.insert, s, {n, big}))
print('delete', pcall(function() return s:delete{0}[1] end))
print('small', pcall(function() return s:insert{0, 'y'}[2] end))
print('shrink', pcall(function() return s:update({2}, {{'=', 2, 'short'}})[2] end))
print('atomic', pcall(box.atomic, function() s:insert{n, 'a'} s:insert{n + 1, big .. big .. big} end))
print('rolled back', s:get{n} == nil)
local tmp = box.schema.space.create('tmp', {temporary = true})
tmp:create_index('pk')
print('temporary', pcall(tmp.insert, tmp, {1, big}))
print('truncate', pcall(s.truncate, s), s:len())
local m = fill(s, 0)
print('refilled', m > 14000 and m < 33000)
print('decrease', pcall(box.cfg, {memtx_memory = 16 * 1024 * 1024}))
box.cfg{memtx_memory = 64 * 1024 * 1024}
print('cfg', box.cfg.memtx_memory, box.slab.info().quota_size)
local more = fill(s, m)
print('more', more > m * 0.9)
os.exit(0)
"""


def test_the_quota_refuses_growth_as_26_does(tmp_path):
    lines = same_output_on_both(tmp_path, "memtx_memory", SCRIPT, 18)
    assert lines[1] == "error\tOutOfMemory\tOutOfMemory\t12\tFailed to allocate 1021 bytes in slab allocator for memtx_tuple"
    assert lines[0] == "filled\ttrue\ttrue"


FILL = """
local s = box.space.t or box.schema.space.create('t')
s:create_index('pk', {if_not_exists = true})
local chunk = string.rep('x', 512 * 1024)
local n = 0
while pcall(s.insert, s, {n, chunk}) do n = n + 1 end
function grow(k) return box.space.t:insert{k, chunk} end
return n
"""


def stack_entry(body):
    """The first entry of an error reply's stack, by 2.6's key names."""
    entry = body[0x52][0][0]
    return {"type": entry[0], "message": entry[3], "errno": entry[4], "code": entry[5]}


def test_a_full_quota_over_iproto_is_out_of_memory(server):
    c = Raw(server.host, server.port)
    assert c.auth("admin", ADMIN_PASSWORD)[0][0] == 0
    h, b, _ = c.request(EVAL, {0x27: FILL, 0x21: []})
    assert h[0] == 0, b
    filled = b[0x30][0]
    assert 256 < filled < 512, filled
    chunk = "x" * (512 * 1024)
    for rtype, body in [(INSERT, {0x10: 512, 0x21: [filled, chunk]}), (CALL, {0x22: "grow", 0x21: [filled]})]:
        h, b, _ = c.request(rtype, body)
        assert h[0] == 0x8000 | 2, (rtype, h, b)
        assert b[0x31].startswith("Failed to allocate 5243") and b[0x31].endswith(" bytes in slab allocator for memtx_tuple")
        entry = stack_entry(b)
        assert (entry["type"], entry["errno"], entry["code"]) == ("OutOfMemory", 12, 2), entry
    # A delete goes through at a full quota. On oncebox it makes room at once
    # for a tuple of the same size (2.6 frees a deleted tuple's memory later).
    h, b, _ = c.request(DELETE, {0x10: 512, 0x20: [0]})
    assert h[0] == 0 and len(b[0x30]) == 1
    if server.kind == "oncebox":
        h, b, _ = c.request(REPLACE, {0x10: 512, 0x21: [0, chunk]})
        assert h[0] == 0, b
    c.close()


def test_tokens_do_not_count_against_the_quota_and_a_restart_loads_past_it(tmp_path):
    """oncebox only: `_idempotency` has its own limits, and acknowledged data is
    loaded whatever the quota (2.6 refuses to start when it does not fit)."""
    server = start_oncebox()
    try:
        c = Raw(server.host, server.port)
        assert c.auth("admin", ADMIN_PASSWORD)[0][0] == 0
        h, b, _ = c.request(EVAL, {0x27: FILL, 0x21: []})
        filled = b[0x30][0]
        h, b, _ = c.request(EVAL, {0x27: "box.space.t:delete{0} return box.slab.info().quota_used", 0x21: []})
        used = b[0x30][0]
        # Tokened replaces of one small row: the records grow, the quota use does not.
        h, b, _ = c.request(EVAL, {0x27: "s = box.schema.space.create('small') s:create_index('pk')", 0x21: []})
        assert h[0] == 0, b
        for i in range(200):
            h, b, _ = c.request(REPLACE, {0x10: 513, 0x21: [1, i]}, _12=f"token-{i}")
            assert h[0] == 0, b
        h, b, _ = c.request(EVAL, {0x27: "return box.space._idempotency:len(), box.slab.info().quota_used", 0x21: []})
        records, used_after = b[0x30]
        assert records == 200
        assert used_after - used < 1024, (used, used_after)
        c.close()
        # Restarted with a quota the data does not fit in: everything is there,
        # growth is refused, a delete still goes through.
        server.proc.kill()
        server.proc.wait()
        # Script mode keeps its data in <memtx_dir>/oncebox_data.
        os.rename(f"{server.workdir}/data", f"{server.workdir}/oncebox_data")
        script = tmp_path / "restart.lua"
        script.write_text(
            "box.cfg{memtx_dir = os.getenv('DATA'), log_level = 1,"
            " memtx_memory = 64 * 1024 * 1024}\n"
            "local s = box.space.t\n"
            "print(s:len())\n"
            "print(pcall(s.insert, s, {10^6, 'x'}))\n"
            "print(pcall(function() return #s:delete{1} end))\n"
            "os.exit(0)\n"
        )
        out = subprocess.run([ONCEBOX, str(script)], env=dict(os.environ, DATA=server.workdir), capture_output=True,
                             text=True, timeout=60, cwd=tmp_path)
        lines = out.stdout.splitlines()
        assert lines[0] == str(filled - 1), (out.stdout, out.stderr[-2000:])
        assert lines[1] == "false\tFailed to allocate 22 bytes in slab allocator for memtx_tuple", lines
        assert lines[2] == "true\t2", lines
    finally:
        server.stop()


def test_the_server_takes_its_quota_from_the_command_line():
    server = start_oncebox("--memtx-memory", "4000000")
    try:
        c = Raw(server.host, server.port)
        assert c.auth("admin", ADMIN_PASSWORD)[0][0] == 0
        fill = ("local t = box.schema.space.create('t') t:create_index('pk') local n = 0"
                " while pcall(t.insert, t, {n, string.rep('x', 1000)}) do n = n + 1 end"
                " return n, box.cfg.memtx_memory, box.slab.info().quota_size")
        h, b, _ = c.request(EVAL, {0x27: fill, 0x21: []})
        n, cfg, quota = b[0x30]
        assert (cfg, quota) == (4000000, 4000000)
        assert 3000 < n < 4000, n
        c.close()
    finally:
        server.stop()
