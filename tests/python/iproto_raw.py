"""A minimal raw IPROTO client for tests that compare bytes and error stacks."""
import base64
import hashlib
import socket
import struct

import msgpack

SELECT, INSERT, REPLACE, UPDATE, DELETE, CALL_16, AUTH, EVAL, UPSERT, CALL, PING = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0x40


def packet(rtype, sync, body=None, raw_body=b"", **header):
    """One framed request: header keys as `_<n>=value`, the body as a value to encode
    or as `raw_body` bytes (none by default)."""
    h = {0: rtype, 1: sync}
    h.update({int(k[1:]): v for k, v in header.items()})
    payload = msgpack.packb(h) + (msgpack.packb(body) if body is not None else raw_body)
    return b"\xce" + struct.pack(">I", len(payload)) + payload


class Raw:
    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=10)
        self.greeting = self._exact(128)
        self.sync = 0

    def close(self):
        self.sock.close()

    def _exact(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise EOFError("connection closed")
            data += chunk
        return data

    def send_packet(self, payload):
        self.sock.sendall(b"\xce" + struct.pack(">I", len(payload)) + payload)

    def recv(self):
        """One reply as (header dict, body dict, raw bytes)."""
        prefix = self._exact(5)
        assert prefix[0] == 0xCE
        raw = self._exact(struct.unpack(">I", prefix[1:])[0])
        unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, unicode_errors="surrogateescape")
        unpacker.feed(raw)
        items = list(unpacker)
        return items[0], (items[1] if len(items) > 1 else None), prefix + raw

    def request(self, rtype, body=None, **header):
        self.sync += 1
        self.sock.sendall(packet(rtype, self.sync, body, **header))
        return self.recv()

    def auth(self, user, password):
        salt = base64.b64decode(self.greeting[64:108])[:20]
        h1 = hashlib.sha1(password.encode()).digest()
        h2 = hashlib.sha1(h1).digest()
        mask = hashlib.sha1(salt + h2).digest()
        scramble = bytes(a ^ b for a, b in zip(h1, mask))
        return self.request(AUTH, {0x23: user, 0x21: ["chap-sha1", scramble]})


def normalize(header, body):
    """Drops volatile fields: schema version numbers, error file and line."""
    h = {k: v for k, v in header.items() if k != 5}
    assert 5 in header, "every reply carries the schema version"
    if isinstance(body, dict) and 0x31 in body:
        # ER_WRONG_SCHEMA_VERSION quotes the server's schema version.
        sv = f"in request: {header[5]}"
        body = {k: (v.replace(sv, "in request: <sv>") if isinstance(v, str) else v) for k, v in body.items()}
        if 0x52 in body:
            stack = body[0x52][0]
            body[0x52] = {0: [{k: (v.replace(sv, "in request: <sv>") if isinstance(v, str) else v)
                               for k, v in e.items()} for e in stack]}
    if isinstance(body, dict) and 0x52 in body:
        stack = []
        for entry in body[0x52][0]:
            e = dict(entry)
            e.pop(1, None)
            e.pop(2, None)
            stack.append(e)
        body = dict(body)
        body[0x52] = {0: stack}
    return h, body
