// A tool needs a description for the model: a doc comment, or
// `description = ".."`.
use state_agent::tool;

#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}
