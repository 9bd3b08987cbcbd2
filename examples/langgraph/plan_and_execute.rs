//! LangGraph's plan-and-execute agent, ported: run it with
//! `cargo run -p state-examples --example langgraph_plan_and_execute`.
//! The state and nodes are in `state_examples::langgraph::plan_and_execute`;
//! the planner, executor and replanner are canned.
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
*/

use state_examples::langgraph::plan_and_execute::{PlanExecute, QUESTION, demo_models, run};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut state = PlanExecute::default();
    println!("input: {QUESTION}");
    for step in run(&demo_models(), &mut state, QUESTION)? {
        println!("  {step}");
    }
    println!("\npast_steps:");
    for (task, result) in &state.past_steps {
        println!("  {task} -> {result}");
    }
    println!("response: {}", state.response);
    Ok(())
}
