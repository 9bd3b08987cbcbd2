#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod backend;
mod error;
mod items;
mod rebuild;
mod snapshot;
mod step;
mod store;
mod thread;
mod watch;

pub use error::{BoxError, StoreError};
pub use items::{
    Embeddings, IndexConfig, IntoNamespace, Item, ListNamespaces, PutItem, SearchItem, SearchItems,
};
pub use snapshot::SnapshotPolicy;
pub use step::{StepKind, StepRecord};
pub use store::{Compaction, Store, ThreadInfo};
pub use thread::{Thread, WithMetadata};
pub use watch::StepStream;
