//! A run's result handed from the worker that ran it to a `runs/wait` of
//! the same process, so that the wait does not read the thread back.
//!
//! A wait asks for its run's result ([`LocalResults::expect`]) before the
//! run is created; the worker that claims a run whose result is expected
//! has its graph make it at the end (the state and its pending interrupts,
//! as `result_of` reads them) and offers it before the run's end is
//! written. A wait that finds none (its run ran in another process, or
//! was taken over) reads the thread as before. Nothing is kept for a run nobody waits on here: an offer is
//! dropped unless expected, and a wait's entry goes with it.

use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// The results waited for in this process, by run id.
#[derive(Debug, Default)]
pub(crate) struct LocalResults {
    /// `None` until the worker offers it.
    waited: Mutex<HashMap<String, Option<Value>>>,
}

impl LocalResults {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Option<Value>>> {
        // Single inserts and removes under the lock: a panic cannot leave
        // it half-done.
        self.waited.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Asks for `run_id`'s result, until the guard is dropped.
    pub(crate) fn expect(self: &Arc<Self>, run_id: &str) -> Expected {
        self.lock().insert(run_id.to_owned(), None);
        Expected {
            results: self.clone(),
            run_id: run_id.to_owned(),
        }
    }

    /// Whether a wait here asks for `run_id`'s result.
    pub(crate) fn expected(&self, run_id: &str) -> bool {
        self.lock().contains_key(run_id)
    }

    /// Hands over `run_id`'s result, if a wait here still asks for it.
    pub(crate) fn offer(&self, run_id: &str, result: Value) {
        if let Some(slot) = self.lock().get_mut(run_id) {
            *slot = Some(result);
        }
    }
}

/// A wait's ask for its run's result; dropped, the ask (and any result
/// offered) goes.
#[derive(Debug)]
pub(crate) struct Expected {
    results: Arc<LocalResults>,
    run_id: String,
}

impl Expected {
    /// The result, if the worker offered it.
    pub(crate) fn take(&self) -> Option<Value> {
        self.results.lock().get_mut(&self.run_id)?.take()
    }
}

impl Drop for Expected {
    fn drop(&mut self) {
        self.results.lock().remove(&self.run_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_result_is_kept_only_while_it_is_waited_for() {
        let results = Arc::new(LocalResults::default());
        results.offer("nobody", json!(1));
        assert!(!results.expected("nobody"));
        assert!(
            results.lock().is_empty(),
            "an offer nobody asked for is dropped"
        );

        let expected = results.expect("r");
        assert!(results.expected("r"));
        assert_eq!(expected.take(), None, "not offered yet");
        results.offer("r", json!({"n": 2}));
        assert_eq!(expected.take(), Some(json!({"n": 2})));
        assert_eq!(expected.take(), None, "taken once");
        drop(expected);
        assert!(!results.expected("r"));
        results.offer("r", json!(3));
        assert!(results.lock().is_empty(), "nothing left behind");
    }
}
