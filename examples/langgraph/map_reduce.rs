//! LangGraph's map-reduce how-to, its graph ported: run it with
//! `cargo run -p state-examples --example langgraph_map_reduce`.
//! The state, nodes and graph are in `state_examples::langgraph::map_reduce`;
//! the model is canned. `Send` is a fan-out to a worker with its own typed
//! input; the workers form one superstep, and their updates are applied
//! in the order they were sent, whatever order they finish in.
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

# Construct the graph: here we put everything together to construct our graph
graph = StateGraph(OverallState)
graph.add_node("generate_topics", generate_topics)
graph.add_node("generate_joke", generate_joke)
graph.add_node("best_joke", best_joke)
graph.add_edge(START, "generate_topics")
graph.add_conditional_edges("generate_topics", continue_to_jokes, ["generate_joke"])
graph.add_edge("generate_joke", "best_joke")
graph.add_edge("best_joke", END)
app = graph.compile()

# Call the graph: here we call it to generate a list of jokes
for s in app.stream({"topic": "animals"}):
    print(s)
*/

use state_core::State;
use state_examples::langgraph::map_reduce::{OverallState, build_graph};
use state_examples::langgraph::updates;
use state_graph::StreamMode;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let app = build_graph()?;
    let input = OverallState::delta().topic("animals");
    let (steps, outcome) = updates(app.stream(input, StreamMode::UPDATES)).await?;
    for step in &steps {
        println!("{step}");
    }
    let state = outcome.into_state();
    println!("\njokes, in the order the workers were sent:");
    for joke in &state.jokes {
        println!("  {joke}");
    }
    println!("best: {}", state.best_selected_joke);
    Ok(())
}
