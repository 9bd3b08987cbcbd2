// An argument the model fills needs a name: it is the JSON field.
use state_agent::tool;

/// Adds a pair.
#[tool]
fn add((a, b): (i64, i64)) -> i64 {
    a + b
}

fn main() {}
