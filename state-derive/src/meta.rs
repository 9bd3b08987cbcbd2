//! What every attribute parser does with `syn`'s nested metas (`attrs.rs`
//! for `#[reducer]`, `#[scope]`, `#[state]`; `rename.rs` for `#[serde]`).

/// Skips `= value` or `(...)` after an unknown, repeated or refused key.
pub(crate) fn skip_value(meta: &syn::meta::ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.input.parse::<syn::Token![=]>()?;
        meta.input.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _ = meta.input.parse::<proc_macro2::Group>()?;
    }
    Ok(())
}
