//! Names of schema objects (spaces, indexes, fields, users, roles, functions,
//! sequences), checked as 2.6 checks them: at most [`NAME_MAX`] bytes, and an
//! identifier (its `identifier_check`): not empty, valid UTF-8, and no control
//! character, line or paragraph separator, unassigned code point or U+FFFD.

use unicode_general_category::{get_general_category, GeneralCategory};

use crate::error::{code, BoxError, BoxResult};

/// 2.6's BOX_NAME_MAX: the longest name, in bytes.
pub const NAME_MAX: usize = 65000;

/// 2.6's BOX_INVALID_NAME_MAX: how much of a name too long an error shows.
const SHOWN_MAX: usize = 64;

/// The first 64 bytes of a name too long, as 2.6's errors show it.
#[must_use]
pub fn shown(name: &[u8]) -> String {
    String::from_utf8_lossy(&name[..name.len().min(SHOWN_MAX)]).into_owned()
}

/// Whether `name` is longer than [`NAME_MAX`].
#[must_use]
pub fn too_long(name: &[u8]) -> bool {
    name.len() > NAME_MAX
}

/// ER_IDENTIFIER unless `name` is an identifier.
pub fn check(name: &[u8]) -> BoxResult<()> {
    if is_identifier(name) {
        return Ok(());
    }
    Err(BoxError::new(
        code::IDENTIFIER,
        format!(
            "Invalid identifier '{}' (expected printable symbols only or it is too long)",
            String::from_utf8_lossy(name)
        ),
    ))
}

fn is_identifier(name: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(name) else { return false };
    !text.is_empty()
        && text.chars().all(|c| {
            c != '\u{FFFD}'
                && !matches!(
                    get_general_category(c),
                    GeneralCategory::Unassigned
                        | GeneralCategory::LineSeparator
                        | GeneralCategory::Control
                        | GeneralCategory::ParagraphSeparator
                )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_printable_and_not_empty() {
        for ok in ["a", "a b", "таблица", "_x", "名前", "a-b.c"] {
            assert!(check(ok.as_bytes()).is_ok(), "{ok}");
        }
        for bad in [&b""[..], b"a\x01b", b"a\nb", b"\xff\xfe", "a\u{2028}".as_bytes(), "\u{FFFD}".as_bytes()] {
            let err = check(bad).unwrap_err();
            assert_eq!(err.code, code::IDENTIFIER, "{bad:?}");
        }
        assert_eq!(
            check(b"").unwrap_err().message,
            "Invalid identifier '' (expected printable symbols only or it is too long)"
        );
    }

    #[test]
    fn a_name_too_long_is_shown_by_its_first_64_bytes() {
        let name = vec![b'x'; NAME_MAX + 1];
        assert!(too_long(&name) && !too_long(&name[1..]));
        assert_eq!(shown(&name), "x".repeat(64));
    }
}
