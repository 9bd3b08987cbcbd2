//! A step that the log should hold and does not: compacted away (or
//! before a fork), or a hole in the log. One rule for loading a state
//! (`rebuild.rs`) and for watching a thread (`watch/`).

use crate::backend::Backend;
use crate::error::StoreError;

/// Why a committed step is not stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Missing {
    /// No step is stored before it: the log was compacted past it (or the
    /// thread was forked after it). `first` is the oldest step still
    /// stored (`None`: none is).
    Compacted { first: Option<u64> },
    /// Steps are stored before it: a hole in the log, which is damage.
    Hole,
}

/// Why step `needed` of thread `id`, committed but not stored, is
/// missing, from the oldest step the log still holds. When the database
/// cannot say (an error reading that), its error is returned as it is:
/// nothing is decided, and the caller treats it as any database error
/// (loading fails with it; a watcher retries).
pub(crate) async fn why_missing(
    backend: &Backend,
    id: &str,
    needed: u64,
) -> Result<Missing, StoreError> {
    Ok(classify(backend.first_step(id).await?, needed))
}

/// The rule: compacted when nothing is stored at or before `needed`.
fn classify(first: Option<u64>, needed: u64) -> Missing {
    match first {
        Some(first) if first <= needed => Missing::Hole,
        first => Missing::Compacted { first },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_is_compacted_away_only_when_nothing_before_it_is_stored() {
        assert_eq!(classify(None, 3), Missing::Compacted { first: None });
        assert_eq!(classify(Some(7), 3), Missing::Compacted { first: Some(7) });
        assert_eq!(classify(Some(1), 3), Missing::Hole);
        assert_eq!(classify(Some(3), 3), Missing::Hole);
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn a_database_error_decides_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db");
        let store = crate::Store::sqlite(&path).await.unwrap();
        let side = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
            .await
            .unwrap();
        sqlx::query("DROP TABLE state_store_steps")
            .execute(&side)
            .await
            .unwrap();
        let error = why_missing(&store.backend, "t", 1).await.unwrap_err();
        assert!(matches!(error, StoreError::Backend { .. }), "{error}");
    }
}
