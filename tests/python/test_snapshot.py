"""box.snapshot(): 'ok' as in Tarantool 2.6, and behind it a sync of everything
committed and a checkpoint, which applies the log to the rows and deletes the
log file it covered."""
import os
import time

from conftest import ADMIN_PASSWORD, same_output_on_both, start_oncebox
from iproto_raw import EVAL, Raw

SCRIPT = """
box.cfg{listen = os.getenv('LISTEN'), work_dir = os.getenv('WORK')}
local s = box.schema.space.create('t')
s:create_index('pk')
s:insert{1}
print(box.snapshot())
print(type(box.snapshot), s:get{1}[1], box.snapshot())
os.exit(0)
"""


def test_box_snapshot_answers_as_tarantool(tmp_path):
    assert same_output_on_both(tmp_path, "snapshot.lua", SCRIPT, 2) == ["ok", "function\t1\tok"]


def test_box_snapshot_checkpoints_the_log():
    inst = start_oncebox()
    try:
        c = Raw(inst.host, inst.port)
        assert c.auth("admin", ADMIN_PASSWORD)[0][0] == 0
        wal = os.path.join(inst.workdir, "data", "wal")
        # A new directory's first log file (from group 1) is the current one.
        assert sorted(os.listdir(wal)) == [f"{1:020}.xlog"]
        setup = "box.schema.space.create('snap'):create_index('pk') box.space.snap:insert{1}"
        assert c.request(EVAL, {0x27: setup, 0x21: []})[0][0] == 0
        h, b, _ = c.request(EVAL, {0x27: "return box.snapshot()", 0x21: []})
        assert h[0] == 0 and b[0x30] == ["ok"]
        # The checkpoint it started moves the log on and deletes the file it applied.
        deadline = time.time() + 10
        while time.time() < deadline and f"{1:020}.xlog" in os.listdir(wal):
            time.sleep(0.05)
        files = sorted(os.listdir(wal))
        assert len(files) == 1 and int(files[0].split(".")[0]) > 1, files
        # The data is still there.
        h, b, _ = c.request(EVAL, {0x27: "return box.space.snap:get{1}", 0x21: []})
        assert b[0x30] == [[1]]
    finally:
        inst.stop()
