//! Compile errors: every mistake a user can make with `#[derive(AgentState)]`
//! fails at the right span with a message that says how to fix it. Each case
//! is a `ui/*.rs` file with its expected `.stderr` beside it; regenerate
//! them with `TRYBUILD=overwrite` after reviewing a change to the output.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/*.rs");
    t.pass("ui/pass/*.rs");
}
