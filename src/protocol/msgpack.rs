//! A small, allocation-free MessagePack reader over a byte slice.
//!
//! Everything read off the wire goes through [`Reader`]. It never panics on
//! hostile input: every read is bounds-checked and returns [`MpError`] on
//! truncation or a type mismatch. Strings are returned as raw bytes and are
//! never UTF-8 validated (Tarantool clients send binary scrambles as `str`).
//!
//! [`skip_value`] and [`check_value`] walk nested values iteratively, so deeply
//! nested input cannot overflow the stack.

/// Why a MessagePack read failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MpError {
    /// The input ended inside a value.
    Truncated,
    /// The value is not of the expected type.
    Type,
    /// The byte 0xc1, which MessagePack never uses.
    Invalid,
}

/// The broad type of a MessagePack value, named as Tarantool names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MpType {
    /// nil
    Nil,
    /// A non-negative integer.
    Uint,
    /// A negative integer.
    Int,
    /// float32
    Float,
    /// float64
    Double,
    /// A string (raw bytes).
    Str,
    /// Binary data.
    Bin,
    /// An array.
    Array,
    /// A map.
    Map,
    /// A boolean.
    Bool,
    /// An extension value.
    Ext,
}

/// The type of the value whose first byte is `marker`.
#[must_use]
pub fn type_of(marker: u8) -> Option<MpType> {
    Some(match marker {
        0x00..=0x7f | 0xcc..=0xcf => MpType::Uint,
        0xe0..=0xff | 0xd0..=0xd3 => MpType::Int,
        0x80..=0x8f | 0xde | 0xdf => MpType::Map,
        0x90..=0x9f | 0xdc | 0xdd => MpType::Array,
        0xa0..=0xbf | 0xd9..=0xdb => MpType::Str,
        0xc0 => MpType::Nil,
        0xc2 | 0xc3 => MpType::Bool,
        0xc4..=0xc6 => MpType::Bin,
        0xc7..=0xc9 | 0xd4..=0xd8 => MpType::Ext,
        0xca => MpType::Float,
        0xcb => MpType::Double,
        0xc1 => return None,
    })
}

/// A cursor over MessagePack bytes.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    #[must_use]
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    #[must_use]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The bytes not yet read.
    #[must_use]
    pub fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }

    /// Whether every byte has been read.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// The type of the next value, without consuming it.
    pub fn peek_type(&self) -> Result<MpType, MpError> {
        let marker = *self.buf.get(self.pos).ok_or(MpError::Truncated)?;
        type_of(marker).ok_or(MpError::Invalid)
    }

    fn byte(&mut self) -> Result<u8, MpError> {
        let b = *self.buf.get(self.pos).ok_or(MpError::Truncated)?;
        self.pos += 1;
        Ok(b)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], MpError> {
        let end = self.pos.checked_add(n).ok_or(MpError::Truncated)?;
        let out = self.buf.get(self.pos..end).ok_or(MpError::Truncated)?;
        self.pos = end;
        Ok(out)
    }

    fn be(&mut self, n: usize) -> Result<u64, MpError> {
        Ok(self.take(n)?.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    /// Reads an unsigned integer (any width).
    pub fn read_uint(&mut self) -> Result<u64, MpError> {
        let save = self.pos;
        let marker = self.byte()?;
        let v = match marker {
            0x00..=0x7f => u64::from(marker),
            0xcc => self.be(1)?,
            0xcd => self.be(2)?,
            0xce => self.be(4)?,
            0xcf => self.be(8)?,
            _ => {
                self.pos = save;
                return Err(MpError::Type);
            }
        };
        Ok(v)
    }

    /// Reads a signed or unsigned integer that fits in i64 (uint above i64::MAX is a type error).
    pub fn read_int(&mut self) -> Result<i64, MpError> {
        match self.read_integer()? {
            Integer::Unsigned(u) => i64::try_from(u).map_err(|_| MpError::Type),
            Integer::Negative(i) => Ok(i),
        }
    }

    /// Reads any integer.
    pub fn read_integer(&mut self) -> Result<Integer, MpError> {
        let save = self.pos;
        let marker = self.byte()?;
        #[allow(clippy::cast_possible_wrap, reason = "two's complement decoding of msgpack ints")]
        let v = match marker {
            0x00..=0x7f => Integer::Unsigned(u64::from(marker)),
            0xcc => Integer::Unsigned(self.be(1)?),
            0xcd => Integer::Unsigned(self.be(2)?),
            0xce => Integer::Unsigned(self.be(4)?),
            0xcf => Integer::Unsigned(self.be(8)?),
            0xe0..=0xff => Integer::Negative(i64::from(marker as i8)),
            0xd0 => Integer::from_i64(i64::from(self.be(1)? as u8 as i8)),
            0xd1 => Integer::from_i64(i64::from(self.be(2)? as u16 as i16)),
            0xd2 => Integer::from_i64(i64::from(self.be(4)? as u32 as i32)),
            0xd3 => Integer::from_i64(self.be(8)? as i64),
            _ => {
                self.pos = save;
                return Err(MpError::Type);
            }
        };
        Ok(v)
    }

    /// Reads a float32 or float64 as f64.
    pub fn read_f64(&mut self) -> Result<f64, MpError> {
        let save = self.pos;
        match self.byte()? {
            #[allow(clippy::cast_possible_truncation, reason = "exactly 32 bits were read")]
            0xca => Ok(f64::from(f32::from_bits(self.be(4)? as u32))),
            0xcb => Ok(f64::from_bits(self.be(8)?)),
            _ => {
                self.pos = save;
                Err(MpError::Type)
            }
        }
    }

    /// Reads a boolean.
    pub fn read_bool(&mut self) -> Result<bool, MpError> {
        match self.buf.get(self.pos) {
            Some(0xc2) => {
                self.pos += 1;
                Ok(false)
            }
            Some(0xc3) => {
                self.pos += 1;
                Ok(true)
            }
            Some(_) => Err(MpError::Type),
            None => Err(MpError::Truncated),
        }
    }

    /// Reads nil.
    pub fn read_nil(&mut self) -> Result<(), MpError> {
        match self.buf.get(self.pos) {
            Some(0xc0) => {
                self.pos += 1;
                Ok(())
            }
            Some(_) => Err(MpError::Type),
            None => Err(MpError::Truncated),
        }
    }

    /// Reads a string's bytes (no UTF-8 check).
    pub fn read_str(&mut self) -> Result<&'a [u8], MpError> {
        let save = self.pos;
        let marker = self.byte()?;
        #[allow(clippy::cast_possible_truncation, reason = "lengths are at most 32 bits")]
        let len = match marker {
            0xa0..=0xbf => usize::from(marker & 0x1f),
            0xd9 => self.be(1)? as usize,
            0xda => self.be(2)? as usize,
            0xdb => self.be(4)? as usize,
            _ => {
                self.pos = save;
                return Err(MpError::Type);
            }
        };
        self.take(len)
    }

    /// Reads binary data.
    pub fn read_bin(&mut self) -> Result<&'a [u8], MpError> {
        let save = self.pos;
        let marker = self.byte()?;
        #[allow(clippy::cast_possible_truncation, reason = "lengths are at most 32 bits")]
        let len = match marker {
            0xc4 => self.be(1)? as usize,
            0xc5 => self.be(2)? as usize,
            0xc6 => self.be(4)? as usize,
            _ => {
                self.pos = save;
                return Err(MpError::Type);
            }
        };
        self.take(len)
    }

    /// Reads a string or binary value's bytes.
    pub fn read_str_or_bin(&mut self) -> Result<&'a [u8], MpError> {
        match self.peek_type()? {
            MpType::Str => self.read_str(),
            MpType::Bin => self.read_bin(),
            _ => Err(MpError::Type),
        }
    }

    /// Reads an extension value: (type, payload).
    pub fn read_ext(&mut self) -> Result<(i8, &'a [u8]), MpError> {
        let save = self.pos;
        let marker = self.byte()?;
        #[allow(clippy::cast_possible_truncation, reason = "lengths are at most 32 bits")]
        let len = match marker {
            0xd4 => 1,
            0xd5 => 2,
            0xd6 => 4,
            0xd7 => 8,
            0xd8 => 16,
            0xc7 => self.be(1)? as usize,
            0xc8 => self.be(2)? as usize,
            0xc9 => self.be(4)? as usize,
            _ => {
                self.pos = save;
                return Err(MpError::Type);
            }
        };
        #[allow(clippy::cast_possible_wrap, reason = "ext type is a signed byte")]
        let ty = self.byte()? as i8;
        Ok((ty, self.take(len)?))
    }

    /// Reads an array header and returns the element count.
    pub fn read_array_len(&mut self) -> Result<u32, MpError> {
        let save = self.pos;
        let marker = self.byte()?;
        #[allow(clippy::cast_possible_truncation, reason = "at most 32 bits were read")]
        let len = match marker {
            0x90..=0x9f => u32::from(marker & 0x0f),
            0xdc => self.be(2)? as u32,
            0xdd => self.be(4)? as u32,
            _ => {
                self.pos = save;
                return Err(MpError::Type);
            }
        };
        Ok(len)
    }

    /// Reads a map header and returns the pair count.
    pub fn read_map_len(&mut self) -> Result<u32, MpError> {
        let save = self.pos;
        let marker = self.byte()?;
        #[allow(clippy::cast_possible_truncation, reason = "at most 32 bits were read")]
        let len = match marker {
            0x80..=0x8f => u32::from(marker & 0x0f),
            0xde => self.be(2)? as u32,
            0xdf => self.be(4)? as u32,
            _ => {
                self.pos = save;
                return Err(MpError::Type);
            }
        };
        Ok(len)
    }

    /// Skips one complete value (with everything nested in it) and returns its bytes.
    pub fn skip(&mut self) -> Result<&'a [u8], MpError> {
        let start = self.pos;
        let end = skip_value(self.buf, self.pos)?;
        self.pos = end;
        self.buf.get(start..end).ok_or(MpError::Truncated)
    }
}

/// An integer read from MessagePack, keeping the unsigned range intact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Integer {
    /// 0 ..= u64::MAX
    Unsigned(u64),
    /// i64::MIN ..= -1
    Negative(i64),
}

impl Integer {
    fn from_i64(v: i64) -> Self {
        u64::try_from(v).map_or(Self::Negative(v), Self::Unsigned)
    }
}

/// The size of the header of the value at `pos` and the number of nested values it holds.
fn value_head(buf: &[u8], pos: usize) -> Result<(usize, u64), MpError> {
    let marker = *buf.get(pos).ok_or(MpError::Truncated)?;
    let be = |n: usize| -> Result<u64, MpError> {
        let bytes = buf.get(pos + 1..pos + 1 + n).ok_or(MpError::Truncated)?;
        Ok(bytes.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    };
    // (bytes of this value excluding nested children, number of children)
    Ok(match marker {
        0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => (1, 0),
        0x80..=0x8f => (1, u64::from(marker & 0x0f) * 2),
        0x90..=0x9f => (1, u64::from(marker & 0x0f)),
        0xa0..=0xbf => (1 + usize::from(marker & 0x1f), 0),
        0xc1 => return Err(MpError::Invalid),
        0xc4 | 0xd9 => (2 + to_usize(be(1)?)?, 0),
        0xc5 | 0xda => (3 + to_usize(be(2)?)?, 0),
        0xc6 | 0xdb => (5 + to_usize(be(4)?)?, 0),
        0xc7 => (3 + to_usize(be(1)?)?, 0),
        0xc8 => (4 + to_usize(be(2)?)?, 0),
        0xc9 => (6 + to_usize(be(4)?)?, 0),
        0xca => (5, 0),
        0xcb => (9, 0),
        0xcc | 0xd0 => (2, 0),
        0xcd | 0xd1 => (3, 0),
        0xce | 0xd2 => (5, 0),
        0xcf | 0xd3 => (9, 0),
        0xd4 => (3, 0),
        0xd5 => (4, 0),
        0xd6 => (6, 0),
        0xd7 => (10, 0),
        0xd8 => (18, 0),
        0xdc => (3, be(2)?),
        0xdd => (5, be(4)?),
        0xde => (3, be(2)? * 2),
        0xdf => (5, be(4)? * 2),
    })
}

fn to_usize(v: u64) -> Result<usize, MpError> {
    usize::try_from(v).map_err(|_| MpError::Truncated)
}

/// Returns the offset just past the value that starts at `pos`.
///
/// Iterative: nesting depth costs no stack.
pub fn skip_value(buf: &[u8], pos: usize) -> Result<usize, MpError> {
    let mut pos = pos;
    let mut pending: u64 = 1;
    while pending > 0 {
        let (size, children) = value_head(buf, pos)?;
        pos = pos.checked_add(size).ok_or(MpError::Truncated)?;
        if pos > buf.len() {
            return Err(MpError::Truncated);
        }
        // Each child needs at least one byte: reject counts the input cannot hold.
        let remaining = (buf.len() - pos) as u64;
        pending = pending - 1 + children;
        if pending > remaining {
            return Err(MpError::Truncated);
        }
    }
    Ok(pos)
}

/// Checks `buf` the way Tarantool's msgpuck `mp_check` does: like [`check_value`],
/// except that the unused marker 0xc1 passes as a one-byte value.
pub fn check_value_as_msgpuck(buf: &[u8]) -> Result<(), MpError> {
    if value_end_as_msgpuck(buf)? == buf.len() {
        Ok(())
    } else {
        Err(MpError::Invalid)
    }
}

/// Where the value at the start of `buf` ends, as msgpuck's `mp_check` finds it
/// (the marker 0xc1 a one-byte value); bytes after it may follow.
pub fn value_end_as_msgpuck(buf: &[u8]) -> Result<usize, MpError> {
    let mut pos = 0;
    let mut pending: u64 = 1;
    while pending > 0 {
        let (size, children) = if buf.get(pos) == Some(&0xc1) { (1, 0) } else { value_head(buf, pos)? };
        pos = pos.checked_add(size).ok_or(MpError::Truncated)?;
        if pos > buf.len() {
            return Err(MpError::Truncated);
        }
        pending = pending - 1 + children;
        if pending > (buf.len() - pos) as u64 {
            return Err(MpError::Truncated);
        }
    }
    Ok(pos)
}

/// Checks that `buf` holds exactly one complete, valid value.
pub fn check_value(buf: &[u8]) -> Result<(), MpError> {
    let end = skip_value(buf, 0)?;
    if end == buf.len() {
        Ok(())
    } else {
        Err(MpError::Invalid)
    }
}

/// Writers for the few encodings oncebox emits by hand.
pub mod write {
    /// Appends an array header (shortest form).
    #[allow(clippy::cast_possible_truncation, reason = "range checked by the match")]
    pub fn array_len(out: &mut Vec<u8>, len: u32) {
        match len {
            0..=15 => out.push(0x90 | len as u8),
            16..=0xffff => {
                out.push(0xdc);
                out.extend_from_slice(&(len as u16).to_be_bytes());
            }
            _ => {
                out.push(0xdd);
                out.extend_from_slice(&len.to_be_bytes());
            }
        }
    }

    /// Appends an array32 header, the form Tarantool uses for reply data.
    pub fn array32_len(out: &mut Vec<u8>, len: u32) {
        out.push(0xdd);
        out.extend_from_slice(&len.to_be_bytes());
    }

    /// Appends a map header (shortest form).
    #[allow(clippy::cast_possible_truncation, reason = "range checked by the match")]
    pub fn map_len(out: &mut Vec<u8>, len: u32) {
        match len {
            0..=15 => out.push(0x80 | len as u8),
            16..=0xffff => {
                out.push(0xde);
                out.extend_from_slice(&(len as u16).to_be_bytes());
            }
            _ => {
                out.push(0xdf);
                out.extend_from_slice(&len.to_be_bytes());
            }
        }
    }

    /// Appends an unsigned integer (shortest form).
    #[allow(clippy::cast_possible_truncation, reason = "range checked by the match")]
    pub fn uint(out: &mut Vec<u8>, v: u64) {
        match v {
            0..=0x7f => out.push(v as u8),
            0x80..=0xff => out.extend_from_slice(&[0xcc, v as u8]),
            0x100..=0xffff => {
                out.push(0xcd);
                out.extend_from_slice(&(v as u16).to_be_bytes());
            }
            0x1_0000..=0xffff_ffff => {
                out.push(0xce);
                out.extend_from_slice(&(v as u32).to_be_bytes());
            }
            _ => {
                out.push(0xcf);
                out.extend_from_slice(&v.to_be_bytes());
            }
        }
    }

    /// Appends a signed integer (shortest form; non-negative values as uint).
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "range checked by the match")]
    pub fn int(out: &mut Vec<u8>, v: i64) {
        if v >= 0 {
            uint(out, v as u64);
            return;
        }
        match v {
            -32..=-1 => out.push(v as i8 as u8),
            -128..=-33 => out.extend_from_slice(&[0xd0, v as i8 as u8]),
            -32768..=-129 => {
                out.push(0xd1);
                out.extend_from_slice(&(v as i16).to_be_bytes());
            }
            -2_147_483_648..=-32769 => {
                out.push(0xd2);
                out.extend_from_slice(&(v as i32).to_be_bytes());
            }
            _ => {
                out.push(0xd3);
                out.extend_from_slice(&v.to_be_bytes());
            }
        }
    }

    /// Appends a float32.
    pub fn f32(out: &mut Vec<u8>, v: f32) {
        out.push(0xca);
        out.extend_from_slice(&v.to_bits().to_be_bytes());
    }

    /// Appends a float64.
    pub fn f64(out: &mut Vec<u8>, v: f64) {
        out.push(0xcb);
        out.extend_from_slice(&v.to_bits().to_be_bytes());
    }

    /// Appends a boolean.
    pub fn bool(out: &mut Vec<u8>, v: bool) {
        out.push(if v { 0xc3 } else { 0xc2 });
    }

    /// Appends nil.
    pub fn nil(out: &mut Vec<u8>) {
        out.push(0xc0);
    }

    /// Appends a string (shortest form).
    #[allow(clippy::cast_possible_truncation, reason = "range checked by the match")]
    pub fn str(out: &mut Vec<u8>, s: &[u8]) {
        let len = s.len();
        match len {
            0..=31 => out.push(0xa0 | len as u8),
            32..=0xff => out.extend_from_slice(&[0xd9, len as u8]),
            0x100..=0xffff => {
                out.push(0xda);
                out.extend_from_slice(&(len as u16).to_be_bytes());
            }
            _ => {
                out.push(0xdb);
                out.extend_from_slice(&(len as u32).to_be_bytes());
            }
        }
        out.extend_from_slice(s);
    }

    /// Appends binary data (shortest form).
    #[allow(clippy::cast_possible_truncation, reason = "range checked by the match")]
    pub fn bin(out: &mut Vec<u8>, s: &[u8]) {
        let len = s.len();
        match len {
            0..=0xff => out.extend_from_slice(&[0xc4, len as u8]),
            0x100..=0xffff => {
                out.push(0xc5);
                out.extend_from_slice(&(len as u16).to_be_bytes());
            }
            _ => {
                out.push(0xc6);
                out.extend_from_slice(&(len as u32).to_be_bytes());
            }
        }
        out.extend_from_slice(s);
    }

    /// Appends an extension value of type `ty` (shortest form: fixext when the
    /// payload is 1, 2, 4, 8 or 16 bytes long).
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "range checked; the type is a raw byte")]
    pub fn ext(out: &mut Vec<u8>, ty: i8, payload: &[u8]) {
        match payload.len() {
            1 => out.push(0xd4),
            2 => out.push(0xd5),
            4 => out.push(0xd6),
            8 => out.push(0xd7),
            16 => out.push(0xd8),
            len @ 0..=0xff => out.extend_from_slice(&[0xc7, len as u8]),
            len @ 0x100..=0xffff => {
                out.push(0xc8);
                out.extend_from_slice(&(len as u16).to_be_bytes());
            }
            len => {
                out.push(0xc9);
                out.extend_from_slice(&(len as u32).to_be_bytes());
            }
        }
        out.push(ty as u8);
        out.extend_from_slice(payload);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_uint_width() {
        for bytes in [&[0x05][..], &[0xcc, 5], &[0xcd, 0, 5], &[0xce, 0, 0, 0, 5], &[0xcf, 0, 0, 0, 0, 0, 0, 0, 5]] {
            assert_eq!(Reader::new(bytes).read_uint(), Ok(5));
        }
    }

    #[test]
    fn negative_ints_round_trip() {
        for v in [-1i64, -32, -33, -128, -129, -40000, -3_000_000_000, i64::MIN] {
            let mut out = Vec::new();
            write::int(&mut out, v);
            assert_eq!(Reader::new(&out).read_int(), Ok(v), "{v}");
        }
    }

    #[test]
    fn skip_rejects_truncated_and_huge_counts() {
        assert_eq!(skip_value(&[0x92, 0x01], 0), Err(MpError::Truncated));
        assert_eq!(skip_value(&[0xdd, 0xff, 0xff, 0xff, 0xff], 0), Err(MpError::Truncated));
        assert_eq!(skip_value(&[0xc1], 0), Err(MpError::Invalid));
        assert_eq!(check_value_as_msgpuck(&[0xc1]), Ok(()));
        assert_eq!(check_value_as_msgpuck(&[0x91, 0xc1]), Ok(()));
        assert_eq!(check_value_as_msgpuck(&[0x80, 0xc1]), Err(MpError::Invalid));
        assert_eq!(check_value_as_msgpuck(&[0x92, 0xc1]), Err(MpError::Truncated));
        assert_eq!(skip_value(&[0x92, 0x01, 0xa1, b'x'], 0), Ok(4));
    }

    #[test]
    fn deep_nesting_costs_no_stack() {
        let mut buf = vec![0x91; 1_000_000];
        buf.push(0xc0);
        assert_eq!(skip_value(&buf, 0), Ok(buf.len()));
    }

    #[test]
    fn strings_are_not_utf8_checked() {
        let buf = [0xa2, 0xff, 0xfe];
        assert_eq!(Reader::new(&buf).read_str(), Ok(&[0xff, 0xfe][..]));
    }
}
