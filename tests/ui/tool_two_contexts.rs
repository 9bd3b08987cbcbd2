// A tool takes the node's context once: the second `Ctx` is the error.
use state_agent::tool;
use state_graph::Ctx;

/// Asks twice.
#[tool]
fn ask(question: String, ctx: Ctx, again: &Ctx) -> String {
    let _ = (ctx, again);
    question
}

fn main() {}
