//! Reads every message of LangChain's fixtures in each of its shapes and
//! writes it back in both shapes state-core writes, for
//! `tests/fixtures/langchain/generate.py check --written` to load with
//! langchain-core (the reverse direction of the fixture tests).
//!
//! ```text
//! cargo run -p state-tests --example write_langchain_messages -- \
//!     tests/fixtures/langchain/messages.json target/langchain/written.json
//! ```

use serde_json::{Value, json};
use state_core::Message;
use std::error::Error;
use std::path::PathBuf;

/// The shapes langchain-core writes, as the fixtures name them.
const SHAPES: [&str; 3] = ["model_dump", "messages_to_dict", "dumpd"];

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let (Some(fixtures), Some(out), None) = (args.next(), args.next(), args.next()) else {
        return Err("usage: write_langchain_messages <messages.json> <written.json>".into());
    };
    let text = std::fs::read_to_string(&fixtures)
        .map_err(|e| format!("cannot read {}: {e}", fixtures.display()))?;
    let document: Value = serde_json::from_str(&text)?;
    let entries = document["messages"]
        .as_array()
        .ok_or_else(|| format!("{}: expected a \"messages\" list", fixtures.display()))?;
    let mut written = Vec::new();
    for entry in entries {
        let name = entry["name"].as_str().unwrap_or("<unnamed>");
        for shape in SHAPES {
            let message: Message = serde_json::from_value(entry[shape].clone())
                .map_err(|e| format!("{name} in {shape}: {e}"))?;
            written.push(json!({
                "name": name,
                "shape": shape,
                "model_dump": message,
                "messages_to_dict": message.as_langchain_dict(),
            }));
        }
    }
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&out, serde_json::to_string_pretty(&written)? + "\n")
        .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    println!("wrote {} messages to {}", written.len(), out.display());
    Ok(())
}
