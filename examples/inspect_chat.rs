//! The inspector over the `persistent_chat` example's file: every thread,
//! each step and what it wrote, the state at any step (rebuilt as a
//! `ChatState`), live as the chat goes on.
//!
//! ```text
//! cargo run --example persistent_chat -- chat.db
//! cargo run --example inspect_chat -- chat.db     # open http://127.0.0.1:8123/
//! ```
//!
//! `--allow-writes` lets the page fork the thread at a step; `--bind ADDR`
//! serves on another address than 127.0.0.1:8123.

use state_examples::persistent_chat::ChatState;
use state_server::Server;
use state_store::Store;
use std::path::PathBuf;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut path = None;
    let mut bind = "127.0.0.1:8123".to_owned();
    let mut allow_writes = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--allow-writes" => allow_writes = true,
            "--bind" => bind = args.next().ok_or("--bind needs an address")?,
            _ if path.is_none() => path = Some(PathBuf::from(arg)),
            _ => return Err(format!("unexpected argument {arg:?}").into()),
        }
    }
    let path = path.unwrap_or_else(|| std::env::temp_dir().join("agent-state-persistent-chat.db"));
    if !path.is_file() {
        return Err(format!(
            "{}: no such file; run `cargo run --example persistent_chat -- {}` first",
            path.display(),
            path.display()
        )
        .into());
    }
    let store = Store::sqlite(&path).await?;
    let routes = Server::new(store)
        .allow_writes(allow_writes)
        .router::<ChatState>();
    let listener = tokio::net::TcpListener::bind(&bind).await?;
    println!(
        "Inspecting {} on http://{}/ ({})",
        path.display(),
        listener.local_addr()?,
        if allow_writes {
            "writes allowed"
        } else {
            "read-only"
        }
    );
    axum::serve(listener, routes)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
