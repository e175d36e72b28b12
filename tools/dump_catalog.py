#!/usr/bin/env python3
"""Dump the bootstrap system-space rows of a running real Tarantool as raw msgpack hex.

Usage: dump_catalog.py HOST PORT > src/engine/catalog/tarantool_2_6.hex

Each output line is `<space id> <hex of the tuple's msgpack bytes>`. The rows are
facts about Tarantool 2.6's catalogue layout (ids, names, formats); oncebox boots
from them so that connectors see the catalogue they expect, byte for byte.
Rows that hold per-instance values (cluster uuid) are left out and made at boot.
Run it against a fresh instance whose only change is `box.schema.user.grant('guest', 'super')`.
"""
import socket
import struct
import sys

import msgpack

SPACES = [272, 276, 280, 284, 288, 296, 304, 312, 330, 340]


def skip(buf, pos):
    """Return the offset just past the msgpack value starting at pos."""
    unpacker = msgpack.Unpacker(raw=True, strict_map_key=False)
    unpacker.feed(buf[pos:])
    unpacker.skip()
    return pos + unpacker.tell()


def request(sock, header, body):
    payload = msgpack.packb(header) + msgpack.packb(body)
    sock.sendall(b"\xce" + struct.pack(">I", len(payload)) + payload)
    size = struct.unpack(">I", recv_exact(sock, 5)[1:])[0]
    return recv_exact(sock, size)


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def main():
    sock = socket.create_connection((sys.argv[1], int(sys.argv[2])))
    recv_exact(sock, 128)
    for space in SPACES:
        reply = request(sock, {0: 1, 1: space}, {0x10: space, 0x12: 0xFFFFFFFF, 0x14: 2, 0x20: []})
        pos = skip(reply, 0)  # header
        body = msgpack.unpackb(reply[pos:], raw=True, strict_map_key=False)
        if 0x30 not in body:
            raise SystemExit(f"space {space}: {body}")
        # Locate the raw bytes of each tuple inside the body's data array.
        raw = reply[pos:]
        p = 1  # map header (fixmap of one entry)
        p = skip(raw, p)  # key 0x30
        marker = raw[p]
        if marker == 0xDD:
            count = struct.unpack(">I", raw[p + 1 : p + 5])[0]
            p += 5
        elif marker == 0xDC:
            count = struct.unpack(">H", raw[p + 1 : p + 3])[0]
            p += 3
        else:
            count = marker & 0x0F
            p += 1
        for _ in range(count):
            end = skip(raw, p)
            tup = raw[p:end]
            decoded = msgpack.unpackb(tup, raw=True, strict_map_key=False)
            if space == 272 and decoded[0] == b"cluster":
                p = end
                continue
            if space == 312 and decoded == [1, 0, b"role", 31, 4]:
                # The dump runs as guest with `super`, granted only for the dump.
                p = end
                continue
            print(space, tup.hex())
            p = end


if __name__ == "__main__":
    main()
