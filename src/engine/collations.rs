//! The ICU collations `_collation` defines beyond `unicode` and `unicode_ci`: a
//! locale (`ru_RU`, `de`...) and options (strength, case_first...), as 2.6's
//! `coll_id_def_new_from_tuple` reads them.
//!
//! A defined collation gets a slot that never changes, so an index that compares
//! by it keeps its order even when the `_collation` row goes (2.6 keeps an index's
//! collation alive the same way); the id and the name point to the slot while the
//! row exists. Collators are built once per (locale, options) and kept for the
//! process's life.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, RwLock};

use icu_collator::options::{AlternateHandling, CaseLevel, CollatorOptions, Strength};
use icu_collator::preferences::{CollationCaseFirst, CollationNumericOrdering};
use icu_collator::{Collator, CollatorBorrowed, CollatorPreferences};

use crate::error::{code, BoxError, BoxResult};

/// A defined collation's slot.
#[derive(Debug)]
struct Slot {
    def: CollationDef,
    /// Built on first use (bootstrap defines some 270 collations few ever use).
    collator: OnceLock<Option<&'static CollatorBorrowed<'static>>>,
}

#[derive(Default)]
struct Registry {
    slots: Vec<Slot>,
    by_id: HashMap<u32, usize>,
    by_name: HashMap<Vec<u8>, usize>,
}

/// Collators built, by locale and options: one each for the process's life.
fn built() -> &'static Mutex<HashMap<String, &'static CollatorBorrowed<'static>>> {
    static BUILT: OnceLock<Mutex<HashMap<String, &'static CollatorBorrowed<'static>>>> = OnceLock::new();
    BUILT.get_or_init(Mutex::default)
}

fn registry() -> &'static RwLock<Registry> {
    static REGISTRY: OnceLock<RwLock<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(RwLock::default)
}

fn read() -> std::sync::RwLockReadGuard<'static, Registry> {
    registry().read().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The slot of the collation with `_collation` id `id`, while its row exists.
#[must_use]
pub fn slot_of_id(id: u32) -> Option<u32> {
    read().by_id.get(&id).and_then(|&s| u32::try_from(s).ok())
}

/// The slot of the collation named `name`, while its row exists.
#[must_use]
pub fn slot_of_name(name: &[u8]) -> Option<u32> {
    read().by_name.get(name).and_then(|&s| u32::try_from(s).ok())
}

/// The `_collation` id a slot was defined under.
#[must_use]
pub fn id_of_slot(slot: u32) -> u32 {
    read().slots.get(slot as usize).map_or(0, |s| s.def.id)
}

/// The name a slot was defined under.
#[must_use]
pub fn name_of_slot(slot: u32) -> String {
    read().slots.get(slot as usize).map(|s| String::from_utf8_lossy(&s.def.name).into_owned()).unwrap_or_default()
}

/// The collator of a slot.
#[must_use]
pub fn collator(slot: u32) -> Option<&'static CollatorBorrowed<'static>> {
    let reg = read();
    let slot = reg.slots.get(slot as usize)?;
    *slot.collator.get_or_init(|| build(&slot.def).ok())
}

/// A `_collation` row's definition: `[id, name, owner, type, locale, opts]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollationDef {
    /// Its id.
    pub id: u32,
    /// Its name.
    pub name: Vec<u8>,
    /// Its type ('ICU').
    pub kind: Vec<u8>,
    /// Its ICU locale ('' for the root order).
    pub locale: String,
    /// Its options, by name (lower-cased values).
    pub options: Vec<(String, String)>,
}

impl CollationDef {
    /// Reads a `_collation` row (`None` if it is not one).
    #[must_use]
    pub fn parse(tuple: &[u8]) -> Option<Self> {
        use crate::protocol::msgpack::Reader;
        let fields = super::tuple::split(tuple).ok()?;
        let text = |i: usize| Reader::new(fields.get(i)?).read_str().ok().map(<[u8]>::to_vec);
        let id = u32::try_from(Reader::new(fields.first()?).read_uint().ok()?).ok()?;
        let mut options = Vec::new();
        if let Some(raw) = fields.get(5) {
            let mut r = Reader::new(raw);
            for _ in 0..r.read_map_len().ok()? {
                let key = String::from_utf8_lossy(r.read_str().ok()?).into_owned();
                let value = match r.peek_type().ok()? {
                    crate::protocol::msgpack::MpType::Str => String::from_utf8_lossy(r.read_str().ok()?).into_owned(),
                    _ => {
                        r.skip().ok()?;
                        String::new()
                    }
                };
                options.push((key, value));
            }
        }
        Some(Self {
            id,
            name: text(1)?,
            kind: text(3)?,
            locale: String::from_utf8_lossy(&text(4)?).into_owned(),
            options,
        })
    }
}

fn cant_create(why: &str) -> BoxError {
    BoxError::new(code::CANT_CREATE_COLLATION, format!("Failed to initialize collation: {why}."))
}

/// The value of option `name`, one of `allowed` (case aside), or 2.6's error.
fn option<'a>(def: &'a CollationDef, name: &str, allowed: &[&str], expected: &str) -> BoxResult<Option<&'a str>> {
    let Some((_, value)) = def.options.iter().find(|(k, _)| k == name) else { return Ok(None) };
    if allowed.iter().any(|a| a.eq_ignore_ascii_case(value)) {
        return Ok(Some(value.as_str()));
    }
    Err(cant_create(&format!("ICU wrong {name} option setting, expected {expected}")))
}

/// Builds (or finds) the collator `def` describes.
fn build(def: &CollationDef) -> BoxResult<&'static CollatorBorrowed<'static>> {
    if !def.kind.eq_ignore_ascii_case(b"ICU") {
        return Err(cant_create("unknown collation type"));
    }
    let on_off = ["ON", "OFF"];
    let mut options = CollatorOptions::default();
    options.strength = match option(
        def,
        "strength",
        &["PRIMARY", "SECONDARY", "TERTIARY", "QUATERNARY", "IDENTICAL"],
        "PRIMARY | SECONDARY | TERTIARY | QUATERNARY | IDENTICAL",
    )? {
        Some(s) if s.eq_ignore_ascii_case("primary") => Some(Strength::Primary),
        Some(s) if s.eq_ignore_ascii_case("secondary") => Some(Strength::Secondary),
        Some(s) if s.eq_ignore_ascii_case("quaternary") => Some(Strength::Quaternary),
        Some(s) if s.eq_ignore_ascii_case("identical") => Some(Strength::Identical),
        _ => Some(Strength::Tertiary),
    };
    options.alternate_handling =
        option(def, "alternate_handling", &["NON_IGNORABLE", "SHIFTED"], "NON_IGNORABLE | SHIFTED")?.map(|v| {
            if v.eq_ignore_ascii_case("shifted") {
                AlternateHandling::Shifted
            } else {
                AlternateHandling::NonIgnorable
            }
        });
    options.case_level = option(def, "case_level", &on_off, "ON | OFF")?.map(|v| {
        if v.eq_ignore_ascii_case("on") {
            CaseLevel::On
        } else {
            CaseLevel::Off
        }
    });
    option(def, "french_collation", &on_off, "ON | OFF")?;
    option(def, "normalization_mode", &on_off, "ON | OFF")?;
    let case_first =
        option(def, "case_first", &["OFF", "UPPER_FIRST", "LOWER_FIRST"], "OFF | UPPER_FIRST | LOWER_FIRST")?;
    let numeric = option(def, "numeric_collation", &on_off, "ON | OFF")?;
    let locale_text = def.locale.replace('_', "-");
    let locale = if locale_text.is_empty() {
        icu_locale_core::Locale::UNKNOWN
    } else {
        icu_locale_core::Locale::try_from_str(&locale_text)
            .map_err(|_| cant_create("ICU error: U_ILLEGAL_ARGUMENT_ERROR"))?
    };
    let mut prefs = CollatorPreferences::from(&locale);
    if let Some(v) = case_first {
        prefs.case_first = Some(match v.to_ascii_uppercase().as_str() {
            "UPPER_FIRST" => CollationCaseFirst::Upper,
            "LOWER_FIRST" => CollationCaseFirst::Lower,
            _ => CollationCaseFirst::False,
        });
    }
    if let Some(v) = numeric {
        prefs.numeric_ordering = Some(if v.eq_ignore_ascii_case("on") {
            CollationNumericOrdering::True
        } else {
            CollationNumericOrdering::False
        });
    }
    let key = format!("{locale_text}|{options:?}|{case_first:?}|{numeric:?}");
    let mut built = built().lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(found) = built.get(&key) {
        return Ok(found);
    }
    let collator = Collator::try_new(prefs, options).map_err(|e| cant_create(&format!("ICU error: {e}")))?;
    // Kept for the process's life: indexes compare by it without a lock.
    let leaked: &'static CollatorBorrowed<'static> = Box::leak(Box::new(collator));
    built.insert(key, leaked);
    Ok(leaked)
}

/// Defines the collation of a `_collation` row: checked and built now when
/// `eager` (a row being inserted), on first use otherwise (bootstrap, recovery).
pub fn define(def: CollationDef, eager: bool) -> BoxResult<()> {
    // Recovery reads _collation before the indexes and again with every row.
    {
        let reg = read();
        if reg.by_id.get(&def.id).is_some_and(|&s| reg.slots[s].def == def) {
            return Ok(());
        }
    }
    let collator = OnceLock::new();
    if eager {
        let _ = collator.set(Some(build(&def)?));
    }
    let mut reg = registry().write().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (id, name) = (def.id, def.name.clone());
    reg.slots.push(Slot { def, collator });
    let slot = reg.slots.len() - 1;
    reg.by_id.insert(id, slot);
    reg.by_name.insert(name, slot);
    Ok(())
}

/// Forgets a `_collation` row's id and name (indexes built on it keep its slot).
pub fn forget(id: u32, name: &[u8]) {
    let mut reg = registry().write().unwrap_or_else(std::sync::PoisonError::into_inner);
    if reg.by_id.get(&id).is_some_and(|&s| reg.by_name.get(name) == Some(&s)) {
        reg.by_name.remove(name);
    }
    reg.by_id.remove(&id);
}
