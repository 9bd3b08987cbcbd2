//! `#[tool]`: a function becomes a tool (state-agent's `Tool`). The same
//! path as the derive: the attribute and the signature are parsed and
//! checked into a [`model::ToolModel`] (every mistake an error at its
//! span), then [`expand`] generates the items from a model known to be
//! valid.

mod expand;
mod model;

use proc_macro2::TokenStream;

/// Expands `#[tool(args)] item`: the tool's items, or the errors with
/// stubs that keep uses of the tool from failing too.
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = match syn::parse2::<syn::Item>(item.clone()) {
        Ok(item) => item,
        Err(e) => {
            let e = e.into_compile_error();
            return quote::quote!(#e #item);
        }
    };
    match model::ToolModel::from_input(args, &item) {
        Ok(model) => expand::expand(&model),
        Err(failed) => {
            let (errors, stub) = *failed;
            let errors = errors.into_compile_error();
            let stub = stub.map(|s| expand::stub(&s));
            match stub {
                Some(stub) => quote::quote!(#errors #stub),
                None => quote::quote!(#errors #item),
            }
        }
    }
}
