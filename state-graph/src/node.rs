//! The node forms `add_node` accepts, and the one erased shape the runner
//! calls: a sync function of `(&X, &Ctx)` or an async one of `(Arc<X>, Ctx)`.
//!
//! Each form is a blanket impl of [`IntoNode`] told apart by a marker type,
//! as axum does for handlers: the compiler picks the one that fits, and a
//! function that fits none gets our message, not a wall of trait bounds.

use crate::ctx::Ctx;
use crate::error::NodeError;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed, `Send` future.
pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

type SyncFn<X, D> = dyn Fn(&X, &Ctx) -> Result<D, NodeError> + Send + Sync;
type AsyncFn<X, D> = dyn Fn(Arc<X>, Ctx) -> BoxFuture<Result<D, NodeError>> + Send + Sync;

/// A node, ready for the runner: made by [`IntoNode`] from a plain function.
pub struct Node<X: ?Sized, D> {
    pub(crate) call: Call<X, D>,
}

pub(crate) enum Call<X: ?Sized, D> {
    Sync(Box<SyncFn<X, D>>),
    Async(Box<AsyncFn<X, D>>),
}

impl<X: ?Sized, D> std::fmt::Debug for Node<X, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.call {
            Call::Sync(_) => "Node(sync)",
            Call::Async(_) => "Node(async)",
        })
    }
}

/// What a node function may return: its delta `D`, or `Result<D, E>` for
/// any `E: std::error::Error + Send + Sync + 'static`, or `Result<D,
/// NodeError>`. `M` tells the three apart; it is inferred.
#[diagnostic::on_unimplemented(
    message = "a node must return its state's delta, or a Result of it",
    label = "this node returns `{Self}`",
    note = "accepted: `S::Delta`, `Result<S::Delta, E>` with `E: std::error::Error + Send + Sync + 'static`, or `Result<S::Delta, NodeError>`"
)]
pub trait NodeOutput<D, M>: Send + 'static {
    /// The node's result, its error boxed.
    fn into_result(self) -> Result<D, NodeError>;
}

/// Markers that tell the node forms apart (inferred; never written).
pub mod markers {
    use std::marker::PhantomData;

    /// A node returning its delta.
    pub struct Infallible;
    /// A node returning `Result<D, E>`.
    pub struct Fallible;
    /// A node returning `Result<D, NodeError>`.
    pub struct WithNodeError;
    /// `fn(&X) -> R`.
    pub struct Sync<R, M>(PhantomData<(R, M)>);
    /// `fn(&X, &Ctx) -> R`.
    pub struct SyncCtx<R, M>(PhantomData<(R, M)>);
    /// `async fn(Arc<X>) -> R`.
    pub struct Async<F, M>(PhantomData<(F, M)>);
    /// `async fn(Arc<X>, Ctx) -> R`.
    pub struct AsyncCtx<F, M>(PhantomData<(F, M)>);
}

impl<D: Send + 'static> NodeOutput<D, markers::Infallible> for D {
    fn into_result(self) -> Result<D, NodeError> {
        Ok(self)
    }
}

impl<D, E> NodeOutput<D, markers::Fallible> for Result<D, E>
where
    D: Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    fn into_result(self) -> Result<D, NodeError> {
        self.map_err(NodeError::from)
    }
}

impl<D: Send + 'static> NodeOutput<D, markers::WithNodeError> for Result<D, NodeError> {
    fn into_result(self) -> Result<D, NodeError> {
        self
    }
}

/// A function `add_node` accepts as a node reading `X` and writing `D`:
///
/// | form | for |
/// |---|---|
/// | `fn(&X) -> R` | a sync node |
/// | `fn(&X, &Ctx) -> R` | a sync node that interrupts or streams |
/// | `async fn(Arc<X>) -> R` | an async node (an LLM call, a tool) |
/// | `async fn(Arc<X>, Ctx) -> R` | an async node with a context |
///
/// where `R` is a [`NodeOutput`]. Closures that capture their environment
/// (a client, a config) work too, when they are `Send + Sync + 'static`.
///
/// The nodes of a superstep run concurrently on the run's task: async
/// nodes interleave at their `.await`s, and a sync node runs to its end
/// when polled. Put blocking or CPU-heavy work in an async node that
/// hands it to `tokio::task::spawn_blocking`, so its siblings go on.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a node of this graph",
    label = "not a node",
    note = "a node is `fn(&S) -> R`, `fn(&S, &Ctx) -> R`, `async fn(Arc<S>) -> R` or `async fn(Arc<S>, Ctx) -> R`, with R the state's delta or a Result of it",
    note = "a closure must be `Send + Sync + 'static`: move what it captures into it"
)]
pub trait IntoNode<X: ?Sized, D, M>: Send + Sync + 'static {
    /// The erased node.
    fn into_node(self) -> Node<X, D>;
}

impl<X, D, F, R, M> IntoNode<X, D, markers::Sync<R, M>> for F
where
    X: ?Sized,
    F: Fn(&X) -> R + Send + Sync + 'static,
    R: NodeOutput<D, M>,
{
    fn into_node(self) -> Node<X, D> {
        Node {
            call: Call::Sync(Box::new(move |x, _| self(x).into_result())),
        }
    }
}

impl<X, D, F, R, M> IntoNode<X, D, markers::SyncCtx<R, M>> for F
where
    X: ?Sized,
    F: Fn(&X, &Ctx) -> R + Send + Sync + 'static,
    R: NodeOutput<D, M>,
{
    fn into_node(self) -> Node<X, D> {
        Node {
            call: Call::Sync(Box::new(move |x, ctx| self(x, ctx).into_result())),
        }
    }
}

impl<X, D, F, Fut, M> IntoNode<X, D, markers::Async<Fut, M>> for F
where
    X: ?Sized,
    F: Fn(Arc<X>) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: NodeOutput<D, M>,
{
    fn into_node(self) -> Node<X, D> {
        Node {
            call: Call::Async(Box::new(move |x, _| {
                let run = self(x);
                Box::pin(async move { run.await.into_result() })
            })),
        }
    }
}

impl<X, D, F, Fut, M> IntoNode<X, D, markers::AsyncCtx<Fut, M>> for F
where
    X: ?Sized,
    F: Fn(Arc<X>, Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: NodeOutput<D, M>,
{
    fn into_node(self) -> Node<X, D> {
        Node {
            call: Call::Async(Box::new(move |x, ctx| {
                let run = self(x, ctx);
                Box::pin(async move { run.await.into_result() })
            })),
        }
    }
}
