// `&str` is a reference, which a tool reads as the state: the error says
// to take `String`.
use state_agent::tool;

/// Shouts.
#[tool]
fn shout(text: &str) -> String {
    text.to_uppercase()
}

fn main() {}
