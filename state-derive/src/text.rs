//! Source text of types and expressions as a person would write them, for
//! schemas and error messages (`Vec<String>`, not `Vec < String >`).

/// `Vec<String>` for the type `Vec<String>`.
pub fn type_text(ty: &syn::Type) -> String {
    let file: syn::File = syn::parse_quote!(type __T = #ty;);
    strip(&prettyplease::unparse(&file), "type __T = ")
}

/// `vec![1, 2]` for the expression `vec![1, 2]`.
pub fn expr_text(expr: &syn::Expr) -> String {
    let file: syn::File = syn::parse_quote!(const __D: () = #expr;);
    strip(&prettyplease::unparse(&file), "const __D: () = ")
}

fn strip(printed: &str, prefix: &str) -> String {
    let one_line = printed.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    let body = one_line.strip_prefix(prefix).unwrap_or(&one_line);
    body.strip_suffix(';').unwrap_or(body).trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_print_compactly() {
        let ty: syn::Type = syn::parse_quote!(std::collections::BTreeMap < String, Vec < f64 > >);
        assert_eq!(
            type_text(&ty),
            "std::collections::BTreeMap<String, Vec<f64>>"
        );
    }

    #[test]
    fn expressions_print_compactly() {
        let expr: syn::Expr = syn::parse_quote!(vec![1, 2]);
        assert_eq!(expr_text(&expr), "vec![1, 2]");
        let expr: syn::Expr = syn::parse_quote!("supervisor");
        assert_eq!(expr_text(&expr), "\"supervisor\"");
    }
}
