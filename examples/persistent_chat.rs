//! A chat thread that survives restarts, stored in a SQLite file. Run it
//! twice: the second run continues the thread the first one left.
//!
//! Run it with `cargo run --example persistent_chat` (the file goes to the
//! system's temporary directory), or pass a path:
//! `cargo run --example persistent_chat -- chat.db`.

use state_examples::persistent_chat::{THREAD, run_once};
use std::path::PathBuf;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("agent-state-persistent-chat.db"));
    let summary = run_once(&path, "Hello again!").await?;
    if summary.resumed_at == 0 {
        println!("New thread \"{THREAD}\" in {}", path.display());
    } else {
        println!(
            "Continuing thread \"{THREAD}\" from {} at step {}",
            path.display(),
            summary.resumed_at
        );
    }
    println!("Run {} ends at step {}. History:", summary.run, summary.seq);
    for message in &summary.messages {
        println!("  {message}");
    }
    println!("Run me again to continue this thread.");
    Ok(())
}
