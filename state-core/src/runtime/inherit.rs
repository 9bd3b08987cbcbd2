//! What an extension needs to inherit a flattened base: the base's field
//! types by index (named from the extension's crate, where the base's own
//! type names may not resolve), the extension delta's base delta, and
//! `From` of a base's delta (one generic impl per extension, since a
//! projection like `<Base as State>::Delta` in an impl header cannot be
//! told apart from the extension's own delta by coherence).

/// A state's public fields' types and update types, as lists
/// `(T0, (T1, (.., ())))`, read with [`At`]: one impl per state, however
/// many fields it has.
pub trait FieldTypes {
    /// The public fields' types.
    type Fields;
    /// What their setters write.
    type Updates;
}

/// Index zero of a list.
pub struct Z;
/// The index after `N`.
pub struct S<N>(N);

/// Item `N` of a list `(T0, (T1, (.., ())))`.
pub trait At<N> {
    /// The item.
    type Out;
}

impl<H, T> At<Z> for (H, T) {
    type Out = H;
}

impl<H, T: At<N>, N> At<S<N>> for (H, T) {
    type Out = T::Out;
}

/// A delta that holds the delta of a flattened base `B`.
pub trait HasBase<B> {
    /// `B`'s delta.
    type Delta;

    /// The base's delta, to write to.
    fn base_delta_mut(&mut self) -> &mut Self::Delta;
}

/// A base's delta, as the delta of a state `H` that flattens the base.
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not convert into `{H}`",
    label = "not the delta of a state flattened into this one",
    note = "a delta converts into the delta of a state that has its state as a `#[state(flatten)]` field"
)]
pub trait InheritedBy<H> {
    /// `H`'s delta that writes what `self` writes.
    fn into_host(self) -> H;
}

/// Writes the setters a flattened base's public fields give the delta of
/// a state that flattens it (called by the base's callback macro, which
/// `#[derive(AgentState)]` writes; not for use by hand). Each setter moves
/// the base's delta out, calls the base's own setter and puts it back.
#[doc(hidden)]
#[macro_export]
macro_rules! __inherit {
    (
        krate [$($krate:tt)*] host [$($host:tt)*] impl [$($impl:tt)*]
        where [$($where:tt)*] state [$($state:tt)*] fields []
    ) => {};
    (
        krate [$($krate:tt)*] host [$($host:tt)*] impl [$($impl:tt)*]
        where [$($where:tt)*] state [$($state:tt)*]
        fields [$( ($name:ident [$at:ty] $($overwrite:ident)?) )*]
    ) => {
        const _: () = {
            use $($krate)*::__private as __p;
            type __Base = $($state)*;

            impl<$($impl)*> $($host)* where $($where)* {
                $(
                    #[doc = concat!("Writes `", stringify!($name), "` of a flattened base (its own setter).")]
                    #[must_use]
                    pub fn $name(
                        mut self,
                        value: impl __p::IntoUpdate<
                            <<__Base as __p::FieldTypes>::Updates as __p::At<$at>>::Out,
                        >,
                    ) -> Self {
                        let base = __p::HasBase::<__Base>::base_delta_mut(&mut self);
                        *base = __p::take(base).$name(value);
                        self
                    }

                    $(
                        #[doc = concat!("Replaces `", stringify!($name), "` of a flattened base wholesale, bypassing its reducer.")]
                        #[must_use]
                        pub fn $overwrite(
                            mut self,
                            value: impl __p::IntoUpdate<
                                <<__Base as __p::FieldTypes>::Fields as __p::At<$at>>::Out,
                            >,
                        ) -> Self {
                            let base = __p::HasBase::<__Base>::base_delta_mut(&mut self);
                            *base = __p::take(base).$overwrite(value);
                            self
                        }
                    )?
                )*
            }
        };
    };
}
