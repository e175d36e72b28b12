"""An instance given `replication` sources: the first box.cfg{} waits for them
(listening, answering as a loading instance), a new instance that cannot reach
them stops, one with data goes on as an orphan. Each test runs the same script
on Tarantool 2.6 and on oncebox and compares what clients and the script see.
"""
import os
import subprocess
import time

from conftest import (LUA_PRINT_ROW, ONCEBOX, free_port, run_script_on_both, scripts_in_turn_on_both,
                      start_oncebox, wait_port)
from iproto_raw import AUTH, CALL, EVAL, INSERT, PING, SELECT, Raw

SELECT_BODY = {0x11: 0, 0x12: 10, 0x13: 0, 0x14: 0, 0x20: []}


def loading_replies(port):
    """(code, message) of the requests a client may send a loading instance."""
    raw = Raw("127.0.0.1", port)
    try:
        asked = [
            (PING, {}, {}),
            (PING, {}, {"_5": 77}),
            (SELECT, {**SELECT_BODY, 0x10: 281}, {}),
            (SELECT, {**SELECT_BODY, 0x10: 280}, {}),
            (SELECT, SELECT_BODY, {}),
            (INSERT, {0x10: 512, 0x21: [1]}, {}),
            (INSERT, {0x10: 280, 0x21: [1]}, {}),
            (CALL, {0x22: "box.info", 0x21: []}, {}),
            (EVAL, {0x27: "return 1", 0x21: []}, {}),
            (AUTH, {0x23: "admin", 0x21: ["chap-sha1", b"x" * 20]}, {}),
        ]
        replies = []
        for rtype, body, header in asked:
            h, b, _ = raw.request(rtype, body, **header)
            replies.append((h[0], h.get(5), (b or {}).get(0x31)))
        return replies
    finally:
        raw.close()


def test_a_new_instance_waits_for_its_sources_loading_then_stops(tmp_path):
    dead = free_port()  # nothing listens there: every connect is refused
    script = tmp_path / "waits.lua"
    script.write_text(
        "local fiber = require('fiber')\n"
        "fiber.create(function() for i = 1, 3 do fiber.sleep(0.1) print('fiber runs', i) end end)\n"
        "box.cfg{listen = os.getenv('LISTEN'), replication = {'127.0.0.1:%d'}, replication_connect_timeout = 2}\n"
        "print('not reached')\n" % dead
    )
    results = []
    for binary in ("tarantool", ONCEBOX):
        work = tmp_path / os.path.basename(binary)
        work.mkdir()
        port = free_port()
        env = dict(os.environ, LISTEN=f"127.0.0.1:{port}")
        proc = subprocess.Popen([binary, str(script)], cwd=work, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            wait_port(port, proc)
            replies = loading_replies(port)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        results.append((replies, proc.returncode, out.splitlines(),
                        "failed to connect to one or more replicas" in err))
    tarantool, oncebox = results
    assert tarantool == oncebox
    replies, code, out, told = oncebox
    assert replies[0] == (0, 0, None), "PING answers, schema version 0"
    assert replies[2] == (0x8000 + 36, 0, "Space '281' does not exist")
    assert replies[9] == (0x8000 + 116, 0, "Instance bootstrap hasn't finished yet")
    assert (code, out, told) == (1, ["fiber runs\t1", "fiber runs\t2", "fiber runs\t3"], True)


def test_a_stop_signal_ends_the_wait(tmp_path):
    port = free_port()
    script = tmp_path / "stopped.lua"
    script.write_text("box.cfg{listen = '127.0.0.1:%d', replication = {'127.0.0.1:%d'}}\n" % (port, free_port()))
    proc = subprocess.Popen([ONCEBOX, str(script)], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_port(port, proc)
        started = time.monotonic()
        proc.terminate()
        assert proc.wait(timeout=10) == 0
        assert time.monotonic() - started < 5, "not the 30 s of replication_connect_timeout"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_an_instance_with_data_goes_on_as_an_orphan(tmp_path):
    dead = free_port()
    first = LUA_PRINT_ROW + (
        "box.cfg{}\n"
        "box.schema.space.create('s'):create_index('pk')\n"
        "os.exit(0)\n"
    )
    # Then the instance listens where its source should be: it is its own source,
    # which answers, and it leaves orphan mode.
    second = LUA_PRINT_ROW + (
        "local source = '127.0.0.1:%d'\n"
        "box.cfg{replication = {source}, replication_connect_timeout = 0.5, replication_timeout = 0.1}\n"
        "p(box.info.status, box.info.ro, box.cfg.read_only)\n"
        "p(pcall(box.space.s.insert, box.space.s, {1}))\n"
        "p(box.space.s:count())\n"
        "box.cfg{listen = source}\n"
        "p(pcall(box.ctl.wait_rw, 10))\n"
        "p(box.info.status, box.info.ro)\n"
        "p(box.space.s:insert({1}))\n"
        "os.exit(0)\n" % dead
    )
    tarantool, oncebox = scripts_in_turn_on_both(tmp_path, [("first.lua", first), ("second.lua", second)])
    assert tarantool == oncebox == [
        "orphan | true | false",
        "false | Can't modify data because this instance is in read-only mode.",
        "0",
        "true",
        "running | false",
        "[1]",
    ]


def test_an_instance_that_is_its_own_source_starts_at_once(tmp_path):
    # vshard configures a one-instance replica set so: its replication names itself.
    source = LUA_PRINT_ROW + (
        "local listen = os.getenv('LISTEN')\n"
        "box.cfg{listen = listen, replication = {'guest:@' .. listen}, replication_connect_timeout = 5}\n"
        "p(box.info.status, box.info.ro)\n"
        "box.schema.space.create('s'):create_index('pk')\n"
        "p(box.space.s:insert({1}))\n"
        "os.exit(0)\n"
    )
    tarantool, oncebox = run_script_on_both(tmp_path, "itself.lua", source)
    assert tarantool == oncebox == ["running | false", "[1]"]


def test_another_instance_as_a_source_is_not_followed_and_says_so(tmp_path):
    # 2.6 would join it; oncebox does not replicate: it starts on its own and logs why.
    other = start_oncebox()
    try:
        source = LUA_PRINT_ROW + (
            "box.cfg{replication = {'127.0.0.1:%d'}, replication_connect_timeout = 5}\n"
            "p(box.info.status, box.info.ro)\n"
            "os.exit(0)\n" % other.port
        )
        (tmp_path / "peer.lua").write_text(source)
        r = subprocess.run([ONCEBOX, str(tmp_path / "peer.lua")], cwd=tmp_path, capture_output=True, text=True,
                           timeout=60)
        assert (r.returncode, r.stdout) == (0, "running | false\n"), r.stderr
        assert "oncebox does not replicate" in r.stderr and "is not followed" in r.stderr, r.stderr
        # Its own address is no other instance: nothing to say.
        listen = f"127.0.0.1:{free_port()}"
        (tmp_path / "self.lua").write_text(
            "box.cfg{listen = '%s', replication = {'%s'}}\nos.exit(0)\n" % (listen, listen))
        r = subprocess.run([ONCEBOX, str(tmp_path / "self.lua")], cwd=tmp_path, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0 and "does not replicate" not in r.stderr, r.stderr
    finally:
        other.stop()


def test_sources_set_at_run_time_are_waited_for_then_followed_as_an_orphan(tmp_path):
    source = LUA_PRINT_ROW + (
        "local json = require('json')\n"
        "local listen = os.getenv('LISTEN')\n"
        "box.cfg{listen = listen}\n"
        "local started = require('clock').monotonic()\n"
        "p(pcall(box.cfg, {replication = {'127.0.0.1:%d'}, replication_connect_timeout = 0.5}))\n"
        "p(require('clock').monotonic() - started >= 0.45, box.info.status, box.info.ro)\n"
        "p(pcall(box.schema.space.create, 's'))\n"
        "box.cfg{replication = {listen}}\n"
        "p(box.info.status, box.info.ro)\n"
        "box.cfg{replication = {}}\n"
        "p(box.info.status, box.info.ro, json.encode(box.cfg.replication))\n"
        "os.exit(0)\n" % free_port()
    )
    tarantool, oncebox = run_script_on_both(tmp_path, "run_time.lua", source)
    assert tarantool == oncebox == [
        "true",
        "true | orphan | true",
        "false | Can't modify data because this instance is in read-only mode.",
        "running | false",
        "running | false | []",
    ]
