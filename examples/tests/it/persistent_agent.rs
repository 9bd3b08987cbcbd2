//! The persistent agent on one SQLite file: its logic run twice, as two
//! processes would (the second resumes the question the first left), and
//! the example binary itself run as two real processes.

use serde_json::json;
use state_examples::persistent_agent::{TASK, THREAD, graph, run_once};
use state_store::Store;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[tokio::test]
async fn the_second_run_resumes_the_question_the_first_left() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.db");

    // Run 1: plans, asks, stops.
    let first = run_once(&path, None).await.unwrap();
    assert!(!first.resumed);
    let question = first.question.expect("a question");
    assert_eq!(question["question"], "Run this plan?");
    assert_eq!(question["plan"], json!(first.state.plan));
    assert_eq!(first.state.plan.len(), 3);
    assert!(first.state.done.is_empty());

    // Run 1 again without an answer: the same question, nothing changes.
    let again = run_once(&path, None).await.unwrap();
    assert_eq!(again.question, Some(question.clone()));
    assert_eq!(again.state, first.state);

    // Run 2: the answer resumes the pause; the plan is carried out.
    let second = run_once(&path, Some("yes")).await.unwrap();
    assert!(second.resumed);
    assert_eq!(second.question, None);
    assert_eq!(second.state.approved, Some(true));
    assert_eq!(second.state.done, [first.state.plan.join("; ")]);
    let texts: Vec<String> = second.state.messages.iter().map(|m| m.text()).collect();
    assert_eq!(texts[0], TASK);
    assert_eq!(
        texts[2..4],
        ["Running it.", &format!("Done: {}.", second.state.done[0])]
    );

    // Run 3: nothing pending, so a new turn: the plan and the answer reset,
    // the history and what was done stay.
    let third = run_once(&path, None).await.unwrap();
    assert!(!third.resumed);
    assert!(third.question.is_some());
    assert_eq!(third.state.approved, None);
    assert_eq!(third.state.done, second.state.done);
    assert_eq!(third.state.messages.len(), 6);

    // Run 4: "no" drops the plan.
    let fourth = run_once(&path, Some("no")).await.unwrap();
    assert_eq!(fourth.state.approved, Some(false));
    assert_eq!(fourth.state.done.len(), 1);
    assert_eq!(
        fourth.state.messages.iter().last().map(|m| m.text()),
        Some("Plan dropped.".to_owned())
    );
}

/// The example binary, built by `cargo test` beside this test's binary
/// (`target/<profile>/examples/`), or built here when it is not there.
fn example_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    let binary = profile_dir
        .join("examples")
        .join(format!("persistent_agent{}", std::env::consts::EXE_SUFFIX));
    if !binary.exists() {
        let mut build = Command::new(env!("CARGO"));
        build
            .args([
                "build",
                "-p",
                "state-examples",
                "--example",
                "persistent_agent",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if profile_dir.ends_with("release") {
            build.arg("--release");
        }
        let status = build.status().expect("cargo runs");
        assert!(status.success(), "cargo build of the example failed");
    }
    assert!(binary.exists(), "no example binary at {}", binary.display());
    binary
}

fn run(binary: &Path, dir: &Path, args: &[&str]) -> String {
    let Output {
        status,
        stdout,
        stderr,
    } = Command::new(binary)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&stdout).into_owned();
    assert!(
        status.success(),
        "{args:?} failed: {stdout}{}",
        String::from_utf8_lossy(&stderr)
    );
    stdout
}

#[tokio::test]
async fn two_processes_one_asks_the_next_resumes() {
    let binary = example_binary();
    let dir = tempfile::tempdir().unwrap();

    // The default file, in the current directory: it asks, and exits.
    let asked = run(&binary, dir.path(), &[]);
    assert!(asked.contains("Waiting: "), "{asked}");
    assert!(asked.contains("Run this plan?"), "{asked}");
    let path = dir.path().join("persistent_agent.db");
    let app = graph()
        .unwrap()
        .with_store(Store::sqlite(&path).await.unwrap());
    let pending = app.pending_interrupts(THREAD).await.unwrap();
    assert_eq!(pending.len(), 1, "the question is in the file");
    assert_eq!(pending[0].node, "approve");

    // A second process answers it and runs the plan.
    let resumed = run(&binary, dir.path(), &["yes"]);
    assert!(resumed.contains("Resumed thread"), "{resumed}");
    assert!(resumed.contains("Done: "), "{resumed}");
    assert!(app.pending_interrupts(THREAD).await.unwrap().is_empty());
    let stored = Store::sqlite(&path)
        .await
        .unwrap()
        .thread::<state_examples::persistent_agent::PlanState>(THREAD)
        .await
        .unwrap();
    assert_eq!(stored.state().done.len(), 1);

    // A file named on the command line, answer after it.
    let other = dir.path().join("other.db");
    let other = other.to_str().unwrap();
    assert!(run(&binary, dir.path(), &[other]).contains("Waiting: "));
    let done = run(&binary, dir.path(), &[other, "yes"]);
    assert!(done.contains("Done: "), "{done}");
    assert!(dir.path().join("other.db").exists());
}
