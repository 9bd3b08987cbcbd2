//! An agent that stops to ask, and picks up in another process: it plans,
//! asks for approval and exits with the question; run it again with the
//! answer and it resumes the pending question from the SQLite file,
//! exactly where it stopped.
//!
//! ```text
//! cargo run --example persistent_agent           # plans, asks, exits
//! cargo run --example persistent_agent -- yes    # resumes: approves, runs the plan
//! cargo run --example persistent_agent           # nothing pending: a new turn
//! ```
//!
//! Arguments: `[FILE.db] [ANSWER]`. The file defaults to
//! `persistent_agent.db` in the current directory; a first argument ending
//! in `.db` names another one.

use state_examples::persistent_agent::{THREAD, run_once};
use std::path::PathBuf;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let path = match args.first() {
        Some(first) if first.ends_with(".db") => PathBuf::from(args.remove(0)),
        _ => PathBuf::from("persistent_agent.db"),
    };
    let answer = args.first().map(String::as_str);

    let report = run_once(&path, answer).await?;
    match answer {
        Some(answer) if report.resumed => {
            println!(
                "Resumed thread \"{THREAD}\" in {} with {answer:?}.",
                path.display()
            );
        }
        Some(_) => println!("Nothing was waiting for an answer: a new turn."),
        None => {}
    }
    println!("The thread's history:");
    for message in report.state.messages.iter() {
        println!("  {:<5} {}", message.kind().as_str(), message.text());
    }
    match &report.question {
        Some(question) => {
            println!("Waiting: {question}");
            println!("Answer by running me again: cargo run --example persistent_agent -- yes");
        }
        None => println!("Done. Plans carried out so far: {:?}", report.state.done),
    }
    Ok(())
}
