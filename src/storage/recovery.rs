//! Start-up: a new data directory is initialized from the bootstrap catalogue;
//! an existing one is loaded back into the engine before anything is served.

use std::time::Instant;

use super::datadir::DataDir;
use super::fjall_store::{FjallStore, StoreError};
use super::keys::space_of;
use crate::engine::catalog::space_id;
use crate::engine::tuple::Tuple;
use crate::engine::Engine;
use crate::executor::row_ops;

/// The uuids `box.cfg{}` asked for: a new directory takes them, an existing one
/// must have them (as 2.6 checks `instance_uuid` and `replicaset_uuid`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Identity {
    /// `instance_uuid`.
    pub instance: Option<uuid::Uuid>,
    /// `replicaset_uuid`.
    pub replicaset: Option<uuid::Uuid>,
}

impl Identity {
    /// An engine holding the bootstrap catalogue under these uuids (new ones,
    /// each its own, where none was asked for, as 2.6 makes them).
    pub fn bootstrap(&self) -> Result<(Engine, uuid::Uuid), StoreError> {
        let instance = self.instance.unwrap_or_else(uuid::Uuid::new_v4);
        let replicaset = self.replicaset.unwrap_or_else(uuid::Uuid::new_v4);
        let engine =
            Engine::bootstrap_with(&instance, &replicaset).map_err(|e| StoreError(format!("bootstrap: {e}")))?;
        Ok((engine, instance))
    }

    /// Refuses a directory made under other uuids, with 2.6's messages.
    fn check(&self, instance: &uuid::Uuid, replicaset: Option<&str>) -> Result<(), StoreError> {
        if let Some(wanted) = self.instance.filter(|w| w != instance) {
            return Err(StoreError(format!("Instance UUID mismatch: expected {wanted}, got {instance}")));
        }
        if let (Some(wanted), Some(got)) = (self.replicaset, replicaset) {
            if wanted.hyphenated().to_string() != got {
                return Err(StoreError(format!("Replica set UUID mismatch: expected {wanted}, got {got}")));
            }
        }
        Ok(())
    }
}

/// Builds the engine from `store`, initializing it first if the directory is new.
///
/// Returns the engine and the instance uuid recorded in the directory.
pub fn open_engine(dir: &DataDir, store: &FjallStore, wanted: &Identity) -> Result<(Engine, uuid::Uuid), StoreError> {
    let started = Instant::now();
    if dir.is_new {
        let (engine, uuid) = wanted.bootstrap()?;
        store.initialize(&uuid, row_ops(&engine.all_rows()))?;
        dir.write_format().map_err(|e| StoreError(format!("writing the FORMAT file: {e}")))?;
        tracing::info!(elapsed_ms = started.elapsed().as_millis(), "initialized a new data directory");
        return Ok((engine, uuid));
    }
    if dir.is_older_format() {
        // The store has upgraded the directory as it opened it.
        dir.write_format().map_err(|e| StoreError(format!("writing the FORMAT file: {e}")))?;
        tracing::info!(from = dir.version, "data directory upgraded");
    }
    let uuid = store.instance_uuid()?.ok_or_else(|| StoreError("damaged data directory: no instance uuid".into()))?;
    wanted.check(&uuid, None)?;
    // Collations first: index definitions name theirs by id.
    store.for_each_in_space(space_id::COLLATION, |t| {
        crate::engine::define_collation(t, false).map_err(|e| StoreError(format!("damaged collation: {e}")))
    })?;
    let mut space_rows = Vec::new();
    store.for_each_in_space(space_id::SPACE, |t| {
        space_rows.push(t.to_vec());
        Ok(())
    })?;
    let mut index_rows = Vec::new();
    store.for_each_in_space(space_id::INDEX, |t| {
        index_rows.push(t.to_vec());
        Ok(())
    })?;
    let mut engine = Engine::with_schema(space_rows.iter().map(Vec::as_slice), index_rows.iter().map(Vec::as_slice))
        .map_err(|e| StoreError(format!("damaged catalogue: {e}")))?;
    // Rows come in storage-key order, so space by space: each space's indexes are
    // built once from all its rows.
    let mut rows = 0u64;
    let mut space_rows: Option<(u32, Vec<Tuple>)> = None;
    store.for_each_row(|key, tuple| {
        let space = space_of(key).ok_or_else(|| StoreError("damaged row key".into()))?;
        rows += 1;
        match &mut space_rows {
            Some((current, tuples)) if *current == space => tuples.push(tuple.into()),
            _ => {
                if let Some(done) = space_rows.replace((space, vec![tuple.into()])) {
                    load_space(&mut engine, done)?;
                }
            }
        }
        Ok(())
    })?;
    if let Some(done) = space_rows {
        load_space(&mut engine, done)?;
    }
    // `_idempotency`'s records, from their segments.
    let records = store.records()?;
    if !records.is_empty() {
        rows += records.len() as u64;
        load_space(&mut engine, (crate::idempotency::SPACE_ID, records))?;
    }
    tracing::info!(rows, elapsed_ms = started.elapsed().as_millis(), "recovered data directory");
    wanted.check(&uuid, engine.replicaset_uuid().as_deref())?;
    // Directories made before `_idempotency` existed get it now.
    if engine.ensure_idempotency_space().map_err(|e| StoreError(format!("creating _idempotency: {e}")))? {
        store.write(row_ops(&engine.take_changes()))?;
    }
    Ok((engine, uuid))
}

/// Loads one space's rows into the engine.
fn load_space(engine: &mut Engine, (space, tuples): (u32, Vec<Tuple>)) -> Result<(), StoreError> {
    engine.load_rows(space, tuples).map_err(|e| StoreError(format!("damaged row in space {space}: {e}")))
}
