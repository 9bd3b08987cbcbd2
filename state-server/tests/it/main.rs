//! state-server's integration tests, in one binary: a binary per file
//! linked the whole dependency graph each time, most of the suite's build
//! time and disk. A test is named `module::test`
//! (`cargo test -p state-server --test it inspector::`).

mod support;
// The headless-browser driver: not in `support`, which the benches
// include whole and which would then build it for nothing.
#[path = "support/browser.rs"]
mod browser;

mod agent_sdk;
mod agent_sdk_js;
mod binary;
mod browser_smoke;
mod corrupt;
mod crons;
mod fuzz_bodies;
mod inspector;
mod inspector_browser;
mod max_streams;
mod paths;
mod rollback;
mod run_options;
mod security;
mod stream;
mod v3_stream;
mod workers;
