// `#[tool]` goes on a free function, not a method.
use state_agent::tool;

struct Service;

impl Service {
    /// Pings.
    #[tool]
    fn ping(&self) -> String {
        "pong".into()
    }
}

fn main() {}
