"""Runs a scenario's steps over real sockets and records a normalized, typed transcript.

Normalized (volatile between runs or builds, checked to be stable on real 2.6):
greeting uuid and salt, schema_version numbers (mapped to <SV0>, <SV1>... in order
of first appearance, also inside "Wrong schema version" messages), error stack
file and line, Lua addresses (0x...) and builtin/*.lua line numbers. Everything
else is kept: sync echo, codes, message texts, value types, map contents.
Pipelined replies are sorted by sync (2.6 answers reads before queued writes).
"""
import base64
import hashlib
import re
import socket
import time

from mpack import Node, Truncated, decode, encode, render

CODES = {"SELECT": 1, "INSERT": 2, "REPLACE": 3, "UPDATE": 4, "DELETE": 5, "CALL_16": 6, "AUTH": 7, "EVAL": 8,
         "UPSERT": 9, "CALL": 10, "EXECUTE": 11, "NOP": 12, "PREPARE": 13, "PING": 64, "JOIN": 65,
         "SUBSCRIBE": 66, "VOTE": 68, "ID": 73, "WATCH": 74}
HEADER_KEYS = {"code": 0x00, "sync": 0x01, "schema_version": 0x05, "stream_id": 0x0A, "idempotent_token": 0x0C}
BODY_KEYS = {"space_id": 0x10, "index_id": 0x11, "limit": 0x12, "offset": 0x13, "iterator": 0x14,
             "index_base": 0x15, "key": 0x20, "tuple": 0x21, "function_name": 0x22, "username": 0x23,
             "expr": 0x27, "ops": 0x28, "options": 0x2B, "sql_text": 0x40, "sql_bind": 0x41, "stmt_id": 0x43}
ITERATORS = {"EQ": 0, "REQ": 1, "ALL": 2, "LT": 3, "LE": 4, "GE": 5, "GT": 6, "BITS_ALL_SET": 7,
             "BITS_ANY_SET": 8, "BITS_ALL_NOT_SET": 9, "OVERLAPS": 10, "NEIGHBOR": 11}
REPLY_HEADER_NAMES = {0x00: "code", 0x01: "sync", 0x05: "schema_version", 0x0D: "idempotent_status"}
REPLY_BODY_NAMES = {0x30: "data", 0x31: "error_24", 0x52: "error", 0x32: "metadata", 0x33: "bind_metadata",
                    0x34: "bind_count", 0x42: "sql_info", 0x43: "stmt_id"}
ERROR_FIELD_NAMES = {0: "type", 1: "file", 2: "line", 3: "message", 4: "errno", 5: "code", 6: "fields"}
READ_TIMEOUT = 3.0


class Recorder:
    """Collects transcript lines and the schema-version numbering of one scenario."""

    def __init__(self, name):
        self.lines = [f"scenario: {name}"]
        self.versions = {}

    def line(self, text):
        self.lines.append(text)

    def sv(self, value):
        if value not in self.versions:
            self.versions[value] = f"<SV{len(self.versions)}>"
        return self.versions[value]

    def text(self):
        return "\n".join(self.lines) + "\n"


class Conn:
    """One binary-protocol connection."""

    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=READ_TIMEOUT)
        self.buf = b""
        self.greeting = self.exact(128)
        self.sync = 0
        self.closed = False

    def exact(self, n, timeout=READ_TIMEOUT):
        deadline = time.time() + timeout
        while len(self.buf) < n:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError()
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                raise TimeoutError() from None
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                raise EOFError()
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def send(self, data, dribble=False):
        try:
            if dribble:
                for i in range(len(data)):
                    self.sock.sendall(data[i:i + 1])
                    time.sleep(0.002)
            else:
                self.sock.sendall(data)
        except OSError:
            self.closed = True

    def read_reply(self, timeout=READ_TIMEOUT):
        """('reply', prefix byte, header Node, body Node|None) or ('closed',) or ('timeout',)."""
        try:
            first = self.exact(1, timeout)[0]
            if first <= 0x7F:
                length = first
            elif first in (0xCC, 0xCD, 0xCE, 0xCF):
                length = int.from_bytes(self.exact({0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8}[first]), "big")
            else:
                return ("garbage", first)
            payload = self.exact(length)
        except EOFError:
            self.closed = True
            return ("closed",)
        except TimeoutError:
            return ("timeout",)
        try:
            header, pos = decode(payload)
            body = None
            if pos < len(payload):
                body, pos = decode(payload, pos)
        except Truncated:
            return ("garbage", payload.hex())
        return ("reply", first, header, body)

    def check_closed(self, timeout=1.0):
        try:
            extra = self.exact(1, timeout)
            return f"unexpected bytes {extra.hex()}"
        except EOFError:
            return "closed"
        except TimeoutError:
            return "open"

    def close(self):
        self.sock.close()


def build_value(v):
    return v


def build_request(spec, conn):
    """MessagePack bytes (with a 0xce length prefix unless `prefix` says otherwise) for a symbolic request."""
    header = {}
    code = spec.get("code", "PING")
    if code is not None:
        header[0] = CODES.get(code, code) if isinstance(code, str) else code
    if "sync" in spec:
        if spec["sync"] is not None:
            header[1] = spec["sync"]
    else:
        conn.sync += 1
        header[1] = conn.sync
    for k, v in (spec.get("header") or {}).items():
        header[HEADER_KEYS.get(k, k)] = v
    payload = encode(header)
    if "body_raw" in spec:
        payload += bytes.fromhex(spec["body_raw"].replace(" ", ""))
    elif "body" in spec and spec["body"] is not None:
        body = spec["body"]
        if isinstance(body, dict) and not any(str(k).startswith("$") for k in body):
            body = {BODY_KEYS.get(k, k): (ITERATORS.get(v, v) if k == "iterator" else v) for k, v in body.items()}
        payload += encode(body)
    return frame(payload, spec.get("prefix", "ce"))


def frame(payload, prefix="ce"):
    n = len(payload)
    if prefix == "fix":
        return bytes([n]) + payload
    width = {"cc": 1, "cd": 2, "ce": 4, "cf": 8}[prefix]
    return bytes.fromhex(prefix) + n.to_bytes(width, "big") + payload


def scramble(salt_b64, password):
    salt = base64.b64decode(salt_b64)[:20]
    h1 = hashlib.sha1(password.encode()).digest()
    h2 = hashlib.sha1(h1).digest()
    mask = hashlib.sha1(salt + h2).digest()
    return bytes(a ^ b for a, b in zip(h1, mask))


def auth_request(conn, spec, admin_password):
    user = spec.get("user", "admin")
    password = spec.get("password", admin_password if user == "admin" else "")
    salt = conn.greeting[64:108].strip()
    body = {0x23: user}
    if "tuple" in spec:
        body[0x21] = spec["tuple"]
    else:
        sc = scramble(salt, password)
        if spec.get("scramble_as") == "str":
            sc = {"$str_hex": sc.hex()}
        else:
            sc = {"$bin": sc.hex()}
        body[0x21] = [spec.get("mechanism", "chap-sha1"), sc]
    conn.sync += 1
    return frame(encode({0: 7, 1: conn.sync}) + encode(body))


LUA_ADDR = re.compile(r"0x[0-9a-f]{6,}")
BUILTIN_LINE = re.compile(r"(builtin/[\w/.]+\.lua):\d+")
DATETIME = re.compile(r"\b20\d\d-\d\d-\d\d \d\d:\d\d:\d\d\b")
WRONG_SV = re.compile(r"(Wrong schema version, current: \d+, in request: )(\d+)")


def normalize_text(rec, s):
    s = LUA_ADDR.sub("0x<ADDR>", s)
    s = BUILTIN_LINE.sub(r"\1:<LINE>", s)
    s = DATETIME.sub("<DATETIME>", s)
    return WRONG_SV.sub(lambda m: m.group(1) + rec.sv(int(m.group(2))), s)


def normalize_node(rec, node, in_stack=False):
    """A copy of `node` with volatile parts replaced (see the module doc)."""
    if node.kind == "str":
        return Node("str", normalize_text(rec, node.value))
    if node.kind == "array":
        return Node("array", [normalize_node(rec, v, in_stack) for v in node.value])
    if node.kind == "map":
        items = []
        for k, v in node.value:
            if in_stack and k.kind == "uint" and k.value in ERROR_FIELD_NAMES:
                name = ERROR_FIELD_NAMES[k.value]
                if name in ("file", "line"):
                    v = Node("name", f"<{name.upper()}>")
                items.append((Node("name", name), normalize_node(rec, v)))
            else:
                items.append((k, normalize_node(rec, v, in_stack)))
        return Node("map", items)
    return node


def render_reply(rec, reply):
    kind = reply[0]
    if kind != "reply":
        return [f"<- {kind}" + (f" {reply[1]}" if len(reply) > 1 else "")]
    _, prefix, header, body = reply
    lines = []
    if header.kind != "map":
        return [f"<- header is not a map: {render(header)}"]
    parts = []
    code = header.get(0)
    if code is not None and code.kind == "uint":
        c = code.value
        parts.append("OK" if c == 0 else "CHUNK" if c == 0x80 else f"ERROR|{c - 0x8000}" if c & 0x8000 else f"code={c}")
    else:
        parts.append(f"code={render(code) if code else 'absent'}")
    for k, v in sorted(header.value, key=lambda kv: str(kv[0].value)):
        key = k.value if k.kind == "uint" else None
        if key == 0:
            continue
        if key == 0x05 and v.kind == "uint":
            parts.append(f"schema_version={rec.sv(v.value)}")
        else:
            parts.append(f"{REPLY_HEADER_NAMES.get(key, render(k))}={render(v)}")
    if prefix != 0xCE:
        parts.append(f"prefix={prefix:#x}")
    lines.append("<- " + " ".join(parts))
    if body is not None:
        if body.kind == "map":
            items = []
            for k, v in body.value:
                if k.kind == "uint" and k.value == 0x52:
                    v = normalize_node(rec, v, in_stack=True) if v.kind != "map" else Node(
                        "map", [(sk, normalize_node(rec, sv, in_stack=True)) for sk, sv in v.value])
                else:
                    v = normalize_node(rec, v)
                items.append((k, v))
            body = Node("map", items)
        else:
            body = normalize_node(rec, body)
        if body.kind == "map" and body.value:
            entries = sorted(((REPLY_BODY_NAMES.get(k.value, render(k)) if k.kind == "uint" else render(k), v)
                              for k, v in body.value), key=lambda e: e[0])
            for key, v in entries:
                text = render(v, None, width=150, indent=3)
                lines.extend(("   " if i == 0 else "") + (f"{key}: " if i == 0 else "") + line
                             for i, line in enumerate(text.splitlines()))
        else:
            lines.extend("   " + line for line in render(body, None, width=150, indent=3).splitlines())
    return lines


def greeting_lines(greeting):
    line1, line2 = greeting[:64], greeting[64:]
    text = line1.decode(errors="replace")
    m = re.match(r"Tarantool (\d+\.\d+)\.\S+ \((\w+)\) ([0-9a-f-]{36})\s*\n$", text)
    out = [f"greeting line 1: {len(line1)} bytes"]
    out.append(f"   Tarantool {m.group(1)} ({m.group(2)}) <UUID>" if m else f"   unexpected: {text!r}")
    try:
        salt = base64.b64decode(line2[:44])
        newline = line2.endswith(b"\n")
        out.append(f"greeting line 2: {len(line2)} bytes, salt {len(salt)} bytes, ends with newline: {newline}")
    except ValueError:
        out.append(f"greeting line 2: not base64: {line2!r}")
    return out


class Console:
    """A text-console connection."""

    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=READ_TIMEOUT)
        self.buf = b""
        self.greeting = self._until(lambda b: b.count(b"\n") >= 2)

    def _until(self, done):
        deadline = time.time() + READ_TIMEOUT
        while not done(self.buf):
            if time.time() > deadline:
                break
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            self.buf += chunk
        data, self.buf = self.buf, b""
        return data

    def eval(self, line):
        self.sock.sendall(line.encode() + b"\n")
        return self._until(lambda b: b.endswith(b"\n...\n")).decode(errors="replace")


def console_greeting(raw):
    first = raw.split(b"\n")[0].decode(errors="replace")
    first = re.sub(r"Tarantool (\d+\.\d+)\.\S+", r"Tarantool \1", first)
    return f"console greeting: {first.strip()!r}"


def run_steps(rec, steps, host, port, console_port, admin_password):
    conns, consoles = {}, {}

    def conn_for(name):
        if name not in conns or conns[name] is None:
            conns[name] = Conn(host, port)
        return conns[name]

    for n, step in enumerate(steps, 1):
        label = step.get("label", "")
        name = step.get("conn", "main")
        kinds = [k for k in ("send", "raw", "pipeline", "auth", "greeting", "close", "console") if k in step]
        kind = kinds[0] if kinds else "?"
        detail = step[kind]["code"] if kind == "send" and isinstance(step[kind], dict) and step[kind].get(
            "code") else ""
        rec.line(f"== {n} {kind} {detail} {label}".rstrip().replace("  ", " "))
        try:
            if kind == "console":
                if name not in consoles:
                    consoles[name] = Console(host, console_port)
                    rec.line(console_greeting(consoles[name].greeting))
                out = consoles[name].eval(step["console"])
                rec.lines.extend("   | " + normalize_text(rec, line) for line in out.splitlines())
                continue
            c = conn_for(name)
            if kind == "greeting":
                rec.lines.extend(greeting_lines(c.greeting))
                continue
            if kind == "close":
                c.close()
                conns[name] = None
                rec.line("   closed by client")
                continue
            replies = []
            if kind == "send" and "split_at" in step:
                data = build_request(step["send"], c)
                c.send(data[:step["split_at"]])
                time.sleep(0.05)
                c.send(data[step["split_at"]:])
                expected = step.get("responses", 1)
            elif kind == "send":
                c.send(build_request(step["send"], c), step.get("dribble", False))
                expected = step.get("responses", 1)
            elif kind == "raw":
                c.send(bytes.fromhex(step["raw"].replace(" ", "")), step.get("dribble", False))
                expected = step.get("responses", 1)
            elif kind == "pipeline":
                data = b"".join(build_request(s, c) for s in step["pipeline"])
                c.send(data, step.get("dribble", False))
                expected = step.get("responses", len(step["pipeline"]))
            elif kind == "auth":
                c.send(auth_request(c, step["auth"], admin_password))
                expected = 1
            else:
                rec.line(f"!! unknown step {step}")
                continue
            for _ in range(expected):
                r = c.read_reply(step.get("timeout", READ_TIMEOUT))
                replies.append(r)
                if r[0] != "reply":
                    break
            if kind == "pipeline" or step.get("sort"):
                replies.sort(key=lambda r: (r[0] != "reply", _sync(r)))
            for r in replies:
                rec.lines.extend(render_reply(rec, r))
            if step.get("check_closed"):
                rec.line(f"   connection: {c.check_closed()}")
        except (OSError, EOFError, TimeoutError) as e:
            rec.line(f"   !! {type(e).__name__}")
    for c in conns.values():
        if c is not None:
            c.close()
    # The server must still answer a fresh connection after every scenario.
    try:
        c = Conn(host, port)
        c.send(build_request({"code": "PING"}, c))
        r = c.read_reply()
        rec.line("== alive after: " + ("yes" if r[0] == "reply" else r[0]))
        c.close()
    except (OSError, EOFError, TimeoutError) as e:
        rec.line(f"== alive after: no ({type(e).__name__})")


def _sync(r):
    if r[0] != "reply" or r[2].kind != "map":
        return -1
    s = r[2].get(1)
    return s.value if s is not None and s.kind == "uint" else -1
