// Every mistake of one tool is reported at once, each at its parameter.
use state_agent::tool;
use state_core::MessagesState;

/// Does too much.
#[tool(nmae = "x")]
fn busy(state: &mut MessagesState, (a, b): (u8, u8), other: &MessagesState, text: &str) -> u8 {
    let _ = (state, other, text);
    a + b
}

fn main() {}
