//! This test binary run again as a child process, to run one of its tests
//! there: a writer killed mid-step, another process's commits.

use std::process::Command;

/// This test binary, set to run only `test` of the module whose
/// `module_path!()` is `module`: on one thread, its output not captured.
pub fn only(module: &str, test: &str) -> Command {
    // The harness names a test by its path below the crate's root.
    let (_crate, module) = module.split_once("::").expect("a test in a module");
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command.args([
        &format!("{module}::{test}"),
        "--exact",
        "--nocapture",
        "--test-threads=1",
    ]);
    command
}
