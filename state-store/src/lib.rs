#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod backend;
mod error;
mod snapshot;
mod step;
mod store;
mod thread;

pub use error::{BoxError, StoreError};
pub use snapshot::SnapshotPolicy;
pub use step::{StepKind, StepRecord};
pub use store::{Compaction, Store, ThreadInfo};
pub use thread::{Thread, WithMetadata};
