//! The cap on open event streams ([`Server::max_streams`](crate::Server::max_streams)):
//! each SSE answer holds a [`Permit`] from the moment its request is
//! accepted until its stream ends or its client goes away; past the cap a
//! request is a 503 (`too_many_streams`, with `Retry-After`) before
//! anything is written, so a refused `runs/stream` creates no run.

use crate::error::ApiError;
use futures::{Stream, StreamExt};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many streams are open, and how many may be.
#[derive(Clone, Debug)]
pub(crate) struct Streams {
    open: Arc<AtomicUsize>,
    max: usize,
}

/// One open stream's place; dropping it frees the place.
#[derive(Debug)]
pub(crate) struct Permit {
    open: Arc<AtomicUsize>,
}

impl Streams {
    /// Up to `max` streams at once.
    pub(crate) fn new(max: usize) -> Streams {
        Streams {
            open: Arc::default(),
            max,
        }
    }

    /// A place for one more stream, or the 503 that says there is none.
    pub(crate) fn acquire(&self) -> Result<Permit, ApiError> {
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
                (open < self.max).then_some(open + 1)
            })
            .map(|_| Permit {
                open: self.open.clone(),
            })
            .map_err(|_| ApiError::too_many_streams(self.max))
    }

    /// How many are open now.
    #[cfg(test)]
    fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// `stream`, holding `permit` until it ends or is dropped (the client
/// went away: hyper drops the body).
pub(crate) fn hold<S>(stream: S, permit: Permit) -> impl Stream<Item = S::Item> + Send + 'static
where
    S: Stream + Send + 'static,
{
    futures::stream::unfold(Some((stream.boxed(), permit)), |state| async move {
        let (mut stream, permit) = state?;
        // At the end, the permit is dropped with the state.
        let item = stream.next().await?;
        Some((item, Some((stream, permit))))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_permit_is_freed_when_its_stream_ends_or_is_dropped() {
        let streams = Streams::new(2);
        let first = streams.acquire().expect("a place");
        let second = streams.acquire().expect("a place");
        let refused = streams.acquire().expect_err("full");
        assert_eq!(refused.status(), 503);
        assert_eq!(refused.kind(), "too_many_streams");
        drop(first);
        let third = streams.acquire().expect("a place again");
        assert_eq!(streams.open(), 2);

        let mut held = Box::pin(hold(futures::stream::iter([1, 2]), second));
        assert_eq!(held.next().await, Some(1));
        assert_eq!(streams.open(), 2);
        assert_eq!(held.next().await, Some(2));
        assert_eq!(held.next().await, None);
        assert_eq!(streams.open(), 1, "freed at the end, before the drop");
        drop(held);
        let dropped = hold(futures::stream::pending::<()>(), third);
        assert_eq!(streams.open(), 1);
        drop(dropped);
        assert_eq!(streams.open(), 0);
    }
}
