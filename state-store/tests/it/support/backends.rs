//! One store per backend, each on real storage: memory, a SQLite file in a
//! temporary directory, a fresh database on the shared PostgreSQL cluster.

use super::postgres;
use state_store::Store;
use std::path::PathBuf;

/// A store and what keeps its storage alive.
pub struct TestStore {
    pub store: Store,
    /// The backend's name, for assertion messages.
    pub name: &'static str,
    /// Where it lives: the SQLite file or the PostgreSQL URL.
    pub location: String,
    _dir: Option<tempfile::TempDir>,
}

impl TestStore {
    pub fn memory() -> TestStore {
        TestStore {
            store: Store::memory(),
            name: "memory",
            location: String::new(),
            _dir: None,
        }
    }

    pub async fn sqlite() -> TestStore {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("store.db");
        let store = Store::sqlite(&path).await.expect("open SQLite store");
        TestStore {
            store,
            name: "sqlite",
            location: path.display().to_string(),
            _dir: Some(dir),
        }
    }

    pub async fn postgres() -> TestStore {
        let db = postgres::shared().fresh_database("store");
        let store = Store::postgres(&db.url)
            .await
            .expect("connect to PostgreSQL");
        TestStore {
            store,
            name: "postgres",
            location: db.url,
            _dir: None,
        }
    }

    /// A second, independent connection to the same storage (another
    /// worker); the memory store shares its maps.
    pub async fn another_worker(&self) -> Store {
        match self.name {
            "memory" => self.store.clone(),
            "sqlite" => Store::sqlite(PathBuf::from(&self.location))
                .await
                .expect("reopen SQLite store"),
            _ => Store::postgres(&self.location)
                .await
                .expect("reconnect to PostgreSQL"),
        }
    }
}

/// Runs an async scenario `fn(TestStore)` once per backend, as three tests.
/// (Exported, it is at the crate's root: `use crate::on_every_backend;`.)
#[macro_export]
macro_rules! on_every_backend {
    ($($scenario:ident),* $(,)?) => {
        $(
            mod $scenario {
                #[tokio::test]
                async fn memory() {
                    super::$scenario($crate::support::backends::TestStore::memory()).await;
                }

                #[tokio::test]
                async fn sqlite() {
                    super::$scenario($crate::support::backends::TestStore::sqlite().await).await;
                }

                #[tokio::test]
                async fn postgres() {
                    super::$scenario($crate::support::backends::TestStore::postgres().await).await;
                }
            }
        )*
    };
}
