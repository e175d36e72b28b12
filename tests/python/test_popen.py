"""The popen module and child reaping, against Tarantool 2.6 (popen_cases.lua)."""

from pathlib import Path

from conftest import run_script_on_both

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
