//! Field types and key values with Tarantool's comparison rules.
//!
//! Numbers compare by value across unsigned, signed and floating encodings; a
//! `scalar` field orders values by class first: nil < boolean < number <
//! string < varbinary < extension. Strings under a unicode collation are held as
//! ICU's sort key, so equality and order follow the collation.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

use crate::decimal::{Decimal, MP_DECIMAL};
use crate::protocol::msgpack::{Integer, MpError, MpType, Reader};

/// A field type from a space format or an index part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    /// Anything.
    Any,
    /// Non-negative integers.
    Unsigned,
    /// Any integer.
    Integer,
    /// Integers and floating point.
    Number,
    /// Floating point only.
    Double,
    /// Strings.
    String,
    /// true/false.
    Boolean,
    /// Binary strings.
    Varbinary,
    /// Any non-container value.
    Scalar,
    /// Arrays.
    Array,
    /// Maps.
    Map,
    /// UUIDs (MP_EXT type 2, 16 bytes).
    Uuid,
    /// Decimals (MP_EXT type 1).
    Decimal,
}

impl FieldType {
    /// Parses a type name as Tarantool accepts it (including legacy `num`/`str`/`int`).
    #[must_use]
    pub fn parse(name: &[u8]) -> Option<Self> {
        let lower = name.to_ascii_lowercase();
        Some(match lower.as_slice() {
            b"any" | b"*" => Self::Any,
            b"unsigned" | b"num" | b"uint" => Self::Unsigned,
            b"integer" | b"int" => Self::Integer,
            b"number" => Self::Number,
            b"double" => Self::Double,
            b"string" | b"str" => Self::String,
            b"boolean" | b"bool" => Self::Boolean,
            b"varbinary" => Self::Varbinary,
            b"scalar" => Self::Scalar,
            b"array" => Self::Array,
            b"map" => Self::Map,
            b"uuid" => Self::Uuid,
            b"decimal" => Self::Decimal,
            _ => return None,
        })
    }

    /// The name used in error messages.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Any => "any",
            Self::Unsigned => "unsigned",
            Self::Integer => "integer",
            Self::Number => "number",
            Self::Double => "double",
            Self::String => "string",
            Self::Boolean => "boolean",
            Self::Varbinary => "varbinary",
            Self::Scalar => "scalar",
            Self::Array => "array",
            Self::Map => "map",
            Self::Uuid => "uuid",
            Self::Decimal => "decimal",
        }
    }

    /// Whether a value of type `ty` may be stored in a field of this type
    /// (`nullable`: also nil).
    #[must_use]
    pub fn admits(self, ty: ValueType, nullable: bool) -> bool {
        self.accepts(ty) || (ty.mp == MpType::Nil && nullable)
    }

    /// Whether a value of type `ty` fits this field type.
    #[must_use]
    pub fn accepts(self, value: ValueType) -> bool {
        let ty = value.mp;
        match self {
            Self::Any => true,
            Self::Unsigned => ty == MpType::Uint,
            Self::Integer => matches!(ty, MpType::Uint | MpType::Int),
            Self::Number => {
                matches!(ty, MpType::Uint | MpType::Int | MpType::Float | MpType::Double)
                    || value.ext == Some(MP_DECIMAL)
            }
            Self::Double => matches!(ty, MpType::Float | MpType::Double),
            Self::String => ty == MpType::Str,
            Self::Boolean => ty == MpType::Bool,
            Self::Varbinary => ty == MpType::Bin,
            Self::Scalar => !matches!(ty, MpType::Array | MpType::Map | MpType::Nil),
            Self::Array => ty == MpType::Array,
            Self::Map => ty == MpType::Map,
            Self::Uuid => value.ext == Some(UUID_EXT),
            Self::Decimal => value.ext == Some(MP_DECIMAL),
        }
    }

    /// Whether every value of type `other` is also of this type (2.6's
    /// `field_type1_contains_type2`).
    #[must_use]
    pub fn contains(self, other: Self) -> bool {
        use FieldType::{Any, Decimal, Double, Integer, Number, Scalar, Unsigned};
        match self {
            _ if self == other => true,
            Any => true,
            Integer => other == Unsigned,
            Number => matches!(other, Unsigned | Integer | Double | Decimal),
            Scalar => !matches!(other, Any | Self::Array | Self::Map),
            _ => false,
        }
    }

    /// Whether an index may be built over fields of this type.
    #[must_use]
    pub fn is_indexable(self) -> bool {
        !matches!(self, Self::Any | Self::Array | Self::Map)
    }
}

/// The MP_EXT type of a UUID.
pub const UUID_EXT: i8 = 2;

/// A value's type as field types tell values apart: its msgpack type and, for an
/// extension value, the extension's own type (a decimal is a number, a uuid is not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueType {
    /// The msgpack type.
    pub mp: MpType,
    /// The extension type of an MP_EXT value.
    pub ext: Option<i8>,
}

impl ValueType {
    /// The type of the msgpack value at the start of `raw`.
    ///
    /// # Errors
    /// When `raw` does not start with a msgpack value's header.
    pub fn of(raw: &[u8]) -> Result<Self, MpError> {
        let mut r = Reader::new(raw);
        let mp = r.peek_type()?;
        let ext = if mp == MpType::Ext { Some(r.read_ext()?.0) } else { None };
        Ok(Self { mp, ext })
    }
}

/// How strings of a key part compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Collation {
    /// Byte order.
    #[default]
    Binary,
    /// Unicode order (CLDR root, tertiary strength: case and accents count).
    Unicode,
    /// Unicode order on base letters only (primary strength: case and accents do not count).
    UnicodeCi,
    /// Another ICU collation of `_collation` (a locale's order, other options), by
    /// its slot in [`super::collations`].
    Icu(u32),
}

impl Collation {
    /// The collation with Tarantool's id, if oncebox implements it.
    #[must_use]
    pub fn from_id(id: u64) -> Option<Self> {
        match id {
            0 | 3 => Some(Self::Binary),
            1 => Some(Self::Unicode),
            2 => Some(Self::UnicodeCi),
            _ => u32::try_from(id).ok().and_then(super::collations::slot_of_id).map(Self::Icu),
        }
    }

    /// The collation with Tarantool's name.
    #[must_use]
    pub fn from_name(name: &[u8]) -> Option<Self> {
        match name {
            b"none" | b"binary" => Some(Self::Binary),
            b"unicode" => Some(Self::Unicode),
            b"unicode_ci" => Some(Self::UnicodeCi),
            _ => super::collations::slot_of_name(name).map(Self::Icu),
        }
    }

    /// Tarantool's id of this collation.
    #[must_use]
    pub fn id(self) -> u32 {
        match self {
            Self::Binary => 0,
            Self::Unicode => 1,
            Self::UnicodeCi => 2,
            Self::Icu(slot) => super::collations::id_of_slot(slot),
        }
    }

    /// Compares two strings in this collation's order.
    #[must_use]
    pub fn compare(self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        self.sort_key(a).cmp(&self.sort_key(b))
    }

    fn sort_key(self, s: &[u8]) -> Box<[u8]> {
        match self {
            Self::Binary => s.into(),
            Self::Unicode | Self::UnicodeCi => {
                let mut key = Vec::with_capacity(2 * s.len() + 8);
                // Writing to a Vec cannot fail.
                let Ok(()) = unicode_collator(self).write_sort_key_utf8_to(s, &mut key);
                key.into_boxed_slice()
            }
            Self::Icu(slot) => {
                let Some(collator) = super::collations::collator(slot) else { return s.into() };
                let mut key = Vec::with_capacity(2 * s.len() + 8);
                let Ok(()) = collator.write_sort_key_utf8_to(s, &mut key);
                key.into_boxed_slice()
            }
        }
    }
}

/// ICU's collator for a unicode collation, as 2.6 builds it: the CLDR root order
/// at tertiary strength (`unicode`: case and accents count) or primary
/// (`unicode_ci`: base letters only, so 'É' equals 'e'). Its sort keys compare
/// bytewise as the strings do under it, so keys hold them.
fn unicode_collator(collation: Collation) -> &'static icu_collator::CollatorBorrowed<'static> {
    use icu_collator::options::{CollatorOptions, Strength};
    use std::sync::OnceLock;
    static TERTIARY: OnceLock<icu_collator::CollatorBorrowed<'static>> = OnceLock::new();
    static PRIMARY: OnceLock<icu_collator::CollatorBorrowed<'static>> = OnceLock::new();
    let (cell, strength) = match collation {
        Collation::UnicodeCi => (&PRIMARY, Strength::Primary),
        _ => (&TERTIARY, Strength::Tertiary),
    };
    cell.get_or_init(|| {
        let mut options = CollatorOptions::default();
        options.strength = Some(strength);
        icu_collator::Collator::try_new(icu_collator::CollatorPreferences::default(), options)
            .expect("the root collation is compiled in")
    })
}

/// One part of an index key, ready to compare.
#[derive(Debug, Clone)]
pub enum KeyPart {
    /// nil (nullable parts only).
    Nil,
    /// A boolean.
    Bool(bool),
    /// A non-negative integer.
    Uint(u64),
    /// A negative integer.
    Neg(i64),
    /// A floating-point number.
    Double(f64),
    /// A string's sort key under the part's collation.
    Str(Box<[u8]>),
    /// Binary data.
    Bin(Box<[u8]>),
    /// A decimal (boxed: a key part stays three words).
    Dec(Box<Decimal>),
    /// An extension value (type, payload).
    Ext(i8, Box<[u8]>),
    /// Sorts after every value: used only to build range bounds.
    Max,
}

impl KeyPart {
    fn class(&self) -> u8 {
        match self {
            Self::Nil => 0,
            Self::Bool(_) => 1,
            Self::Uint(_) | Self::Neg(_) | Self::Double(_) | Self::Dec(_) => 2,
            Self::Str(_) => 3,
            Self::Bin(_) => 4,
            Self::Ext(..) => 5,
            Self::Max => 6,
        }
    }

    /// Reads one key value, checking it against the part type.
    ///
    /// Returns `Ok(None)` when the value's type does not fit the part.
    pub fn read(r: &mut Reader<'_>, ty: FieldType, coll: Collation, nullable: bool) -> Result<Option<Self>, MpError> {
        let mp = r.peek_type()?;
        let value = if mp == MpType::Ext { ValueType::of(r.rest())? } else { ValueType { mp, ext: None } };
        if mp == MpType::Nil {
            r.read_nil()?;
            return Ok(nullable.then_some(Self::Nil));
        }
        if !ty.accepts(value) {
            r.skip()?;
            return Ok(None);
        }
        Ok(Some(match mp {
            MpType::Bool => Self::Bool(r.read_bool()?),
            MpType::Uint | MpType::Int => match r.read_integer()? {
                Integer::Unsigned(u) => Self::Uint(u),
                Integer::Negative(i) => Self::Neg(i),
            },
            MpType::Float | MpType::Double => Self::Double(r.read_f64()?),
            MpType::Str => Self::Str(coll.sort_key(r.read_str()?)),
            MpType::Bin => Self::Bin(r.read_bin()?.into()),
            MpType::Ext => {
                let (t, payload) = r.read_ext()?;
                if t == MP_DECIMAL {
                    // A decimal is a number wherever it stands; one that does not decode is no value.
                    return Ok(Decimal::unpack(payload).map(|d| Self::Dec(Box::new(d))));
                }
                if ty == FieldType::Uuid && payload.len() != 16 {
                    return Ok(None);
                }
                Self::Ext(t, payload.into())
            }
            MpType::Nil | MpType::Array | MpType::Map => {
                r.skip()?;
                return Ok(None);
            }
        }))
    }
}

/// Compares a float with an unsigned integer exactly.
fn cmp_f64_u64(d: f64, u: u64) -> Ordering {
    if d.is_nan() {
        return Ordering::Less;
    }
    if d < 0.0 {
        return Ordering::Less;
    }
    if d >= 18_446_744_073_709_551_616.0 {
        return Ordering::Greater;
    }
    let t = d.trunc();
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "0 <= t < 2^64")]
    let ti = t as u64;
    ti.cmp(&u).then(if d > t { Ordering::Greater } else { Ordering::Equal })
}

/// Compares a float with a negative integer exactly.
fn cmp_f64_i64(d: f64, i: i64) -> Ordering {
    if d.is_nan() {
        return Ordering::Less;
    }
    if d >= 0.0 {
        return Ordering::Greater;
    }
    if d < -9_223_372_036_854_775_808.0 {
        return Ordering::Less;
    }
    let t = d.trunc();
    #[allow(clippy::cast_possible_truncation, reason = "-2^63 <= t < 0")]
    let ti = t as i64;
    ti.cmp(&i).then(if d < t { Ordering::Less } else { Ordering::Equal })
}

fn cmp_f64(a: f64, b: f64) -> Ordering {
    a.partial_cmp(&b).unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()).reverse())
}

impl Ord for KeyPart {
    fn cmp(&self, other: &Self) -> Ordering {
        use KeyPart::{Bin, Bool, Dec, Double, Ext, Neg, Str, Uint};
        match (self, other) {
            (Dec(a), Dec(b)) => a.compare(b),
            (Dec(a), Uint(u)) => a.compare(&Decimal::from_u64(*u)),
            (Uint(u), Dec(b)) => b.compare(&Decimal::from_u64(*u)).reverse(),
            (Dec(a), Neg(i)) => a.compare(&Decimal::from_i64(*i)),
            (Neg(i), Dec(b)) => b.compare(&Decimal::from_i64(*i)).reverse(),
            (Dec(a), Double(d)) => a.compare_f64(*d),
            (Double(d), Dec(b)) => b.compare_f64(*d).reverse(),
            (Uint(a), Uint(b)) => a.cmp(b),
            (Neg(a), Neg(b)) => a.cmp(b),
            (Uint(_), Neg(_)) => Ordering::Greater,
            (Neg(_), Uint(_)) => Ordering::Less,
            (Double(a), Double(b)) => cmp_f64(*a, *b),
            (Double(d), Uint(u)) => cmp_f64_u64(*d, *u),
            (Uint(u), Double(d)) => cmp_f64_u64(*d, *u).reverse(),
            (Double(d), Neg(i)) => cmp_f64_i64(*d, *i),
            (Neg(i), Double(d)) => cmp_f64_i64(*d, *i).reverse(),
            (Bool(a), Bool(b)) => a.cmp(b),
            (Str(a), Str(b)) | (Bin(a), Bin(b)) => a.cmp(b),
            (Ext(ta, a), Ext(tb, b)) => ta.cmp(tb).then_with(|| a.cmp(b)),
            _ => self.class().cmp(&other.class()),
        }
    }
}

impl PartialOrd for KeyPart {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for KeyPart {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for KeyPart {}

impl Hash for KeyPart {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Equal numbers must hash alike whatever their encoding.
        match self {
            Self::Uint(u) => i128::from(*u).hash(state),
            Self::Neg(i) => i128::from(*i).hash(state),
            Self::Double(d) => hash_f64(*d, state),
            Self::Dec(d) => match canonical_number(d) {
                CanonicalNumber::Integer(v) => v.hash(state),
                CanonicalNumber::Double(f) => hash_f64(f, state),
                CanonicalNumber::Decimal(text) => (7u8, text).hash(state),
            },
            Self::Nil => 0u8.hash(state),
            Self::Bool(b) => b.hash(state),
            Self::Str(s) => s.hash(state),
            Self::Bin(b) => (4u8, b).hash(state),
            Self::Ext(t, b) => (*t, b).hash(state),
            Self::Max => 255u8.hash(state),
        }
    }
}

fn hash_f64<H: Hasher>(d: f64, state: &mut H) {
    #[allow(clippy::cast_possible_truncation, reason = "integral value in i128 range")]
    if d.fract() == 0.0 && d.abs() < 1.8e19 {
        (d as i128).hash(state);
    } else {
        d.to_bits().hash(state);
    }
}

/// The form a decimal key takes where equal numbers must look alike (hashes,
/// storage keys): the integer or double it equals, else its digits.
#[derive(Debug, Clone, PartialEq)]
pub enum CanonicalNumber {
    /// An integer within the range of msgpack integers.
    Integer(i128),
    /// Not an integer, but equal to this double (as 2.6 compares them).
    Double(f64),
    /// Neither: its digits without trailing zeros.
    Decimal(String),
}

/// The canonical form of a decimal key part.
#[must_use]
pub fn canonical_number(d: &Decimal) -> CanonicalNumber {
    if let Some(v) = d.integer_value().filter(|v| (i128::from(i64::MIN)..=i128::from(u64::MAX)).contains(v)) {
        return CanonicalNumber::Integer(v);
    }
    let f = d.to_f64();
    if d.compare_f64(f) == Ordering::Equal {
        return CanonicalNumber::Double(f);
    }
    CanonicalNumber::Decimal(d.trim().to_string())
}

/// A full or partial key: one [`KeyPart`] per index part (one or two parts inline).
///
/// Ordered part by part, a prefix before the longer key, as a slice of parts is;
/// a one-part integer key (the commonest primary key) is compared without going
/// through the parts' general comparison, which index lookups do a few dozen times.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Key(pub smallvec::SmallVec<[KeyPart; 2]>);

impl Key {
    /// An empty key with room for `n` parts.
    #[must_use]
    pub fn with_capacity(n: usize) -> Self {
        Self(smallvec::SmallVec::with_capacity(n))
    }
}

impl From<smallvec::SmallVec<[KeyPart; 2]>> for Key {
    fn from(parts: smallvec::SmallVec<[KeyPart; 2]>) -> Self {
        Self(parts)
    }
}

impl FromIterator<KeyPart> for Key {
    fn from_iter<I: IntoIterator<Item = KeyPart>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

impl std::ops::Deref for Key {
    type Target = smallvec::SmallVec<[KeyPart; 2]>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for Key {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        if let ([KeyPart::Uint(a)], [KeyPart::Uint(b)]) = (self.0.as_slice(), other.0.as_slice()) {
            return a.cmp(b);
        }
        self.0.as_slice().cmp(other.0.as_slice())
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_compare_across_encodings() {
        assert_eq!(KeyPart::Uint(1), KeyPart::Double(1.0));
        assert!(KeyPart::Neg(-1) < KeyPart::Uint(0));
        assert!(KeyPart::Double(1.5) > KeyPart::Uint(1));
        assert!(KeyPart::Double(1.5) < KeyPart::Uint(2));
        assert!(KeyPart::Double(-1.5) < KeyPart::Neg(-1));
        assert!(KeyPart::Uint(u64::MAX) > KeyPart::Double(1e18));
    }

    #[test]
    fn scalar_class_order() {
        let order = [
            KeyPart::Nil,
            KeyPart::Bool(true),
            KeyPart::Neg(-5),
            KeyPart::Str(b"a"[..].into()),
            KeyPart::Bin(b""[..].into()),
        ];
        for w in order.windows(2) {
            assert!(w[0] < w[1], "{:?} < {:?}", w[0], w[1]);
        }
        assert!(KeyPart::Bin(b"zz"[..].into()) < KeyPart::Max);
    }

    #[test]
    fn unicode_collations_order_as_icu_root() {
        let ci = |a: &str, b: &str| Collation::UnicodeCi.compare(a.as_bytes(), b.as_bytes());
        let cs = |a: &str, b: &str| Collation::Unicode.compare(a.as_bytes(), b.as_bytes());
        // unicode_ci: case and accents do not count.
        assert_eq!(ci("ALICE", "alice"), Ordering::Equal);
        assert_eq!(ci("É", "e"), Ordering::Equal);
        assert_eq!(ci("straße", "strasse"), Ordering::Equal);
        // unicode: lower case first, accents after the base letter, before the next.
        assert!(cs("a", "A") == Ordering::Less && cs("A", "b") == Ordering::Less);
        assert!(cs("e", "é") == Ordering::Less && cs("é", "f") == Ordering::Less);
        // Symbols before digits before letters; Cyrillic ё beside е.
        assert!(cs("☢", "1") == Ordering::Less && cs("☢", "İ") == Ordering::Less);
        assert!(cs("ёж", "ежик") == Ordering::Less && cs("ежик", "ель") == Ordering::Less);
        // Not the same strings, but equal under the collation: equal sort keys.
        assert_eq!(Collation::UnicodeCi.sort_key("ä".as_bytes()), Collation::UnicodeCi.sort_key(b"a"));
    }

    #[test]
    fn keys_order_as_their_parts_do() {
        let key = |parts: &[KeyPart]| parts.iter().cloned().collect::<Key>();
        let (one, two, ten) = (key(&[KeyPart::Uint(1)]), key(&[KeyPart::Uint(2)]), key(&[KeyPart::Uint(10)]));
        assert!(one < two && two < ten && ten > one);
        assert_eq!(one.cmp(&key(&[KeyPart::Double(1.0)])), Ordering::Equal);
        assert!(key(&[KeyPart::Double(1.5)]) > one && key(&[KeyPart::Double(1.5)]) < two);
        assert!(key(&[KeyPart::Neg(-1)]) < one);
        // A prefix sorts before the longer key; a partial key with Max after every full one.
        let long = key(&[KeyPart::Uint(1), KeyPart::Str(b"a"[..].into())]);
        assert!(one < long && long < two);
        assert!(key(&[KeyPart::Uint(1), KeyPart::Max]) > long);
        // Every pair compares as the slices of parts do.
        let all = [one, two, ten, long, key(&[KeyPart::Str(b"x"[..].into())]), key(&[])];
        for a in &all {
            for b in &all {
                assert_eq!(a.cmp(b), a.as_slice().cmp(b.as_slice()), "{a:?} vs {b:?}");
            }
        }
    }
}
