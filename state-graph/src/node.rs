//! The node forms `add_node` accepts, and the one erased shape the runner
//! calls: a sync function of `(&X, &Ctx)` or an async one of `(Arc<X>, Ctx)`.
//!
//! Each form is a blanket impl of [`IntoNode`] told apart by a marker type,
//! as axum does for handlers: the compiler picks the one that fits, and a
//! function that fits none gets our message, not a wall of trait bounds.

use crate::command::Command;
use crate::ctx::Ctx;
use crate::error::NodeError;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed, `Send` future.
pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What a node's run gives the runner: its update and where it goes.
pub(crate) type Returned<D> = Result<Command<D>, NodeError>;

type SyncFn<X, C, D> = dyn Fn(&X, &Ctx<C>) -> Returned<D> + Send + Sync;
type AsyncFn<X, C, D> = dyn Fn(Arc<X>, Ctx<C>) -> BoxFuture<Returned<D>> + Send + Sync;

/// A node, ready for the runner: made by [`IntoNode`] from a plain function.
pub struct Node<X: ?Sized, C, D> {
    pub(crate) call: Call<X, C, D>,
}

pub(crate) enum Call<X: ?Sized, C, D> {
    Sync(Box<SyncFn<X, C, D>>),
    Async(Box<AsyncFn<X, C, D>>),
}

impl<X: ?Sized, C, D> std::fmt::Debug for Node<X, C, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.call {
            Call::Sync(_) => "Node(sync)",
            Call::Async(_) => "Node(async)",
        })
    }
}

/// What a node function may return: its delta `D`, a [`Command`] (an
/// update and where to go), or a `Result` of either whose error is any
/// `E: std::error::Error + Send + Sync + 'static` or [`NodeError`]. `M`
/// tells the forms apart; it is inferred.
#[diagnostic::on_unimplemented(
    message = "a node must return its state's delta, a Command, or a Result of either",
    label = "this node returns `{Self}`",
    note = "accepted: `S::Delta`, `Command<S::Delta>`, or `Result` of either with `E: std::error::Error + Send + Sync + 'static` or `NodeError`"
)]
pub trait NodeOutput<D, M>: Send + 'static {
    /// The node's result as a command (a plain delta is a command with no
    /// target), its error boxed.
    fn into_result(self) -> Returned<D>;
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
    /// A node returning a `Command`.
    pub struct Commands;
    /// A node returning `Result<Command<D>, E>`.
    pub struct FallibleCommands;
    /// A node returning `Result<Command<D>, NodeError>`.
    pub struct CommandsWithNodeError;
    /// `fn(&X) -> R`.
    pub struct Sync<R, M>(PhantomData<(R, M)>);
    /// `fn(&X, &Ctx<C>) -> R`.
    pub struct SyncCtx<R, M>(PhantomData<(R, M)>);
    /// `async fn(Arc<X>) -> R`.
    pub struct Async<F, M>(PhantomData<(F, M)>);
    /// `async fn(Arc<X>, Ctx<C>) -> R`.
    pub struct AsyncCtx<F, M>(PhantomData<(F, M)>);
}

fn delta<D>(delta: D) -> Command<D> {
    Command {
        update: Some(delta),
        goto: Vec::new(),
        parent: false,
    }
}

impl<D: Send + 'static> NodeOutput<D, markers::Infallible> for D {
    #[inline]
    fn into_result(self) -> Returned<D> {
        Ok(delta(self))
    }
}

impl<D, E> NodeOutput<D, markers::Fallible> for Result<D, E>
where
    D: Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    #[inline]
    fn into_result(self) -> Returned<D> {
        self.map(delta).map_err(NodeError::from)
    }
}

impl<D: Send + 'static> NodeOutput<D, markers::WithNodeError> for Result<D, NodeError> {
    #[inline]
    fn into_result(self) -> Returned<D> {
        self.map(delta)
    }
}

impl<D: Send + 'static> NodeOutput<D, markers::Commands> for Command<D> {
    #[inline]
    fn into_result(self) -> Returned<D> {
        Ok(self)
    }
}

impl<D, E> NodeOutput<D, markers::FallibleCommands> for Result<Command<D>, E>
where
    D: Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    #[inline]
    fn into_result(self) -> Returned<D> {
        self.map_err(NodeError::from)
    }
}

impl<D: Send + 'static> NodeOutput<D, markers::CommandsWithNodeError>
    for Result<Command<D>, NodeError>
{
    #[inline]
    fn into_result(self) -> Returned<D> {
        self
    }
}

/// A function `add_node` accepts as a node reading `X` and writing `D`,
/// in a graph whose runs carry a context `C`:
///
/// | form | for |
/// |---|---|
/// | `fn(&X) -> R` | a sync node |
/// | `fn(&X, &Ctx<C>) -> R` | a sync node that interrupts, streams or reads the context |
/// | `async fn(Arc<X>) -> R` | an async node (an LLM call, a tool) |
/// | `async fn(Arc<X>, Ctx<C>) -> R` | an async node with a context |
///
/// where `R` is a [`NodeOutput`]: the delta, a [`Command`], or a `Result`
/// of either. Closures that capture their environment (a client, a config)
/// work too, when they are `Send + Sync + 'static`.
///
/// The nodes of a superstep run concurrently on the run's task: async
/// nodes interleave at their `.await`s, and a sync node runs to its end
/// when polled. Put blocking or CPU-heavy work in an async node that
/// hands it to `tokio::task::spawn_blocking`, so its siblings go on.
///
/// An async closure that returns `Ok(delta)` leaves its error type open:
/// rustc then asks for type annotations (E0282 or E0283). Name it once,
/// `Ok::<_, NodeError>(delta)`, or give the closure's future a typed
/// result (`async move { let out: NodeResult<_> = ..; out }`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a node of this graph",
    label = "not a node",
    note = "a node is `fn(&S) -> R`, `fn(&S, &Ctx<C>) -> R`, `async fn(Arc<S>) -> R` or `async fn(Arc<S>, Ctx<C>) -> R`, with R the state's delta, a Command, or a Result of either",
    note = "a node taking a `Ctx<C>` must use the graph's context type: `StateGraph<S, C>`",
    note = "a closure must be `Send + Sync + 'static`: move what it captures into it"
)]
pub trait IntoNode<X: ?Sized, C, D, M>: Send + Sync + 'static {
    /// The erased node.
    fn into_node(self) -> Node<X, C, D>;
}

impl<X, C, D, F, R, M> IntoNode<X, C, D, markers::Sync<R, M>> for F
where
    X: ?Sized,
    F: Fn(&X) -> R + Send + Sync + 'static,
    R: NodeOutput<D, M>,
{
    fn into_node(self) -> Node<X, C, D> {
        Node {
            call: Call::Sync(Box::new(move |x, _| self(x).into_result())),
        }
    }
}

impl<X, C, D, F, R, M> IntoNode<X, C, D, markers::SyncCtx<R, M>> for F
where
    X: ?Sized,
    F: Fn(&X, &Ctx<C>) -> R + Send + Sync + 'static,
    R: NodeOutput<D, M>,
{
    fn into_node(self) -> Node<X, C, D> {
        Node {
            call: Call::Sync(Box::new(move |x, ctx| self(x, ctx).into_result())),
        }
    }
}

impl<X, C, D, F, Fut, M> IntoNode<X, C, D, markers::Async<Fut, M>> for F
where
    X: ?Sized,
    F: Fn(Arc<X>) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: NodeOutput<D, M>,
{
    fn into_node(self) -> Node<X, C, D> {
        Node {
            call: Call::Async(Box::new(move |x, _| {
                let run = self(x);
                Box::pin(async move { run.await.into_result() })
            })),
        }
    }
}

impl<X, C, D, F, Fut, M> IntoNode<X, C, D, markers::AsyncCtx<Fut, M>> for F
where
    X: ?Sized,
    F: Fn(Arc<X>, Ctx<C>) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: NodeOutput<D, M>,
{
    fn into_node(self) -> Node<X, C, D> {
        Node {
            call: Call::Async(Box::new(move |x, ctx| {
                let run = self(x, ctx);
                Box::pin(async move { run.await.into_result() })
            })),
        }
    }
}
