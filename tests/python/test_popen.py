"""The popen module and child reaping, against Tarantool 2.6 (popen_cases.lua)."""

from pathlib import Path

from conftest import run_script_on_both, same_output_on_both

CASES = (Path(__file__).parent / "popen_cases.lua").read_text()


def test_popen_and_reaping_as_2_6(tmp_path):
    """popen.new/popen.shell arguments and 2.6's errors; handle fields, info and
    serialization; reads (4096 bytes at most, '' at the end), writes, shutdown;
    exit statuses and signals (one sent at once reaches the program, not the
    server's copy); execve failures as exit codes; env, setsid, close_fds,
    group_signal, keep_child; every child reaped as 2.6's event loop reaps them
    (a forked child stops answering kill(pid, 0), io.popen closes as in 2.6);
    socket.iowait keeping up with a fiber that writes a pipe full."""
    tarantool, oncebox = run_script_on_both(tmp_path, "popen_cases.lua", CASES)
    assert oncebox == tarantool
    assert "killed by 15 => {signame=\"SIGTERM\", signo=15, state=\"signaled\"}" in tarantool
    assert "forked child gone\ttrue" in tarantool
    assert "pipe through fibers\t200000" in tarantool
    assert "read sizes\t4096 4096 1808 0" in tarantool


POPEN_ARGUMENT_KINDS = r"""
local popen, ffi = require('popen'), require('ffi')
print(pcall(popen.new, nil))
print(pcall(popen.new))
print(pcall(popen.new, ffi.new('void *')))
print(pcall(popen.new, {'true'}, ffi.new('void *')))
print(pcall(popen.shell, 'printf test', ffi.new('void *')))
print(pcall(popen.shell, ffi.new('void *')))
print(pcall(popen.shell, nil))
print(pcall(popen.shell))
os.exit(0)
"""


def test_popen_tells_a_null_cdata_from_nil_and_nil_from_no_value(tmp_path):
    """popen.new and popen.shell name an argument's kind as 2.6 does: a NULL
    cdata is a cdata (oncebox took it for nil, and popen.shell failed inside on
    it), an explicit nil is nil, a missing one 'no value'."""
    same_output_on_both(tmp_path, "popen_argument_kinds.lua", POPEN_ARGUMENT_KINDS, 8)
