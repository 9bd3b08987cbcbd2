//! A headless Chromium for state-server's browser tests: open a page the
//! test serves on loopback, run JavaScript in it, wait for conditions,
//! click and fill, collect the page's script errors, and save screenshots
//! as test artifacts (`target/test-artifacts/inspector/<name>.png`).
//!
//! The test binary declares it beside `support` (the benches include
//! `support` whole, and have no use for a browser).
//!
//! One browser runs at a time in the process: [`Browser::launch`] waits
//! for the one before to be dropped. The browser tests share one binary
//! with the others, and several Chromiums at once on a 2-core CI machine
//! would make every wait race the others' start-up. A test holds one
//! browser at a time (launching a second would wait forever).
//!
//! The API is blocking. Call it from a plain `#[test]` (serving the router
//! from a runtime of the test's own), or from
//! `#[tokio::test(flavor = "multi_thread")]`, whose workers go on serving
//! while the test body waits on the browser; a current-thread runtime
//! would serve nothing meanwhile, so [`Browser::launch`] refuses it.
//!
//! Every method panics on failure, naming what it did and, where there is
//! a page, showing its URL and text, so a failing test says why.
//!
//! Each call to the browser takes about 100 ms (headless_chrome's socket
//! reader holds its lock through 100 ms read timeouts): one `eval_json`
//! answering an object is cheaper than many answering its fields.
//!
//! The browser is the system's Chromium (`/usr/bin/chromium`, or the path
//! in `CHROMIUM`), driven over the DevTools protocol by `headless_chrome`;
//! `scripts/install/chromium.sh` installs it. Without it the tests fail, they
//! are not skipped.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use headless_chrome::browser::tab::point::Point;
use headless_chrome::protocol::cdp::types::Event;
use headless_chrome::protocol::cdp::{Emulation, Page as Cdp, Runtime};
use headless_chrome::{LaunchOptions, Tab};
use serde_json::Value;
use std::ffi::OsStr;
use std::fmt::Display;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How long the waits wait by default ([`Page::wait_for`], a page's load,
/// an element to click): long enough for a loaded CI machine. A wait ends
/// as soon as its condition holds; this is no timing assertion.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where Chromium is unless `CHROMIUM` says otherwise.
pub const DEFAULT_CHROMIUM: &str = "/usr/bin/chromium";

/// The flags Chromium runs with, besides those `headless_chrome` passes:
/// headless as root without a sandbox, and no connection of its own to
/// anywhere (this machine's network refuses them, and a test must not
/// depend on them).
const CHROMIUM_ARGS: [&str; 9] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
];

/// The viewport a page starts with, in CSS pixels (a laptop's); the window
/// is as large, but part of it is the browser's own.
pub const DEFAULT_VIEWPORT: (u32, u32) = (1280, 800);

/// How long the DevTools connection waits for an answer to one call, and
/// stays open without a message. Longer than any test: a call to a live
/// browser is answered quickly, and calls to a dead one fail at once (the
/// connection closes).
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(300);

/// How often a wait asks the page again.
const POLL: Duration = Duration::from_millis(25);

/// How much of a page's text a failure message shows.
const TEXT_LIMIT: usize = 2048;

/// The global a page's document carries once a navigation away from it
/// has been asked for: a document without it is the new one.
const OLD_DOCUMENT: &str = "__stateServerTestOldDocument";

/// The prefix of the `console.debug` messages that [`Page::js_errors`]
/// sends itself, to know that every earlier event has been read.
const BARRIER: &str = "__stateServerTestBarrier:";

/// Held by the browser that runs (see the module's doc).
static ONE_BROWSER_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A headless Chromium with a fresh profile in a temporary directory.
///
/// Dropping it (at the end of the test, or while a failed test unwinds)
/// kills the browser and whatever of its processes remains, and removes
/// the profile; then the next browser may start.
pub struct Browser {
    /// `None` once dropped (see `Drop`).
    chrome: Option<headless_chrome::Browser>,
    /// The browser process's id.
    pid: u32,
    /// The `--user-data-dir`; `None` once removed.
    profile: Option<tempfile::TempDir>,
    /// Its path, which every process of this browser names on its command
    /// line.
    profile_path: PathBuf,
    /// This browser's turn. Declared last, it is released after `Drop`
    /// has ended the browser.
    _turn: MutexGuard<'static, ()>,
}

impl Browser {
    /// Launches Chromium from `CHROMIUM`, or [`DEFAULT_CHROMIUM`] when
    /// unset.
    #[track_caller]
    pub fn launch() -> Browser {
        let path = std::env::var_os("CHROMIUM")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_CHROMIUM));
        Browser::launch_at(&path)
    }

    /// Launches the Chromium at `path`; panics with how to install it when
    /// there is none.
    #[track_caller]
    pub fn launch_at(path: &Path) -> Browser {
        refuse_current_thread_runtime();
        if !path.is_file() {
            panic!(
                "no Chromium at {}: the browser tests need headless Chromium \
                 (install it with `bash scripts/install/chromium.sh`, Debian's `chromium`, \
                 or set CHROMIUM to its path; the default is {DEFAULT_CHROMIUM})",
                path.display()
            );
        }
        // A test that failed with its browser open poisons the lock; its
        // browser is gone all the same.
        let turn = ONE_BROWSER_AT_A_TIME
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let profile = ok(
            tempfile::Builder::new()
                .prefix("state-server-chromium-")
                .tempdir(),
            "create a temporary Chromium profile",
        );
        let profile_path = profile.path().to_path_buf();
        let options = LaunchOptions {
            headless: true,
            sandbox: false,
            enable_gpu: false,
            window_size: Some(DEFAULT_VIEWPORT),
            path: Some(path.to_path_buf()),
            user_data_dir: Some(profile_path.clone()),
            args: CHROMIUM_ARGS.iter().map(OsStr::new).collect(),
            idle_browser_timeout: CONNECTION_TIMEOUT,
            ..LaunchOptions::default()
        };
        let chrome = ok(
            headless_chrome::Browser::new(options),
            format_args!("launch {}", path.display()),
        );
        let pid = chrome
            .get_process_id()
            .expect("a launched browser has a process");
        Browser {
            chrome: Some(chrome),
            pid,
            profile: Some(profile),
            profile_path,
            _turn: turn,
        }
    }

    /// Opens `url` in a new tab, with a viewport of [`DEFAULT_VIEWPORT`],
    /// and waits for it to load (its `load` event).
    #[track_caller]
    pub fn open(&self, url: &str) -> Page<'_> {
        refuse_current_thread_runtime();
        let chrome = self.chrome.as_ref().expect("the browser is open");
        let tab = ok(chrome.new_tab(), "open a tab");
        let page = Page {
            tab,
            events: Arc::new(Mutex::new(Events::default())),
            barriers: AtomicU64::new(0),
            browser: PhantomData,
        };
        let events = Arc::clone(&page.events);
        ok(
            page.tab
                .add_event_listener(Arc::new(move |event: &Event| record(&events, event))),
            "listen to the page's events",
        );
        ok(page.tab.enable_runtime(), "enable the Runtime domain");
        ok(page.tab.enable_log(), "enable the Log domain");
        page.set_viewport(DEFAULT_VIEWPORT.0, DEFAULT_VIEWPORT.1);
        page.goto(url);
        page
    }

    /// The browser process's id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The browser's profile directory (removed when it is dropped).
    pub fn profile_dir(&self) -> &Path {
        &self.profile_path
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Kill the browser first: headless_chrome's own drop asks it to close
        // and waits for the answer, which a hung browser would never give.
        // Then that drop finds the connection closed and reaps the process.
        kill(self.pid);
        drop(self.chrome.take());
        // Its children (renderers, GPU, network service, zygotes) end when
        // they see it gone; any that has not within a second is killed.
        let started = Instant::now();
        loop {
            let left = chromium_processes(&self.profile_path);
            if left.is_empty() {
                break;
            }
            if started.elapsed() > Duration::from_secs(1) {
                left.iter().copied().for_each(kill);
            }
            if started.elapsed() > Duration::from_secs(10) {
                eprintln!("Chromium processes {left:?} outlived their browser");
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // A process that wrote into the profile as it ended can make one
        // removal fail (a file appears in a directory being emptied).
        if let Some(profile) = self.profile.take()
            && profile.close().is_err()
        {
            for _ in 0..50 {
                match std::fs::remove_dir_all(&self.profile_path) {
                    Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    _ => break,
                }
            }
        }
    }
}

/// Sends SIGKILL to process `pid` (std can only kill its own children).
fn kill(pid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
}

/// The live (not zombie) processes whose command line names `profile`:
/// those of the browser launched with it as its `--user-data-dir`.
pub fn chromium_processes(profile: &Path) -> Vec<u32> {
    let needle = profile.to_string_lossy().into_owned();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if !String::from_utf8_lossy(&cmdline).contains(&needle) {
            continue;
        }
        // A zombie has an empty command line, but read its state to be sure:
        // after "pid (comm) " comes the state letter.
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|stat| {
                let state = stat.rsplit_once(") ")?.1.chars().next()?;
                Some(state == 'Z' || state == 'X')
            })
            .unwrap_or(true);
        if !zombie {
            pids.push(pid);
        }
    }
    pids
}

/// A tab of a [`Browser`], which it may not outlive.
pub struct Page<'b> {
    /// headless_chrome's handle on the tab.
    tab: Arc<Tab>,
    /// What the tab reported, recorded by a listener on its events.
    events: Arc<Mutex<Events>>,
    /// How many barriers [`Page::js_errors`] has sent.
    barriers: AtomicU64,
    /// The browser, which the page may not outlive.
    browser: PhantomData<&'b Browser>,
}

/// What the page has reported, as its events come in.
#[derive(Default)]
struct Events {
    /// Its script errors, as [`Page::js_errors`] returns them.
    errors: Vec<String>,
    /// The last barrier seen.
    barrier: u64,
}

/// Records `event`'s script error, if it reports one.
fn record(events: &Mutex<Events>, event: &Event) {
    let mut events = events.lock().unwrap_or_else(|e| e.into_inner());
    match event {
        Event::RuntimeExceptionThrown(thrown) => {
            let details = &thrown.params.exception_details;
            let message = details
                .exception
                .as_ref()
                .and_then(|exception| exception.description.as_deref())
                .and_then(|description| description.lines().next())
                .unwrap_or(&details.text);
            let place = match &details.url {
                Some(url) if !url.is_empty() => format!(
                    " ({url}:{}:{})",
                    details.line_number + 1,
                    details.column_number + 1
                ),
                _ => String::new(),
            };
            let prefix = if message.starts_with(&details.text) {
                String::new()
            } else {
                format!("{} ", details.text)
            };
            events.errors.push(format!("{prefix}{message}{place}"));
        }
        Event::RuntimeConsoleAPICalled(called) => {
            let args: Vec<String> = called.params.args.iter().map(show).collect();
            let text = args.join(" ");
            match called.params.Type {
                Runtime::ConsoleAPICalledEventTypeOption::Error => {
                    events.errors.push(format!("console.error: {text}"));
                }
                Runtime::ConsoleAPICalledEventTypeOption::Debug => {
                    if let Some(n) = text.strip_prefix(BARRIER).and_then(|n| n.parse().ok()) {
                        events.barrier = events.barrier.max(n);
                    }
                }
                _ => {}
            }
        }
        Event::LogEntryAdded(added) => {
            let entry = &added.params.entry;
            let url = entry.url.as_deref().unwrap_or("");
            // Chromium asks for /favicon.ico on its own: not the page's.
            if entry.level == headless_chrome::protocol::cdp::Log::LogEntryLevel::Error
                && !url.ends_with("/favicon.ico")
            {
                let source = serde_json::to_value(&entry.source)
                    .ok()
                    .and_then(|source| source.as_str().map(str::to_owned))
                    .unwrap_or_default();
                let place = if url.is_empty() {
                    String::new()
                } else {
                    format!(" ({url})")
                };
                events
                    .errors
                    .push(format!("{source}: {}{place}", entry.text));
            }
        }
        _ => {}
    }
}

/// A console argument as the console would show it (objects by their
/// class: `Object`, `Array(2)`).
fn show(arg: &Runtime::RemoteObject) -> String {
    // JSON's null arrives as no value at all.
    if arg.subtype == Some(Runtime::RemoteObjectSubtype::Null) {
        return "null".to_owned();
    }
    match (&arg.value, &arg.description) {
        (Some(Value::String(s)), _) => s.clone(),
        (Some(value), _) => value.to_string(),
        (None, Some(description)) => description.clone(),
        (None, None) => serde_json::to_value(&arg.Type)
            .ok()
            .and_then(|kind| kind.as_str().map(str::to_owned))
            .unwrap_or_default(),
    }
}

impl Page<'_> {
    /// Navigates to `url` and waits for the new document's `load` event.
    #[track_caller]
    pub fn goto(&self, url: &str) {
        self.expect_navigation(|page| {
            let navigated = ok(
                page.tab.call_method(Cdp::Navigate {
                    url: url.to_owned(),
                    referrer: None,
                    transition_Type: None,
                    frame_id: None,
                    referrer_policy: None,
                }),
                format_args!("navigate to {url}"),
            );
            if let Some(error) = navigated.error_text {
                panic!("navigating to {url} failed: {error}");
            }
        });
    }

    /// Runs `action` (a click on a link or a submit button, say), then
    /// waits for the document it navigates to to load.
    #[track_caller]
    pub fn expect_navigation(&self, action: impl FnOnce(&Self)) {
        self.eval_json(&format!("window.{OLD_DOCUMENT} = true"));
        action(self);
        let condition = format!("!window.{OLD_DOCUMENT} && document.readyState === 'complete'");
        if let Err(failure) = self.poll(&condition, DEFAULT_TIMEOUT) {
            panic!(
                "no new document loaded within {DEFAULT_TIMEOUT:?} ({failure})\n{}",
                self.describe()
            );
        }
    }

    /// The value of the JavaScript expression `js` as JSON, once the
    /// promise it gives (if it does) settles: `null` for `undefined`.
    /// Panics if it throws, if its value is not JSON (`NaN`, a `BigInt`),
    /// or if its promise is still pending after [`DEFAULT_TIMEOUT`].
    #[track_caller]
    pub fn eval_json(&self, js: &str) -> Value {
        match self.try_eval(js) {
            Ok(value) => value,
            Err(error) => panic!("evaluating `{js}` failed: {error}\n{}", self.describe()),
        }
    }

    /// [`Page::eval_json`]'s value, or the error it panics with.
    fn try_eval(&self, js: &str) -> Result<Value, String> {
        let millis = DEFAULT_TIMEOUT.as_millis();
        // A promise that never settles would hold the call for the whole
        // CONNECTION_TIMEOUT: give up on it sooner.
        let expression = format!(
            "(() => {{ const value = (\n{js}\n);\n\
             if (!value || typeof value.then !== 'function') return value;\n\
             let timer;\n\
             const late = new Promise((_, reject) => {{ timer = setTimeout(() => \
             reject(new Error('the promise is still pending after {millis} ms')), {millis}); }});\n\
             return Promise.race([value, late]).finally(() => clearTimeout(timer)); }})()"
        );
        let answer = self
            .tab
            .call_method(Runtime::Evaluate {
                expression,
                object_group: None,
                include_command_line_api: None,
                silent: None,
                context_id: None,
                return_by_value: Some(true),
                generate_preview: None,
                user_gesture: Some(true),
                await_promise: Some(true),
                throw_on_side_effect: None,
                timeout: None,
                disable_breaks: None,
                repl_mode: None,
                allow_unsafe_eval_blocked_by_csp: None,
                unique_context_id: None,
                serialization_options: None,
            })
            .map_err(|error| format!("{error:#}"))?;
        if let Some(details) = answer.exception_details {
            // The first line: the rest is a stack through the wrapper above.
            let description = details
                .exception
                .as_ref()
                .and_then(|exception| exception.description.as_deref())
                .and_then(|description| description.lines().next())
                .unwrap_or(&details.text);
            return Err(format!("it threw {description}"));
        }
        let result = answer.result;
        if let Some(unserializable) = result.unserializable_value {
            return Err(format!("its value {unserializable} is not JSON"));
        }
        Ok(result.value.unwrap_or(Value::Null))
    }

    /// Waits up to [`DEFAULT_TIMEOUT`] for the JavaScript expression `js`
    /// to be truthy (see [`Page::wait_for_within`]).
    #[track_caller]
    pub fn wait_for(&self, js: &str) {
        self.wait_for_within(js, DEFAULT_TIMEOUT);
    }

    /// Waits up to `timeout` for the JavaScript expression `js` to be
    /// truthy (or to give a promise of a truthy value), asking again every
    /// few milliseconds (while it throws too: an
    /// element it reads may not be there yet). Panics on timeout with the
    /// expression, its last error, the page's script errors and its text.
    #[track_caller]
    pub fn wait_for_within(&self, js: &str, timeout: Duration) {
        let condition = format!("(async () => !!(await (\n{js}\n)))()");
        if let Err(failure) = self.poll(&condition, timeout) {
            panic!(
                "`{js}` was not true within {timeout:?} ({failure})\n{}",
                self.describe()
            );
        }
    }

    /// Evaluates `condition` until it is `true`; on timeout, says what it
    /// last was.
    fn poll(&self, condition: &str, timeout: Duration) -> Result<(), String> {
        let started = Instant::now();
        loop {
            let last = match self.try_eval(condition) {
                Ok(Value::Bool(true)) => return Ok(()),
                Ok(value) => format!("it was {value}"),
                Err(error) => error,
            };
            if started.elapsed() >= timeout {
                return Err(last);
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits for an element matching `selector` to be clickable (there,
    /// shown, enabled, not covered), scrolls it into view, and clicks its
    /// middle with the mouse, as a person would.
    #[track_caller]
    pub fn click(&self, selector: &str) {
        let selector_js = js_string(selector);
        let probe = format!(
            "(() => {{ const el = document.querySelector({selector_js});\n\
             if (!el) return 'no element matches';\n\
             el.scrollIntoView({{block: 'center', inline: 'center'}});\n\
             const r = el.getBoundingClientRect();\n\
             if (r.width === 0 || r.height === 0 || getComputedStyle(el).visibility === 'hidden') \
             return 'it is not shown';\n\
             if (el.disabled) return 'it is disabled';\n\
             const x = r.left + r.width / 2, y = r.top + r.height / 2;\n\
             const hit = document.elementFromPoint(x, y);\n\
             if (!hit || !(hit === el || el.contains(hit))) \
             return 'it is covered by ' + (hit ? hit.outerHTML.slice(0, 200) : 'nothing');\n\
             return {{x, y}}; }})()"
        );
        let started = Instant::now();
        let point = loop {
            let why = match self.try_eval(&probe) {
                Ok(Value::Object(point)) => {
                    let x = point.get("x").and_then(Value::as_f64);
                    let y = point.get("y").and_then(Value::as_f64);
                    if let (Some(x), Some(y)) = (x, y) {
                        break Point { x, y };
                    }
                    format!("its position was {point:?}")
                }
                Ok(Value::String(why)) => why,
                Ok(other) => format!("the probe gave {other}"),
                Err(error) => error,
            };
            if started.elapsed() >= DEFAULT_TIMEOUT {
                panic!(
                    "could not click `{selector}` within {DEFAULT_TIMEOUT:?}: {why}\n{}",
                    self.describe()
                );
            }
            std::thread::sleep(POLL);
        };
        ok(
            self.tab.click_point(point),
            format_args!("click `{selector}` at ({}, {})", point.x, point.y),
        );
    }

    /// Waits for an input (or textarea, or select) matching `selector`,
    /// sets its value, and fires `input` and `change` as typing would.
    #[track_caller]
    pub fn fill(&self, selector: &str, value: &str) {
        self.wait_for(&format!("document.querySelector({})", js_string(selector)));
        self.eval_json(&format!(
            "(() => {{ const el = document.querySelector({});\n\
             el.focus(); el.value = {};\n\
             el.dispatchEvent(new Event('input', {{bubbles: true}}));\n\
             el.dispatchEvent(new Event('change', {{bubbles: true}})); }})()",
            js_string(selector),
            js_string(value)
        ));
    }

    /// The text (`innerText`: as shown) of the first element matching
    /// `selector`, once there is one.
    #[track_caller]
    pub fn text(&self, selector: &str) -> String {
        let selector_js = js_string(selector);
        self.wait_for(&format!("document.querySelector({selector_js})"));
        match self.eval_json(&format!("document.querySelector({selector_js}).innerText")) {
            Value::String(text) => text,
            other => panic!("the text of `{selector}` is {other}"),
        }
    }

    /// How many elements match `selector` now (no waiting: none is an
    /// answer too).
    #[track_caller]
    pub fn count(&self, selector: &str) -> usize {
        let js = format!("document.querySelectorAll({}).length", js_string(selector));
        match self.eval_json(&js).as_u64() {
            Some(count) => count as usize,
            None => panic!("`{js}` is not a count"),
        }
    }

    /// The page's URL (`location.href`).
    #[track_caller]
    pub fn url(&self) -> String {
        match self.eval_json("location.href") {
            Value::String(url) => url,
            other => panic!("location.href is {other}"),
        }
    }

    /// Sets the viewport to `width` x `height` CSS pixels, as a desktop
    /// window of that size.
    #[track_caller]
    pub fn set_viewport(&self, width: u32, height: u32) {
        self.emulate(width, height, false);
    }

    /// Sets the viewport to `width` x `height` CSS pixels as a phone's
    /// (a mobile browser, which honours `<meta name="viewport">`): 390 x 844
    /// is a common phone's.
    #[track_caller]
    pub fn set_mobile_viewport(&self, width: u32, height: u32) {
        self.emulate(width, height, true);
    }

    /// Turns the page's own scripts off (as a browser with JavaScript
    /// disabled), from the next document on; this driver's calls still run.
    #[track_caller]
    pub fn disable_scripts(&self) {
        ok(
            self.tab
                .call_method(Emulation::SetScriptExecutionDisabled { value: true }),
            "disable the page's scripts",
        );
    }

    #[track_caller]
    fn emulate(&self, width: u32, height: u32, mobile: bool) {
        ok(
            self.tab.call_method(Emulation::SetDeviceMetricsOverride {
                width,
                height,
                device_scale_factor: 1.0,
                mobile,
                scale: None,
                screen_width: None,
                screen_height: None,
                position_x: None,
                position_y: None,
                dont_set_visible_size: None,
                screen_orientation: None,
                viewport: None,
                display_feature: None,
                device_posture: None,
            }),
            format_args!("set the viewport to {width}x{height}"),
        );
    }

    /// Saves a PNG of the viewport as
    /// `target/test-artifacts/inspector/<name>.png` and returns its path.
    /// `name` is letters, digits, `-`, `_` and `.`.
    #[track_caller]
    pub fn screenshot(&self, name: &str) -> PathBuf {
        self.save_screenshot(name, None)
    }

    /// Saves a PNG of the whole page, beyond the viewport, as
    /// [`Page::screenshot`] does.
    #[track_caller]
    pub fn screenshot_full_page(&self, name: &str) -> PathBuf {
        let size = self.eval_json(
            "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]",
        );
        let (Some(width), Some(height)) = (size[0].as_f64(), size[1].as_f64()) else {
            panic!("the page's size is {size}");
        };
        let clip = Cdp::Viewport {
            x: 0.0,
            y: 0.0,
            width,
            height,
            scale: 1.0,
        };
        self.save_screenshot(name, Some(clip))
    }

    #[track_caller]
    fn save_screenshot(&self, name: &str, clip: Option<Cdp::Viewport>) -> PathBuf {
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
        if name.is_empty() || name.starts_with('.') || !name.chars().all(allowed) {
            panic!("screenshot name {name:?}: use letters, digits, `-`, `_` and `.`");
        }
        let full_page = clip.is_some();
        let shot = ok(
            self.tab.call_method(Cdp::CaptureScreenshot {
                format: Some(Cdp::CaptureScreenshotFormatOption::Png),
                quality: None,
                clip,
                from_surface: Some(true),
                capture_beyond_viewport: Some(full_page),
                optimize_for_speed: None,
            }),
            format_args!("take screenshot {name}"),
        );
        let png = ok(STANDARD.decode(&shot.data), "decode the screenshot");
        let dir = artifacts_dir();
        ok(
            std::fs::create_dir_all(&dir),
            format_args!("create {}", dir.display()),
        );
        let path = dir.join(format!("{name}.png"));
        ok(
            std::fs::write(&path, png),
            format_args!("write {}", path.display()),
        );
        path
    }

    /// The page's script errors so far, oldest first: uncaught exceptions
    /// and unhandled rejections, `console.error` calls, and errors the
    /// browser logged (a script or style refused by the page's CSP, a
    /// resource that failed to load; not a missing `/favicon.ico`). Across
    /// navigations, since the page opened.
    #[track_caller]
    pub fn js_errors(&self) -> Vec<String> {
        // The events are read on a thread of their own: a console message
        // sent now comes after every earlier event, so once it is read,
        // they are too.
        let n = self.barriers.fetch_add(1, Ordering::SeqCst) + 1;
        self.eval_json(&format!("console.debug('{BARRIER}{n}')"));
        let started = Instant::now();
        loop {
            {
                let events = self.events.lock().unwrap_or_else(|e| e.into_inner());
                if events.barrier >= n {
                    return events.errors.clone();
                }
            }
            if started.elapsed() >= DEFAULT_TIMEOUT {
                panic!("Chromium did not report a console message within {DEFAULT_TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Panics, listing them, if the page has had script errors (see
    /// [`Page::js_errors`]).
    #[track_caller]
    pub fn assert_no_js_errors(&self) {
        let errors = self.js_errors();
        if !errors.is_empty() {
            panic!(
                "the page had script errors:\n  {}\n{}",
                errors.join("\n  "),
                self.describe()
            );
        }
    }

    /// The page's URL, script errors and text (trimmed), for a failure
    /// message; never panics.
    fn describe(&self) -> String {
        let state = self.try_eval(
            "[location.href, document.readyState, document.body ? document.body.innerText : '']",
        );
        let errors = {
            let events = self.events.lock().unwrap_or_else(|e| e.into_inner());
            events.errors.clone()
        };
        let mut out = String::new();
        match state {
            Ok(Value::Array(state)) if state.len() == 3 => {
                let text = state[2].as_str().unwrap_or_default();
                out.push_str(&format!(
                    "page: {} (readyState {})\n",
                    state[0].as_str().unwrap_or_default(),
                    state[1].as_str().unwrap_or_default(),
                ));
                if !errors.is_empty() {
                    out.push_str(&format!("script errors:\n  {}\n", errors.join("\n  ")));
                }
                out.push_str(&format!("text:\n{}", trimmed(text, TEXT_LIMIT)));
            }
            Ok(other) => out.push_str(&format!("page: (state {other})")),
            Err(error) => out.push_str(&format!("page: (could not read it: {error})")),
        }
        out
    }
}

impl Drop for Page<'_> {
    fn drop(&mut self) {
        // Close the tab, so that a test opening many pages keeps few alive.
        // Its browser may be gone already (a test that failed): no matter.
        let _ = self.tab.close_target();
    }
}

/// `text`, cut at a character boundary to at most `limit` bytes, marked
/// when cut.
fn trimmed(text: &str, limit: usize) -> String {
    let text = text.trim();
    if text.len() <= limit {
        return text.to_owned();
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[... {} more bytes]", &text[..end], text.len() - end)
}

/// `s` as a JavaScript string literal (JSON's is one).
fn js_string(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

/// `target/test-artifacts/inspector`: under `CARGO_TARGET_DIR` when set
/// (relative to the workspace root if relative), else the workspace's
/// `target/`.
pub fn artifacts_dir() -> PathBuf {
    let root = workspace_root();
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    };
    target.join("test-artifacts").join("inspector")
}

/// The nearest ancestor of this crate whose `Cargo.toml` declares the
/// workspace.
fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .ancestors()
        .find(|dir| {
            std::fs::read_to_string(dir.join("Cargo.toml"))
                .is_ok_and(|manifest| manifest.lines().any(|line| line.trim() == "[workspace]"))
        })
        .unwrap_or(manifest_dir)
        .to_path_buf()
}

/// Panics if called on a current-thread tokio runtime: the test would wait
/// on the browser while the server it loads pages from, on the same thread,
/// could not answer.
#[track_caller]
fn refuse_current_thread_runtime() {
    if let Ok(runtime) = tokio::runtime::Handle::try_current()
        && runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread
    {
        panic!(
            "the browser driver blocks: use #[tokio::test(flavor = \"multi_thread\")] \
             (or a plain #[test]), not a current-thread runtime, which could not serve \
             the pages meanwhile"
        );
    }
}

/// `result`'s value, or a panic saying what failed.
#[track_caller]
fn ok<T, E: Display>(result: Result<T, E>, what: impl Display) -> T {
    match result {
        Ok(value) => value,
        Err(error) => panic!("could not {what}: {error:#}"),
    }
}
