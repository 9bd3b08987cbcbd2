//! LangGraph's map-reduce how-to, ported: run it with
//! `cargo run -p state-examples --example langgraph_map_reduce`.
//! The state and nodes are in `state_examples::langgraph::map_reduce`; the
//! model is canned, and the workers run in parallel threads.
//!
//! The Python original ("How to create map-reduce branches for parallel
//! execution"), for comparison:
/*
class OverallState(TypedDict):
    topic: str
    subjects: list
    # Notice here we use the operator.add
    # This is because we want combine all the jokes we generate
    # from individual nodes back into one list - this is essentially
    # the "reduce" part
    jokes: Annotated[list, operator.add]
    best_selected_joke: str

class JokeState(TypedDict):
    subject: str

def generate_topics(state: OverallState):
    prompt = subjects_prompt.format(topic=state["topic"])
    response = model.with_structured_output(Subjects).invoke(prompt)
    return {"subjects": response.subjects}

def generate_joke(state: JokeState):
    prompt = joke_prompt.format(subject=state["subject"])
    response = model.with_structured_output(Joke).invoke(prompt)
    return {"jokes": [response.joke]}

def continue_to_jokes(state: OverallState):
    # We will return a list of `Send` objects
    # Each `Send` object consists of the name of a node in the graph
    # as well as the state to send to that node
    return [Send("generate_joke", {"subject": s}) for s in state["subjects"]]

def best_joke(state: OverallState):
    jokes = "\n\n".join(state["jokes"])
    prompt = best_joke_prompt.format(topic=state["topic"], jokes=jokes)
    response = model.with_structured_output(BestJoke).invoke(prompt)
    return {"best_selected_joke": state["jokes"][response.id]}
*/

use state_examples::langgraph::map_reduce::{OverallState, run};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut state = OverallState::default();
    for step in run(&mut state, "animals")? {
        println!("{step}");
    }
    println!("\njokes, in the order the workers were sent:");
    for joke in &state.jokes {
        println!("  {joke}");
    }
    println!("best: {}", state.best_selected_joke);
    Ok(())
}
