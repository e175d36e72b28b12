//! An RTREE index's entries: boxes (or points) in 1 to 20 dimensions, searched
//! by how they lie against a search box, or ordered by distance from a point.
//!
//! A field holds `dimension` numbers (a point) or twice that many (two opposite
//! corners of a box, in any order). The searches, as 2.6 names them by iterator:
//!
//! - `EQ`: the same box; `GE`: contains the search box; `GT`: contains it with
//!   room on every side; `LE`: lies within it; `LT`: lies within it with room on
//!   every side; `OVERLAPS`: shares a point with it; `ALL`: every entry;
//! - `NEIGHBOR`: every entry, nearest first to the search key's first corner
//!   (euclidean or manhattan distance to the nearest point of the box).
//!
//! Entries are kept in a list: a new one (or one replaced) goes to the end and a
//! removed one closes up the list. A search meets them in list order (ties of
//! distance too), which is 2.6's order while its tree has a single page (about
//! twenty entries in two dimensions); past that 2.6 walks its tree's pages, and
//! the order differs.

use super::tuple::Tuple;
use super::value::{Key, KeyPart};
use crate::error::{code, BoxError, BoxResult};
use crate::protocol::msgpack::{Integer, MpType, Reader};

/// The largest dimension 2.6 allows.
pub const MAX_DIMENSION: u8 = 20;

/// How an entry's box must lie against the search box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtreeSearch {
    /// Every entry.
    All,
    /// The same box.
    Equals,
    /// Contains it (`GE`).
    Contains,
    /// Contains it with room on every side (`GT`).
    StrictlyContains,
    /// Lies within it (`LE`).
    Within,
    /// Lies within it with room on every side (`LT`).
    StrictlyWithin,
    /// Shares a point with it.
    Overlaps,
    /// Every entry, nearest first.
    Neighbor,
}

/// A box: its lowest and highest coordinate in each dimension.
#[derive(Debug, Clone, PartialEq)]
pub struct Rect {
    lo: Vec<f64>,
    hi: Vec<f64>,
}

impl Rect {
    /// A box from `dimension` numbers (a point) or twice as many (two corners).
    fn from_coords(coords: &[f64], dimension: usize) -> Option<Self> {
        if coords.len() == dimension {
            return Some(Self { lo: coords.to_vec(), hi: coords.to_vec() });
        }
        if coords.len() != dimension * 2 {
            return None;
        }
        let (a, b) = coords.split_at(dimension);
        Some(Self {
            lo: a.iter().zip(b).map(|(x, y)| x.min(*y)).collect(),
            hi: a.iter().zip(b).map(|(x, y)| x.max(*y)).collect(),
        })
    }

    fn matches(&self, search: RtreeSearch, key: &Self) -> bool {
        let dims = || self.lo.iter().zip(&self.hi).zip(key.lo.iter().zip(&key.hi));
        match search {
            RtreeSearch::All | RtreeSearch::Neighbor => true,
            RtreeSearch::Equals => self == key,
            RtreeSearch::Contains => dims().all(|((l, h), (kl, kh))| l <= kl && h >= kh),
            RtreeSearch::StrictlyContains => dims().all(|((l, h), (kl, kh))| l < kl && h > kh),
            RtreeSearch::Within => dims().all(|((l, h), (kl, kh))| l >= kl && h <= kh),
            RtreeSearch::StrictlyWithin => dims().all(|((l, h), (kl, kh))| l > kl && h < kh),
            RtreeSearch::Overlaps => dims().all(|((l, h), (kl, kh))| l <= kh && h >= kl),
        }
    }

    /// The distance from `point` to the nearest point of the box.
    fn distance(&self, point: &[f64], manhattan: bool) -> f64 {
        let gaps = self.lo.iter().zip(&self.hi).zip(point).map(|((l, h), p)| {
            if p < l {
                l - p
            } else if p > h {
                p - h
            } else {
                0.0
            }
        });
        if manhattan {
            gaps.sum()
        } else {
            gaps.map(|g| g * g).sum()
        }
    }
}

/// 2.6's error for a field that is not `dimension` or twice as many numbers.
fn wrong_field(dimension: usize) -> BoxError {
    BoxError::new(
        code::RTREE_RECT,
        format!(
            "RTree: Field must be an array with {dimension} (point) or {} (rectangle/box) numeric coordinates",
            dimension * 2
        ),
    )
}

/// Reads the numbers of an msgpack array; `Err(Some(i))` if item `i` is no
/// number, `Err(None)` if it is no array.
fn numbers(raw: &[u8]) -> Result<Vec<f64>, Option<usize>> {
    let mut r = Reader::new(raw);
    let n = r.read_array_len().map_err(|_| None)?;
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n as usize {
        #[allow(clippy::cast_precision_loss, reason = "coordinates are doubles, as in 2.6")]
        let value = match r.peek_type() {
            Ok(MpType::Uint | MpType::Int) => match r.read_integer().map_err(|_| Some(i))? {
                Integer::Unsigned(u) => u as f64,
                Integer::Negative(n) => n as f64,
            },
            Ok(MpType::Float | MpType::Double) => r.read_f64().map_err(|_| Some(i))?,
            _ => return Err(Some(i)),
        };
        out.push(value);
    }
    Ok(out)
}

/// Checks a tuple's RTREE field (`field_no` 0-based) and returns its key part.
pub fn field_key_part(raw: &[u8], field_no: u32, dimension: u8) -> BoxResult<KeyPart> {
    let field = (field_no + 1).to_string();
    let coords = numbers(raw).map_err(|at| match at {
        Some(_) => BoxError::field_type(&field, "number"),
        None => BoxError::field_type(&field, "array"),
    })?;
    Rect::from_coords(&coords, usize::from(dimension)).ok_or_else(|| wrong_field(usize::from(dimension)))?;
    Ok(KeyPart::Bin(raw.into()))
}

/// Reads a search key: `dimension` or twice as many numbers, flat or as one
/// array; none is allowed (for ALL).
pub fn parse_key(key: &[u8], dimension: u8) -> BoxResult<Key> {
    let dim = usize::from(dimension);
    let count_error = |n: usize| {
        BoxError::new(code::KEY_PART_COUNT, format!("Invalid key part count (expected [0..{}], got {n})", dim * 2))
    };
    let mut r = Reader::new(key);
    let n = r.read_array_len().map_err(|_| BoxError::invalid_msgpack("packet body"))? as usize;
    let coords = if n == 1 && r.peek_type() == Ok(MpType::Array) {
        let inner = r.skip().map_err(|_| BoxError::invalid_msgpack("packet body"))?;
        numbers(inner).map_err(|_| wrong_field(dim))?
    } else {
        if n != 0 && n != dim && n != dim * 2 {
            return Err(count_error(n));
        }
        numbers(key).map_err(|at| BoxError::key_part_type(at.unwrap_or(0), "number"))?
    };
    if !coords.is_empty() && coords.len() != dim && coords.len() != dim * 2 {
        return Err(wrong_field(dim));
    }
    Ok(coords.into_iter().map(KeyPart::Double).collect())
}

/// The entries of an RTREE index, in list order (see the module's notes).
#[derive(Debug)]
pub struct RtreeStore {
    dimension: u8,
    manhattan: bool,
    entries: Vec<(Rect, Key, Tuple)>,
}

impl RtreeStore {
    /// An empty store for boxes of `dimension`, with manhattan or euclidean distance.
    #[must_use]
    pub fn new(dimension: u8, manhattan: bool) -> Self {
        Self { dimension, manhattan, entries: Vec::new() }
    }

    /// Entries held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    fn position(&self, key: &Key) -> Option<usize> {
        self.entries.iter().position(|(_, k, _)| k == key)
    }

    /// The tuple under an entry key.
    #[must_use]
    pub fn get(&self, key: &Key) -> Option<&Tuple> {
        self.position(key).map(|i| &self.entries[i].2)
    }

    /// The tuple under an entry key, to change in place.
    pub fn get_mut(&mut self, key: &Key) -> Option<&mut Tuple> {
        self.position(key).map(|i| &mut self.entries[i].2)
    }

    /// Stores `tuple` under `key` at the end of the list (an entry with that key
    /// leaves its place: 2.6 inserts the new one and removes the old).
    pub fn put(&mut self, key: Key, tuple: Tuple) -> Option<Tuple> {
        let old = self.remove(&key);
        let rect = match key.first() {
            Some(KeyPart::Bin(raw)) => {
                numbers(raw).ok().and_then(|c| Rect::from_coords(&c, usize::from(self.dimension)))
            }
            _ => None,
        };
        // A key that is no box (the field was checked when the tuple was) is skipped.
        if let Some(rect) = rect {
            self.entries.push((rect, key, tuple));
        }
        old
    }

    /// Removes the entry under `key`; the list closes up.
    pub fn remove(&mut self, key: &Key) -> Option<Tuple> {
        let at = self.position(key)?;
        Some(self.entries.remove(at).2)
    }

    /// The entries in list order.
    pub fn iter(&self) -> impl Iterator<Item = &Tuple> {
        self.entries.iter().map(|(_, _, t)| t)
    }

    /// The entries `search` finds for the search key `key` (numbers; none: every entry).
    #[must_use]
    pub fn search(&self, search: RtreeSearch, key: &[KeyPart]) -> Vec<&Tuple> {
        let coords: Vec<f64> =
            key.iter().filter_map(|k| if let KeyPart::Double(d) = k { Some(*d) } else { None }).collect();
        let Some(rect) = Rect::from_coords(&coords, usize::from(self.dimension)) else {
            return self.iter().collect();
        };
        if search == RtreeSearch::Neighbor {
            let mut by_distance: Vec<(f64, usize)> = self
                .entries
                .iter()
                .enumerate()
                .map(|(i, (r, _, _))| (r.distance(&rect.lo, self.manhattan), i))
                .collect();
            by_distance.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            return by_distance.into_iter().map(|(_, i)| &self.entries[i].2).collect();
        }
        self.entries.iter().filter(|(r, _, _)| r.matches(search, &rect)).map(|(_, _, t)| t).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rect(c: &[f64]) -> Rect {
        Rect::from_coords(c, 2).unwrap()
    }

    #[test]
    fn boxes_lie_against_a_search_box_as_2_6_says() {
        let key = rect(&[2.0, 1.0, 3.0, 2.0]);
        let big = rect(&[0.0, 0.0, 10.0, 10.0]);
        let edge = rect(&[1.0, 1.0, 5.0, 5.0]);
        let point = rect(&[2.0, 1.0]);
        assert!(big.matches(RtreeSearch::StrictlyContains, &key));
        assert!(!edge.matches(RtreeSearch::StrictlyContains, &key), "shares an edge");
        assert!(edge.matches(RtreeSearch::Contains, &key));
        assert!(point.matches(RtreeSearch::Within, &key) && !point.matches(RtreeSearch::StrictlyWithin, &key));
        assert!(point.matches(RtreeSearch::Overlaps, &key));
        assert!(!rect(&[2.0, 0.0]).matches(RtreeSearch::Overlaps, &key));
        // Corners in any order make the same box.
        assert_eq!(rect(&[5.0, 5.0, 1.0, 1.0]), edge);
        assert_eq!(big.distance(&[2.0, 1.0], false), 0.0);
        assert_eq!(rect(&[4.0, 1.0]).distance(&[2.0, 1.0], false), 4.0);
        assert_eq!(rect(&[4.0, 2.0]).distance(&[2.0, 1.0], true), 3.0);
    }
}
