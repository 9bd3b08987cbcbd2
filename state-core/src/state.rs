//! The two traits `#[derive(AgentState)]` implements: [`State`] for the
//! struct and [`Delta`] for its generated partial update.

use crate::error::StateError;

/// An agent's state: one struct whose fields each say how updates merge.
///
/// Implemented by `#[derive(AgentState)]`; see the crate docs for the
/// attributes. Nodes return a [`State::Delta`], and the graph runtime applies
/// it with [`apply`](State::apply) (one node) or [`apply_all`](State::apply_all)
/// (several nodes in one superstep).
pub trait State: Default {
    /// The partial update for this state: one optional slot per field.
    type Delta: Delta;

    /// An empty delta, to fill with its chainable setters.
    fn delta() -> Self::Delta {
        Self::Delta::default()
    }

    /// Applies one delta through each field's reducer. All-or-nothing: on
    /// `Err` the state is exactly as before.
    fn apply(&mut self, delta: Self::Delta) -> Result<(), StateError>;

    /// One superstep, all-or-nothing: the deltas of nodes that ran in
    /// parallel, in the order given (LangGraph applies them in node-name
    /// order). Each field's writes reduce one after another; two writes to a
    /// `replace` field are a [`StateError::ConcurrentWrite`].
    fn apply_all(
        &mut self,
        deltas: impl IntoIterator<Item = Self::Delta>,
    ) -> Result<(), StateError> {
        let mut merged = Self::Delta::default();
        for delta in deltas {
            merged = merged.merge(delta)?;
        }
        self.apply(merged)
    }

    /// Starts a new turn: every turn-scoped field goes back to its default;
    /// persistent fields are untouched.
    fn begin_turn(&mut self);
}

/// A partial update of a [`State`]: what one node writes.
pub trait Delta: Default {
    /// True when the delta writes nothing.
    fn is_empty(&self) -> bool;

    /// The names of the fields this delta writes, in declaration order.
    fn fields(&self) -> Vec<&'static str>;

    /// Combines two deltas written in the same step (as by parallel
    /// branches) into one with the effect of `apply_all([self, other])`.
    /// Two writes to a `replace` field are a [`StateError::ConcurrentWrite`];
    /// two overwrites of one field are a [`StateError::ConcurrentOverwrite`].
    fn merge(self, other: Self) -> Result<Self, StateError>;
}
