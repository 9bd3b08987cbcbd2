//! How a field folds the updates written to it: the [`Reducer`] trait and the
//! built-in reducers.
//!
//! Every built-in is available twice: as a plain function you can call on
//! any value (`append(&mut v, more)`), and as a unit struct implementing
//! [`Reducer`] that `#[derive(AgentState)]` uses (`#[reducer(append)]`).
//! Any function `fn(&mut T, T)` or `fn(&mut T, T) -> Result<(), E>` is a
//! reducer too (`#[reducer(with = my_fn)]`), and so, in a derived state,
//! is a function `fn(&mut T, U)` whose update type `U` is not the field's
//! (`#[reducer(with = my_fn, update = U)]`).
//!
//! [`AddMessages`] and [`add_messages`] belong to [`crate::messages`], whose
//! id index they work on, and are re-exported here with the other built-ins.

mod append;
mod append_by_id;
mod custom;
mod merge;
mod replace;
mod with;
mod writes;

pub use append::{Append, append};
pub use append_by_id::{AppendById, HasId, append_by_id};
pub use custom::ReduceOutcome;
pub use merge::{Merge, MergeMap, merge};
pub use replace::{Replace, replace};
pub use writes::{Fold, Staged, Writes};

// A re-export only (see the module docs): nothing here uses `messages`,
// which implements `Reducer`.
pub use crate::messages::{AddMessages, add_messages};

// For `#[reducer(with = ..)]`. Here, outside `__private`, so that errors
// name them `FieldReducer<u32, Mismatched, _>`, without a path.
#[doc(hidden)]
pub use with::{
    FieldReducer, FnReducer, IsFunction, IsReducer, Mismatched, UpdateReducer, ViaFunction,
    ViaReducer,
};

use crate::error::{ReduceError, StateError};
use serde_json::Value;

/// The argument of [`Reducer`]'s sealed methods: public, so that it may
/// appear in a public trait, in a private module, so that no other crate
/// can name it.
mod sealed {
    /// Only this crate can make one.
    #[derive(Clone, Copy)]
    pub struct Sealed;
}

pub(crate) use sealed::Sealed;

/// A rule for folding updates into a field of type `T`, as LangGraph's
/// `Annotated[T, reducer]`.
///
/// `merge` also reduces a field whose type is itself a state
/// (`#[derive(AgentState)]` implements `Reducer<ItsState>` for [`Merge`]):
/// the update is the nested state's delta, and only the inner fields it
/// writes change, each through its own reducer.
///
/// A reducer must be deterministic: its effect depends only on the field
/// and the update. Stores log updates and rebuild a state by replaying them
/// through the same reducers, which must then do exactly what they did the
/// first time. Anything random (an id, a timestamp) belongs in the update,
/// built by the node, or is fixed in [`prepare`](Reducer::prepare).
///
/// Reduction is two-phase so that a whole state update can be atomic:
/// [`check`](Reducer::check) (or [`stage`](Reducer::stage)) finds every
/// error without touching the target, then [`apply`](Reducer::apply) (or
/// [`commit`](Reducer::commit)) cannot fail. Implement `apply`, plus `check`
/// if some updates can be refused, plus `fold` if two updates written in
/// one step can be combined into one, plus `prepare` if applying would
/// otherwise choose something at random.
///
/// ```
/// use state_core::reducer::{Reducer, Append};
///
/// let mut log = vec!["a".to_string()];
/// Append.reduce(&mut log, vec!["b".to_string()]).unwrap();
/// assert_eq!(log, ["a", "b"]);
/// ```
#[diagnostic::on_unimplemented(
    message = "the reducer `{Self}` cannot reduce a field of type `{T}`",
    label = "this field's type does not fit its reducer",
    note = "`replace` fits any type; `append` needs a collection (Vec, VecDeque, HashSet, ...); \
            `merge` needs a map (HashMap, BTreeMap, IndexMap, serde_json::Map) or a nested \
            state that derives `AgentState`; \
            `append_by_id` needs a Vec of items implementing `HasId`; \
            `add_messages` needs `Messages` or a Vec of `MessageLike` items; \
            `with = f` needs `fn(&mut T, T)` or `fn(&mut T, T) -> Result<(), E>`, \
            and `with = f, update = U` needs `fn(&mut T, U)` or `fn(&mut T, U) -> Result<(), E>`"
)]
pub trait Reducer<T> {
    /// What a node writes to a field with this reducer.
    type Update;

    /// Reduces one update whose [`check`](Reducer::check) passed. Cannot fail.
    fn apply(&self, target: &mut T, update: Self::Update);

    /// Checks, without changing `target`, that `writes` can be reduced into
    /// it one after another. The default accepts everything.
    fn check(&self, target: &T, writes: &Writes<Self::Update>) -> Result<(), ReduceError> {
        let _ = (target, writes);
        Ok(())
    }

    /// Fixes, before an update is logged or applied, anything applying would
    /// otherwise choose at random; `add_messages` gives id-less messages
    /// their UUID here. The default does nothing.
    ///
    /// A delta's setters and its JSON decoding call it on every update they
    /// store, so the delta a store logs is exactly the one that is applied,
    /// and replaying the log rebuilds the same state.
    ///
    /// ```
    /// use state_core::{Message, Messages};
    /// use state_core::reducer::{AddMessages, Reducer};
    ///
    /// let mut update = vec![Message::ai("hello"), Message::remove("gone")];
    /// <AddMessages as Reducer<Messages>>::prepare(&AddMessages, &mut update);
    /// assert!(update[0].id().is_some(), "an id, fixed before applying");
    /// assert_eq!(update[1].id(), Some("gone"));
    /// ```
    fn prepare(&self, update: &mut Self::Update) {
        let _ = update;
    }

    /// Combines two updates written in the same step into one with the same
    /// effect, when that is possible exactly. The default keeps both.
    fn fold(&self, first: Self::Update, second: Self::Update) -> Fold<Self::Update> {
        Fold::Both(first, second)
    }

    /// Phase one of an atomic update: everything that can fail. The default
    /// runs [`check`](Reducer::check) and keeps the writes for
    /// [`commit`](Reducer::commit).
    fn stage(
        &self,
        target: &T,
        writes: Writes<Self::Update>,
    ) -> Result<Staged<T, Self::Update>, ReduceError> {
        self.check(target, &writes)?;
        Ok(Staged::writes(writes))
    }

    /// Phase two of an atomic update: applies what [`stage`](Reducer::stage)
    /// accepted. Cannot fail.
    fn commit(&self, target: &mut T, staged: Staged<T, Self::Update>) {
        staged.commit(target, |target, update| self.apply(target, update));
    }

    /// Like [`fold`](Reducer::fold), for updates that can fail to combine
    /// with an error of their own: a nested state's deltas, whose
    /// concurrent writes name the inner field. The error's path is relative
    /// to this field; the caller puts the field's name in front.
    ///
    /// Sealed: the `Sealed` argument cannot be named outside this crate, so
    /// this can be neither called nor overridden there (as
    /// `std::error::Error::type_id`); a reducer implements what is shown.
    #[doc(hidden)]
    fn try_fold(
        &self,
        first: Self::Update,
        second: Self::Update,
        _: Sealed,
    ) -> Result<Fold<Self::Update>, StateError> {
        Ok(self.fold(first, second))
    }

    /// Reads one update from JSON for the field `field`; `update_ty` names
    /// the update type in errors. A nested state reads its delta, with
    /// errors that name the inner field's full path. Sealed, as
    /// [`try_fold`](Reducer::try_fold).
    #[doc(hidden)]
    fn decode_update(
        &self,
        field: &str,
        update_ty: &'static str,
        value: Value,
        _: Sealed,
    ) -> Result<Self::Update, StateError>
    where
        Self::Update: crate::field_type::DecodeUpdate,
    {
        <Self::Update as crate::field_type::DecodeUpdate>::decode_json(field, update_ty, value)
    }

    /// Reduces one update, all-or-nothing: on error `target` is unchanged.
    fn reduce(&self, target: &mut T, update: Self::Update) -> Result<(), ReduceError> {
        let staged = self.stage(target, Writes::one(update))?;
        self.commit(target, staged);
        Ok(())
    }
}
