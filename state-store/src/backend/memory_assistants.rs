//! Created assistants in memory: the same rows as the SQL backends, behind
//! one lock, so each change is as atomic as their transactions.

use super::assistants::{AssistantRow, Change, Changed};
use crate::error::StoreError;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug, Default)]
struct Stored {
    current: Option<AssistantRow>,
    /// By version number.
    versions: BTreeMap<i64, AssistantRow>,
}

/// The assistants of a memory store.
#[derive(Debug, Clone, Default)]
pub(crate) struct MemoryAssistants {
    tables: Arc<Mutex<HashMap<String, Stored>>>,
}

impl MemoryAssistants {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Stored>> {
        // Every change below checks first and writes after: a panic
        // cannot leave half of one.
        self.tables.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn insert(&self, row: &AssistantRow) -> Result<bool, StoreError> {
        let mut tables = self.lock();
        if tables.contains_key(&row.assistant_id) {
            return Ok(false);
        }
        let mut stored = Stored {
            current: Some(row.clone()),
            ..Stored::default()
        };
        stored.versions.insert(row.version, row.clone());
        tables.insert(row.assistant_id.clone(), stored);
        Ok(true)
    }

    pub fn get(&self, id: &str) -> Result<Option<AssistantRow>, StoreError> {
        Ok(self.lock().get(id).and_then(|s| s.current.clone()))
    }

    pub fn all(&self) -> Result<Vec<AssistantRow>, StoreError> {
        let mut all: Vec<AssistantRow> = self
            .lock()
            .values()
            .filter_map(|s| s.current.clone())
            .collect();
        all.sort_by(|a, b| (b.created_at, &b.assistant_id).cmp(&(a.created_at, &a.assistant_id)));
        Ok(all)
    }

    pub fn versions(&self, id: &str) -> Result<Vec<AssistantRow>, StoreError> {
        let tables = self.lock();
        let Some(stored) = tables.get(id) else {
            return Ok(Vec::new());
        };
        let owner = stored.current.as_ref().and_then(|c| c.owner.clone());
        Ok(stored
            .versions
            .values()
            .rev()
            .map(|v| AssistantRow {
                owner: owner.clone(),
                ..v.clone()
            })
            .collect())
    }

    pub fn change(&self, id: &str, change: Change<'_>, now: i64) -> Result<Changed, StoreError> {
        let mut tables = self.lock();
        let Some(stored) = tables.get_mut(id) else {
            return Ok(Changed::NotFound);
        };
        let Some(current) = stored.current.clone() else {
            return Ok(Changed::NotFound);
        };
        if change.owner().is_some() && current.owner.as_deref() != change.owner() {
            return Ok(Changed::NotFound);
        }
        Ok(match change {
            Change::Update { patch, .. } => {
                let mut row = patch(&current)?;
                row.version = stored.versions.keys().next_back().copied().unwrap_or(0) + 1;
                row.updated_at = now;
                stored.versions.insert(row.version, row.clone());
                stored.current = Some(row.clone());
                Changed::Done(Box::new(row))
            }
            Change::SetLatest { version, .. } => {
                let Some(version) = stored.versions.get(&version) else {
                    return Ok(Changed::NoVersion);
                };
                let row = AssistantRow {
                    owner: current.owner.clone(),
                    created_at: current.created_at,
                    updated_at: now,
                    ..version.clone()
                };
                stored.current = Some(row.clone());
                Changed::Done(Box::new(row))
            }
            Change::Delete { .. } => {
                tables.remove(id);
                Changed::Done(Box::new(current))
            }
        })
    }
}
