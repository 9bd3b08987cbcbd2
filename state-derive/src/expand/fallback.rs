//! Stub impls emitted beside the errors of invalid input, so the user sees
//! the macro's errors and not a flood of "State is not implemented" ones
//! wherever the state is used.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

pub fn stubs(input: &syn::DeriveInput, derives_default: bool) -> TokenStream {
    // Generic stubs would need PhantomData plumbing for nothing: the crate
    // does not compile anyway, and the macro's errors say why.
    if !matches!(&input.data, syn::Data::Struct(_)) || !input.generics.params.is_empty() {
        return TokenStream::new();
    }
    let ident = &input.ident;
    let vis = &input.vis;
    let delta = format_ident!("{}Delta", ident);
    let p = quote!(::state_core::__private);
    let default = (!derives_default).then(|| {
        quote! {
            impl #p::Default for #ident {
                fn default() -> Self { ::core::unreachable!() }
            }
        }
    });
    quote! {
        #[doc(hidden)]
        #[derive(::core::default::Default)]
        #vis struct #delta;

        const _: () = {
            #default
            impl #p::Delta for #delta {
                fn is_empty(&self) -> bool { true }
                fn fields(&self) -> #p::Vec<&'static str> { #p::Vec::new() }
                fn merge(self, _other: Self) -> #p::Result<Self, #p::StateError> { #p::Ok(self) }
            }
            impl #p::State for #ident {
                type Delta = #delta;
                fn apply(&mut self, _delta: #delta) -> #p::Result<(), #p::StateError> { #p::Ok(()) }
                fn begin_turn(&mut self) {}
            }
        };
    }
}
