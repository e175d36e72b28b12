//! The system catalogue: bootstrap rows and the meaning of `_space`, `_index` and friends.
//!
//! oncebox boots from the rows a fresh Tarantool 2.6 instance holds
//! (`catalog/tarantool_2_6.hex`, dumped by `tools/dump_catalog.py`), so connectors
//! read the catalogue they expect. DDL is a write to a system space: this module
//! turns such a row into a space or index definition and checks it.

use super::field_path::{FieldPath, PathError};
use super::func_index::{self, FuncRef};
use super::identifier;
use super::index::{IndexDef, IndexKind, Part};
use super::multikey;
use super::space::{EngineKind, FieldDef, SpaceDef};
use super::tuple::split;
use super::value::{Collation, FieldType};
use crate::error::{code, BoxError, BoxResult};
use crate::protocol::msgpack::{Integer, MpType, Reader};

/// System space ids.
#[allow(missing_docs, reason = "Tarantool's BOX_*_ID names")]
pub mod space_id {
    pub const SCHEMA: u32 = 272;
    pub const COLLATION: u32 = 276;
    pub const VCOLLATION: u32 = 277;
    pub const SPACE: u32 = 280;
    pub const VSPACE: u32 = 281;
    pub const SEQUENCE: u32 = 284;
    pub const SEQUENCE_DATA: u32 = 285;
    pub const VSEQUENCE: u32 = 286;
    pub const INDEX: u32 = 288;
    pub const VINDEX: u32 = 289;
    pub const FUNC: u32 = 296;
    pub const VFUNC: u32 = 297;
    pub const USER: u32 = 304;
    pub const VUSER: u32 = 305;
    pub const PRIV: u32 = 312;
    pub const VPRIV: u32 = 313;
    pub const CLUSTER: u32 = 320;
    pub const TRUNCATE: u32 = 330;
    pub const SPACE_SEQUENCE: u32 = 340;
    /// First id of a user space.
    pub const USER_MIN: u32 = 512;
}

/// The space a system view shows.
#[must_use]
pub fn view_source(view: u32) -> Option<u32> {
    use space_id::{
        COLLATION, FUNC, INDEX, PRIV, SEQUENCE, SPACE, USER, VCOLLATION, VFUNC, VINDEX, VPRIV, VSEQUENCE, VSPACE, VUSER,
    };
    Some(match view {
        VCOLLATION => COLLATION,
        VSPACE => SPACE,
        VSEQUENCE => SEQUENCE,
        VINDEX => INDEX,
        VFUNC => FUNC,
        VUSER => USER,
        VPRIV => PRIV,
        _ => return None,
    })
}

const BOOTSTRAP: &str = include_str!("catalog/tarantool_2_6.hex");

/// The bootstrap rows: (space id, tuple bytes).
pub fn bootstrap_rows() -> impl Iterator<Item = (u32, Vec<u8>)> {
    BOOTSTRAP.lines().filter_map(|line| {
        let (id, hex) = line.split_once(' ')?;
        let bytes = (0..hex.len())
            .step_by(2)
            .map(|i| hex.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
            .collect::<Option<Vec<u8>>>()?;
        Some((id.parse().ok()?, bytes))
    })
}

/// Looks up a string key in a msgpack map and returns its value's bytes.
#[must_use]
pub fn map_get<'a>(map: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let mut r = Reader::new(map);
    let n = r.read_map_len().ok()?;
    for _ in 0..n {
        let k = r.skip().ok()?;
        let v = r.skip().ok()?;
        if Reader::new(k).read_str().ok() == Some(key) {
            return Some(v);
        }
    }
    None
}

fn uint_field(fields: &[&[u8]], i: usize) -> Option<u64> {
    Reader::new(fields.get(i)?).read_uint().ok()
}

fn str_field<'a>(fields: &[&'a [u8]], i: usize) -> Option<&'a [u8]> {
    Reader::new(fields.get(i)?).read_str().ok()
}

fn bool_value(v: &[u8]) -> Option<bool> {
    Reader::new(v).read_bool().ok()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Decodes a `_space` row.
pub fn parse_space(tuple: &[u8]) -> BoxResult<SpaceDef> {
    let f = split(tuple)?;
    let bad = |what: &str| {
        BoxError::new(
            code::FIELD_TYPE,
            format!("Tuple field {what} type does not match one required by operation: expected unsigned"),
        )
    };
    let id = uint_field(&f, 0).ok_or_else(|| bad("1"))?;
    let owner = uint_field(&f, 1).ok_or_else(|| bad("2"))?;
    let name = str_field(&f, 2).ok_or_else(|| BoxError::field_type("3", "string"))?;
    let create_err =
        |msg: &str| BoxError::new(code::CREATE_SPACE, format!("Failed to create space '{}': {msg}", text(name)));
    if identifier::too_long(name) {
        let shown = identifier::shown(name);
        return Err(BoxError::new(
            code::CREATE_SPACE,
            format!("Failed to create space '{shown}': space name is too long"),
        ));
    }
    identifier::check(name)?;
    let engine_name = str_field(&f, 3).ok_or_else(|| BoxError::field_type("4", "string"))?;
    let engine = match engine_name {
        b"memtx" => EngineKind::Memtx,
        b"vinyl" => EngineKind::Vinyl,
        b"sysview" => EngineKind::Sysview,
        b"blackhole" | b"service" => EngineKind::Blackhole,
        other => {
            return Err(BoxError::new(code::NO_SUCH_ENGINE, format!("Space engine '{}' does not exist", text(other))))
        }
    };
    let field_count = uint_field(&f, 4).unwrap_or(0);
    let (mut temporary, mut is_local) = (false, false);
    if let Some(flags) = f.get(5) {
        if Reader::new(flags).peek_type() == Ok(MpType::Map) {
            temporary = map_get(flags, b"temporary").and_then(bool_value).unwrap_or(false);
            // Replication groups: 0 (the default) and 1 (replica-local) exist.
            if let Some(group) = map_get(flags, b"group_id") {
                match Reader::new(group).read_uint() {
                    Ok(0) => {}
                    Ok(1) => is_local = true,
                    Ok(other) => {
                        return Err(BoxError::new(
                            code::NO_SUCH_GROUP,
                            format!("Replication group '{other}' does not exist"),
                        ))
                    }
                    Err(_) => return Err(BoxError::field_type("6", "map")),
                }
            }
        }
    }
    if temporary && engine == EngineKind::Vinyl {
        return Err(BoxError::new(
            code::ALTER_SPACE,
            format!("Can't modify space '{}': engine does not support temporary flag", text(name)),
        ));
    }
    let mut format = Vec::new();
    if let Some(raw) = f.get(6) {
        let mut r = Reader::new(raw);
        let n = r.read_array_len().map_err(|_| BoxError::field_type("7", "array"))?;
        for i in 0..n {
            let entry = r.skip().map_err(|_| BoxError::invalid_msgpack("tuple"))?;
            format.push(parse_format_entry(entry, i, name)?);
        }
    }
    for (i, a) in format.iter().enumerate() {
        if format.iter().skip(i + 1).any(|b| b.name == a.name) {
            return Err(BoxError::new(149, format!("Space field '{}' is duplicate", a.name)));
        }
    }
    Ok(SpaceDef {
        id: u32::try_from(id).map_err(|_| create_err("space id is too big"))?,
        owner: u32::try_from(owner).unwrap_or(u32::MAX),
        name: text(name),
        engine,
        field_count: u32::try_from(field_count).unwrap_or(u32::MAX),
        format,
        temporary,
        is_local,
    })
}

fn parse_format_entry(entry: &[u8], i: u32, space: &[u8]) -> BoxResult<FieldDef> {
    let wrong =
        |msg: String| BoxError::new(code::WRONG_SPACE_FORMAT, format!("Wrong space format (field {}): {msg}", i + 1));
    // 2.6's own checks of a field, named after the space ([`as_alter_error`] turns
    // them into an alter's).
    let failed = |msg: &str| {
        BoxError::new(code::CREATE_SPACE, format!("Failed to create space '{}': field {} {msg}", text(space), i + 1))
    };
    if Reader::new(entry).peek_type() != Ok(MpType::Map) {
        return Err(failed("is not map"));
    }
    // Any string key may annotate a field (kept, as 2.6 keeps it); others may not.
    let mut r = Reader::new(entry);
    let pairs = r.read_map_len().map_err(|_| BoxError::invalid_msgpack("tuple"))?;
    for _ in 0..pairs {
        if r.peek_type() != Ok(MpType::Str) {
            return Err(failed("format is not map with string keys"));
        }
        r.skip().and_then(|_| r.skip()).map_err(|_| BoxError::invalid_msgpack("tuple"))?;
    }
    let name = match map_get(entry, b"name") {
        None => None,
        Some(v) => Some(Reader::new(v).read_str().map_err(|_| wrong("'name' must be string".into()))?),
    };
    let ty = match map_get(entry, b"type") {
        None => Some(FieldType::Any),
        Some(v) => FieldType::parse(Reader::new(v).read_str().map_err(|_| wrong("'type' must be enum".into()))?),
    };
    if let Some(v) = map_get(entry, b"default") {
        Reader::new(v).read_str().map_err(|_| wrong("'default' must be string".into()))?;
    }
    // 2.6's field_def_decode, in its order.
    let name = name.filter(|n| !n.is_empty()).ok_or_else(|| failed("name is not specified"))?;
    if identifier::too_long(name) {
        return Err(failed("name is too long"));
    }
    identifier::check(name)?;
    let ty = ty.ok_or_else(|| failed("has unknown field type"))?;
    let nullable = match map_get(entry, b"is_nullable") {
        None => false,
        Some(v) => bool_value(v).ok_or_else(|| wrong("'is_nullable' must be boolean".into()))?,
    };
    let collation = match map_get(entry, b"collation") {
        None => Collation::Binary,
        Some(v) => Reader::new(v).read_uint().ok().and_then(Collation::from_id).ok_or_else(|| {
            BoxError::new(
                code::WRONG_COLLATION_OPTIONS,
                format!("Wrong collation options (field {}): collation was not found by ID", i + 1),
            )
        })?,
    };
    if collation != Collation::Binary && !matches!(ty, FieldType::String | FieldType::Scalar | FieldType::Any) {
        return Err(BoxError::new(
            code::CREATE_SPACE,
            format!(
                "Failed to create space '{}': collation is reasonable only for string, scalar and any fields",
                text(space)
            ),
        ));
    }
    Ok(FieldDef { name: text(name), ty, nullable, collation })
}

/// A space's create error as its alter's (2.6 words a `_space` update's checks so).
#[must_use]
pub fn as_alter_error(e: BoxError) -> BoxError {
    match e.message.split_once("Failed to create space ") {
        Some(("", rest)) if e.code == code::CREATE_SPACE => {
            BoxError::new(code::ALTER_SPACE, format!("Can't modify space {rest}"))
        }
        _ => e,
    }
}

/// Decodes an `_index` row; `space` is the definition of the space it belongs to.
pub fn parse_index(tuple: &[u8], space: &SpaceDef) -> BoxResult<IndexDef> {
    let f = split(tuple)?;
    let iid = uint_field(&f, 1).ok_or_else(|| BoxError::field_type("2", "unsigned"))?;
    let raw_name = str_field(&f, 2).ok_or_else(|| BoxError::field_type("3", "string"))?;
    if identifier::too_long(raw_name) {
        return Err(BoxError::new(
            code::MODIFY_INDEX,
            format!(
                "Can't create or modify index '{}' in space '{}': index name is too long",
                identifier::shown(raw_name),
                space.name
            ),
        ));
    }
    identifier::check(raw_name)?;
    let name = text(raw_name);
    let modify = |msg: &str| {
        BoxError::new(
            code::MODIFY_INDEX,
            format!("Can't create or modify index '{name}' in space '{}': {msg}", space.name),
        )
    };
    let type_name = str_field(&f, 3).ok_or_else(|| BoxError::field_type("4", "string"))?;
    let kind = match type_name.to_ascii_uppercase().as_slice() {
        b"TREE" => IndexKind::Tree,
        b"HASH" => IndexKind::Hash,
        b"BITSET" => IndexKind::Bitset,
        // Its options are read below, with the others.
        b"RTREE" => IndexKind::Rtree { dimension: 2, manhattan: false },
        _ => {
            return Err(BoxError::new(
                code::INDEX_TYPE,
                format!("Unsupported index type supplied for index '{name}' in space '{}'", space.name),
            ))
        }
    };
    let opts = f.get(4).copied().unwrap_or(&[0x80]);
    let unique = match Reader::new(opts).peek_type() {
        Ok(MpType::Map) => map_get(opts, b"unique").and_then(bool_value).unwrap_or(true),
        Ok(MpType::Uint) => Reader::new(opts).read_uint().unwrap_or(1) != 0,
        _ => return Err(BoxError::field_type("5", "map")),
    };
    let kind = match kind {
        IndexKind::Rtree { .. } => rtree_kind(opts, &name, space)?,
        other => other,
    };
    let parts_raw = f.get(5).ok_or_else(|| BoxError::field_type("6", "array"))?;
    let parts = parse_parts(parts_raw, space, &modify, matches!(kind, IndexKind::Rtree { .. }))?;
    if parts.is_empty() {
        return Err(modify("part count must be positive"));
    }
    if iid == 0 && !unique {
        return Err(modify("primary key must be unique"));
    }
    if iid == 0 && parts.iter().any(|p| p.nullable) {
        return Err(BoxError::new(
            code::NULLABLE_PRIMARY,
            format!("Primary index of space '{}' can not contain nullable parts", space.name),
        ));
    }
    if space.engine == EngineKind::Vinyl {
        // 2.6's vinyl_space_check_index_def: TREE indexes of scalar parts only.
        if kind != IndexKind::Tree {
            return Err(BoxError::new(
                code::INDEX_TYPE,
                format!("Unsupported index type supplied for index '{name}' in space '{}'", space.name),
            ));
        }
        if let Some(part) = parts.iter().find(|p| matches!(p.ty, FieldType::Any | FieldType::Array | FieldType::Map)) {
            return Err(modify(&format!("field type '{}' is not supported", part.ty.name())));
        }
    }
    // 2.6's order: nullable parts (only a TREE takes them), then each type's rules.
    if kind != IndexKind::Tree && parts.iter().any(|p| p.nullable) {
        return Err(BoxError::new(code::UNSUPPORTED, format!("{} does not support nullable parts", kind.name())));
    }
    if kind == IndexKind::Hash && !unique {
        return Err(modify("HASH index must be unique"));
    }
    if let IndexKind::Rtree { .. } = kind {
        if parts.len() != 1 {
            return Err(modify("RTREE index key can not be multipart"));
        }
        if unique {
            return Err(modify("RTREE index can not be unique"));
        }
        if parts[0].ty != FieldType::Array {
            return Err(modify("RTREE index field type must be ARRAY"));
        }
        if multikey::split(&parts[0]).is_some() {
            return Err(modify("RTREE index cannot be multikey"));
        }
    }
    if kind == IndexKind::Bitset {
        if parts.len() != 1 {
            return Err(modify("BITSET index key can not be multipart"));
        }
        if unique {
            return Err(modify("BITSET can not be unique"));
        }
        if multikey::split(&parts[0]).is_some() {
            return Err(modify("BITSET index cannot be multikey"));
        }
        if !matches!(parts[0].ty, FieldType::Unsigned | FieldType::String) {
            return Err(modify("BITSET index field type must be NUM or STR"));
        }
    }
    if let Some(part) = parts.iter().find(|p| multikey::split(p).is_some()) {
        if kind == IndexKind::Hash {
            return Err(modify("HASH index cannot be multikey"));
        }
        if iid == 0 {
            return Err(modify("primary key cannot be multikey"));
        }
        if space.format.get(part.field_no as usize).is_some_and(|f| f.nullable) {
            return Err(BoxError::new(code::UNSUPPORTED, "multikey index does not support nullable root field"));
        }
    }
    let func = func_ref(opts, iid, kind, space, &parts, &modify)?;
    Ok(IndexDef { id: u32::try_from(iid).map_err(|_| modify("index id too big"))?, name, kind, unique, parts, func })
}

/// A functional index's function (`func` in its options), with 2.6's checks of
/// the definition: the parts number the returned key, it is not the primary
/// key, it is a memtx TREE. The function itself is looked up by the engine.
fn func_ref(
    opts: &[u8],
    iid: u64,
    kind: IndexKind,
    space: &SpaceDef,
    parts: &[Part],
    modify: &dyn Fn(&str) -> BoxError,
) -> BoxResult<Option<FuncRef>> {
    let Some(raw) = map_get(opts, b"func") else { return Ok(None) };
    let id = match Reader::new(raw).read_uint() {
        Ok(id) => u32::try_from(id).unwrap_or(u32::MAX),
        Err(_) => {
            return Err(BoxError::new(
                code::WRONG_INDEX_OPTIONS,
                "Wrong index options (field 5): 'func' must be unsigned",
            ))
        }
    };
    if id == 0 {
        return Ok(None);
    }
    func_index::check_parts(parts)?;
    if iid == 0 {
        return Err(modify("primary key can not use a function"));
    }
    match kind {
        IndexKind::Tree => {}
        other => return Err(modify(&format!("{} index can not use a function", other.name()))),
    }
    if space.engine == EngineKind::Vinyl {
        return Err(BoxError::new(code::UNSUPPORTED, "Vinyl does not support functional index"));
    }
    Ok(Some(FuncRef { id, resolved: None }))
}

/// An RTREE's options (`dimension`, 1 to 20, 2 if not given; `distance`,
/// 'euclid' or 'manhattan'), with 2.6's errors.
fn rtree_kind(opts: &[u8], name: &str, space: &SpaceDef) -> BoxResult<IndexKind> {
    let dimension = map_get(opts, b"dimension").and_then(|v| Reader::new(v).read_integer().ok());
    let dimension = match dimension {
        None => 2,
        Some(Integer::Unsigned(d)) if (1..=u64::from(super::rtree::MAX_DIMENSION)).contains(&d) => d as u8,
        Some(d) => {
            let shown = match d {
                Integer::Unsigned(u) => u.to_string(),
                Integer::Negative(i) => i.to_string(),
            };
            return Err(BoxError::new(
                code::UNSUPPORTED_INDEX_FEATURE,
                format!(
                    "Index '{name}' (RTREE) of space '{}' (memtx) does not support dimension ({shown}): must belong to range [1, {}]",
                    space.name,
                    super::rtree::MAX_DIMENSION
                ),
            ));
        }
    };
    let manhattan = match map_get(opts, b"distance").map(|v| Reader::new(v).read_str().ok()) {
        None => false,
        Some(Some(b"euclid")) => false,
        Some(Some(b"manhattan")) => true,
        Some(_) => {
            return Err(BoxError::new(
                code::WRONG_INDEX_OPTIONS,
                "Wrong index options (field 4): distance must be either 'euclid' or 'manhattan'",
            ))
        }
    };
    Ok(IndexKind::Rtree { dimension, manhattan })
}

fn parse_parts(
    raw: &[u8],
    space: &SpaceDef,
    modify: &dyn Fn(&str) -> BoxError,
    allow_array: bool,
) -> BoxResult<Vec<Part>> {
    let mut r = Reader::new(raw);
    let n = r.read_array_len().map_err(|_| BoxError::field_type("6", "array"))?;
    // As 2.6: the first part's form (1.6.6's arrays, or maps) is every part's.
    let array_form = r.peek_type() == Ok(MpType::Array);
    let mut parts = Vec::with_capacity(n.min(64) as usize);
    for part_no in 1..=n {
        let wrong_options = |msg: &str| {
            BoxError::new(code::WRONG_INDEX_OPTIONS, format!("Wrong index options (field {part_no}): {msg}"))
        };
        let entry = r.skip().map_err(|_| BoxError::invalid_msgpack("tuple"))?;
        let path = match map_get(entry, b"path").filter(|_| Reader::new(entry).peek_type() == Ok(MpType::Map)) {
            None => None,
            Some(raw) => {
                let text = Reader::new(raw).read_str().map_err(|_| wrong_options("invalid path"))?;
                let text = std::str::from_utf8(text).map_err(|_| wrong_options("invalid path"))?;
                match FieldPath::parse(text) {
                    Ok(path) => Some(std::sync::Arc::new(path)),
                    Err(PathError::Invalid) => return Err(wrong_options("invalid path")),
                    Err(PathError::TwoPlaceholders) => {
                        return Err(wrong_options(
                            "no more than one array index placeholder [*] is allowed in JSON path",
                        ))
                    }
                }
            }
        };
        let (field_no, ty, coll, nullable) = if array_form {
            decode_array_part(entry)?
        } else {
            decode_map_part(entry).map_err(|msg| wrong_options(&msg))?
        };
        let indexable = ty.is_indexable() || (allow_array && ty == FieldType::Array);
        if !indexable {
            return Err(modify(&format!("field type '{}' is not supported", ty.name())));
        }
        let field_no = u32::try_from(field_no).map_err(|_| modify("field id too big"))?;
        let format_field = space.format.get(field_no as usize);
        let collation = match coll {
            Some(id) => Collation::from_id(id).ok_or_else(|| wrong_options("collation was not found by ID"))?,
            None => format_field.map_or(Collation::Binary, |f| f.collation),
        };
        if coll.is_some() && !matches!(ty, FieldType::String | FieldType::Scalar) {
            return Err(wrong_options("collation is reasonable only for string and scalar parts"));
        }
        let nullable = nullable.unwrap_or_else(|| format_field.is_some_and(|f| f.nullable));
        let part = Part { field_no, ty, collation, nullable, path };
        let steps = |p: &Part| p.path.as_ref().map(|path| path.steps().to_vec());
        if parts.iter().any(|p: &Part| p.field_no == field_no && steps(p) == steps(&part)) {
            return Err(modify("same key part is indexed twice"));
        }
        parts.push(part);
    }
    if let Some((part_no, why)) = multikey::incompatible(&parts) {
        return Err(BoxError::new(code::WRONG_INDEX_OPTIONS, format!("Wrong index options (field {part_no}): {why}")));
    }
    Ok(parts)
}

/// A part in 1.6.6's form, `[field, type, ...]`: (field, type, collation, nullability);
/// never nullable.
fn decode_array_part(entry: &[u8]) -> BoxResult<(u64, FieldType, Option<u64>, Option<bool>)> {
    let wrong = |msg: &str| {
        BoxError::new(
            code::WRONG_INDEX_PARTS,
            format!("Wrong index parts: {msg}; expected field1 id (number), field1 type (string), ..."),
        )
    };
    if Reader::new(entry).peek_type() != Ok(MpType::Array) {
        return Err(wrong("expected an array"));
    }
    let items = split(entry)?;
    match items.len() {
        0 => return Err(wrong("expected a non-empty array")),
        1 => return Err(wrong("a field type is missing")),
        _ => {}
    }
    let field = uint_field(&items, 0).ok_or_else(|| wrong("field id must be an integer"))?;
    let name = str_field(&items, 1).ok_or_else(|| wrong("field type must be a string"))?;
    let ty = FieldType::parse(name).ok_or_else(|| wrong("unknown field type"))?;
    // As 2.6: a part of this form is not nullable, whatever the format says.
    Ok((field, ty, None, Some(false)))
}

/// A part as a map (`{field = , type = , collation = , is_nullable = , path = }`):
/// (field, type, collation, nullability), or what is wrong with it.
fn decode_map_part(entry: &[u8]) -> Result<(u64, FieldType, Option<u64>, Option<bool>), String> {
    const KEYS: [&[u8]; 7] =
        [b"type", b"field", b"collation", b"is_nullable", b"nullable_action", b"sort_order", b"path"];
    if Reader::new(entry).peek_type() != Ok(MpType::Map) {
        return Err("index part is expected to be a map".into());
    }
    let mut r = Reader::new(entry);
    let pairs = r.read_map_len().map_err(|_| "key must be a string")?;
    for _ in 0..pairs {
        let key = r.read_str().map_err(|_| "key must be a string")?;
        if !KEYS.contains(&key) {
            return Err(format!("unexpected option '{}'", text(key)));
        }
        r.skip().map_err(|_| "key must be a string")?;
    }
    let field = match map_get(entry, b"field") {
        // 2.6's default part is field 0.
        None => 0,
        Some(v) => Reader::new(v).read_uint().map_err(|_| "'field' must be unsigned")?,
    };
    let ty = map_get(entry, b"type")
        .and_then(|v| Reader::new(v).read_str().ok())
        .and_then(FieldType::parse)
        .ok_or("index part: unknown field type")?;
    let coll = map_get(entry, b"collation").and_then(|v| Reader::new(v).read_uint().ok());
    let nullable = map_get(entry, b"is_nullable").and_then(bool_value);
    Ok((field, ty, coll, nullable))
}

/// The space id a `_index`, `_truncate` or `_space` row refers to (its first field).
pub fn first_uint(tuple: &[u8]) -> Option<u32> {
    let f = split(tuple).ok()?;
    u32::try_from(uint_field(&f, 0)?).ok()
}

/// The `(space id, index id)` of an `_index` row.
pub fn index_ids(tuple: &[u8]) -> Option<(u32, u32)> {
    let f = split(tuple).ok()?;
    Some((u32::try_from(uint_field(&f, 0)?).ok()?, u32::try_from(uint_field(&f, 1)?).ok()?))
}

/// A `_user` row: (id, owner, name, is_role, stored chap-sha1 hash2 if any).
#[derive(Debug, Clone)]
pub struct UserRow {
    /// User id.
    pub id: u32,
    /// Who created it.
    pub owner: u32,
    /// Name.
    pub name: String,
    /// `role` rather than `user`.
    pub is_role: bool,
    /// base64 of SHA1(SHA1(password)), when a password is set.
    pub chap_sha1: Option<Vec<u8>>,
}

/// Decodes a `_user` row.
pub fn parse_user(tuple: &[u8]) -> BoxResult<UserRow> {
    let f = split(tuple)?;
    let id = uint_field(&f, 0).ok_or_else(|| BoxError::field_type("1", "unsigned"))?;
    let owner = uint_field(&f, 1).ok_or_else(|| BoxError::field_type("2", "unsigned"))?;
    let name = text(str_field(&f, 2).ok_or_else(|| BoxError::field_type("3", "string"))?);
    let ty = str_field(&f, 3).ok_or_else(|| BoxError::field_type("4", "string"))?;
    let is_role = match ty {
        b"user" => false,
        b"role" => true,
        _ => {
            return Err(BoxError::new(code::CREATE_USER, format!("Failed to create user '{name}': unknown user type")))
        }
    };
    let chap_sha1 = f
        .get(4)
        .and_then(|auth| map_get(auth, b"chap-sha1"))
        .and_then(|v| Reader::new(v).read_str().ok())
        .map(<[u8]>::to_vec);
    Ok(UserRow {
        id: u32::try_from(id).unwrap_or(u32::MAX),
        owner: u32::try_from(owner).unwrap_or(u32::MAX),
        name,
        is_role,
        chap_sha1,
    })
}

/// A `_func` row's id, owner, name, setuid flag and whether it is persistent.
#[derive(Debug, Clone)]
pub struct FuncRow {
    /// Function id.
    pub id: u32,
    /// Owner user id.
    pub owner: u32,
    /// Name (a Lua global path for Lua functions without a body).
    pub name: String,
    /// Whether it runs with the owner's rights.
    pub setuid: bool,
    /// A Lua function defined by its body (the row's sixth field), not by a global.
    pub persistent: bool,
}

/// The fields of a `_func` row that define the function: all before `created`
/// (its 18th field), so two rows that differ only in their times are equal.
pub fn func_definition(tuple: &[u8]) -> BoxResult<smallvec::SmallVec<[&[u8]; 8]>> {
    let mut fields = split(tuple)?;
    fields.truncate(FUNC_CREATED_FIELD);
    Ok(fields)
}

/// `_func`'s `created` field, 0-based.
const FUNC_CREATED_FIELD: usize = 17;

/// Checks the name of a new `_user`, `_func` or `_sequence` row (field 3) as 2.6
/// does: not too long (its `create` error, the name cut to 64 bytes), then an
/// identifier; a user's type is checked between the two, as there.
pub fn check_object_name(space_id: u32, tuple: &[u8]) -> BoxResult<()> {
    let f = split(tuple)?;
    let Some(name) = str_field(&f, 2) else { return Ok(()) };
    let (code, what) = match space_id {
        space_id::USER => (code::CREATE_USER, "user"),
        space_id::FUNC => (code::CREATE_FUNCTION, "function"),
        space_id::SEQUENCE => (code::CREATE_SEQUENCE, "sequence"),
        _ => return Ok(()),
    };
    if identifier::too_long(name) {
        return Err(BoxError::new(
            code,
            format!("Failed to create {what} '{}': {what} name is too long", identifier::shown(name)),
        ));
    }
    if space_id == space_id::USER {
        parse_user(tuple)?;
    }
    identifier::check(name)
}

/// Decodes a `_func` row.
pub fn parse_func(tuple: &[u8]) -> BoxResult<FuncRow> {
    let f = split(tuple)?;
    let id = uint_field(&f, 0).ok_or_else(|| BoxError::field_type("1", "unsigned"))?;
    let owner = uint_field(&f, 1).ok_or_else(|| BoxError::field_type("2", "unsigned"))?;
    let name = text(str_field(&f, 2).ok_or_else(|| BoxError::field_type("3", "string"))?);
    let setuid = f.get(3).is_some_and(|v| matches!(Reader::new(v).read_integer(), Ok(Integer::Unsigned(n)) if n != 0));
    let language = str_field(&f, 4).unwrap_or(b"LUA");
    let persistent = language.eq_ignore_ascii_case(b"LUA") && str_field(&f, 5).is_some_and(|body| !body.is_empty());
    Ok(FuncRow {
        id: u32::try_from(id).unwrap_or(u32::MAX),
        owner: u32::try_from(owner).unwrap_or(u32::MAX),
        name,
        setuid,
        persistent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_holds_tarantool_2_6_catalogue() {
        let rows: Vec<_> = bootstrap_rows().collect();
        assert!(rows.len() > 500);
        let spaces: Vec<SpaceDef> =
            rows.iter().filter(|(s, _)| *s == space_id::SPACE).map(|(_, t)| parse_space(t).unwrap()).collect();
        assert!(spaces.iter().any(|s| s.id == 281 && s.name == "_vspace" && s.engine == EngineKind::Sysview));
        let vindex = spaces.iter().find(|s| s.id == space_id::VINDEX).unwrap();
        let idx: Vec<IndexDef> = rows
            .iter()
            .filter(|(s, t)| *s == space_id::INDEX && first_uint(t) == Some(space_id::VINDEX))
            .map(|(_, t)| parse_index(t, vindex).unwrap())
            .collect();
        assert_eq!(idx.iter().map(|i| i.id).collect::<Vec<_>>(), vec![0, 2]);
    }
}
