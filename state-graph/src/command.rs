//! [`Command`]: a node's update together with where the run goes next
//! (LangGraph's `Command(goto=, update=, graph=)`), and [`Dispatch`], one
//! run of a worker with its own input (LangGraph's `Send`).

use crate::route::{AnyInput, Worker};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// What a node returns when it also says where the run goes next: an
/// update (its delta) and one target, several (they run together in the
/// next superstep), [`END`](crate::END), or workers with their own inputs.
/// LangGraph's `Command(goto=..., update=...)`.
///
/// Every target must be declared with
/// [`destinations`](crate::NodeOptions::destinations), so that `compile`
/// still proves every node reachable and every loop able to end; a target
/// not declared is an error naming it. The targets a superstep chose are
/// logged with it: a run continued or resumed in another process goes the
/// same way.
///
/// A node returning a command without a target (`Command::default()`)
/// follows its edges, as one returning its delta does; targets are added
/// to what its edges lead to.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_graph::GraphError> {
/// use state_core::{AgentState, State};
/// use state_graph::{Command, END, START, StateGraph};
///
/// #[derive(AgentState, Debug, Clone)]
/// struct Team {
///     #[reducer(append)]
///     log: Vec<String>,
/// }
///
/// fn supervisor(s: &Team) -> Command<TeamDelta> {
///     let next = if s.log.is_empty() { "researcher" } else { END };
///     Command::goto(next).update(Team::delta().log(vec!["supervisor".into()]))
/// }
///
/// let mut g = StateGraph::<Team>::new();
/// g.add_node("supervisor", supervisor).destinations(["researcher", END]);
/// g.add_node("researcher", |_: &Team| Team::delta().log(vec!["researcher".into()]));
/// g.add_edge(START, "supervisor");
/// g.add_edge("researcher", "supervisor");
/// let app = g.compile()?;
/// let out = app.invoke(Team::delta()).await?;
/// assert_eq!(out.log, ["supervisor", "researcher", "supervisor"]);
/// # Ok(())
/// # }
/// ```
#[must_use = "a command does nothing until a node returns it"]
pub struct Command<D> {
    pub(crate) update: Option<D>,
    pub(crate) goto: Vec<Goto>,
    pub(crate) parent: bool,
}

/// One target of a [`Command`]: a node by name (or `END`), or a worker run
/// with its input. What a list mixing both is made of (LangGraph's
/// `goto=["a", Send("w", x)]`).
///
/// ```
/// # use state_core::{AgentState, State};
/// # #[derive(AgentState, Debug, Clone)]
/// # struct S { n: u32 }
/// use state_graph::{Command, Goto, StateGraph};
///
/// let mut g = StateGraph::<S>::new();
/// let worker = g.add_worker("worker", |n: &u32| S::delta().n(*n));
/// let both: Command<SDelta> = Command::goto(vec![Goto::from("summary"), worker.send(7).into()]);
/// assert_eq!(both.targets().collect::<Vec<_>>(), ["summary", "worker"]);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub enum Goto {
    /// A node by name, or `END`.
    Node(String),
    /// A worker run with its input.
    Dispatch(Dispatch),
}

impl std::fmt::Debug for Goto {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Goto::Node(name) => f.debug_tuple("Node").field(name).finish(),
            Goto::Dispatch(d) => d.fmt(f),
        }
    }
}

impl From<&str> for Goto {
    fn from(name: &str) -> Goto {
        Goto::Node(name.to_owned())
    }
}

impl From<String> for Goto {
    fn from(name: String) -> Goto {
        Goto::Node(name)
    }
}

impl From<Dispatch> for Goto {
    fn from(dispatch: Dispatch) -> Goto {
        Goto::Dispatch(dispatch)
    }
}

impl IntoGoto for Goto {
    fn into_goto(self, goto: &mut Vec<Goto>) {
        goto.push(self);
    }
}

impl<D> Default for Command<D> {
    /// A command with no update and no target: the node follows its edges.
    fn default() -> Self {
        Command {
            update: None,
            goto: Vec::new(),
            parent: false,
        }
    }
}

impl<D: std::fmt::Debug> std::fmt::Debug for Command<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let goto: Vec<&str> = self
            .goto
            .iter()
            .map(|g| match g {
                Goto::Node(name) => name.as_str(),
                Goto::Dispatch(d) => d.node.as_str(),
            })
            .collect();
        f.debug_struct("Command")
            .field("goto", &goto)
            .field("update", &self.update)
            .field("to_parent", &self.parent)
            .finish()
    }
}

impl<D> Command<D> {
    /// A command going to `targets`: a node name, [`END`](crate::END), a
    /// list of names (they run together in the next superstep), or
    /// [`Dispatch`]es (workers with their inputs).
    ///
    /// ```
    /// use state_graph::{Command, END};
    ///
    /// let one: Command<()> = Command::goto("tools");
    /// let both: Command<()> = Command::goto(["search", "summarize"]);
    /// let done: Command<()> = Command::goto(END);
    /// # let _ = (one, both, done);
    /// ```
    pub fn goto(targets: impl IntoGoto) -> Self {
        // Room for one: a handoff's list made once, to its size.
        let mut goto = Vec::with_capacity(1);
        targets.into_goto(&mut goto);
        Command {
            update: None,
            goto,
            parent: false,
        }
    }

    /// This command with `delta` as its update, applied through the
    /// reducers with the rest of the superstep.
    pub fn update(mut self, delta: D) -> Self {
        self.update = Some(delta);
        self
    }

    /// This command routed in the parent graph (LangGraph's
    /// `Command(graph=Command.PARENT)`): from a node of a subgraph, its
    /// targets are nodes of the graph the subgraph is a node of, and its
    /// update is applied there. The subgraph ends with this step.
    pub fn to_parent(mut self) -> Self {
        self.parent = true;
        self
    }

    /// The update, if any.
    pub fn get_update(&self) -> Option<&D> {
        self.update.as_ref()
    }

    /// The names of the targets, in order (a dispatch by its worker's name).
    pub fn targets(&self) -> impl Iterator<Item = &str> {
        self.goto.iter().map(|g| match g {
            Goto::Node(name) => name.as_str(),
            Goto::Dispatch(d) => d.node.as_str(),
        })
    }

    /// Whether [`to_parent`](Command::to_parent) was called.
    pub fn is_to_parent(&self) -> bool {
        self.parent
    }

    /// The update and the targets, taken apart: what code that combines
    /// several commands into one (a tool node answering several tool
    /// calls) needs. [`is_to_parent`](Command::is_to_parent) says where
    /// they were meant to go.
    ///
    /// ```
    /// use state_graph::Command;
    ///
    /// let (update, targets) = Command::goto(["a", "b"]).update(7).into_parts();
    /// assert_eq!(update, Some(7));
    /// let again: Command<i32> = Command::goto(targets);
    /// assert_eq!(again.targets().collect::<Vec<_>>(), ["a", "b"]);
    /// ```
    pub fn into_parts(self) -> (Option<D>, Vec<Goto>) {
        (self.update, self.goto)
    }
}

/// The targets [`Command::goto`] accepts: a node name (`&str`, `String`,
/// [`END`](crate::END)), a list of names (a `Vec` or an array), one
/// [`Dispatch`], a list of them, or a list of [`Goto`]s (names and
/// dispatches mixed).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a target of a Command",
    label = "not a target",
    note = "accepted: a node name (`&str`, `String`, `END`), a `Vec` or array of names, a `Dispatch` (`worker.send(input)`), a `Vec` or array of them, or of `Goto`s to mix both"
)]
pub trait IntoGoto {
    /// Appends the targets to `goto`.
    #[doc(hidden)]
    fn into_goto(self, goto: &mut Vec<Goto>);
}

impl IntoGoto for &str {
    fn into_goto(self, goto: &mut Vec<Goto>) {
        goto.push(Goto::Node(self.to_owned()));
    }
}

impl IntoGoto for String {
    fn into_goto(self, goto: &mut Vec<Goto>) {
        goto.push(Goto::Node(self));
    }
}

impl IntoGoto for &String {
    fn into_goto(self, goto: &mut Vec<Goto>) {
        goto.push(Goto::Node(self.clone()));
    }
}

impl IntoGoto for Dispatch {
    fn into_goto(self, goto: &mut Vec<Goto>) {
        goto.push(Goto::Dispatch(self));
    }
}

impl<T: IntoGoto> IntoGoto for Vec<T> {
    fn into_goto(self, goto: &mut Vec<Goto>) {
        for target in self {
            target.into_goto(goto);
        }
    }
}

impl<T: IntoGoto, const N: usize> IntoGoto for [T; N] {
    fn into_goto(self, goto: &mut Vec<Goto>) {
        for target in self {
            target.into_goto(goto);
        }
    }
}

/// One run of a worker with its own input, sent by a [`Command`]
/// (LangGraph's `Command(goto=[Send(worker, input)])`): made by
/// [`Worker::send`]. The input is logged with the step that sent it, so
/// the worker's input type is `Serialize` and `Deserialize`, and the
/// sending node declares the worker among its
/// [`destinations`](crate::NodeOptions::destinations) (`(&worker).into()`).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_graph::GraphError> {
/// use state_core::{AgentState, State};
/// use state_graph::{Command, Destination, END, START, StateGraph};
///
/// #[derive(AgentState, Debug, Clone)]
/// struct Jokes {
///     #[reducer(append)]
///     jokes: Vec<String>,
/// }
///
/// let mut g = StateGraph::<Jokes>::new();
/// let joke = g.add_worker("joke", |subject: &String| {
///     Jokes::delta().jokes(vec![format!("a joke about {subject}")])
/// });
/// let plan = {
///     let joke = joke.clone();
///     move |_: &Jokes| -> Command<JokesDelta> {
///         Command::goto(vec![joke.send("cats".to_owned()), joke.send("dogs".to_owned())])
///     }
/// };
/// g.add_node("plan", plan).destinations([Destination::from(&joke)]);
/// g.add_edge(START, "plan");
/// g.add_edge("joke", END);
/// let app = g.compile()?;
/// let out = app.invoke(Jokes::delta()).await?;
/// assert_eq!(out.jokes, ["a joke about cats", "a joke about dogs"]);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Dispatch {
    pub(crate) node: String,
    pub(crate) input: Arc<AnyInput>,
    pub(crate) encode: EncodeFn,
}

/// Writes a dispatch's input as JSON, for the log.
pub(crate) type EncodeFn = fn(&AnyInput) -> Result<Value, String>;

impl std::fmt::Debug for Dispatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatch")
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

impl Dispatch {
    /// The worker it runs.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The input as JSON.
    pub(crate) fn encoded(&self) -> Result<Value, String> {
        (self.encode)(&*self.input)
    }
}

impl<I> Worker<I>
where
    I: Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    /// A run of this worker on `input`, for a [`Command`] to go to.
    pub fn send(&self, input: I) -> Dispatch {
        Dispatch {
            node: self.name.clone(),
            input: Arc::new(input),
            encode: encode::<I>,
        }
    }
}

fn encode<I: Serialize + 'static>(input: &AnyInput) -> Result<Value, String> {
    match input.downcast_ref::<I>() {
        Some(input) => serde_json::to_value(input).map_err(|e| e.to_string()),
        None => Err(format!("the input is not a {}", std::any::type_name::<I>())),
    }
}

pub(crate) fn decode<I>(value: Value) -> Result<Arc<AnyInput>, serde_json::Error>
where
    I: serde::de::DeserializeOwned + Send + Sync + 'static,
{
    Ok(Arc::new(serde_json::from_value::<I>(value)?))
}

impl<I> From<&Worker<I>> for crate::spec::Destination
where
    I: Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    fn from(worker: &Worker<I>) -> crate::spec::Destination {
        crate::spec::Destination {
            name: worker.name.clone(),
            decode: Some(decode::<I>),
        }
    }
}
