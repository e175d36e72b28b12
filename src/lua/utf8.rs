//! `box.internal.utf8`: the byte-level work of Tarantool's `utf8` module
//! (`lua/utf8.lua` checks arguments and words the errors).
//!
//! Strings are walked as ICU's UTF-8 macros walk them, which 2.6 uses: an
//! ill-formed sequence counts as one character that spans its maximal valid
//! prefix (at least one byte), as Unicode recommends and as Rust's decoder
//! reports it. Character classes are ICU's: `isupper` is general category Lu,
//! `islower` Ll, `isalpha` any letter (L*), `isdigit` Nd.

use std::cmp::Ordering;

use mlua::{Lua, LuaString, Table, Value};
use unicode_general_category::{get_general_category, GeneralCategory};

use crate::engine::value::Collation;

/// The character starting at byte `at` of `s`: its code point (None when
/// ill-formed) and the byte after it. `at` must be inside `s`.
fn next_char(s: &[u8], at: usize) -> (Option<char>, usize) {
    let rest = &s[at..];
    match std::str::from_utf8(&rest[..rest.len().min(4)]) {
        Ok(text) => text.chars().next().map_or((None, at + 1), |c| (Some(c), at + c.len_utf8())),
        Err(e) if e.valid_up_to() > 0 => {
            let c = std::str::from_utf8(&rest[..e.valid_up_to()]).ok().and_then(|t| t.chars().next());
            c.map_or((None, at + 1), |c| (Some(c), at + c.len_utf8()))
        }
        Err(e) => (None, at + e.error_len().unwrap_or(rest.len().min(4)).max(1)),
    }
}

/// The start of the character that ends just before byte `at` (`at` > 0).
fn previous_start(s: &[u8], at: usize) -> usize {
    let mut start = at - 1;
    while start > 0 && at - start < 4 && s[start] & 0xc0 == 0x80 {
        start -= 1;
    }
    // Only a lead byte whose character ends exactly at `at` owns the trail bytes.
    if next_char(s, start).1 == at {
        start
    } else {
        at - 1
    }
}

/// `n` characters on from byte `at` (stopping at the end).
fn forward(s: &[u8], mut at: usize, n: i64) -> usize {
    for _ in 0..n.max(0) {
        if at >= s.len() {
            break;
        }
        at = next_char(s, at).1;
    }
    at
}

/// `n` characters back from byte `at` (stopping at the start).
fn back(s: &[u8], mut at: usize, n: i64) -> usize {
    for _ in 0..n.max(0) {
        if at == 0 {
            break;
        }
        at = previous_start(s, at);
    }
    at
}

/// A 1-based byte position, negative from the end, as a non-negative one (0
/// when it is before the start).
fn byte_position(pos: i64, len: usize) -> i64 {
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    if pos >= 0 {
        pos
    } else if -pos > len {
        0
    } else {
        len + pos + 1
    }
}

/// `utf8.len`: the count of characters from byte `i` to byte `j`, or the
/// 1-based byte where an ill-formed one ends (Err(Some)), or the position being
/// out of the string (Err(None)).
fn len(s: &[u8], i: i64, j: i64) -> Result<i64, Option<usize>> {
    let start = byte_position(i, s.len());
    let end = byte_position(j, s.len());
    let total = i64::try_from(s.len()).unwrap_or(i64::MAX);
    if start < 1 || start - 1 > total || end > total {
        return Err(None);
    }
    let (mut at, end) = (usize::try_from(start - 1).unwrap_or(0), usize::try_from(end).unwrap_or(0));
    let mut count = 0;
    while at < end {
        count += 1;
        let (c, after) = next_char(s, at);
        at = after;
        if c.is_none() {
            return Err(Some(at));
        }
    }
    Ok(count)
}

/// `utf8.sub`: the byte range of characters `i` to `j` (1-based, negative from the end).
fn sub(s: &[u8], i: i64, j: i64) -> (usize, usize) {
    let i = if i > 0 { i - 1 } else { i };
    let (start, end) = if i >= 0 {
        let start = forward(s, 0, i);
        let end = if j >= 0 { forward(s, start, j - i) } else { back(s, s.len(), -(j + 1)) };
        (start, end)
    } else if j < 0 {
        let end = back(s, s.len(), -(j + 1));
        (back(s, end, j - i + 1), end)
    } else {
        (back(s, s.len(), -i), forward(s, 0, j))
    };
    (start, end.max(start))
}

/// ICU's U8_APPEND_UNSAFE: any 32-bit value written as one to four bytes, unchecked.
fn append_unchecked(out: &mut Vec<u8>, code: u32) {
    #[allow(clippy::cast_possible_truncation, reason = "byte by byte, as ICU writes them")]
    match code {
        0..=0x7f => out.push(code as u8),
        0x80..=0x7ff => out.extend([(code >> 6) as u8 | 0xc0, (code & 0x3f) as u8 | 0x80]),
        0x800..=0xffff => {
            out.extend([(code >> 12) as u8 | 0xe0, ((code >> 6) & 0x3f) as u8 | 0x80, (code & 0x3f) as u8 | 0x80]);
        }
        _ => out.extend([
            (code >> 18) as u8 | 0xf0,
            ((code >> 12) & 0x3f) as u8 | 0x80,
            ((code >> 6) & 0x3f) as u8 | 0x80,
            (code & 0x3f) as u8 | 0x80,
        ]),
    }
}

/// Upper or lower case of the well-formed parts of `s`; ill-formed bytes stay.
fn to_case(s: &[u8], upper: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    for chunk in s.utf8_chunks() {
        let valid = chunk.valid();
        out.extend_from_slice(if upper { valid.to_uppercase() } else { valid.to_lowercase() }.as_bytes());
        out.extend_from_slice(chunk.invalid());
    }
    out
}

/// Whether code point `code` is of ICU's class `class` ("upper", "lower", "alpha", "digit").
fn is_class(code: i64, class: &[u8]) -> bool {
    let Some(c) = u32::try_from(code).ok().and_then(char::from_u32) else {
        return false;
    };
    let category = get_general_category(c);
    match class {
        b"upper" => category == GeneralCategory::UppercaseLetter,
        b"lower" => category == GeneralCategory::LowercaseLetter,
        b"digit" => category == GeneralCategory::DecimalNumber,
        b"alpha" => matches!(
            category,
            GeneralCategory::UppercaseLetter
                | GeneralCategory::LowercaseLetter
                | GeneralCategory::TitlecaseLetter
                | GeneralCategory::ModifierLetter
                | GeneralCategory::OtherLetter
        ),
        _ => false,
    }
}

/// Builds the `box.internal.utf8` table.
pub fn create(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "case",
        lua.create_function(|lua, (s, upper): (LuaString, bool)| lua.create_string(to_case(&s.as_bytes(), upper)))?,
    )?;
    t.set(
        "len",
        lua.create_function(|lua, (s, i, j): (LuaString, i64, i64)| {
            Ok(match len(&s.as_bytes(), i, j) {
                Ok(n) => (Value::Integer(n), Value::Nil),
                Err(Some(at)) => (Value::Nil, Value::Integer(i64::try_from(at).unwrap_or(i64::MAX))),
                Err(None) => (Value::Nil, Value::String(lua.create_string("position is out of string")?)),
            })
        })?,
    )?;
    t.set(
        "next",
        lua.create_function(|_, (s, pos): (LuaString, i64)| {
            let s = s.as_bytes();
            let at = usize::try_from((byte_position(pos, s.len()) - 1).max(0)).unwrap_or(usize::MAX);
            if at >= s.len() {
                return Ok((None, None));
            }
            let (c, after) = next_char(&s, at);
            Ok(c.map_or((None, None), |c| (Some(after + 1), Some(u32::from(c)))))
        })?,
    )?;
    t.set(
        "sub",
        lua.create_function(|lua, (s, i, j): (LuaString, i64, i64)| {
            let bytes = s.as_bytes();
            let (start, end) = sub(&bytes, i, j);
            lua.create_string(&bytes[start..end])
        })?,
    )?;
    t.set(
        "char",
        lua.create_function(|lua, codes: mlua::Variadic<i64>| {
            let mut out = Vec::with_capacity(codes.len() * 4);
            for code in codes.iter() {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a C int, as ICU takes it")]
                append_unchecked(&mut out, *code as i32 as u32);
            }
            lua.create_string(out)
        })?,
    )?;
    t.set(
        "is",
        lua.create_function(|_, (class, s): (LuaString, Value)| {
            Ok(match s {
                Value::String(s) => {
                    let bytes = s.as_bytes();
                    !bytes.is_empty() && {
                        let (c, after) = next_char(&bytes, 0);
                        after == bytes.len() && c.is_some_and(|c| is_class(i64::from(u32::from(c)), &class.as_bytes()))
                    }
                }
                Value::Integer(code) => is_class(code, &class.as_bytes()),
                _ => false,
            })
        })?,
    )?;
    t.set(
        "cmp",
        lua.create_function(|_, (a, b, caseless): (LuaString, LuaString, bool)| {
            let collation = if caseless { Collation::UnicodeCi } else { Collation::Unicode };
            Ok(match collation.compare(&a.as_bytes(), &b.as_bytes()) {
                Ordering::Less => -1,
                Ordering::Equal => 0,
                Ordering::Greater => 1,
            })
        })?,
    )?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ill_formed_sequence_is_one_character_as_long_as_its_valid_prefix() {
        assert_eq!(next_char(b"a", 0), (Some('a'), 1));
        assert_eq!(next_char("é".as_bytes(), 0), (Some('é'), 2));
        assert_eq!(next_char(b"\xff", 0), (None, 1));
        assert_eq!(next_char(b"\xe2\x82", 0), (None, 2), "a truncated three-byte character");
        assert_eq!(next_char(b"\xe2\x82a", 0), (None, 2));
        assert_eq!(next_char(b"\xc3\xa9\xff", 0), (Some('é'), 2));
        assert_eq!(len(b"a\xffb", 1, -1), Err(Some(2)));
        assert_eq!(len("привет".as_bytes(), 1, -1), Ok(6));
        assert_eq!(len(b"abc", 5, -1), Err(None));
        assert_eq!(len(b"abc", 4, -1), Ok(0));
    }

    #[test]
    fn sub_counts_characters_from_either_end() {
        let s = "привет".as_bytes();
        let pick = |i, j| {
            let (a, b) = sub(s, i, j);
            String::from_utf8(s[a..b].to_vec()).unwrap()
        };
        assert_eq!(pick(1, 3), "при");
        assert_eq!(pick(-2, -1), "ет");
        assert_eq!(pick(2, -2), "риве");
        assert_eq!(pick(-3, 5), "ве");
        assert_eq!(pick(4, 2), "");
        assert_eq!(pick(0, 100), "привет");
    }

    #[test]
    fn char_writes_any_value_as_icu_does() {
        let mut out = Vec::new();
        for code in [0x48, 0x41f, 0x1f600] {
            append_unchecked(&mut out, code);
        }
        assert_eq!(String::from_utf8(out).unwrap(), "HП😀");
        let mut out = Vec::new();
        append_unchecked(&mut out, u32::MAX);
        assert_eq!(out, [0xff, 0xbf, 0xbf, 0xbf]);
    }

    #[test]
    fn classes_are_general_categories() {
        let class = |c: char, k: &[u8]| is_class(i64::from(u32::from(c)), k);
        assert!(class('A', b"upper") && !class('A', b"lower") && class('A', b"alpha"));
        assert!(class('я', b"lower") && class('٣', b"digit") && !class('Ⅻ', b"digit"));
        assert!(class('ǅ', b"alpha") && !class('ǅ', b"upper") && !class('ǅ', b"lower"));
        assert!(!is_class(-1, b"alpha") && !is_class(0x11_0000, b"alpha"));
    }
}
