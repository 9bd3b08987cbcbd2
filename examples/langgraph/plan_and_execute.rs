//! LangGraph's plan-and-execute agent, its graph ported: run it with
//! `cargo run -p state-examples --example langgraph_plan_and_execute`.
//! The state, nodes and graph are in
//! `state_examples::langgraph::plan_and_execute`; the planner, executor
//! and replanner are canned. The run is streamed, as the tutorial's
//! `astream`, in memory (the tutorial has no checkpointer).
//!
//! The Python original (the "Plan-and-Execute" tutorial), for comparison:
/*
class PlanExecute(TypedDict):
    input: str
    plan: List[str]
    past_steps: Annotated[List[Tuple], operator.add]
    response: str

class Act(BaseModel):
    action: Union[Response, Plan]

async def execute_step(state: PlanExecute):
    plan = state["plan"]
    plan_str = "\n".join(f"{i + 1}. {step}" for i, step in enumerate(plan))
    task = plan[0]
    task_formatted = f"""For the following plan:
{plan_str}\n\nYou are tasked with executing step {1}, {task}."""
    agent_response = await agent_executor.ainvoke(
        {"messages": [("user", task_formatted)]}
    )
    return {
        "past_steps": [(task, agent_response["messages"][-1].content)],
    }

async def plan_step(state: PlanExecute):
    plan = await planner.ainvoke({"messages": [("user", state["input"])]})
    return {"plan": plan.steps}

async def replan_step(state: PlanExecute):
    output = await replanner.ainvoke(state)
    if isinstance(output.action, Response):
        return {"response": output.action.response}
    else:
        return {"plan": output.action.steps}

def should_end(state: PlanExecute):
    if "response" in state and state["response"]:
        return END
    else:
        return "agent"

workflow = StateGraph(PlanExecute)

# Add the plan node
workflow.add_node("planner", plan_step)

# Add the execution step
workflow.add_node("agent", execute_step)

# Add a replan node
workflow.add_node("replan", replan_step)

workflow.add_edge(START, "planner")

# From plan we go to agent
workflow.add_edge("planner", "agent")

# From agent, we replan
workflow.add_edge("agent", "replan")

workflow.add_conditional_edges(
    "replan",
    # Next, we pass in the function that will determine which node is called next.
    should_end,
    ["agent", END],
)

# Finally, we compile it!
# This compiles it into a LangChain Runnable,
# meaning you can use it as you would any other runnable
app = workflow.compile()

config = {"recursion_limit": 50}
inputs = {"input": "what is the hometown of the mens 2024 Australia open winner?"}
async for event in app.astream(inputs, config=config):
    for k, v in event.items():
        if k != "__end__":
            print(v)
*/

use state_core::State;
use state_examples::langgraph::plan_and_execute::{
    PlanExecute, QUESTION, build_graph, demo_models,
};
use state_examples::langgraph::updates;
use state_graph::StreamMode;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let app = build_graph(demo_models())?;
    println!("input: {QUESTION}");
    let inputs = PlanExecute::delta().input(QUESTION);
    let (steps, outcome) = updates(app.stream(inputs, StreamMode::UPDATES)).await?;
    for step in &steps {
        println!("  {step}");
    }
    let state = outcome.into_state();
    println!("\npast_steps:");
    for (task, result) in &state.past_steps {
        println!("  {task} -> {result}");
    }
    println!("response: {}", state.response);
    Ok(())
}
