//! Who may change users, roles, grants, functions, sequences and collations:
//! 2.6's `access_check_ddl` and `priv_def_check`, run on every change of `_user`,
//! `_priv`, `_func`, `_sequence` and `_collation` (not when it is undone or
//! recovered).
//!
//! Creating, dropping or altering an object takes the right to (on the universe,
//! on every object of its type or on the object) unless one owns it. A user or a
//! role with objects or grants left cannot be dropped, nor a function with grants.
//!
//! For `_priv`: whoever writes the row must be its grantor (its first field) or
//! hold the grant (revoke) right. The grantor must exist and own the object: the space, function,
//! sequence, role or user it names (everyone may grant the role `public`'s
//! execute); only admin grants on the universe or on a whole object type. The
//! grantee and the object must exist, a role must not end up granted to itself,
//! and a granted row must hold some privilege.

use super::access::{self, privilege, user_id, ObjectType};
use super::catalog::{self, space_id};
use super::tuple::Tuple;
use super::Engine;
use crate::error::{code, BoxError, BoxResult};
use crate::protocol::msgpack::Reader;

/// 2.6's PRIV_GRANT and PRIV_REVOKE: the rights to grant and to revoke.
const GRANT_RIGHT: u32 = 8192;
const REVOKE_RIGHT: u32 = 16384;

/// 2.6's priv_name: the name of the lowest right in `rights`.
fn right_name(rights: u32) -> &'static str {
    match rights & rights.wrapping_neg() {
        GRANT_RIGHT => "Grant",
        REVOKE_RIGHT => "Revoke",
        bit => access::access_name(bit),
    }
}

/// The owner and the name of the object `id` in system space `space` (its rows
/// start `[id, owner, name, ...]`: _space, _func, _sequence, _user).
fn owner_and_name(engine: &Engine, space: u32, id: u32) -> Option<(u32, String)> {
    let row = engine.row_by_id(space, id)?;
    let fields = super::tuple::split(row).ok()?;
    let owner = u32::try_from(Reader::new(fields.get(1)?).read_uint().ok()?).ok()?;
    let name = String::from_utf8_lossy(Reader::new(fields.get(2)?).read_str().ok()?).into_owned();
    Some((owner, name))
}

/// A `_collation` row's id, owner and name (`[id, name, owner, ...]`).
fn collation_fields(row: &[u8]) -> Option<(u32, u32, String)> {
    let fields = super::tuple::split(row).ok()?;
    let uint = |i: usize| u32::try_from(Reader::new(fields.get(i)?).read_uint().ok()?).ok();
    let name = String::from_utf8_lossy(Reader::new(fields.get(1)?).read_str().ok()?).into_owned();
    Some((uint(0)?, uint(2)?, name))
}

/// The owner and the name of collation `id`.
fn collation_row(engine: &Engine, id: u32) -> Option<(u32, String)> {
    collation_fields(engine.row_by_id(space_id::COLLATION, id)?).map(|(_, owner, name)| (owner, name))
}

impl Engine {
    /// Refuses a catalogue change the acting user may not make (see the module).
    pub(super) fn check_ddl_rights(&self, space: u32, old: Option<&Tuple>, new: Option<&Tuple>) -> BoxResult<()> {
        match space {
            space_id::PRIV => self.check_grant_rights(old, new),
            space_id::USER => self.check_user_change(old, new),
            space_id::FUNC => match (old, new) {
                (Some(old), None) => self.check_func_delete(old),
                _ => Ok(()),
            },
            space_id::SEQUENCE => self.check_sequence_change(old, new),
            space_id::COLLATION => self.check_collation_change(old, new),
            _ => Ok(()),
        }
    }

    /// Creating a user or a role takes the create right; altering one, the alter
    /// right (a user may alter itself); dropping one, the drop right (its owner
    /// may), and neither a system one nor one with objects or grants left.
    fn check_user_change(&self, old: Option<&Tuple>, new: Option<&Tuple>) -> BoxResult<()> {
        let parse = |t: Option<&Tuple>| t.and_then(|t| catalog::parse_user(t).ok());
        let kind = |u: &catalog::UserRow| if u.is_role { ObjectType::Role } else { ObjectType::User };
        match (parse(old), parse(new)) {
            (None, Some(new)) => {
                self.check_ddl_access(kind(&new), Some(new.id), &new.name, new.owner, privilege::CREATE)
            }
            (Some(old), Some(new)) => {
                self.check_ddl_access(kind(&old), Some(new.id), &new.name, new.id, privilege::ALTER)
            }
            (Some(old), None) => {
                self.check_ddl_access_of(kind(&old), Some(old.id), &old.name, old.owner, privilege::DROP, Some(&old))?;
                let refused = |why: &str| {
                    BoxError::new(code::DROP_USER, format!("Failed to drop user or role '{}': {why}", old.name))
                };
                if old.id <= user_id::PUBLIC || old.id == user_id::SUPER {
                    return Err(refused("the user or the role is a system"));
                }
                if self.user_has_objects(old.id) {
                    return Err(refused("the user has objects"));
                }
                Ok(())
            }
            (None, None) => Ok(()),
        }
    }

    /// 2.6's user_has_data: spaces, functions or sequences owned, grants given or
    /// held, or (a role) holders.
    fn user_has_objects(&self, uid: u32) -> bool {
        // Rows of `space` whose field `field` is the user.
        let owns = |space: u32, field: usize| {
            self.spaces.get(&space).and_then(super::space::Space::primary).is_some_and(|pk| {
                pk.iter().any(|t| {
                    super::tuple::split(t).ok().and_then(|f| f.get(field).and_then(|v| Reader::new(v).read_uint().ok()))
                        == Some(u64::from(uid))
                })
            })
        };
        // Owners are the second field; a grant's grantor is its first.
        owns(space_id::SPACE, 1)
            || owns(space_id::FUNC, 1)
            || owns(space_id::SEQUENCE, 1)
            || owns(space_id::PRIV, 0)
            || self
                .grants()
                .any(|g| g.grantee == uid || (g.object_type == ObjectType::Role && g.object_id == Some(uid)))
    }

    /// Dropping a function takes the drop right (its owner may), and no grants on it.
    fn check_func_delete(&self, old: &Tuple) -> BoxResult<()> {
        let Ok(f) = catalog::parse_func(old) else { return Ok(()) };
        self.check_ddl_access(ObjectType::Function, Some(f.id), &f.name, f.owner, privilege::DROP)?;
        if self.has_grants_on(ObjectType::Function, f.id) {
            // 2.6 names the function by its owner's id there.
            return Err(BoxError::new(
                code::DROP_FUNCTION,
                format!("Can't drop function {}: function has grants", f.owner),
            ));
        }
        Ok(())
    }

    /// Creating a sequence takes the create right, dropping one the drop right.
    fn check_sequence_change(&self, old: Option<&Tuple>, new: Option<&Tuple>) -> BoxResult<()> {
        let def = |t: &Tuple| super::sequence::SequenceDef::parse(t);
        match (old.and_then(def), new.and_then(def)) {
            (None, Some(new)) => {
                self.check_ddl_access(ObjectType::Sequence, Some(new.id), &new.name, new.owner, privilege::CREATE)
            }
            (Some(old), None) => {
                self.check_ddl_access(ObjectType::Sequence, Some(old.id), &old.name, old.owner, privilege::DROP)
            }
            _ => Ok(()),
        }
    }

    /// Creating a collation takes the create right, dropping one the drop right.
    fn check_collation_change(&self, old: Option<&Tuple>, new: Option<&Tuple>) -> BoxResult<()> {
        let (row, right) = match (old, new) {
            (None, Some(new)) => (new, privilege::CREATE),
            (Some(old), None) => (old, privilege::DROP),
            _ => return Ok(()),
        };
        let Some((id, owner, name)) = collation_fields(row) else { return Ok(()) };
        self.check_ddl_access(ObjectType::Collation, Some(id), &name, owner, right)
    }

    /// Whether `_priv` holds a grant on the object.
    pub(super) fn has_grants_on(&self, ty: ObjectType, id: u32) -> bool {
        self.grants().any(|g| g.object_type == ty && g.object_id == Some(id))
    }

    /// Refuses a `_priv` change the grantor has no right to make (see the module).
    fn check_grant_rights(&self, old: Option<&Tuple>, new: Option<&Tuple>) -> BoxResult<()> {
        let (row, verb) = match (old, new) {
            (_, Some(new)) => (new, "Grant"),
            (Some(old), None) => (old, "Revoke"),
            (None, None) => return Ok(()),
        };
        let (Some(grant), Some(grantor_id)) = (access::parse_grant(row), catalog::first_uint(row)) else {
            return Ok(());
        };
        let right = if new.is_some() { GRANT_RIGHT } else { REVOKE_RIGHT };
        let name = self.object_name(grant.object_type, grant.object_id);
        // The grantor counts as the object's owner here, as in 2.6.
        self.check_ddl_access(grant.object_type, grant.object_id, &name, grantor_id, right)?;
        let no_such_user = |id: u32| BoxError::new(code::NO_SUCH_USER, format!("User '{id}' is not found"));
        let grantor = self.user_by_id(grantor_id).ok_or_else(|| no_such_user(grantor_id))?;
        if self.user_by_id(grant.grantee).is_none() {
            return Err(no_such_user(grant.grantee));
        }
        let is_admin = grantor.id == user_id::ADMIN;
        let refused = |kind: &str, name: &str| BoxError::access_denied(verb, kind, name, &grantor.name);
        let owned = |owner: u32, kind: &str, name: &str| {
            if owner == grantor.id || is_admin {
                Ok(())
            } else {
                Err(refused(kind, name))
            }
        };
        match (grant.object_type, grant.object_id) {
            (ObjectType::Universe, _) if !is_admin => return Err(refused("universe", "")),
            (ObjectType::Universe, _) => {}
            // Every object of a type: admin's alone.
            (kind, None) if !is_admin => return Err(refused(kind.name(), "")),
            (_, None) => {}
            (ObjectType::Space, Some(id)) => {
                let (owner, name) = owner_and_name(self, space_id::SPACE, id)
                    .ok_or_else(|| BoxError::no_such_space(&id.to_string()))?;
                owned(owner, "space", &name)?;
            }
            (ObjectType::Function, Some(id)) => {
                let (owner, name) = owner_and_name(self, space_id::FUNC, id)
                    .ok_or_else(|| BoxError::new(code::NO_SUCH_FUNCTION, format!("Function '{id}' does not exist")))?;
                owned(owner, "function", &name)?;
            }
            (ObjectType::Sequence, Some(id)) => {
                let (owner, name) = owner_and_name(self, space_id::SEQUENCE, id)
                    .ok_or_else(|| BoxError::new(code::NO_SUCH_SEQUENCE, format!("Sequence '{id}' does not exist")))?;
                owned(owner, "sequence", &name)?;
            }
            (ObjectType::Role, Some(id)) => {
                let role = self.user_by_id(id).filter(|u| u.is_role).ok_or_else(|| {
                    let name = self.user_by_id(id).map_or_else(|| id.to_string(), |u| u.name);
                    BoxError::new(code::NO_SUCH_ROLE, format!("Role '{name}' is not found"))
                })?;
                // Everyone may grant (and revoke) public's execute.
                if !(id == user_id::PUBLIC && grant.privilege == privilege::EXECUTE) {
                    owned(role.owner, "role", &role.name)?;
                }
                self.check_role_loop(&grant)?;
            }
            // 2.6 checks nothing more of a grant on a collation.
            (ObjectType::Collation, Some(_)) => {}
            (ObjectType::User, Some(id)) => {
                let user = self.user_by_id(id).filter(|u| !u.is_role).ok_or_else(|| {
                    let name = self.user_by_id(id).map_or_else(|| id.to_string(), |u| u.name);
                    BoxError::new(code::NO_SUCH_USER, format!("User '{name}' is not found"))
                })?;
                owned(user.owner, "user", &user.name)?;
            }
        }
        if grant.privilege == 0 {
            return Err(BoxError::new(code::GRANT, "Incorrect grant arguments: the grant tuple has no privileges"));
        }
        Ok(())
    }

    /// 2.6's access_check_ddl: the acting user may use `right` on the object `id`
    /// of type `ty` (named `name`) if it holds it on the universe, on the type or on
    /// the object, or owns the object (`owner`) and `right` is not create.
    fn check_ddl_access(&self, ty: ObjectType, id: Option<u32>, name: &str, owner: u32, right: u32) -> BoxResult<()> {
        self.check_ddl_access_of(ty, id, name, owner, right, None)
    }

    /// [`Self::check_ddl_access`] while `deleted`'s `_user` row is being deleted.
    fn check_ddl_access_of(
        &self,
        ty: ObjectType,
        id: Option<u32>,
        name: &str,
        owner: u32,
        right: u32,
        deleted: Option<&catalog::UserRow>,
    ) -> BoxResult<()> {
        let Some(c) = self.acting.as_ref() else { return Ok(()) };
        let mut missing = (privilege::USAGE | right) & !c.universe;
        if missing == 0 {
            return Ok(());
        }
        missing &= !c.entity(ty);
        if missing == 0 || (owner == c.user_id && missing & (privilege::USAGE | privilege::CREATE) == 0) {
            return Ok(());
        }
        if missing & privilege::USAGE == 0 {
            missing &= !id.map_or(0, |id| c.object(ty, id));
            if missing == 0 {
                return Ok(());
            }
        }
        // A user deleting its own row is no longer in _user.
        let user = match deleted.filter(|u| u.id == c.user_id) {
            Some(u) => u.name.clone(),
            None => self.user_name(c.user_id),
        };
        if missing & privilege::USAGE != 0 {
            return Err(BoxError::access_denied("Usage", "universe", "", &user));
        }
        Err(BoxError::access_denied(right_name(missing), ty.name(), name, &user))
    }

    /// An object's name for messages ('' for the universe or a whole type).
    fn object_name(&self, ty: ObjectType, id: Option<u32>) -> String {
        let space = match ty {
            ObjectType::Universe => return String::new(),
            ObjectType::Space => space_id::SPACE,
            ObjectType::Function => space_id::FUNC,
            ObjectType::Sequence => space_id::SEQUENCE,
            ObjectType::Role | ObjectType::User => space_id::USER,
            ObjectType::Collation => {
                return id.and_then(|id| collation_row(self, id)).map(|(_, name)| name).unwrap_or_default();
            }
        };
        id.and_then(|id| owner_and_name(self, space, id)).map(|(_, name)| name).unwrap_or_default()
    }
}
