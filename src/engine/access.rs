//! Users, roles and privileges, computed from `_user` and `_priv` as Tarantool does.
//!
//! A user's effective rights are the union of its own grants and those of every
//! role granted to it, transitively. Grants on an object id of `''` apply to
//! every object of that type. The owner of a space or function has every right on it.

use std::collections::{HashMap, HashSet};

use super::tuple::split;
use crate::protocol::msgpack::{MpType, Reader};

/// Privilege bits, as stored in `_priv`.
#[allow(missing_docs, reason = "Tarantool's PRIV_* names")]
pub mod privilege {
    pub const READ: u32 = 1;
    pub const WRITE: u32 = 2;
    pub const EXECUTE: u32 = 4;
    pub const SESSION: u32 = 8;
    pub const USAGE: u32 = 16;
    pub const CREATE: u32 = 32;
    pub const DROP: u32 = 64;
    pub const ALTER: u32 = 128;
    pub const ALL: u32 = u32::MAX;
}

/// Well-known user ids.
#[allow(missing_docs, reason = "Tarantool's reserved ids")]
pub mod user_id {
    pub const GUEST: u32 = 0;
    pub const ADMIN: u32 = 1;
    pub const PUBLIC: u32 = 2;
    pub const SUPER: u32 = 31;
}

/// The name Tarantool uses for one privilege bit in messages.
#[must_use]
pub fn access_name(bit: u32) -> &'static str {
    match bit {
        privilege::READ => "Read",
        privilege::WRITE => "Write",
        privilege::EXECUTE => "Execute",
        privilege::SESSION => "Session",
        privilege::USAGE => "Usage",
        privilege::CREATE => "Create",
        privilege::DROP => "Drop",
        privilege::ALTER => "Alter",
        _ => "Access",
    }
}

/// Object kinds a grant can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ObjectType {
    /// The whole instance.
    Universe,
    /// A space.
    Space,
    /// A function.
    Function,
    /// A sequence.
    Sequence,
    /// A role (granting a role).
    Role,
    /// A user.
    User,
    /// A collation (created and dropped; no grants name one).
    Collation,
}

impl ObjectType {
    /// The type's name, as `_priv` and messages spell it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Universe => "universe",
            Self::Space => "space",
            Self::Function => "function",
            Self::Sequence => "sequence",
            Self::Role => "role",
            Self::User => "user",
            Self::Collation => "collation",
        }
    }

    /// Parses `_priv.object_type`.
    #[must_use]
    pub fn parse(s: &[u8]) -> Option<Self> {
        Some(match s {
            b"universe" => Self::Universe,
            b"space" => Self::Space,
            b"function" => Self::Function,
            b"sequence" => Self::Sequence,
            b"role" => Self::Role,
            b"user" => Self::User,
            b"collation" => Self::Collation,
            _ => return None,
        })
    }
}

/// One decoded `_priv` row.
#[derive(Debug, Clone)]
pub struct Grant {
    /// Who receives the rights.
    pub grantee: u32,
    /// What kind of object.
    pub object_type: ObjectType,
    /// Which object; `None` for every object of the type (`''`).
    pub object_id: Option<u32>,
    /// Privilege bits.
    pub privilege: u32,
}

/// Decodes a `_priv` tuple.
#[must_use]
pub fn parse_grant(tuple: &[u8]) -> Option<Grant> {
    let fields = split(tuple).ok()?;
    let grantee = u32::try_from(Reader::new(fields.get(1)?).read_uint().ok()?).ok()?;
    let object_type = ObjectType::parse(Reader::new(fields.get(2)?).read_str().ok()?)?;
    let mut r = Reader::new(fields.get(3)?);
    let object_id = match r.peek_type().ok()? {
        MpType::Uint => Some(u32::try_from(r.read_uint().ok()?).ok()?),
        _ => None,
    };
    let privilege = u32::try_from(Reader::new(fields.get(4)?).read_uint().ok()?).unwrap_or(u32::MAX);
    Some(Grant { grantee, object_type, object_id, privilege })
}

/// The effective rights of one user.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    /// The user.
    pub user_id: u32,
    /// Rights on the universe.
    pub universe: u32,
    /// Rights per (object type, object id); id `None` means every object of the type.
    objects: HashMap<(ObjectType, Option<u32>), u32>,
    /// Every role the user holds, transitively.
    pub roles: HashSet<u32>,
}

impl Credentials {
    /// Computes the rights of `user_id` from all grants.
    #[must_use]
    pub fn compute(user_id: u32, grants: &[Grant]) -> Self {
        let mut c = Self { user_id, ..Self::default() };
        let mut holders = vec![user_id];
        let mut seen: HashSet<u32> = HashSet::from([user_id]);
        while let Some(holder) = holders.pop() {
            for g in grants.iter().filter(|g| g.grantee == holder) {
                match (g.object_type, g.object_id) {
                    (ObjectType::Role, Some(role)) => {
                        if seen.insert(role) {
                            c.roles.insert(role);
                            holders.push(role);
                        }
                    }
                    (ObjectType::Universe, _) => c.universe |= g.privilege,
                    (ty, id) => *c.objects.entry((ty, id)).or_default() |= g.privilege,
                }
            }
        }
        c
    }

    /// Rights on one object, including grants on every object of its type.
    #[must_use]
    pub fn on(&self, ty: ObjectType, id: u32) -> u32 {
        self.universe
            | self.objects.get(&(ty, Some(id))).copied().unwrap_or(0)
            | self.objects.get(&(ty, None)).copied().unwrap_or(0)
    }

    /// Rights granted on every object of a type (`''`).
    #[must_use]
    pub fn entity(&self, ty: ObjectType) -> u32 {
        self.objects.get(&(ty, None)).copied().unwrap_or(0)
    }

    /// Rights granted on one object itself (a role held counts as its execute).
    #[must_use]
    pub fn object(&self, ty: ObjectType, id: u32) -> u32 {
        let held = if ty == ObjectType::Role && self.roles.contains(&id) { privilege::EXECUTE } else { 0 };
        held | self.objects.get(&(ty, Some(id))).copied().unwrap_or(0)
    }

    /// Whether the user holds every bit of `want` on the object (owners hold everything).
    #[must_use]
    pub fn has(&self, ty: ObjectType, id: u32, owner: Option<u32>, want: u32) -> bool {
        owner == Some(self.user_id) || self.on(ty, id) & want == want
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(grantee: u32, ty: ObjectType, id: Option<u32>, p: u32) -> Grant {
        Grant { grantee, object_type: ty, object_id: id, privilege: p }
    }

    #[test]
    fn roles_are_transitive_and_entity_grants_apply() {
        let grants = vec![
            g(32, ObjectType::Role, Some(40), 4),
            g(40, ObjectType::Role, Some(2), 4),
            g(2, ObjectType::Space, Some(281), privilege::READ),
            g(40, ObjectType::Space, None, privilege::WRITE),
        ];
        let c = Credentials::compute(32, &grants);
        assert!(c.has(ObjectType::Space, 281, None, privilege::READ));
        assert!(c.has(ObjectType::Space, 999, None, privilege::WRITE));
        assert!(!c.has(ObjectType::Space, 999, None, privilege::READ));
        assert!(c.has(ObjectType::Space, 999, Some(32), privilege::READ));
        assert!(c.roles.contains(&2));
    }
}
