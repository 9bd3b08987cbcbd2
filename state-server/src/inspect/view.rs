//! The inspector's pages as HTML: the layout every page shares, the thread
//! list, one thread (its steps, the state at a step, the difference
//! between two), and the pieces the script swaps in without a reload.

use super::diff::{Change, KeyChange, diff};
use super::runs::{self, AgentThread};
use super::{show, writes};
use crate::json::{percent_encode, rfc3339};
use maud::{DOCTYPE, Markup, html};
use serde_json::Value;
use state_core::Schema;
use state_store::{Run, StepKind, StepRecord, ThreadInfo};

/// Where the pages are: the path the router is mounted at (`""` at the
/// root), to which every link is made absolute.
#[derive(Clone, Debug)]
pub(crate) struct Base(pub String);

impl Base {
    pub(crate) fn home(&self) -> String {
        format!("{}/", self.0)
    }
    pub(crate) fn thread(&self, id: &str) -> String {
        format!("{}/inspect/{}", self.0, percent_encode(id))
    }
    fn asset(&self, name: &str) -> String {
        format!("{}/{name}", self.0)
    }
    fn stream(&self, id: &str) -> String {
        format!("{}/threads/{}/stream", self.0, percent_encode(id))
    }
    /// What the page of an Agent Server thread follows live.
    fn events(&self, id: &str) -> String {
        format!("{}/events", self.thread(id))
    }
    fn state_json(&self, id: &str, seq: u64) -> String {
        format!("{}/threads/{}/state?seq={seq}", self.0, percent_encode(id))
    }
}

/// A whole page: `title`, then `main`.
pub(crate) fn page(base: &Base, title: &str, main: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="same-origin";
                title { (title) " · state inspector" }
                link rel="stylesheet" href=(base.asset("inspector.css"));
                script defer src=(base.asset("inspector.js")) {}
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    nav aria-label="Site" { a href=(base.home()) { "Threads" } }
                }
                main #main { (main) }
            }
        }
    }
}

/// An error page's content.
pub(crate) fn error(status: u16, message: &str) -> Markup {
    html! {
        h1 { "Error " (status) }
        p.error role="alert" { (message) }
    }
}

/// The thread list: `threads` newest first, the filter, and the link to
/// the next page (`next`: its query); `start`, the form that starts a run
/// on a new thread, when there is one.
pub(crate) fn threads(
    base: &Base,
    threads: &[ThreadInfo],
    filter: Option<&str>,
    next: Option<&str>,
    start: Option<Markup>,
) -> Markup {
    html! {
        h1 { "Threads" }
        @if let Some(start) = start { (start) }
        form.filter role="search" method="get" action=(base.home()) {
            label for="q" { "Thread id contains" }
            input #q type="search" name="q" value=[filter] autocomplete="off";
            button type="submit" { "Filter" }
        }
        @if threads.is_empty() {
            p.empty { @if filter.is_some() { "No thread matches." } @else { "No threads yet." } }
        } @else {
            div.table-wrap {
                table #threads {
                    caption {
                        (threads.len()) @if threads.len() == 1 { " thread" } @else { " threads" }
                        ", the most recently updated first"
                        @if next.is_some() { " (more on the next page)" }
                    }
                    thead { tr {
                        th scope="col" { "Thread" }
                        th scope="col" { "Steps" }
                        th scope="col" { "Updated" }
                        th scope="col" { "Created" }
                        th scope="col" { "Forked from" }
                    } }
                    tbody {
                        @for info in threads {
                            tr data-thread=(info.id) {
                                th scope="row" { a href=(base.thread(&info.id)) { (info.id) } }
                                td.num { (info.seq) }
                                td { (time(info.updated_at)) }
                                td { (time(info.created_at)) }
                                td {
                                    @if let Some((from, seq)) = &info.forked_from {
                                        a href={ (base.thread(from)) "?seq=" (seq) } { (from) } " at step " (seq)
                                    } @else { "—" }
                                }
                            }
                        }
                    }
                }
            }
        }
        @if let Some(next) = next {
            nav.pages aria-label="More threads" {
                a rel="next" href={ (base.home()) "?" (next) } { "Older threads →" }
            }
        }
    }
}

pub(crate) fn time(at: std::time::SystemTime) -> Markup {
    let text = rfc3339(at);
    html! { time datetime=(text) { (text.replace('T', " ").trim_end_matches('Z')) " UTC" } }
}

/// Everything the thread page shows.
pub(crate) struct ThreadView<'a> {
    pub base: &'a Base,
    pub info: &'a ThreadInfo,
    /// The window of steps shown, in order.
    pub steps: &'a [StepRecord],
    /// The selected step.
    pub seq: u64,
    /// The step the selected one is compared with.
    pub compare: u64,
    /// Whether steps before / after the window exist.
    pub earlier: Option<u64>,
    pub later: Option<u64>,
    /// The thread's last step, when it is a paused superstep.
    pub pending: Option<&'a StepRecord>,
    pub panel: Panel,
    /// The state's fields and reducers (the typed router's).
    pub schema: Option<&'static Schema>,
    /// Whether the page may fork (the server allows writes, knows the type).
    pub can_fork: bool,
    /// Whether the page may answer interrupts (writes allowed, a graph).
    pub can_answer: bool,
    /// The Agent Server's side, for a thread made through that API.
    pub agent: Option<&'a AgentThread>,
    /// The nodes the selected step ran (marked on the graph).
    pub marked: Vec<String>,
    /// The assistants the run form offers (none: no form).
    pub assistants: Vec<&'a str>,
}

/// The state side of the thread page.
pub(crate) enum Panel {
    /// The states after the selected step and after the compared one, or
    /// why one could not be rebuilt.
    States {
        schema: &'static Schema,
        state: Result<Value, String>,
        before: Result<Value, String>,
    },
    /// The server does not know the state type.
    Untyped,
}

/// The thread page's content.
pub(crate) fn thread(view: &ThreadView<'_>) -> Markup {
    let id = &view.info.id;
    let head = view.info.seq;
    let following = view.later.is_none();
    let after = view.steps.last().map_or(0, |s| s.seq);
    html! {
        h1 { "Thread " code { (id) } }
        p #meta .meta {
            span #head data-seq=(head) { (head) " steps" } " · updated " (time(view.info.updated_at))
            @if let Some((from, seq)) = &view.info.forked_from {
                " · forked from " a href={ (view.base.thread(from)) "?seq=" (seq) } { (from) } " at step " (seq)
            }
        }
        (interrupts(view.base, id, view.pending, view.can_answer))
        @if let Some(agent) = view.agent {
            div.agent {
                (runs::runs(&agent.runs))
                @if !view.assistants.is_empty() {
                    (runs::run_form(view.base, Some(id), &view.assistants, agent.graph_id.as_deref()))
                }
            }
        }
        div.layout {
            section.timeline aria-labelledby="steps-title" {
                h2 #steps-title { "Steps" }
                @if let Some(upto) = view.earlier {
                    a.window rel="prev" href={ (view.base.thread(id)) "?seq=" (view.seq) "&upto=" (upto) } { "↑ Earlier steps" }
                }
                ol #timeline
                    data-thread=(id)
                    data-after=(after)
                    data-following=(following)
                    data-live=(format!("{}/live", view.base.thread(id)))
                    data-stream=(if view.agent.is_some() { view.base.events(id) } else { view.base.stream(id) })
                {
                    @for step in view.steps { (step_item(view.base, id, step, view.seq, view.schema)) }
                }
                @if let Some(upto) = view.later {
                    a.window rel="next" href={ (view.base.thread(id)) "?seq=" (view.seq) "&upto=" (upto) } { "↓ Later steps" }
                }
                p #live .live role="status" aria-live="polite" {}
            }
            div #panel .panel { (panel(view)) }
        }
    }
}

/// The pending interrupts, as a section (empty when there are none), with
/// a stable id the script replaces when the thread moves on; a form under
/// each when the page may answer.
pub(crate) fn interrupts(
    base: &Base,
    id: &str,
    pending: Option<&StepRecord>,
    can_answer: bool,
) -> Markup {
    let list = pending
        .map(|step| crate::json::pending_interrupts(&step.body))
        .unwrap_or_default();
    html! {
        section #interrupts aria-live="polite" {
            @if !list.is_empty() {
                h2 { "Waiting for an answer" }
                p.note {
                    "The run paused at step " (pending.map_or(0, |s| s.seq))
                    "; it goes on when the graph resumes with an answer."
                }
                @for (i, interrupt) in list.iter().enumerate() {
                    (writes::question(interrupt))
                    @if can_answer {
                        @let field = format!("answer-{i}");
                        form.answer method="post" action={ (base.thread(id)) "/answer" } {
                            input type="hidden" name="interrupt"
                                value=(interrupt.get("id").and_then(Value::as_str).unwrap_or(""));
                            label for=(field) { "Answer (JSON, or plain text)" }
                            textarea id=(field) name="answer" rows="2" required {}
                            button type="submit" { "Answer and resume" }
                        }
                    }
                }
            }
        }
    }
}

/// One step of the timeline.
pub(crate) fn step_item(
    base: &Base,
    id: &str,
    step: &StepRecord,
    selected: u64,
    schema: Option<&Schema>,
) -> Markup {
    let kind = writes::kind_label(step);
    let is_selected = step.seq == selected;
    // `__start__` (a run's input) is shown as the "input" group.
    let nodes: Vec<&str> = step
        .nodes()
        .into_iter()
        .filter(|node| !node.starts_with("__"))
        .collect();
    html! {
        li.step.selected[is_selected] id={ "step-" (step.seq) } data-seq=(step.seq) data-kind=(step.kind.as_str()) {
            a.select href={ (base.thread(id)) "?seq=" (step.seq) } aria-current=[is_selected.then_some("step")] {
                span.seq { "#" (step.seq) }
                " " span class={ "kind kind-" (kind.replace(' ', "-")) } { (kind) }
                @if !nodes.is_empty() && step.kind != StepKind::Pending {
                    " " span.nodes { @for node in &nodes { span.node-name { (node) } " " } }
                }
                " " (time(step.recorded_at))
            }
            div.writes { (writes::writes(step, schema)) }
        }
    }
}

/// The state side: the state after the selected step and what changed
/// since the compared one.
pub(crate) fn panel(view: &ThreadView<'_>) -> Markup {
    let graph = match view.agent {
        Some(agent) => runs::graph_section(agent, view.seq, &view.marked),
        None => html! {},
    };
    html! { (graph) (states(view)) }
}

/// The state after the selected step and the changes since the compared.
fn states(view: &ThreadView<'_>) -> Markup {
    let id = &view.info.id;
    let (seq, compare) = (view.seq, view.compare);
    match &view.panel {
        Panel::Untyped => html! {
            section #state data-seq=(seq) {
                h2 { "State after step " (seq) }
                p.note {
                    "This server does not know the threads' state type, so it shows what each step wrote but cannot rebuild a state. "
                    "Serve the store with " code { "state_server::router::<YourState>(store)" } " to see the state at any step and the difference between two."
                }
                @if view.can_fork { (fork_form(view)) }
            }
        },
        Panel::States {
            schema,
            state,
            before,
        } => html! {
            section #state data-seq=(seq) aria-labelledby="state-title" {
                h2 #state-title { "State after step " (seq) }
                p.links {
                    a href=(view.base.state_json(id, seq)) { "as JSON" }
                }
                @match state {
                    Ok(state) => (state_fields(schema, state)),
                    Err(message) => p.error role="alert" { (message) },
                }
                @if view.can_fork { (fork_form(view)) }
            }
            section #diff data-from=(compare) data-to=(seq) aria-labelledby="diff-title" {
                h2 #diff-title { "Changes from step " (compare) " to step " (seq) }
                form.compare method="get" action=(view.base.thread(id)) {
                    input type="hidden" name="seq" value=(seq);
                    label for="compare" { "Compare with step" }
                    input #compare type="number" name="compare" min="0" max=(view.info.seq) value=(compare);
                    button type="submit" { "Compare" }
                }
                @match (before, state) {
                    (Ok(before), Ok(state)) => (changes(schema, before, state)),
                    (Err(message), _) | (_, Err(message)) => p.error role="alert" { (message) },
                }
            }
        },
    }
}

/// The form that forks the thread at the selected step.
fn fork_form(view: &ThreadView<'_>) -> Markup {
    let seq = view.seq;
    html! {
        form.fork method="post" action={ (view.base.thread(&view.info.id)) "/fork" } {
            input type="hidden" name="seq" value=(seq);
            label for="fork-to" { "Fork at step " (seq) " into a new thread" }
            input #fork-to type="text" name="to" required placeholder="new thread id";
            button type="submit" { "Fork" }
        }
    }
}

/// A state, field by field, with each field's reducer.
fn state_fields(schema: &Schema, state: &Value) -> Markup {
    let Some(fields) = state.as_object() else {
        return show::json(state);
    };
    // In the order the struct declares them (a JSON object's keys are
    // sorted), then any the schema does not name.
    let declared = schema.fields.iter().map(|f| f.name);
    let ordered: Vec<(&str, &Value)> = declared
        .filter_map(|name| fields.get(name).map(|value| (name, value)))
        .chain(
            fields
                .iter()
                .filter(|(name, _)| schema.field(name).is_none())
                .map(|(name, value)| (name.as_str(), value)),
        )
        .collect();
    html! {
        div.fields {
            @for (name, value) in ordered {
                details.state-field open data-field=(name) {
                    summary {
                        span.field-name { (name) }
                        @if let Some(info) = schema.field(name) {
                            " " span.reducer { (info.reducer_kind().as_str()) }
                        }
                        @if let Value::Array(list) = value { " " span.count { "(" (list.len()) ")" } }
                    }
                    @match value {
                        Value::Array(list) if !list.is_empty() => (show::list(list, true)),
                        Value::Object(map) if !map.is_empty() => (show::keys(map)),
                        other => (show::value(other)),
                    }
                }
            }
        }
    }
}

/// The fields that differ between two states.
fn changes(schema: &Schema, before: &Value, after: &Value) -> Markup {
    let mut changes = diff(before, after);
    // In the order the struct declares its fields.
    let place = |name: &str| {
        schema
            .fields
            .iter()
            .position(|f| f.name == name)
            .unwrap_or(usize::MAX)
    };
    changes.sort_by_key(|(name, _)| place(name));
    html! {
        @if changes.is_empty() {
            p.note { "No field differs." }
        } @else {
            ul.changes {
                @for (name, change) in &changes {
                    li.change data-field=(name) {
                        span.field-name { (name) }
                        @if let Some(info) = schema.field(name) { " " span.reducer { (info.reducer_kind().as_str()) } }
                        " " (change_markup(change))
                    }
                }
            }
        }
    }
}

fn change_markup(change: &Change<'_>) -> Markup {
    match change {
        Change::Added(value) => html! { span.op { "added" } (show::value(value)) },
        Change::Removed(value) => html! { span.op { "removed" } (show::value(value)) },
        Change::Replaced { old, new } => html! {
            span.op { "changed" }
            div.was { span.label { "was" } (show::value(old)) }
            div.now { span.label { "now" } (show::value(new)) }
        },
        Change::Items { at, removed, added } => html! {
            span.op {
                @if removed.is_empty() { "+" (added.len()) " at the end (from index " (at) ")" }
                @else { "−" (removed.len()) " +" (added.len()) " at index " (at) }
            }
            @if !removed.is_empty() { div.was { span.label { "removed" } (show::list(removed, false)) } }
            @if !added.is_empty() { div.now { span.label { "added" } (show::list(added, false)) } }
        },
        Change::Keys(keys) => html! {
            span.op { (keys.len()) " keys changed" }
            dl.keys {
                @for (key, change) in keys.iter().take(show::MAX_ITEMS) {
                    dt { (key) }
                    dd {
                        @match change {
                            KeyChange::Added(value) => { span.label { "added" } (show::value(value)) },
                            KeyChange::Removed(value) => { span.label { "removed" } (show::value(value)) },
                            KeyChange::Changed { old, new } => {
                                div.was { span.label { "was" } (show::value(old)) }
                                div.now { span.label { "now" } (show::value(new)) }
                            },
                        }
                    }
                }
            }
        },
    }
}

/// What the script fetches when the thread moves on: the new steps, the
/// pending interrupts now, the step count, and an Agent Server thread's
/// runs.
pub(crate) fn live(
    base: &Base,
    info: &ThreadInfo,
    steps: &[StepRecord],
    pending: Option<&StepRecord>,
    schema: Option<&Schema>,
    can_answer: bool,
    thread_runs: Option<&[Run]>,
) -> Markup {
    html! {
        ol #new-steps data-head=(info.seq) data-after=(steps.last().map_or(0, |s| s.seq)) {
            @for step in steps { (step_item(base, &info.id, step, 0, schema)) }
        }
        (interrupts(base, &info.id, pending, can_answer))
        @if let Some(thread_runs) = thread_runs { (runs::runs(thread_runs)) }
    }
}
