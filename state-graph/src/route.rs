//! Routers: the functions of conditional edges, which name the next nodes,
//! and fan-outs (LangGraph's `Send`), which give each worker its own input.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

/// A router, erased: reads the state (and, if it takes one, the run's
/// context), and calls `each` once per target name it returns. `false`
/// when it needed a context and was given none (reading a thread's
/// snapshot without one).
pub(crate) type RouterFn<S, C> =
    Box<dyn Fn(&S, Option<&C>, &mut dyn FnMut(&str)) -> bool + Send + Sync>;

/// A worker's input, erased (the worker's typed handle makes it the right
/// type).
pub(crate) type AnyInput = dyn Any + Send + Sync;

/// A fan-out router, erased: the worker inputs, in send order.
pub(crate) type FanOutFn<S> = Box<dyn Fn(&S) -> Vec<Arc<AnyInput>> + Send + Sync>;

/// What a router may return: one target name (`&str`, `String`, or
/// [`END`](crate::END)), several (a `Vec` or an array of them: they run
/// together in the next superstep), or `Option` of these (`None`: no next
/// node from this router).
#[diagnostic::on_unimplemented(
    message = "a router must return a target name or a list of them",
    label = "this router returns `{Self}`",
    note = "accepted: `&str`, `String`, `Vec<&str>`, `Vec<String>`, `[&str; N]`, or an `Option` of these"
)]
pub trait Targets {
    /// Calls `each` with every target name.
    fn each(self, each: &mut dyn FnMut(&str));
}

impl Targets for &str {
    fn each(self, each: &mut dyn FnMut(&str)) {
        each(self)
    }
}

impl Targets for String {
    fn each(self, each: &mut dyn FnMut(&str)) {
        each(&self)
    }
}

impl<T: AsRef<str>> Targets for Vec<T> {
    fn each(self, each: &mut dyn FnMut(&str)) {
        for target in &self {
            each(target.as_ref())
        }
    }
}

impl<T: AsRef<str>, const N: usize> Targets for [T; N] {
    fn each(self, each: &mut dyn FnMut(&str)) {
        for target in &self {
            each(target.as_ref())
        }
    }
}

impl<T: Targets> Targets for Option<T> {
    fn each(self, each: &mut dyn FnMut(&str)) {
        if let Some(targets) = self {
            targets.each(each)
        }
    }
}

/// Markers that tell the router forms apart (inferred; never written).
pub mod markers {
    use std::marker::PhantomData;

    /// `fn(&S) -> R` with an owned (or `'static`) `R`.
    pub struct Owned<R>(PhantomData<R>);
    /// `fn(&S) -> &str` borrowing from the state.
    pub struct Borrowed;
    /// `fn(&S, &C) -> R`: a router that reads the run's context.
    pub struct WithContext<R>(PhantomData<R>);
}

/// A function `add_conditional_edges` accepts as a router: `fn(&S) -> R`
/// with `R` a [`Targets`], `fn(&S) -> &str` returning a field of the
/// state (`|s| s.next.as_str()` as a `fn`), or `fn(&S, &C) -> R`, which
/// also reads the run's context (see
/// [`with_context`](crate::CompiledGraph::with_context)).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a router of this graph",
    label = "not a router",
    note = "a router is `fn(&S) -> R` or `fn(&S, &C) -> R` (C: the graph's context type), where R is a target name (`&str`, `String`, `END`) or a list of them"
)]
pub trait IntoRouter<S, C, M>: Send + Sync + 'static {
    /// The erased router.
    #[doc(hidden)]
    fn into_router(self) -> Router<S, C>;
}

/// A router, erased.
#[doc(hidden)]
pub struct Router<S, C>(pub(crate) RouterFn<S, C>);

impl<S, C, F, R> IntoRouter<S, C, markers::Owned<R>> for F
where
    F: Fn(&S) -> R + Send + Sync + 'static,
    R: Targets,
{
    fn into_router(self) -> Router<S, C> {
        Router(Box::new(move |state, _, each| {
            self(state).each(each);
            true
        }))
    }
}

impl<S, C, F> IntoRouter<S, C, markers::Borrowed> for F
where
    F: for<'a> Fn(&'a S) -> &'a str + Send + Sync + 'static,
{
    fn into_router(self) -> Router<S, C> {
        Router(Box::new(move |state, _, each| {
            each(self(state));
            true
        }))
    }
}

impl<S, C, F, R> IntoRouter<S, C, markers::WithContext<R>> for F
where
    F: Fn(&S, &C) -> R + Send + Sync + 'static,
    R: Targets,
{
    fn into_router(self) -> Router<S, C> {
        Router(Box::new(move |state, context, each| match context {
            Some(context) => {
                self(state, context).each(each);
                true
            }
            None => false,
        }))
    }
}

/// A worker node: one that runs once per input a fan-out sends it
/// (LangGraph's `Send`), reading that input instead of the state. Returned
/// by [`StateGraph::add_worker`](crate::StateGraph::add_worker) and passed to
/// [`add_fan_out`](crate::StateGraph::add_fan_out), so the compiler checks
/// that the inputs sent are the ones the worker reads.
#[derive(Debug)]
pub struct Worker<I> {
    pub(crate) name: String,
    _input: PhantomData<fn(I)>,
}

impl<I> Worker<I> {
    pub(crate) fn new(name: String) -> Worker<I> {
        Worker {
            name,
            _input: PhantomData,
        }
    }

    /// The worker's node name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl<I> Clone for Worker<I> {
    fn clone(&self) -> Self {
        Worker::new(self.name.clone())
    }
}
