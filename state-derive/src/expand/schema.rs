//! `State::schema`: a static table of the fields as written, each `merge`
//! field linked to its nested state's schema when it holds one.

use super::{key, private, reducer_value};
use crate::attrs::Scope;
use crate::model::{Builtin, Model, Reducer};
use crate::text::{expr_text, type_text};
use proc_macro2::TokenStream;
use quote::quote;

pub fn method(model: &Model) -> TokenStream {
    let p = private(model);
    let name = model.ident.to_string();
    let docs = &model.docs;
    let fields = model.fields.iter().map(|field| {
        let key = key(field);
        let ty = type_text(&field.ty);
        let reducer = field.reducer.describe();
        let scope = match field.scope {
            Scope::Turn => quote!(#p::Scope::Turn),
            Scope::Persistent => quote!(#p::Scope::Persistent),
        };
        let default = match &field.default {
            Some(expr) => {
                let text = expr_text(expr);
                quote!(#p::Some(#text))
            }
            None => quote!(#p::None),
        };
        let doc = &field.docs;
        let info = quote!(#p::FieldInfo::new(#key, #ty, #reducer, #scope, #default, #doc));
        // A `merge` field may hold a nested state, whose schema its reducer
        // knows. (A static cannot name the struct's generic parameters.)
        let merge = matches!(field.reducer, Reducer::Builtin(Builtin::Merge, _));
        if merge && model.generics.params.is_empty() {
            let reducer = reducer_value(model, field);
            quote!(#info.with_nested(|| #p::Reducer::nested_schema(&#reducer)))
        } else {
            info
        }
    });
    quote! {
        fn schema() -> &'static #p::Schema {
            static SCHEMA: #p::Schema = #p::Schema::new(#name, #docs, &[#(#fields),*]);
            &SCHEMA
        }
    }
}
