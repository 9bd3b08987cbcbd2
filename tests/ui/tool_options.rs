// The attribute's options are checked: a misspelt key (with a
// suggestion), a repeated one, a name providers refuse.
use state_agent::tool;

/// Adds.
#[tool(nmae = "add")]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Subtracts.
#[tool(name = "sub", name = "minus")]
fn sub(a: i64, b: i64) -> i64 {
    a - b
}

/// Multiplies.
#[tool(name = "times two")]
fn mul(a: i64, b: i64) -> i64 {
    a * b
}

fn main() {}
