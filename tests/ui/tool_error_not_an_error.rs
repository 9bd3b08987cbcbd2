// A tool's error must be an error (or a String): the model reads its
// text. The error is at the return type.
use state_agent::tool;

struct Oops;

/// Divides.
#[tool]
fn divide(a: i64, b: i64) -> Result<i64, Oops> {
    if b == 0 { Err(Oops) } else { Ok(a / b) }
}

fn main() {}
