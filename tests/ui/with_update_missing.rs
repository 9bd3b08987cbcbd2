use state_core::AgentState;

// LangGraph's `update_dialog_stack`: the update is one optional name, not
// the whole stack, so the attribute must say `update = Option<String>`.
fn update_dialog_stack(stack: &mut Vec<String>, update: Option<String>) {
    match update.as_deref() {
        None => {}
        Some("pop") => {
            stack.pop();
        }
        Some(_) => stack.extend(update),
    }
}

#[derive(AgentState)]
pub struct S {
    #[reducer(with = update_dialog_stack)]
    pub dialog_state: Vec<String>,
}

fn main() {}
