//! What an extension needs to inherit a flattened base: `InheritedBy`, one
//! impl per state on its own delta, which converts it into the delta of
//! any state that flattens it (`HasBase`) and lists its public fields'
//! types (named from the extension's crate, where the base's own type names
//! may not resolve); and `__inherit!`, which writes the base's setters and
//! getters onto the extension's delta.

use crate::Reducer;
use core::marker::PhantomData;

/// Index zero of a list.
pub struct Zero;
/// The index after `N`.
pub struct Next<N>(N);

/// Names for the first indices, so that a base's callback macro writes
/// index 37 as `I37`, not as 37 nested `Next<..>`: the callback is parsed
/// in every crate that defines a state, and nested indices made it the
/// largest part of its cost. Later indices nest on `I63` (the derive
/// knows that bound).
pub mod index {
    use super::{Next, Zero};

    macro_rules! indices {
        ($($name:ident = $prev:ty,)*) => {
            $(
                #[doc(hidden)]
                pub type $name = Next<$prev>;
            )*
        };
    }

    /// Index zero, named like the others.
    pub type I0 = Zero;

    indices! {
        I1 = I0, I2 = I1, I3 = I2, I4 = I3, I5 = I4, I6 = I5, I7 = I6, I8 = I7,
        I9 = I8, I10 = I9, I11 = I10, I12 = I11, I13 = I12, I14 = I13, I15 = I14,
        I16 = I15, I17 = I16, I18 = I17, I19 = I18, I20 = I19, I21 = I20, I22 = I21,
        I23 = I22, I24 = I23, I25 = I24, I26 = I25, I27 = I26, I28 = I27, I29 = I28,
        I30 = I29, I31 = I30, I32 = I31, I33 = I32, I34 = I33, I35 = I34, I36 = I35,
        I37 = I36, I38 = I37, I39 = I38, I40 = I39, I41 = I40, I42 = I41, I43 = I42,
        I44 = I43, I45 = I44, I46 = I45, I47 = I46, I48 = I47, I49 = I48, I50 = I49,
        I51 = I50, I52 = I51, I53 = I52, I54 = I53, I55 = I54, I56 = I55, I57 = I56,
        I58 = I57, I59 = I58, I60 = I59, I61 = I60, I62 = I61, I63 = I62,
    }
}

/// Item `N` of a list `(T0, (T1, (.., ())))`.
pub trait At<N> {
    /// The item.
    type Out;
}

impl<H, T> At<Zero> for (H, T) {
    type Out = H;
}

impl<H, T: At<N>, N> At<Next<N>> for (H, T) {
    type Out = T::Out;
}

/// A delta that holds, at any depth, the delta of the flattened base whose
/// id is `ID`. Bases are keyed by an id and not by their type: a base of a
/// base can only be named from the extension's crate through a projection,
/// and coherence cannot tell two projections apart, while two ids differ.
/// `#[derive(AgentState)]` gives each concrete state an id, unique across
/// crates (a hash of the crate's name, version and directory, and of the
/// state).
pub trait HasBase<const ID: u64> {
    /// The base's delta.
    type Delta;

    /// The base's delta, to write to.
    fn base_delta_mut(&mut self) -> &mut Self::Delta;
}

/// A base's delta, as the delta of a state `H` that flattens the base, at
/// any depth: one generic impl per state, on its own delta, however many
/// fields it has.
pub trait InheritedBy<H> {
    /// The public fields' types, as a list `(T0, (T1, (.., ())))` read
    /// with [`At`].
    type Fields;
    /// The `update = U` types of the public fields that give one, in
    /// order, as such a list.
    type Updates;

    /// `H`'s delta that writes what `self` writes.
    fn into_host(self) -> H;
}

/// Public field `N` of the base `ID` of the delta `H`.
pub type FieldOf<H, const ID: u64, N> =
    <<<H as HasBase<ID>>::Delta as InheritedBy<H>>::Fields as At<N>>::Out;

/// What the setter of public field `N` of the base `ID` of the delta `H`
/// takes, by its [`UpdateRule`] `R`.
pub type UpdateOf<H, const ID: u64, N, R> = <R as UpdateRule<
    FieldOf<H, ID, N>,
    <<H as HasBase<ID>>::Delta as InheritedBy<H>>::Updates,
>>::Update;

/// How an inherited setter's update type follows from its field's type `T`
/// and the base's [`InheritedBy::Updates`] list `L`. The base's callback
/// names a rule per field: a reducer's projection stays unresolved until
/// an extension uses it, so that a field that does not fit its reducer is
/// reported once, at that field.
pub trait UpdateRule<T, L> {
    /// The update type.
    type Update;
}

/// The field's own type.
pub struct Same;

/// The update type of reducer `R`.
pub struct Reduce<R>(PhantomData<R>);

/// Item `N` of the `Updates` list (a field with `update = U`).
pub struct Given<N>(PhantomData<N>);

impl<T, L> UpdateRule<T, L> for Same {
    type Update = T;
}

impl<T, L, R: Reducer<T>> UpdateRule<T, L> for Reduce<R> {
    type Update = R::Update;
}

impl<T, L: At<N>, N> UpdateRule<T, L> for Given<N> {
    type Update = L::Out;
}

/// What an extension's `From` asks of a delta: [`InheritedBy`], through an
/// impl that is not recommended, so that a delta that does not convert is
/// reported with this trait's message and not as a missing
/// `HasBase<..>`. (The derive cannot write `do_not_recommend` itself: the
/// `diagnostic` namespace does not resolve in a module without the
/// prelude.)
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not convert into `{H}`",
    label = "not the delta of a state flattened into this one",
    note = "a delta converts into the delta of a state that has its state as a `#[state(flatten)]` field"
)]
pub trait IntoHost<H> {
    /// `H`'s delta that writes what `self` writes.
    fn into_host(self) -> H;
}

#[diagnostic::do_not_recommend]
impl<D: InheritedBy<H>, H> IntoHost<H> for D {
    #[inline]
    fn into_host(self) -> H {
        InheritedBy::into_host(self)
    }
}

/// Writes what a flattened base gives the delta of a state that flattens
/// it: `HasBase` for the base and for each of its own bases (at any
/// depth), and the public `x`, `get_x` (and, for a field with a reducer,
/// `overwrite_x`) of all of them, under their own names, each calling the
/// base delta's own. Called by the base's callback macro, which
/// `#[derive(AgentState)]` writes; not for use by hand.
///
/// - `krate`: the path to state-core the extension uses;
/// - `host`/`impl`/`where`: the extension's delta, its `impl` generics
///   and its where clause;
/// - `delta`: the base's delta type; `field`: the extension delta's field
///   that holds it;
/// - `filter`: the macro a field's methods pass through, which drops a
///   field named like one of the extension's or of an earlier base's;
///   `next`: the filter this call defines for the next base, `d`: a `$`;
/// - from the base's callback: `id`, the base's id, `deep`, the ids of
///   its own bases at any depth, and `groups`, per state (the base's and those), its id and its
///   public fields without (`replaced`) and with (`reduced`) a reducer:
///   each one's name, index in `InheritedBy::Fields` and method names, and
///   for a reduced one its [`UpdateRule`] and, for a list field, its
///   `push_` setter.
#[doc(hidden)]
#[macro_export]
macro_rules! __inherit {
    (
        krate [$($krate:tt)*] host [$($host:tt)*] impl [$($impl:tt)*] where [$($where:tt)*]
        delta [$($delta:tt)*] field [$field:ident] filter [$filter:ident] next [$next:ident]
        d [$d:tt] id [$id:literal] deep [$($deep:literal)*]
        groups [$( ($gid:literal [
            replaced [$( ($name:ident [$at:ty] $get:ident) )*]
            reduced [$( ($r_name:ident [$r_at:ty] $r_get:ident $overwrite:ident [$rule:ty] $($push:ident)?) )*]
        ]) )*]
    ) => {
        // The next base's filter: this base's fields, then this one's.
        macro_rules! $next {
            $( $( ($name $d($d item:tt)*) => {}; )* $( ($r_name $d($d item:tt)*) => {}; )* )*
            ($d other:ident $d($d item:tt)*) => { $filter! { $d other $d($d item)* } };
        }

        const _: () = {
            use $($krate)*::__private as __p;

            impl $($impl)* __p::HasBase<$id> for $($host)* $($where)* {
                type Delta = $($delta)*;

                #[inline]
                fn base_delta_mut(&mut self) -> &mut Self::Delta {
                    &mut self.$field
                }
            }

            $crate::__inherit! {
                @deep impl [$($impl)*] host [$($host)*] where [$($where)*]
                delta [$($delta)*] field [$field] ids [$($deep)*]
            }

            impl $($impl)* $($host)* $($where)* {
                $( $( $filter! { $name
                    $crate::__inherit! {
                        @write $field $name __p::FieldOf<Self, $gid, $at>,
                        "Writes `", stringify!($name), "` of a flattened base (its own setter)."
                    }

                    #[doc = concat!("The value this delta writes to `", stringify!($name), "` of a flattened base, if any.")]
                    #[inline]
                    pub fn $get(&self) -> __p::Option<&__p::FieldOf<Self, $gid, $at>> {
                        self.$field.$get()
                    }
                } )*
                $( $filter! { $r_name
                    $crate::__inherit! {
                        @write $field $r_name __p::UpdateOf<Self, $gid, $r_at, $rule>,
                        "Writes `", stringify!($r_name), "` of a flattened base (its own setter)."
                    }

                    #[doc = concat!("What this delta writes to `", stringify!($r_name), "` of a flattened base, if anything.")]
                    #[inline]
                    pub fn $r_get(
                        &self,
                    ) -> __p::Option<
                        __p::Written<
                            '_,
                            __p::FieldOf<Self, $gid, $r_at>,
                            __p::UpdateOf<Self, $gid, $r_at, $rule>,
                        >,
                    > {
                        self.$field.$r_get()
                    }

                    $crate::__inherit! {
                        @write $field $overwrite __p::FieldOf<Self, $gid, $r_at>,
                        "Replaces `", stringify!($r_name), "` of a flattened base wholesale, bypassing its reducer."
                    }

                    $( $crate::__inherit! {
                        @write $field $push
                            <__p::UpdateOf<Self, $gid, $r_at, $rule> as __p::IntoIterator>::Item,
                        "Adds one item to what this delta writes to `", stringify!($r_name),
                        "` of a flattened base (its own `push_` setter)."
                    } )?
                } )* )*
            }
        };
    };
    // `HasBase` for each base of the base, through the base's delta.
    (
        @deep impl [$($impl:tt)*] host [$($host:tt)*] where [$($where:tt)*]
        delta [$($delta:tt)*] field [$field:ident] ids [$id:literal $($rest:literal)*]
    ) => {
        impl $($impl)* __p::HasBase<$id> for $($host)* $($where)* {
            type Delta = <$($delta)* as __p::HasBase<$id>>::Delta;

            #[inline]
            fn base_delta_mut(&mut self) -> &mut Self::Delta {
                __p::HasBase::<$id>::base_delta_mut(&mut self.$field)
            }
        }

        $crate::__inherit! {
            @deep impl [$($impl)*] host [$($host)*] where [$($where)*]
            delta [$($delta)*] field [$field] ids [$($rest)*]
        }
    };
    (@deep impl $impl:tt host $host:tt where $where:tt delta $delta:tt field $field:tt ids []) => {};
    // A method that writes through the base delta's method of its name.
    (@write $field:ident $method:ident $update:ty, $($doc:expr),*) => {
        #[doc = concat!($($doc),*)]
        #[must_use]
        pub fn $method(mut self, value: impl __p::IntoUpdate<$update>) -> Self {
            self.$field = __p::take(&mut self.$field).$method(value);
            self
        }
    };
}

/// Inherits a state's bases one after the other (each base's callback
/// calls this with its groups, and this calls `__inherit!` with them, then
/// the next base's callback), and at the end defines the state's own
/// callback, which hands on its groups and all of theirs: so an extension
/// of this state inherits its bases too, at any depth. Written by
/// `#[derive(AgentState)]` for a state with bases; not for use by hand.
///
/// - `host`/`impl`/`where`/`d`: as for `__inherit!`;
/// - `this`: `delta`, `field`, `filter` and `next` of the base whose
///   callback called; `pending`: the same for each later base, after its
///   callback's path;
/// - `define`: the state's callback (`name`, re-exported as `ident` with
///   `vis`), its `id` and its `own` group;
/// - `acc`: the ids and groups of the bases inherited so far; then the
///   calling callback's `id`, `deep` and `groups`.
#[doc(hidden)]
#[macro_export]
macro_rules! __chain {
    (
        krate [$($krate:tt)*] host $host:tt impl $impl:tt where $where:tt d [$d:tt]
        this [$($this:tt)*] pending [([$($next:tt)*] $($then:tt)*) $($pending:tt)*]
        define $define:tt acc [ids [$($acc_id:literal)*] groups [$($acc:tt)*]]
        id [$id:literal] deep [$($deep:literal)*] groups [$($group:tt)*]
    ) => {
        $crate::__inherit! {
            krate [$($krate)*] host $host impl $impl where $where $($this)* d [$d]
            id [$id] deep [$($deep)*] groups [$($group)*]
        }
        $($next)*! {
            krate [$($krate)*] __chain host $host impl $impl where $where d [$d]
            this [$($then)*] pending [$($pending)*] define $define
            acc [ids [$($acc_id)* $id $($deep)*] groups [$($acc)* $($group)*]]
        }
    };
    (
        krate [$($krate:tt)*] host $host:tt impl $impl:tt where $where:tt d [$d:tt]
        this [$($this:tt)*] pending []
        define [name [$name:ident] ident [$ident:ident] vis [$($vis:tt)*] id [$own:literal] own [$($own_group:tt)*]]
        acc [ids [$($acc_id:literal)*] groups [$($acc:tt)*]]
        id [$id:literal] deep [$($deep:literal)*] groups [$($group:tt)*]
    ) => {
        $crate::__inherit! {
            krate [$($krate)*] host $host impl $impl where $where $($this)* d [$d]
            id [$id] deep [$($deep)*] groups [$($group)*]
        }
        #[doc(hidden)]
        #[macro_export]
        #[allow(non_local_definitions)]
        macro_rules! $name {
            (krate [$d($d krate:tt)*] $d mode:ident $d($d rest:tt)*) => {
                $d($d krate)*::__private::$d mode! {
                    krate [$d($d krate)*] $d($d rest)*
                    id [$own] deep [$($acc_id)* $id $($deep)*]
                    groups [($own [$($own_group)*]) $($acc)* $($group)*]
                }
            };
        }
        #[doc(hidden)]
        #[allow(unused_imports)]
        $($vis)* use $name as $ident;
    };
}
