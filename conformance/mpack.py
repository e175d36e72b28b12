"""MessagePack for the conformance harness: a typed decoder and a request encoder.

The decoder keeps every distinction a connector can observe (uint vs negative-capable
int, float32 vs float64, str vs bin, ext type) and renders values as stable text with
map keys sorted, so transcripts can be compared line by line. The encoder turns the
scenario's YAML values into MessagePack with escapes for what YAML cannot say:
`{$bin: hex}`, `{$f32: 1.5}`, `{$raw: hex}` (pre-encoded bytes spliced in),
`{$int: 5}` (a signed encoding of a non-negative number).
"""
import json
import struct


class Node:
    """One decoded MessagePack value: `kind` is nil/bool/uint/int/f32/f64/str/bin/ext/array/map."""

    __slots__ = ("kind", "value", "ext")

    def __init__(self, kind, value, ext=None):
        self.kind, self.value, self.ext = kind, value, ext

    def plain(self):
        """The Python value, losing type distinctions (for syncs, codes and lookups)."""
        if self.kind == "array":
            return [v.plain() for v in self.value]
        if self.kind == "map":
            return {k.plain() if k.kind != "array" else repr(k.plain()): v.plain() for k, v in self.value}
        return self.value

    def get(self, key):
        """The value under integer or string `key` of a map node, or None."""
        if self.kind != "map":
            return None
        for k, v in self.value:
            if k.kind in ("uint", "int", "str") and k.value == key:
                return v
        return None


class Truncated(Exception):
    """The buffer ends inside a value."""


def decode(buf, pos=0):
    """Decodes one value at `pos`; returns (Node, next position)."""
    if pos >= len(buf):
        raise Truncated()
    b = buf[pos]
    pos += 1

    def take(n):
        nonlocal pos
        if pos + n > len(buf):
            raise Truncated()
        chunk = buf[pos:pos + n]
        pos += n
        return chunk

    if b <= 0x7F:
        return Node("uint", b), pos
    if b >= 0xE0:
        return Node("int", b - 0x100), pos
    if 0x80 <= b <= 0x8F or b in (0xDE, 0xDF):
        n = b & 0x0F if b <= 0x8F else struct.unpack(">H" if b == 0xDE else ">I", take(2 if b == 0xDE else 4))[0]
        items = []
        for _ in range(n):
            k, pos = decode(buf, pos)
            v, pos = decode(buf, pos)
            items.append((k, v))
        return Node("map", items), pos
    if 0x90 <= b <= 0x9F or b in (0xDC, 0xDD):
        n = b & 0x0F if b <= 0x9F else struct.unpack(">H" if b == 0xDC else ">I", take(2 if b == 0xDC else 4))[0]
        items = []
        for _ in range(n):
            v, pos = decode(buf, pos)
            items.append(v)
        return Node("array", items), pos
    if 0xA0 <= b <= 0xBF or b in (0xD9, 0xDA, 0xDB):
        if b <= 0xBF:
            n = b & 0x1F
        else:
            n = int.from_bytes(take({0xD9: 1, 0xDA: 2, 0xDB: 4}[b]), "big")
        raw = take(n)
        try:
            return Node("str", raw.decode("utf-8")), pos
        except UnicodeDecodeError:
            return Node("badstr", raw), pos
    if b == 0xC0:
        return Node("nil", None), pos
    if b in (0xC2, 0xC3):
        return Node("bool", b == 0xC3), pos
    if b in (0xC4, 0xC5, 0xC6):
        n = int.from_bytes(take({0xC4: 1, 0xC5: 2, 0xC6: 4}[b]), "big")
        return Node("bin", take(n)), pos
    if b == 0xCA:
        return Node("f32", struct.unpack(">f", take(4))[0]), pos
    if b == 0xCB:
        return Node("f64", struct.unpack(">d", take(8))[0]), pos
    if b in (0xCC, 0xCD, 0xCE, 0xCF):
        n = {0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8}[b]
        return Node("uint", int.from_bytes(take(n), "big")), pos
    if b in (0xD0, 0xD1, 0xD2, 0xD3):
        n = {0xD0: 1, 0xD1: 2, 0xD2: 4, 0xD3: 8}[b]
        return Node("int", int.from_bytes(take(n), "big", signed=True)), pos
    if b in (0xD4, 0xD5, 0xD6, 0xD7, 0xD8):
        n = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}[b]
        t = struct.unpack(">b", take(1))[0]
        return Node("ext", take(n), t), pos
    if b in (0xC7, 0xC8, 0xC9):
        n = int.from_bytes(take({0xC7: 1, 0xC8: 2, 0xC9: 4}[b]), "big")
        t = struct.unpack(">b", take(1))[0]
        return Node("ext", take(n), t), pos
    # 0xC1 is never used.
    return Node("invalid", b), pos


def render(node, names=None, width=100, indent=0):
    """Stable text for `node`; `names` maps integer map keys to names (top level only).

    A container longer than `width` is broken into one line per element; the
    elements themselves stay on one line each, so a row is always one line.
    """
    flat = _flat(node, names)
    if len(flat) + indent <= width or node.kind not in ("array", "map") or not node.value:
        return flat
    pad = " " * (indent + 2)
    if node.kind == "array":
        inner = [pad + _flat(v, None) for v in node.value]
        return "[\n" + ",\n".join(inner) + "\n" + " " * indent + "]"
    entries = sorted(((_key(k, names), v) for k, v in node.value), key=lambda e: e[0])
    inner = [f"{pad}{k}: {_flat(v, None)}" for k, v in entries]
    return "{\n" + ",\n".join(inner) + "\n" + " " * indent + "}"


def _key(k, names):
    if names and k.kind == "uint" and k.value in names:
        return names[k.value]
    return _flat(k, None)


def _flat(node, names):
    kind, v = node.kind, node.value
    if kind == "name":
        return v
    if kind == "nil":
        return "nil"
    if kind == "bool":
        return "true" if v else "false"
    if kind == "uint":
        return str(v)
    if kind == "int":
        return f"int({v})" if v >= 0 else str(v)
    if kind == "f32":
        return f"f32({v!r})"
    if kind == "f64":
        return f"f64({v!r})"
    if kind == "str":
        return json.dumps(v, ensure_ascii=False)
    if kind == "badstr":
        return f"str!({v.hex()})"
    if kind == "bin":
        return f"bin({v.hex()})"
    if kind == "ext":
        return f"ext{node.ext}({v.hex()})"
    if kind == "array":
        return "[" + ", ".join(_flat(x, None) for x in v) + "]"
    if kind == "map":
        entries = sorted((_key(k, names), _flat(x, None)) for k, x in v)
        return "{" + ", ".join(f"{k}: {x}" for k, x in entries) + "}"
    return f"<invalid {v:#x}>"


def encode(value):
    """MessagePack bytes for a scenario value (see the module doc for the `$` escapes)."""
    if isinstance(value, dict) and len(value) == 1:
        (k, v), = value.items()
        if k == "$bin":
            data = bytes.fromhex(v.replace(" ", ""))
            return _bin_header(len(data)) + data
        if k == "$f32":
            return b"\xca" + struct.pack(">f", float(v))
        if k == "$f64":
            return b"\xcb" + struct.pack(">d", float(v))
        if k == "$raw":
            return bytes.fromhex(v.replace(" ", ""))
        if k == "$int":
            return b"\xd3" + struct.pack(">q", int(v))
        if k == "$str_hex":
            data = bytes.fromhex(v)
            return _str_header(len(data)) + data
    if value is None:
        return b"\xc0"
    if value is True:
        return b"\xc3"
    if value is False:
        return b"\xc2"
    if isinstance(value, int):
        if value >= 0:
            if value < 0x80:
                return bytes([value])
            for fmt, tag, lim in ((">B", 0xCC, 1 << 8), (">H", 0xCD, 1 << 16), (">I", 0xCE, 1 << 32)):
                if value < lim:
                    return bytes([tag]) + struct.pack(fmt, value)
            return b"\xcf" + struct.pack(">Q", value)
        if value >= -32:
            return struct.pack(">b", value)
        for fmt, tag, lim in ((">b", 0xD0, 1 << 7), (">h", 0xD1, 1 << 15), (">i", 0xD2, 1 << 31)):
            if value >= -lim:
                return bytes([tag]) + struct.pack(fmt, value)
        return b"\xd3" + struct.pack(">q", value)
    if isinstance(value, float):
        return b"\xcb" + struct.pack(">d", value)
    if isinstance(value, str):
        data = value.encode()
        return _str_header(len(data)) + data
    if isinstance(value, (bytes, bytearray)):
        return _bin_header(len(value)) + bytes(value)
    if isinstance(value, list):
        n = len(value)
        head = bytes([0x90 | n]) if n < 16 else (b"\xdc" + struct.pack(">H", n) if n < 65536 else
                                                 b"\xdd" + struct.pack(">I", n))
        return head + b"".join(encode(v) for v in value)
    if isinstance(value, dict):
        n = len(value)
        head = bytes([0x80 | n]) if n < 16 else (b"\xde" + struct.pack(">H", n) if n < 65536 else
                                                 b"\xdf" + struct.pack(">I", n))
        return head + b"".join(encode(k) + encode(v) for k, v in value.items())
    raise TypeError(f"cannot encode {value!r}")


def _str_header(n):
    if n < 32:
        return bytes([0xA0 | n])
    if n < 256:
        return b"\xd9" + bytes([n])
    if n < 65536:
        return b"\xda" + struct.pack(">H", n)
    return b"\xdb" + struct.pack(">I", n)


def _bin_header(n):
    if n < 256:
        return b"\xc4" + bytes([n])
    if n < 65536:
        return b"\xc5" + struct.pack(">H", n)
    return b"\xc6" + struct.pack(">I", n)
