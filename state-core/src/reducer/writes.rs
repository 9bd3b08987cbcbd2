//! The small types reducers exchange: the writes to one field in one step,
//! a staged update, and the result of folding two updates.

/// The updates written to one field in one step, in order. Never empty.
#[derive(Debug, Clone, PartialEq)]
pub struct Writes<U> {
    first: U,
    later: Vec<U>,
}

impl<U> Writes<U> {
    /// A single write.
    pub fn one(update: U) -> Self {
        Writes {
            first: update,
            later: Vec::new(),
        }
    }

    /// The first write followed by `later` ones.
    pub fn new(first: U, later: Vec<U>) -> Self {
        Writes { first, later }
    }

    /// The first write and the later ones.
    pub fn into_parts(self) -> (U, Vec<U>) {
        (self.first, self.later)
    }

    /// Adds a write after the others.
    pub fn push(&mut self, update: U) {
        self.later.push(update);
    }

    /// How many writes there are (at least one).
    pub fn len(&self) -> usize {
        1 + self.later.len()
    }

    /// Always false: there is at least one write.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The writes in order.
    pub fn iter(&self) -> impl Iterator<Item = &U> {
        std::iter::once(&self.first).chain(self.later.iter())
    }
}

impl<U> IntoIterator for Writes<U> {
    type Item = U;
    type IntoIter = std::iter::Chain<std::iter::Once<U>, std::vec::IntoIter<U>>;

    fn into_iter(self) -> Self::IntoIter {
        std::iter::once(self.first).chain(self.later)
    }
}

/// What [`Reducer::stage`](super::Reducer::stage) accepted, ready to commit.
#[derive(Debug, Clone, PartialEq)]
pub struct Staged<T, U>(StagedInner<T, U>);

#[derive(Debug, Clone, PartialEq)]
enum StagedInner<T, U> {
    /// Checked writes, applied one by one on commit.
    Writes(Writes<U>),
    /// A finished value computed during staging, swapped in on commit.
    Value(T),
}

impl<T, U> Staged<T, U> {
    /// Checked writes, to be applied one by one.
    pub fn writes(writes: Writes<U>) -> Self {
        Staged(StagedInner::Writes(writes))
    }

    /// A finished value, to replace the target.
    pub fn value(value: T) -> Self {
        Staged(StagedInner::Value(value))
    }

    /// The checked writes, or the finished value.
    pub fn into_parts(self) -> Result<Writes<U>, T> {
        match self.0 {
            StagedInner::Writes(writes) => Ok(writes),
            StagedInner::Value(value) => Err(value),
        }
    }

    /// Applies the staged result with `apply` for each checked write.
    pub fn commit(self, target: &mut T, mut apply: impl FnMut(&mut T, U)) {
        match self.0 {
            StagedInner::Writes(writes) => {
                for update in writes {
                    apply(target, update);
                }
            }
            StagedInner::Value(value) => *target = value,
        }
    }
}

/// Two updates written in one step, folded by [`Reducer::fold`](super::Reducer::fold).
#[derive(Debug, Clone, PartialEq)]
pub enum Fold<U> {
    /// One update with exactly the effect of both, in order.
    One(U),
    /// No exact single update exists: both are kept and applied in order.
    Both(U, U),
    /// The two writes conflict (last-write-wins fields).
    Conflict,
}
