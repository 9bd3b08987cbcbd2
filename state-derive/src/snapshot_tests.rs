//! Pretty-printed expansions of representative inputs, pinned with insta:
//! any change to generated code shows up as a snapshot diff to review.

use crate::expand;

fn expand_pretty(input: proc_macro2::TokenStream) -> String {
    let input: syn::DeriveInput = syn::parse2(input).expect("test input parses");
    let output = expand::derive(&input);
    let file: syn::File = syn::parse2(output).expect("expansion is valid Rust");
    stable_ids(&stable_callback_names(&prettyplease::unparse(&file)))
}

/// A state's id hashes the crate's directory, among others: shown as `ID`
/// (no other literal of the expansion is as long).
fn stable_ids(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut digits = String::new();
    for c in code.chars().chain([' ']) {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        if digits.len() >= 12 {
            out.push_str("ID");
        } else {
            out.push_str(&digits);
        }
        digits.clear();
        out.push(c);
    }
    out.pop();
    out
}

/// The callback macro's name ends in the count of states expanded before
/// it, which depends on the order tests run in: shown as `N`.
fn stable_callback_names(code: &str) -> String {
    const PREFIX: &str = "__agent_state_";
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find(PREFIX) {
        let (before, after) = rest.split_at(at + PREFIX.len());
        out.push_str(before);
        let name_end = after
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let (name, tail) = after.split_at(name_end);
        match name.rsplit_once('_') {
            Some((ident, count)) if count.bytes().all(|b| b.is_ascii_digit()) => {
                out.push_str(ident);
                out.push_str("_N");
            }
            _ => out.push_str(name),
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

#[test]
fn every_reducer() {
    insta::assert_snapshot!(expand_pretty(quote::quote! {
        pub struct ChatState {
            /// Conversation history.
            #[reducer(add_messages)]
            pub messages: Messages,
            #[reducer(append)]
            pub transcript: Vec<String>,
            #[reducer(merge)]
            pub diagnostics: BTreeMap<String, f64>,
            #[reducer(append_by_id)]
            pub findings: Vec<Finding>,
            #[reducer(with = keep_max)]
            pub best_score: i64,
            #[reducer(with = Tally, update = u32)]
            pub tally: Vec<u32>,
            pub next: String,
        }
    }));
}

#[test]
fn scopes_and_defaults() {
    insta::assert_snapshot!(expand_pretty(quote::quote! {
        struct Turn {
            #[scope(turn)]
            #[default("supervisor")]
            next: String,
            #[scope(turn)]
            #[default(3)]
            retries: u32,
            #[scope(persistent)]
            #[default(vec![1, 2])]
            kept: Vec<u8>,
            error: Option<String>,
        }
    }));
}

#[test]
fn struct_scope_turn_and_renamed_delta() {
    insta::assert_snapshot!(expand_pretty(quote::quote! {
        #[state(scope = turn, delta = "Update")]
        pub(crate) struct Execution {
            task: String,
            #[scope(persistent)]
            #[reducer(merge)]
            context: HashMap<String, Value>,
        }
    }));
}

#[test]
fn generics_and_where_clause() {
    insta::assert_snapshot!(expand_pretty(quote::quote! {
        pub struct Generic<T: Clone, U>
        where
            U: Default,
        {
            #[reducer(append)]
            pub items: Vec<T>,
            pub current: U,
        }
    }));
}

#[test]
fn custom_crate_path() {
    insta::assert_snapshot!(expand_pretty(quote::quote! {
        #[state(crate = "my_framework::state")]
        pub struct Reexported {
            #[reducer(append)]
            pub log: Vec<String>,
        }
    }));
}

#[test]
fn invalid_input_emits_errors_and_stubs() {
    insta::assert_snapshot!(expand_pretty(quote::quote! {
        pub struct Broken {
            #[reducer(add_mesages)]
            pub messages: Messages,
            #[scope(weekly)]
            pub next: String,
        }
    }));
}

#[test]
fn nested_group_and_flattened_base() {
    insta::assert_snapshot!(expand_pretty(quote::quote! {
        /// An order, on top of the framework's state.
        pub struct OrderState {
            #[state(flatten)]
            pub base: FrameworkState,
            /// Per-turn routing, a nested state merged field by field.
            #[reducer(merge)]
            #[scope(turn)]
            pub routing: Routing,
            pub order_id: Option<String>,
        }
    }));
}

#[test]
fn renamed_keys() {
    insta::assert_snapshot!(expand_pretty(quote::quote! {
        #[serde(rename_all = "camelCase")]
        pub struct Session {
            pub next_node: String,
            #[serde(rename = "user-id")]
            pub user_id: Option<String>,
            #[reducer(append)]
            pub past_steps: Vec<String>,
        }
    }));
}

#[test]
fn user_serde() {
    insta::assert_snapshot!(expand_pretty(quote::quote! {
        #[state(serde = "user")]
        #[serde(default, deny_unknown_fields, rename_all = "camelCase")]
        pub struct Session {
            #[serde(with = "seconds")]
            pub time_budget: std::time::Duration,
            #[reducer(append)]
            pub tool_log: Vec<String>,
            #[serde(skip)]
            pub scratch: String,
        }
    }));
}

fn tool_pretty(args: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> String {
    let output = crate::tool::tool(args, item);
    let file: syn::File = syn::parse2(output).expect("expansion is valid Rust");
    prettyplease::unparse(&file)
}

#[test]
fn tool_with_arguments_state_and_context() {
    insta::assert_snapshot!(tool_pretty(
        quote::quote!(),
        quote::quote! {
            /// Get the current weather for a city.
            ///
            /// # Errors
            ///
            /// When offline.
            pub async fn get_weather(
                /// The city name.
                city: String,
                units: Option<Units>,
                state: &Support,
                ctx: Ctx<User>,
            ) -> Result<String, WeatherError> {
                weather(city, units, state, ctx).await
            }
        }
    ));
}

#[test]
fn sync_handoff_tool_with_options() {
    insta::assert_snapshot!(tool_pretty(
        quote::quote!(name = "transfer", crate = "my_agents::state_agent"),
        quote::quote! {
            /// Hands off to billing.
            fn to_billing(id: ToolCallId) -> Command<SupportDelta> {
                handoff(id)
            }
        }
    ));
}
