use state_core::AgentState;

fn upgrade(from: u32) -> u32 {
    from
}

#[derive(AgentState)]
#[state(version = 2, migrate = upgrade)]
pub struct S {
    pub next: String,
}

fn main() {}
