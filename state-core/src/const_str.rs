//! `str` comparison in a `const` context, for what is decided at compile
//! time: the key trees of flattened bases (`runtime/flatten.rs`) and the
//! reducer names of a schema (`schema.rs`).

/// `a == b` in a `const` context.
pub(crate) const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}
