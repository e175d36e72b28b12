//! A JSON path inside a tuple field, as an index part names one (`.k`,
//! `[2]`, `.deep.x`, `["q r"]`, `.items[*].sku`): its steps, how to follow them in
//! a value, and how 2.6 names the place in errors (`[2]["k"][3]`, `[3][*]["sku"]`).

use super::json_path::{Lexer, Token};
use crate::protocol::msgpack::{MpType, Reader};

/// One step into a value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Step {
    /// A map's value by key.
    Key(Box<[u8]>),
    /// An array's element, 0-based.
    Index(u32),
    /// Every element of an array (`[*]`: a multikey index).
    Any,
}

impl Step {
    /// The container type the step needs.
    #[must_use]
    pub fn container(&self) -> MpType {
        match self {
            Self::Key(_) => MpType::Map,
            Self::Index(_) | Self::Any => MpType::Array,
        }
    }
}

/// A parsed path, with its text as the index definition stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath {
    text: Box<str>,
    steps: Box<[Step]>,
}

/// What following a path in a value found.
#[derive(Debug, PartialEq, Eq)]
pub enum Found<'t> {
    /// The value at the end of the path.
    Value(&'t [u8]),
    /// A step's key or index is not there.
    Missing,
    /// The value after `depth` steps is not the container the next step needs
    /// (`depth` 0 is the field itself); `at` is where that value starts in the field.
    NotContainer { depth: usize, at: usize },
}

/// Why a path is not one an index part may have.
#[derive(Debug, PartialEq, Eq)]
pub enum PathError {
    /// Not a JSON path, or an empty one.
    Invalid,
    /// More than one `[*]` step.
    TwoPlaceholders,
}

impl FieldPath {
    /// Parses a part's path.
    ///
    /// # Errors
    /// [`PathError`] for an invalid path or one with two `[*]` steps.
    pub fn parse(text: &str) -> Result<Self, PathError> {
        let mut lexer = Lexer::new(text.as_bytes());
        let mut steps = Vec::new();
        loop {
            match lexer.next_token().map_err(|_| PathError::Invalid)? {
                Token::End => break,
                Token::Num(n) => steps.push(Step::Index(n)),
                Token::Str(key) => steps.push(Step::Key(key.into())),
                Token::Any if steps.contains(&Step::Any) => return Err(PathError::TwoPlaceholders),
                Token::Any => steps.push(Step::Any),
            }
        }
        if steps.is_empty() {
            return Err(PathError::Invalid);
        }
        Ok(Self { text: text.into(), steps: steps.into() })
    }

    /// The path as the index definition gives it.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The steps.
    #[must_use]
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The steps before and after the `[*]` one, for a multikey path.
    #[must_use]
    pub fn split_at_any(&self) -> Option<(&[Step], &[Step])> {
        let at = self.steps.iter().position(|s| *s == Step::Any)?;
        Some((&self.steps[..at], &self.steps[at + 1..]))
    }

    /// Follows the path in `field`, a field's value (a path without `[*]`).
    #[must_use]
    pub fn find<'t>(&self, field: &'t [u8]) -> Found<'t> {
        find(&self.steps, field)
    }
}

/// Follows `steps` (none of them `[*]`) in `field`.
#[must_use]
pub fn find<'t>(steps: &[Step], field: &'t [u8]) -> Found<'t> {
    let mut value = field;
    for (depth, step) in steps.iter().enumerate() {
        let next = match step {
            Step::Key(key) => map_value(value, key),
            Step::Index(n) => array_element(value, *n),
            Step::Any => Err(()),
        };
        value = match next {
            Ok(Some(v)) => v,
            Ok(None) => return Found::Missing,
            Err(()) => {
                let at = (value.as_ptr() as usize).saturating_sub(field.as_ptr() as usize);
                return Found::NotContainer { depth, at };
            }
        };
    }
    Found::Value(value)
}

/// How 2.6 names the place `steps` leads to in field `field_no` (0-based): the
/// field's number alone, or `[N]` and each step (`["key"]`, `[n]`, 1-based).
#[must_use]
pub fn label(field_no: u32, steps: &[Step]) -> String {
    if steps.is_empty() {
        return (field_no + 1).to_string();
    }
    let mut out = format!("[{}]", field_no + 1);
    for step in steps {
        match step {
            Step::Key(key) => out.push_str(&format!("[\"{}\"]", String::from_utf8_lossy(key))),
            Step::Index(n) => out.push_str(&format!("[{}]", n + 1)),
            Step::Any => out.push_str("[*]"),
        }
    }
    out
}

/// A map's pair as (its key and value bytes, its value bytes).
pub(crate) type Pair<'t> = (&'t [u8], &'t [u8]);

/// A map's pair with the string key `key` (the key and value bytes) and its value:
/// `Err` when `value` is not a map.
///
/// # Errors
/// `value` is not a map (or not MessagePack).
pub(crate) fn map_pair<'t>(value: &'t [u8], key: &[u8]) -> Result<Option<Pair<'t>>, ()> {
    let mut r = Reader::new(value);
    if r.peek_type().map_err(|_| ())? != MpType::Map {
        return Err(());
    }
    let n = r.read_map_len().map_err(|_| ())?;
    for _ in 0..n {
        let start = r.position();
        let found = if r.peek_type().map_err(|_| ())? == MpType::Str {
            r.read_str().map_err(|_| ())? == key
        } else {
            r.skip().map_err(|_| ())?;
            false
        };
        let v = r.skip().map_err(|_| ())?;
        if found {
            return Ok(Some((value.get(start..r.position()).unwrap_or_default(), v)));
        }
    }
    Ok(None)
}

fn map_value<'t>(value: &'t [u8], key: &[u8]) -> Result<Option<&'t [u8]>, ()> {
    map_pair(value, key).map(|found| found.map(|(_, v)| v))
}

/// An array's element: `Err` when `value` is not an array.
///
/// # Errors
/// `value` is not an array (or not MessagePack).
pub(crate) fn array_element(value: &[u8], n: u32) -> Result<Option<&[u8]>, ()> {
    let mut r = Reader::new(value);
    if r.peek_type().map_err(|_| ())? != MpType::Array {
        return Err(());
    }
    let len = r.read_array_len().map_err(|_| ())?;
    if n >= len {
        return Ok(None);
    }
    for _ in 0..n {
        r.skip().map_err(|_| ())?;
    }
    r.skip().map(Some).map_err(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_followed_and_named_as_tarantool_names_it() {
        // [1, {"k": 5, "deep": [7, 8]}] as the field {"k": 5, "deep": [7, 8]}.
        let field = [0x82, 0xa1, b'k', 0x05, 0xa4, b'd', b'e', b'e', b'p', 0x92, 0x07, 0x08];
        let path = FieldPath::parse(".deep[2]").unwrap();
        assert_eq!(path.find(&field), Found::Value(&[0x08][..]));
        assert_eq!(FieldPath::parse("k").unwrap().find(&field), Found::Value(&[0x05][..]));
        assert_eq!(FieldPath::parse(".deep[3]").unwrap().find(&field), Found::Missing);
        assert_eq!(FieldPath::parse(".k.x").unwrap().find(&field), Found::NotContainer { depth: 1, at: 3 });
        assert_eq!(label(1, path.steps()), "[2][\"deep\"][2]");
        assert_eq!(label(1, &[]), "2");
        assert_eq!(FieldPath::parse("..k"), Err(PathError::Invalid));
        assert_eq!(FieldPath::parse("[*][*]"), Err(PathError::TwoPlaceholders));
        let multikey = FieldPath::parse(".items[*].sku").unwrap();
        let (before, after) = multikey.split_at_any().unwrap();
        assert_eq!((before.len(), after.len()), (1, 1));
        assert_eq!(label(2, multikey.steps()), "[3][\"items\"][*][\"sku\"]");
    }
}
