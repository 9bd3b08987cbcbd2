//! The stores the LangGraph ports' tests run on: `Store::memory()` and a
//! SQLite file in a temporary directory, each case once on each
//! (`on_both_stores!`).

use state_store::Store;
use std::path::PathBuf;

/// A store to run a case on, and how another worker reaches the same data.
pub struct TestStore {
    /// The store.
    pub store: Store,
    /// `memory` or `sqlite`, for failure messages.
    pub name: &'static str,
    /// The SQLite file, in a directory removed on drop.
    file: Option<(tempfile::TempDir, PathBuf)>,
}

impl TestStore {
    /// `Store::memory()`.
    pub fn memory() -> TestStore {
        TestStore {
            store: Store::memory(),
            name: "memory",
            file: None,
        }
    }

    /// A SQLite file in a fresh temporary directory.
    pub async fn sqlite() -> TestStore {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("checkpoints.db");
        let store = Store::sqlite(&path).await.expect("the SQLite file opens");
        TestStore {
            store,
            name: "sqlite",
            file: Some((dir, path)),
        }
    }

    /// What another worker opens: the same memory store, or a new
    /// connection to the SQLite file (as another process would).
    pub async fn another_worker(&self) -> Store {
        match &self.file {
            Some((_, path)) => Store::sqlite(path).await.expect("the file reopens"),
            None => self.store.clone(),
        }
    }
}

/// One `#[tokio::test]` per case and store: `memory::case` and
/// `sqlite::case`, each calling `case(TestStore)`.
macro_rules! on_both_stores {
    ($($case:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test]
                async fn $case() {
                    super::$case(crate::stores::TestStore::memory()).await;
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test]
                async fn $case() {
                    super::$case(crate::stores::TestStore::sqlite().await).await;
                }
            )*
        }
    };
}
