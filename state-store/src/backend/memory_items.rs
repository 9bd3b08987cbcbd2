//! Items in memory: the same rows as the SQL backends (the value as JSON
//! text, vectors as bytes) in one map behind a lock, shared by every clone
//! of the store.

use super::items::{Flow, ItemRow, ItemScan, ItemWrite, PrefixRange, ScannedItem, Vectors, Visit};
use crate::error::StoreError;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug)]
struct Stored {
    value: String,
    created_at: i64,
    updated_at: i64,
    vectors: Option<(i64, Vec<u8>)>,
}

/// (namespace text, key) to the item.
type Items = BTreeMap<(String, String), Stored>;

/// The items of a memory store.
#[derive(Debug, Clone, Default)]
pub(crate) struct MemoryItems {
    items: Arc<Mutex<Items>>,
}

impl MemoryItems {
    fn lock(&self) -> MutexGuard<'_, Items> {
        // Every change below is one insert or remove: a panic while the
        // lock is held cannot leave half an item.
        self.items.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn put(&self, write: &ItemWrite<'_>) -> Result<(), StoreError> {
        let mut items = self.lock();
        let id = (write.prefix.to_owned(), write.key.to_owned());
        let created_at = items.get(&id).map_or(write.now, |old| old.created_at);
        items.insert(
            id,
            Stored {
                value: write.value.to_owned(),
                created_at,
                updated_at: write.now,
                vectors: write.vectors.map(|v| (v.dims, v.bytes.to_vec())),
            },
        );
        Ok(())
    }

    pub fn get(&self, prefix: &str, key: &str) -> Result<Option<ItemRow>, StoreError> {
        let items = self.lock();
        Ok(items
            .get(&(prefix.to_owned(), key.to_owned()))
            .map(|stored| ItemRow {
                prefix: prefix.to_owned(),
                key: key.to_owned(),
                value: stored.value.clone(),
                created_at: stored.created_at,
                updated_at: stored.updated_at,
            }))
    }

    pub fn delete(&self, prefix: &str, key: &str) -> Result<bool, StoreError> {
        Ok(self
            .lock()
            .remove(&(prefix.to_owned(), key.to_owned()))
            .is_some())
    }

    /// Newest first, as the SQL backends order it; the pushed conditions
    /// are left to the filter in Rust.
    pub fn scan(&self, scan: ItemScan<'_>, visit: &mut Visit<'_>) -> Result<(), StoreError> {
        let items = self.lock();
        let mut rows: Vec<_> = in_prefix(&items, scan.prefix).collect();
        rows.sort_unstable_by(|(a, x), (b, y)| {
            (y.updated_at, &b.0, &b.1).cmp(&(x.updated_at, &a.0, &a.1))
        });
        for (id, stored) in rows {
            if visit(scanned(id, stored, false))? == Flow::Enough {
                break;
            }
        }
        Ok(())
    }

    pub fn scan_vectors(
        &self,
        scan: ItemScan<'_>,
        visit: &mut Visit<'_>,
    ) -> Result<(), StoreError> {
        let items = self.lock();
        for (id, stored) in in_prefix(&items, scan.prefix) {
            if visit(scanned(id, stored, true))? == Flow::Enough {
                break;
            }
        }
        Ok(())
    }

    pub fn namespaces(&self, prefix: Option<&PrefixRange>) -> Result<Vec<String>, StoreError> {
        let items = self.lock();
        let distinct: BTreeSet<&str> = in_prefix(&items, prefix)
            .map(|(id, _)| id.0.as_str())
            .collect();
        Ok(distinct.into_iter().map(str::to_owned).collect())
    }
}

/// The items whose namespace is in `prefix` (all when `None`).
fn in_prefix<'i>(
    items: &'i Items,
    prefix: Option<&'i PrefixRange>,
) -> Box<dyn Iterator<Item = (&'i (String, String), &'i Stored)> + 'i> {
    match prefix {
        None => Box::new(items.iter()),
        Some(range) => Box::new(
            items
                .range((range.exact.clone(), String::new())..(range.end.clone(), String::new()))
                .filter(move |(id, _)| range.contains(&id.0)),
        ),
    }
}

fn scanned<'r>(id: &'r (String, String), stored: &'r Stored, vectors: bool) -> ScannedItem<'r> {
    ScannedItem {
        prefix: &id.0,
        key: &id.1,
        value: &stored.value,
        created_at: stored.created_at,
        updated_at: stored.updated_at,
        vectors: if vectors {
            stored
                .vectors
                .as_ref()
                .map(|(dims, bytes)| Vectors { dims: *dims, bytes })
        } else {
            None
        },
    }
}
