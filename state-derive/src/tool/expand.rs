//! The items `#[tool]` generates from a valid [`ToolModel`]:
//!
//! - `struct get_weather {}`: the tool's type (a braced struct, so that
//!   it takes only the type namespace), documented as the function;
//! - `const get_weather: &get_weather`: the tool, under the function's
//!   name, as `ToolNode::new([get_weather])` takes it (a `&'static dyn
//!   Tool<S, C>` each, so tools of different types share one array);
//! - `impl get_weather { fn run(..) }`: the function as written (its
//!   parameters' doc comments taken off), to call directly;
//! - `impl Tool<S, C> for get_weather`: the spec (built once), and the
//!   call: the arguments read field by field, the state, context and
//!   call id passed in, the return made an output. Generic over `S` and
//!   `C` unless the function takes `&MyState` or `Ctx<MyCtx>`.

use super::model::{Output, Param, Stub, ToolModel, doc_attrs};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

pub fn expand(model: &ToolModel) -> TokenStream {
    let krate = &model.krate;
    let p = quote!(#krate::__private);
    let func = &model.func;
    let ident = &func.sig.ident;
    let declared = declare(func);

    let (s_param, s_ty) = match model.state() {
        Some(ty) => (None, quote!(#ty)),
        None => (Some(quote!(__S)), quote!(__S)),
    };
    let (c_param, c_ty) = match model.ctx() {
        Some(ty) => (None, quote!(<#ty as #p::CtxType>::Context)),
        None => (Some(quote!(__C)), quote!(__C)),
    };
    let mut bounds = Vec::new();
    if let Some(s) = &s_param {
        bounds.push(quote!(#s: #p::GraphState));
    }
    if let Some(c) = &c_param {
        bounds.push(quote!(#c: #p::Send + #p::Sync + 'static));
    }
    if let (Output::Command { ty }, Some(_)) = (&model.output, &s_param) {
        bounds.push(quote!(#ty: #p::ToolReturn<<#s_ty as #p::State>::Delta>));
    }
    let generics = s_param.iter().chain(&c_param);

    let name = &model.name;
    let description = &model.description;
    let params: Vec<_> = model
        .args()
        .map(|(_, key, doc, ty)| quote_spanned!(ty.span()=> #p::Param::new::<#ty>(#key, #doc)))
        .collect();
    let count = params.len();
    let takes = model
        .args()
        .enumerate()
        .map(|(index, (ident, _, _, ty))| quote!(let #ident = __args.take::<#ty>(#index);));
    let gots = model
        .args()
        .map(|(ident, _, _, _)| quote!(let #ident = #p::got(#ident)?;));
    let call_args = model.params.iter().map(|param| match param {
        Param::Arg { ident, .. } => quote!(#ident),
        Param::State { .. } => quote!(&*__state),
        Param::Ctx { by_ref: false, .. } => quote!(__ctx.clone()),
        Param::Ctx { by_ref: true, .. } => quote!(&__ctx),
        Param::CallId { by_ref: false } => quote!(#p::ToolCallId(__call_id.clone())),
        Param::CallId { by_ref: true } => quote!(&#p::ToolCallId(__call_id.clone())),
    });
    let awaited = func.sig.asyncness.map(|_| quote!(.await));
    let span = model
        .output
        .ty()
        .map_or_else(|| ident.span(), |ty| ty.span());
    let convert = match &model.output {
        Output::Content {
            fallible: false, ..
        } => quote_spanned!(span=> #p::content(__out)),
        Output::Content { fallible: true, .. } => quote_spanned!(span=> #p::fallible(__out)),
        Output::Command { .. } => quote_spanned!(span=>
            #p::ToolReturn::<<#s_ty as #p::State>::Delta>::into_output(__out)
        ),
    };

    quote! {
        #declared

        #[doc(hidden)]
        const _: () = {
            /// The parameters the model fills.
            static PARAMS: [#p::Param; #count] = [#(#params),*];

            #[automatically_derived]
            impl<#(#generics),*> #p::Tool<#s_ty, #c_ty> for #ident
            where
                #(#bounds,)*
            {
                fn spec(&self) -> &#p::ToolSpec {
                    static SPEC: #p::OnceLock<#p::ToolSpec> = #p::OnceLock::new();
                    SPEC.get_or_init(|| #p::spec(#name, #description, &PARAMS))
                }

                fn call(
                    &self,
                    __input: #p::ToolInput<#s_ty, #c_ty>,
                ) -> #p::ToolFuture<<#s_ty as #p::State>::Delta> {
                    let #p::ToolInput {
                        args: __args,
                        call_id: __call_id,
                        state: __state,
                        ctx: __ctx,
                        ..
                    } = __input;
                    #p::Box::pin(async move {
                        let mut __args = #p::Args::new(__args, &PARAMS)?;
                        #(#takes)*
                        __args.finish()?;
                        #(#gots)*
                        let __out = #ident::run(#(#call_args),*) #awaited;
                        #convert
                    })
                }
            }
        };
    }
}

/// The tool's type and value: a braced struct (the type namespace only)
/// and a constant of the function's name (the value namespace); and the
/// function, as `run`.
fn declare(func: &syn::ItemFn) -> TokenStream {
    let ident = &func.sig.ident;
    let vis = &func.vis;
    let docs = doc_attrs(&func.attrs);
    let other_attrs = func.attrs.iter().filter(|a| !a.path().is_ident("doc"));
    let mut sig = func.sig.clone();
    sig.ident = syn::Ident::new("run", ident.span());
    let block = &func.block;
    quote! {
        #(#docs)*
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy)]
        #vis struct #ident {}

        #(#docs)*
        #[allow(non_upper_case_globals)]
        #vis const #ident: &#ident = &#ident {};

        impl #ident {
            /// The function behind the tool, as written: call it directly
            /// (in a test, say).
            #(#other_attrs)*
            #vis #sig #block
        }
    }
}

/// What an input with errors still declares: the tool, implementing
/// `Tool` for every state and context, so that its uses compile and only
/// the errors are reported.
pub fn stub(stub: &Stub) -> TokenStream {
    let krate = &stub.krate;
    let p = quote!(#krate::__private);
    let declared = declare(&stub.func);
    let ident = &stub.func.sig.ident;
    quote! {
        #declared

        #[doc(hidden)]
        const _: () = {
            impl<__S: #p::GraphState, __C: #p::Send + #p::Sync + 'static> #p::Tool<__S, __C> for #ident {
                fn spec(&self) -> &#p::ToolSpec {
                    ::core::unreachable!()
                }

                fn call(
                    &self,
                    _: #p::ToolInput<__S, __C>,
                ) -> #p::ToolFuture<<__S as #p::State>::Delta> {
                    ::core::unreachable!()
                }
            }
        };
    }
}
