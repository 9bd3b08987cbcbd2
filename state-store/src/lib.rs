#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod assistants;
mod backend;
mod crons;
mod durability;
mod error;
mod handle;
mod ids;
mod items;
mod listing;
mod migrations;
mod missing;
mod object_text;
mod rebuild;
mod runs;
mod snapshot;
mod step;
mod store;
mod thread;
mod watch;

pub use assistants::{AssistantPatch, AssistantRecord, NewAssistant};
pub use crons::{CronPatch, CronRecord, CronSearch, CronSort, NewCron};
pub use durability::Durability;
pub use error::{BoxError, StoreError};
pub use handle::{Compaction, LatestState, Store};
pub use items::{
    Embeddings, IndexConfig, IntoNamespace, Item, ListNamespaces, PutItem, SearchItem, SearchItems,
};
pub use listing::{ListThreads, ThreadCursor, ThreadInfo, ThreadOrder, ThreadPage};
pub use object_text::{DeltasText, ObjectText};
pub use runs::{
    CancelAction, Claim, IfExists, IfNotExists, LeaseState, MultitaskStrategy, NewRun, Run,
    RunEvent, RunEventIn, RunFilter, RunStatus, RunWakeups, RunWatch, ThreadRecord, ThreadSearch,
    ThreadSortBy, ThreadStatus, Wake,
};
pub use snapshot::SnapshotPolicy;
pub use step::{StepKind, StepRecord};
pub use thread::{Thread, WithMetadata};
pub use watch::StepStream;
