//! A future polled through a function of its own ([`OutOfLine`]).
//!
//! An `async fn`'s poll inlines the polls of the futures it awaits: the
//! runner's loop took in a thread's whole commit (every backend's append,
//! SQL ones too) and grew to 52 KB of code, more than the 32 KB L1
//! instruction cache, so its hot path missed the cache at every superstep,
//! most of all when a subgraph runs a second loop inside the first
//! (BENCHMARKS.md, 13, "the runner's loop out of the commit's line").

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

pin_project_lite::pin_project! {
    /// `inner`, polled by a function never inlined into the poll of the
    /// future that awaits it.
    pub(crate) struct OutOfLine<F> {
        #[pin]
        inner: F,
    }
}

impl<F: Future> Future for OutOfLine<F> {
    type Output = F::Output;

    #[inline(never)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.project().inner.poll(cx)
    }
}

/// `inner`, polled out of line (see [`OutOfLine`]).
pub(crate) fn out_of_line<F: Future>(inner: F) -> OutOfLine<F> {
    OutOfLine { inner }
}
