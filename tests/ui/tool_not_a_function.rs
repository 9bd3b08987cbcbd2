// `#[tool]` goes on a function.
use state_agent::tool;

/// Not a tool.
#[tool]
struct Weather {
    city: String,
}

fn main() {}
