//! `json.decode`'s reader: JSON text to values, as 2.6's lua-cjson reads it.
//!
//! The same tokens and error texts ("Expected <what> but found <token> on line L
//! at character C"), a NUL ending the text as its end does, numbers as its
//! `strtod`/`strtoll` read them (an integer of magnitude 10^14 or more is a 64-bit
//! integer, saturating at either end; past `int64_t`'s range a `uint64_t`), and
//! `inf`/`nan` words when `decode_invalid_numbers` allows them. The reader does
//! no Lua: it hands each value to a [`Sink`], which builds Lua's (see
//! [`super::native`]) or, in tests, a plain tree.

use std::borrow::Cow;

use super::convert::BIG_INTEGER;

/// An integer literal as 2.6 gives it to Lua.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Integer {
    /// Magnitude below 10^14: a Lua number.
    Small(i64),
    /// An `int64_t` cdata (`5LL`).
    Signed64(i64),
    /// A `uint64_t` cdata (`5ULL`): a literal past `int64_t`'s greatest value.
    Unsigned64(u64),
}

/// Where decoded values go: the reader calls these in document order, a table's
/// members after it was made.
pub trait Sink {
    /// A decoded value.
    type Value;
    /// An object or array being filled.
    type Table;
    /// The sink's own failure (out of memory, ...).
    type Error;
    /// A string (also an object's key).
    fn string(&mut self, bytes: &[u8]) -> Result<Self::Value, Self::Error>;
    /// A number with a fraction or an exponent, or `inf`/`nan`.
    fn number(&mut self, n: f64) -> Result<Self::Value, Self::Error>;
    /// An integer literal.
    fn integer(&mut self, n: Integer) -> Result<Self::Value, Self::Error>;
    /// `true` or `false`.
    fn boolean(&mut self, b: bool) -> Result<Self::Value, Self::Error>;
    /// `null`.
    fn null(&mut self) -> Result<Self::Value, Self::Error>;
    /// A new, empty object (`array == false`) or array.
    fn table(&mut self, array: bool) -> Result<Self::Table, Self::Error>;
    /// Sets an object's member (a later duplicate key overwrites).
    fn set_field(&mut self, t: &Self::Table, key: &[u8], v: Self::Value) -> Result<(), Self::Error>;
    /// Sets an array's element `index` (1-based).
    fn set_index(&mut self, t: &Self::Table, index: usize, v: Self::Value) -> Result<(), Self::Error>;
    /// A filled table as a value.
    fn finish(&mut self, t: Self::Table) -> Self::Value;
}

/// Why a text was refused.
#[derive(Debug, PartialEq)]
pub enum DecodeError<E> {
    /// Malformed text, a refused number or nesting deeper than allowed, with 2.6's message.
    Refused(String),
    /// The sink failed.
    Sink(E),
}

impl<E> From<E> for DecodeError<E> {
    fn from(e: E) -> Self {
        DecodeError::Sink(e)
    }
}

/// What `decode_invalid_numbers` lets through, in the order lua-cjson tries them:
/// the prefix it compares and how many bytes it then takes (it compares `-nan`'s
/// first three only, so `-na` and any byte after it read as NaN).
const NON_FINITE: [(&[u8], usize, f64); 4] =
    [(b"inf", 3, f64::INFINITY), (b"-inf", 4, f64::NEG_INFINITY), (b"nan", 3, f64::NAN), (b"-na", 4, f64::NAN)];

/// Lua stack slots lua-cjson may take for the containers it is inside (LuaJIT's
/// `LUAI_MAXCSTACK`, less the one its call holds): an object holds two (itself
/// and its key), an array one. Past them 2.6 reports the nesting error whatever
/// `decode_max_depth` says, so objects nest at most 3,999 deep.
const STACK_SLOTS: usize = 7_999;

/// Deepest nesting read whatever `decode_max_depth` says: arrays more than about
/// 5,300 deep overflow 2.6's C stack (it crashes); here they get the nesting error.
const MAX_NESTING: usize = 5_000;

/// Decodes `text` into `sink`'s values. `max_depth`: `decode_max_depth`;
/// `invalid_numbers`: `decode_invalid_numbers`.
pub fn decode<S: Sink>(
    text: &[u8],
    max_depth: usize,
    invalid_numbers: bool,
    sink: &mut S,
) -> Result<S::Value, DecodeError<S::Error>> {
    // lua-cjson's check for other encodings than UTF-8: the first character of
    // any JSON text is ASCII, so a NUL among the first two bytes means UTF-16 or -32.
    if text.len() >= 2 && (text[0] == 0 || text[1] == 0) {
        return Err(DecodeError::Refused("JSON parser does not support UTF-16 or UTF-32".into()));
    }
    let mut reader =
        Reader { text, pos: 0, line: 1, line_start: 0, depth: 0, slots: 0, max_depth, invalid_numbers, sink };
    let (token, at) = reader.token();
    let result = reader.value(token, at)?;
    let (token, at) = reader.token();
    if !matches!(token, Token::End) {
        return Err(reader.fail("the end", &token, at));
    }
    Ok(result)
}

/// A token, as lua-cjson names them in its messages.
enum Token<'s> {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Comma,
    Colon,
    End,
    Str(Cow<'s, [u8]>),
    Integer(Integer),
    Number(f64),
    Boolean(bool),
    Null,
    /// Malformed text: what is wrong.
    Error(&'static str),
}

impl Token<'_> {
    fn name(&self) -> &'static str {
        match self {
            Token::ObjBegin => "T_OBJ_BEGIN",
            Token::ObjEnd => "T_OBJ_END",
            Token::ArrBegin => "T_ARR_BEGIN",
            Token::ArrEnd => "T_ARR_END",
            Token::Comma => "T_COMMA",
            Token::Colon => "T_COLON",
            Token::End => "T_END",
            Token::Str(_) => "T_STRING",
            Token::Integer(Integer::Unsigned64(_)) => "T_UINT",
            Token::Integer(_) => "T_INT",
            Token::Number(_) => "T_NUMBER",
            Token::Boolean(_) => "T_BOOLEAN",
            Token::Null => "T_NULL",
            Token::Error(why) => why,
        }
    }
}

struct Reader<'s, 'k, S> {
    text: &'s [u8],
    /// 0-based offset of the next byte.
    pos: usize,
    line: usize,
    /// Offset of the current line's first byte.
    line_start: usize,
    depth: usize,
    /// Of [`STACK_SLOTS`], those the open containers hold.
    slots: usize,
    max_depth: usize,
    invalid_numbers: bool,
    sink: &'k mut S,
}

impl<'s, S: Sink> Reader<'s, '_, S> {
    /// The byte at `p`; 0 past the end (a NUL ends the text as the end does).
    fn byte(&self, p: usize) -> u8 {
        self.text.get(p).copied().unwrap_or(0)
    }

    /// The next token and the offset where it starts (for an error: where the error is).
    fn token(&mut self) -> (Token<'s>, usize) {
        loop {
            match self.byte(self.pos) {
                b'\n' => {
                    self.line += 1;
                    self.line_start = self.pos + 1;
                }
                b' ' | b'\t' | b'\r' => {}
                _ => break,
            }
            self.pos += 1;
        }
        let at = self.pos;
        let single = match self.byte(at) {
            0 => return (Token::End, at),
            b'{' => Token::ObjBegin,
            b'}' => Token::ObjEnd,
            b'[' => Token::ArrBegin,
            b']' => Token::ArrEnd,
            b',' => Token::Comma,
            b':' => Token::Colon,
            b'"' => return self.string_token(),
            _ if self.number_starts(at) => return (self.number_token(), at),
            _ => return (self.word_token(), at),
        };
        self.pos += 1;
        (single, at)
    }

    /// `true`, `false`, `null`, or a non-finite number's word.
    fn word_token(&mut self) -> Token<'s> {
        let rest = &self.text[self.pos..];
        let words: [(&[u8], Token<'s>); 3] =
            [(b"true", Token::Boolean(true)), (b"false", Token::Boolean(false)), (b"null", Token::Null)];
        for (word, token) in words {
            if rest.starts_with(word) {
                self.pos += word.len();
                return token;
            }
        }
        if self.invalid_numbers {
            for (prefix, len, n) in NON_FINITE {
                if rest.starts_with(prefix) {
                    // (Past the end, where lua-cjson reads beyond its buffer, the end.)
                    self.pos = (self.pos + len).min(self.text.len());
                    return Token::Number(n);
                }
            }
        }
        Token::Error("invalid token")
    }

    /// Whether a number starts at `p` as strict JSON starts one: an optional `-`,
    /// then a digit, and no leading zero or hex prefix.
    fn number_starts(&self, mut p: usize) -> bool {
        if self.byte(p) == b'-' {
            p += 1;
        }
        match self.byte(p) {
            b'0' => !matches!(self.byte(p + 1), b'x' | b'X' | b'0'..=b'9'),
            b => b.is_ascii_digit(),
        }
    }

    fn digits_from(&self, p: usize) -> usize {
        self.text[p.min(self.text.len())..].iter().take_while(|b| b.is_ascii_digit()).count()
    }

    fn number_token(&mut self) -> Token<'s> {
        let start = self.pos;
        let negative = self.byte(start) == b'-';
        let digits_at = start + usize::from(negative);
        let digits = self.digits_from(digits_at);
        let int_end = digits_at + digits;
        if matches!(self.byte(int_end), b'.' | b'e' | b'E') {
            // strtod: the longest prefix that reads as a number.
            let mut end = int_end;
            let mut literal = self.text[start..int_end].to_vec();
            if self.byte(end) == b'.' {
                let frac = self.digits_from(end + 1);
                literal.push(b'.');
                literal.extend_from_slice(&self.text[end + 1..end + 1 + frac]);
                if frac == 0 {
                    literal.push(b'0');
                }
                end += 1 + frac;
            }
            if matches!(self.byte(end), b'e' | b'E') {
                let sign = usize::from(matches!(self.byte(end + 1), b'-' | b'+'));
                let exp = self.digits_from(end + 1 + sign);
                if exp > 0 {
                    literal.extend_from_slice(&self.text[end..end + 1 + sign + exp]);
                    end += 1 + sign + exp;
                }
            }
            self.pos = end;
            let n = std::str::from_utf8(&literal).ok().and_then(|s| s.parse().ok()).unwrap_or(f64::NAN);
            return Token::Number(n);
        }
        self.pos = int_end;
        let text = &self.text[digits_at..int_end];
        // Saturating at u64's greatest value; the sign decides the type below.
        let magnitude =
            text.iter().try_fold(0u64, |v, d| v.checked_mul(10)?.checked_add(u64::from(d - b'0'))).unwrap_or(u64::MAX);
        if negative {
            if magnitude >= BIG_INTEGER {
                let n = if magnitude >= 1 << 63 { i64::MIN } else { -magnitude.cast_signed() };
                return Token::Integer(Integer::Signed64(n));
            }
            // strtoll reads -0 as 0.
            return Token::Integer(Integer::Small(-magnitude.cast_signed()));
        }
        if digits > 19 || (digits == 19 && magnitude >= i64::MAX.cast_unsigned()) {
            return Token::Integer(Integer::Unsigned64(magnitude));
        }
        if magnitude >= BIG_INTEGER {
            return Token::Integer(Integer::Signed64(magnitude.cast_signed()));
        }
        Token::Integer(Integer::Small(magnitude.cast_signed()))
    }

    /// Four hex digits at `p`, if there are.
    fn hex4(&self, p: usize) -> Option<u32> {
        let digits = self.text.get(p..p + 4)?;
        digits.iter().try_fold(0u32, |v, &d| Some(v * 16 + char::from(d).to_digit(16)?))
    }

    fn string_token(&mut self) -> (Token<'s>, usize) {
        let start = self.pos;
        self.pos += 1;
        let stop = |b: &u8| matches!(b, b'"' | b'\\' | 0);
        // (Most strings have no escape: their text as it is.)
        let close = self.text[self.pos..].iter().position(stop).map_or(self.text.len(), |i| self.pos + i);
        if self.byte(close) == b'"' {
            let text = &self.text[self.pos..close];
            self.pos = close + 1;
            return (Token::Str(Cow::Borrowed(text)), start);
        }
        let mut out = Vec::with_capacity(close - self.pos + 16);
        loop {
            let q = self.text[self.pos..].iter().position(stop).map_or(self.text.len(), |i| self.pos + i);
            out.extend_from_slice(&self.text[self.pos..q]);
            self.pos = q;
            match self.byte(q) {
                b'"' => {
                    self.pos += 1;
                    return (Token::Str(Cow::Owned(out)), start);
                }
                0 => return (Token::Error("unexpected end of string"), self.pos),
                _ => {}
            }
            let escaped = match self.byte(self.pos + 1) {
                b'u' => {
                    let Some((cp, len)) = self.unicode_escape() else {
                        return (Token::Error("invalid unicode escape code"), self.pos);
                    };
                    let c = char::from_u32(cp).unwrap_or(char::REPLACEMENT_CHARACTER);
                    out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                    self.pos += len;
                    continue;
                }
                b'"' => b'"',
                b'\\' => b'\\',
                b'/' => b'/',
                b'b' => 0x08,
                b't' => b'\t',
                b'n' => b'\n',
                b'f' => 0x0c,
                b'r' => b'\r',
                _ => return (Token::Error("invalid escape code"), self.pos),
            };
            out.push(escaped);
            self.pos += 2;
        }
    }

    /// The code point of the `\u` escape at `pos` (a high surrogate with the low
    /// one escaped right after it) and the escape's length.
    fn unicode_escape(&self) -> Option<(u32, usize)> {
        let cp = self.hex4(self.pos + 2)?;
        if !(0xD800..0xE000).contains(&cp) {
            return Some((cp, 6));
        }
        if cp >= 0xDC00 || self.byte(self.pos + 6) != b'\\' || self.byte(self.pos + 7) != b'u' {
            return None;
        }
        let low = self.hex4(self.pos + 8).filter(|low| (0xDC00..0xE000).contains(low))?;
        Some(((cp - 0xD800) * 1024 + (low - 0xDC00) + 0x10000, 12))
    }

    fn fail(&self, expected: &str, found: &Token<'_>, at: usize) -> DecodeError<S::Error> {
        DecodeError::Refused(format!(
            "Expected {expected} but found {} on line {} at character {}",
            found.name(),
            self.line,
            at - self.line_start + 1
        ))
    }

    /// Enters a container: one level deeper, its stack slots taken.
    fn descend(&mut self, array: bool) -> Result<(), DecodeError<S::Error>> {
        self.depth += 1;
        self.slots += if array { 1 } else { 2 };
        if self.depth > self.max_depth.min(MAX_NESTING) || self.slots > STACK_SLOTS {
            return Err(DecodeError::Refused(format!(
                "Found too many nested data structures ({}) on line {} at character {}",
                self.depth,
                self.line,
                self.pos - self.line_start
            )));
        }
        Ok(())
    }

    /// Leaves a container [`Self::descend`] entered.
    fn ascend(&mut self, array: bool) {
        self.depth -= 1;
        self.slots -= if array { 1 } else { 2 };
    }

    fn value(&mut self, token: Token<'s>, at: usize) -> Result<S::Value, DecodeError<S::Error>> {
        Ok(match token {
            Token::Str(s) => self.sink.string(&s)?,
            Token::Integer(n) => self.sink.integer(n)?,
            Token::Boolean(b) => self.sink.boolean(b)?,
            Token::Null => self.sink.null()?,
            Token::Number(n) => {
                if !self.invalid_numbers && !n.is_finite() {
                    return Err(DecodeError::Refused("number must not be NaN or Inf".into()));
                }
                self.sink.number(n)?
            }
            Token::ObjBegin => self.object()?,
            Token::ArrBegin => self.array()?,
            other => return Err(self.fail("value", &other, at)),
        })
    }

    /// After a member or an element: whether the container closed (past a comma, no).
    fn closed(&mut self, array: bool) -> Result<bool, DecodeError<S::Error>> {
        let (token, at) = self.token();
        match (token, array) {
            (Token::ObjEnd, false) | (Token::ArrEnd, true) => {
                self.ascend(array);
                Ok(true)
            }
            (Token::Comma, _) => Ok(false),
            (other, _) => Err(self.fail(if array { "comma or array end" } else { "comma or object end" }, &other, at)),
        }
    }

    /// Opens a container: its table, and its first token unless it closes at once.
    #[allow(clippy::type_complexity, reason = "a table and an optional token")]
    fn open(&mut self, array: bool) -> Result<(S::Table, Option<(Token<'s>, usize)>), DecodeError<S::Error>> {
        let t = self.sink.table(array)?;
        self.descend(array)?;
        let (token, at) = self.token();
        if matches!((&token, array), (Token::ObjEnd, false) | (Token::ArrEnd, true)) {
            self.ascend(array);
            return Ok((t, None));
        }
        Ok((t, Some((token, at))))
    }

    fn object(&mut self) -> Result<S::Value, DecodeError<S::Error>> {
        let (t, first) = self.open(false)?;
        let Some((mut token, mut at)) = first else { return Ok(self.sink.finish(t)) };
        loop {
            let Token::Str(key) = token else { return Err(self.fail("object key string", &token, at)) };
            let (colon, colon_at) = self.token();
            if !matches!(colon, Token::Colon) {
                return Err(self.fail("colon", &colon, colon_at));
            }
            let (next, next_at) = self.token();
            let v = self.value(next, next_at)?;
            self.sink.set_field(&t, &key, v)?;
            if self.closed(false)? {
                return Ok(self.sink.finish(t));
            }
            (token, at) = self.token();
        }
    }

    fn array(&mut self) -> Result<S::Value, DecodeError<S::Error>> {
        let (t, first) = self.open(true)?;
        let Some((mut token, mut at)) = first else { return Ok(self.sink.finish(t)) };
        let mut n = 0;
        loop {
            n += 1;
            let v = self.value(token, at)?;
            self.sink.set_index(&t, n, v)?;
            if self.closed(true)? {
                return Ok(self.sink.finish(t));
            }
            (token, at) = self.token();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// A plain tree, to check the reader without Lua.
    #[derive(Debug, Clone, PartialEq)]
    enum V {
        S(Vec<u8>),
        N(f64),
        I(Integer),
        B(bool),
        Null,
        Obj(Rc<RefCell<Vec<(V, V)>>>),
        Arr(Rc<RefCell<Vec<(usize, V)>>>),
    }

    struct Tree;

    impl Sink for Tree {
        type Value = V;
        type Table = V;
        type Error = ();
        fn string(&mut self, bytes: &[u8]) -> Result<V, ()> {
            Ok(V::S(bytes.to_vec()))
        }
        fn number(&mut self, n: f64) -> Result<V, ()> {
            Ok(V::N(n))
        }
        fn integer(&mut self, n: Integer) -> Result<V, ()> {
            Ok(V::I(n))
        }
        fn boolean(&mut self, b: bool) -> Result<V, ()> {
            Ok(V::B(b))
        }
        fn null(&mut self) -> Result<V, ()> {
            Ok(V::Null)
        }
        fn table(&mut self, array: bool) -> Result<V, ()> {
            Ok(if array { V::Arr(Rc::default()) } else { V::Obj(Rc::default()) })
        }
        fn set_field(&mut self, t: &V, key: &[u8], v: V) -> Result<(), ()> {
            let V::Obj(members) = t else { return Err(()) };
            members.borrow_mut().push((V::S(key.to_vec()), v));
            Ok(())
        }
        fn set_index(&mut self, t: &V, index: usize, v: V) -> Result<(), ()> {
            let V::Arr(items) = t else { return Err(()) };
            items.borrow_mut().push((index, v));
            Ok(())
        }
        fn finish(&mut self, t: V) -> V {
            t
        }
    }

    fn ok(text: &str) -> V {
        decode(text.as_bytes(), 128, true, &mut Tree).unwrap()
    }

    fn err(text: &str) -> String {
        match decode(text.as_bytes(), 128, false, &mut Tree) {
            Err(DecodeError::Refused(m)) => m,
            other => panic!("{text}: {other:?}"),
        }
    }

    fn s(text: &str) -> V {
        V::S(text.as_bytes().to_vec())
    }

    #[test]
    fn scalars_decode_as_lua_cjson_reads_them() {
        assert_eq!(ok(" \"a\\u00e9\\n\" "), s("a\u{e9}\n"));
        assert_eq!(ok("\"\\ud83d\\ude00\""), s("\u{1F600}"));
        assert_eq!(ok("1.5"), V::N(1.5));
        assert_eq!(ok("1.e2"), V::N(100.0));
        assert_eq!(ok("-0"), V::I(Integer::Small(0)));
        assert_eq!(ok("99999999999999"), V::I(Integer::Small(99_999_999_999_999)));
        assert_eq!(ok("100000000000000"), V::I(Integer::Signed64(100_000_000_000_000)));
        assert_eq!(ok("-100000000000000"), V::I(Integer::Signed64(-100_000_000_000_000)));
        assert_eq!(ok("9223372036854775806"), V::I(Integer::Signed64(i64::MAX - 1)));
        assert_eq!(ok("9223372036854775807"), V::I(Integer::Unsigned64(i64::MAX.cast_unsigned())));
        assert_eq!(ok("99999999999999999999999"), V::I(Integer::Unsigned64(u64::MAX)));
        assert_eq!(ok("-99999999999999999999999"), V::I(Integer::Signed64(i64::MIN)));
        assert_eq!(ok("-inf"), V::N(f64::NEG_INFINITY));
        let V::Arr(items) = ok("[-na]]") else { panic!() };
        assert!(matches!(items.borrow()[0], (1, V::N(n)) if n.is_nan()), "lua-cjson reads -na and a byte as NaN");
        assert_eq!(ok("null"), V::Null);
        assert_eq!(ok("true\0garbage"), V::B(true));
        assert_eq!(ok("1"), V::I(Integer::Small(1)));
    }

    #[test]
    fn containers_keep_document_order_and_duplicates() {
        let V::Obj(members) = ok("{\"a\": [1, {}], \"a\": false}") else { panic!() };
        let members = members.borrow();
        assert_eq!(members.len(), 2);
        assert_eq!(members[1], (s("a"), V::B(false)));
        let V::Arr(items) = &members[0].1 else { panic!() };
        assert_eq!(items.borrow()[0], (1, V::I(Integer::Small(1))));
    }

    #[test]
    fn malformed_text_gets_lua_cjson_messages() {
        assert_eq!(err("[1,]"), "Expected value but found T_ARR_END on line 1 at character 4");
        assert_eq!(err("{\"a\" 1}"), "Expected colon but found T_INT on line 1 at character 6");
        assert_eq!(err("{1: 2}"), "Expected object key string but found T_INT on line 1 at character 2");
        assert_eq!(err("[1 2]"), "Expected comma or array end but found T_INT on line 1 at character 4");
        assert_eq!(err("\n\n  [01]"), "Expected value but found invalid token on line 3 at character 4");
        assert_eq!(err("1 2"), "Expected the end but found T_INT on line 1 at character 3");
        assert_eq!(err(""), "Expected value but found T_END on line 1 at character 1");
        assert_eq!(err("\"ab"), "Expected value but found unexpected end of string on line 1 at character 4");
        assert_eq!(err("\"\\x\""), "Expected value but found invalid escape code on line 1 at character 2");
        assert_eq!(err("\"\\udc00\""), "Expected value but found invalid unicode escape code on line 1 at character 2");
        assert_eq!(err("nan"), "Expected value but found invalid token on line 1 at character 1");
        assert_eq!(err("1e999"), "number must not be NaN or Inf");
        assert_eq!(err("1\0"), "JSON parser does not support UTF-16 or UTF-32");
        assert_eq!(err("\0"), "Expected value but found T_END on line 1 at character 1");
    }

    #[test]
    fn objects_nest_at_most_3999_deep_and_arrays_5000_whatever_the_option() {
        let nested = |n: usize| format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n));
        assert!(decode(nested(3999).as_bytes(), usize::MAX, true, &mut Tree).is_ok());
        match decode(nested(4000).as_bytes(), usize::MAX, true, &mut Tree) {
            Err(DecodeError::Refused(m)) => {
                assert!(m.starts_with("Found too many nested data structures (4000)"), "{m}")
            }
            other => panic!("{other:?}"),
        }
        let arrays = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(decode(arrays(5000).as_bytes(), usize::MAX, true, &mut Tree).is_ok());
        assert!(decode(arrays(5001).as_bytes(), usize::MAX, true, &mut Tree).is_err());
    }

    #[test]
    fn nesting_beyond_the_limit_is_refused_where_it_starts() {
        match decode(b"[[[1]]]", 2, true, &mut Tree) {
            Err(DecodeError::Refused(m)) => {
                assert_eq!(m, "Found too many nested data structures (3) on line 1 at character 3");
            }
            other => panic!("{other:?}"),
        }
    }
}
