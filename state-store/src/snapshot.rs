//! When to write a snapshot: the policy, and the per-thread bookkeeping it
//! reads.

use std::num::NonZeroU64;

/// When the store writes a snapshot (the full state) beside the log.
///
/// The default snapshots when the steps logged since the last snapshot have
/// grown as large as that snapshot (and at least 16 KiB). Both costs then
/// stay bounded: a step's amortized write is a small constant times its own
/// size, snapshots included (about 3x for a history that grows by one
/// message per step: each snapshot is the last one plus the log since),
/// and loading replays at most about one snapshot's worth of steps. A fixed "every K steps" bounds neither: at
/// 10,000 messages a snapshot is about a megabyte.
///
/// ```
/// use state_store::SnapshotPolicy;
/// use std::num::NonZeroU64;
///
/// let default = SnapshotPolicy::default();
/// let eager = SnapshotPolicy::log_size(1024);
/// let fixed = SnapshotPolicy::every(NonZeroU64::new(100).unwrap());
/// let off = SnapshotPolicy::never();
/// # let _ = (default, eager, fixed, off);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotPolicy(Rule);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    LogSize { min_bytes: u64 },
    Every(NonZeroU64),
    Never,
}

/// The floor of the default policy: small states are not snapshotted on
/// every other step.
const DEFAULT_MIN_BYTES: u64 = 16 * 1024;

impl Default for SnapshotPolicy {
    fn default() -> Self {
        SnapshotPolicy::log_size(DEFAULT_MIN_BYTES)
    }
}

impl SnapshotPolicy {
    /// Snapshot when the log since the last snapshot is at least as large
    /// as that snapshot, and at least `min_bytes`.
    pub fn log_size(min_bytes: u64) -> Self {
        SnapshotPolicy(Rule::LogSize { min_bytes })
    }

    /// Snapshot every `steps` steps, whatever their size.
    pub fn every(steps: NonZeroU64) -> Self {
        SnapshotPolicy(Rule::Every(steps))
    }

    /// Never snapshot on its own; [`Thread::snapshot`](crate::Thread::snapshot)
    /// still writes one on request. Loading replays the whole log.
    pub fn never() -> Self {
        SnapshotPolicy(Rule::Never)
    }

    /// Whether a snapshot is due after the steps counted in `log`.
    pub(crate) fn is_due(&self, log: &LogSinceSnapshot) -> bool {
        match self.0 {
            Rule::LogSize { min_bytes } => log.bytes >= log.snapshot_bytes.max(min_bytes),
            Rule::Every(steps) => log.steps >= steps.get(),
            Rule::Never => false,
        }
    }
}

/// What a thread handle logged since its last snapshot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LogSinceSnapshot {
    /// Bytes of steps (bodies and metadata).
    pub bytes: u64,
    /// Number of steps.
    pub steps: u64,
    /// Size of the last snapshot (or of the initial state's JSON).
    pub snapshot_bytes: u64,
}

impl LogSinceSnapshot {
    /// Starts over after a snapshot of `snapshot_bytes`.
    pub fn reset(snapshot_bytes: u64) -> Self {
        LogSinceSnapshot {
            bytes: 0,
            steps: 0,
            snapshot_bytes,
        }
    }

    /// Counts one step of `bytes`.
    pub fn add(&mut self, bytes: usize) {
        self.bytes += bytes as u64;
        self.steps += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(bytes: u64, steps: u64, snapshot_bytes: u64) -> LogSinceSnapshot {
        LogSinceSnapshot {
            bytes,
            steps,
            snapshot_bytes,
        }
    }

    #[test]
    fn log_size_waits_for_the_larger_of_snapshot_and_floor() {
        let p = SnapshotPolicy::log_size(100);
        assert!(!p.is_due(&log(99, 5, 10)));
        assert!(p.is_due(&log(100, 5, 10)));
        assert!(!p.is_due(&log(999, 5, 1000)));
        assert!(p.is_due(&log(1000, 5, 1000)));
    }

    #[test]
    fn every_counts_steps_and_never_never_fires() {
        let p = SnapshotPolicy::every(NonZeroU64::new(3).unwrap());
        assert!(!p.is_due(&log(1 << 40, 2, 0)));
        assert!(p.is_due(&log(0, 3, 0)));
        assert!(!SnapshotPolicy::never().is_due(&log(u64::MAX, u64::MAX, 0)));
    }
}
