//! The therapy agent (seed 002): one `AgentState` flows through a LangGraph
//! graph that loads memory, classifies crisis risk, routes to a crisis or a
//! therapeutic branch, answers, and extracts memories in parallel.
//!
//! The document sorts the fields into lifecycle classes, and this module
//! translates them as follows:
//!
//! | class | fields | here |
//! |---|---|---|
//! | input | `message`, `channel`, `user_id`, `session_id`, `installed_skills` | `#[scope(turn)]`, written by [`build_initial_state`] every turn |
//! | reducer | `history`, `transcript` (`operator.add`), `progress`, `diagnostics` (`_merge_dicts`) | persistent; `#[reducer(append)]`, and `#[reducer(merge)]` on a nested state |
//! | loaded | `working_memory`, `memory.*` | `#[scope(turn)]`, written by [`load_memory_node`] every turn |
//! | turn-scoped | `crisis`, `routing.*`, `response.*` | `#[scope(turn)]`: [`State::begin_turn`] resets them |
//!
//! Our scopes say how long a value lives, not who writes it: "input" and
//! "loaded" fields live for one turn, like the turn-scoped ones, and differ
//! only in the node that fills them, which their doc comments (the
//! description column of the schema table) name.
//!
//! The graph runs as a [`state_graph::StateGraph`] ([`graph`]): the crisis
//! gate's routing per turn is a conditional edge, the two extractors one
//! superstep, and each turn one `invoke_thread` on the session's thread of
//! a [`state_store::Store`] (the checkpointer), each superstep one logged
//! step. The [`WorkflowContext`] is the graph's context type, given to each
//! run (`app.with_context(ctx)`, LangGraph's `context=`) and read by the
//! nodes as `ctx.context()` (`runtime.context`): one compiled graph serves
//! every context. [`TherapyAgent::run_turn`] is the same nodes driven by a
//! hand-written sequence on a bare state, and [`Checkpointer`] a snapshot
//! per session; the tests drive them node by node, and check that the graph
//! takes the same supersteps.
//!
//! `AgentInput` and `AgentOutput` are the public contract around the state:
//! [`build_initial_state`] is the input -> state step, [`state_to_output`]
//! the state -> output one. The LLM, the memory store and the crisis log are
//! simulated by [`WorkflowContext`] with keyword rules, so every run is
//! deterministic, timings included.

use serde::{Deserialize, Serialize};
use state_core::{Delta, State, StateError};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

pub mod graph;

// ---------------------------------------------------------------------------
// Models (the document's agent/models.py and agent/working_memory.py).
// ---------------------------------------------------------------------------

/// Normalized transport of a message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Channel {
    /// Tests and evals.
    #[default]
    Test,
    /// The web client.
    Web,
    /// SMS.
    Sms,
    /// WhatsApp.
    Whatsapp,
    /// Telegram.
    Telegram,
    /// A voice call.
    Voice,
}

/// Who wrote a [`Message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageRole {
    /// The person talking to the agent.
    User,
    /// The agent.
    Assistant,
}

/// One conversation turn, as stored in `history` and `transcript` (the
/// document's `Message`: role, content, mode).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: MessageRole,
    /// What was said.
    pub content: String,
    /// The mode the agent answered in; `None` for user turns.
    pub mode: Option<String>,
}

impl Message {
    /// A user turn.
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: MessageRole::User,
            content: content.into(),
            mode: None,
        }
    }

    /// An assistant turn answered in `mode`.
    pub fn assistant(content: impl Into<String>, mode: impl Into<String>) -> Self {
        Self {
            role: MessageRole::Assistant,
            content: content.into(),
            mode: Some(mode.into()),
        }
    }
}

/// The category of a mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ModeType {
    /// A therapeutic mode.
    #[default]
    Therapeutic,
    /// An operational request (help, settings).
    Operational,
    /// The crisis branch.
    Crisis,
}

/// Which branch produced the reply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ResponseKind {
    /// The therapeutic branch.
    #[default]
    Therapeutic,
    /// The crisis branch.
    Crisis,
}

/// The crisis gate's safety assessment. A plain model, not a state group:
/// the gate writes it whole.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CrisisAssessment {
    /// 0 (none) to 3 (acute).
    pub level: u8,
    /// The classifier's confidence, 0 to 1.
    pub confidence: f64,
    /// Why the level was chosen.
    pub reason: String,
    /// Whether the crisis branch must answer.
    pub needs_crisis_response: bool,
    /// Whether the reply should ask a clarifying question first.
    pub needs_clarification: bool,
}

/// One entry of `working_memory`: structured data, formatted on demand by
/// [`format_working_memory_entry`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum WorkingMemoryEntry {
    /// A fact, with the user's words as evidence
    /// (`SemanticWorkingMemoryEntry`).
    Semantic {
        /// The user's words the fact was drawn from.
        evidence_quote: String,
    },
    /// The arc of an earlier session (`EpisodicWorkingMemoryEntry`).
    Episodic {
        /// What the session was about.
        summary: String,
        /// Its main themes.
        primary_themes: Vec<String>,
        /// Whether it catches up on several sessions at once.
        is_catch_up: bool,
    },
    /// A pre-formatted string from an older checkpoint: passes through
    /// unchanged.
    #[serde(untagged)]
    Legacy(String),
}

impl WorkingMemoryEntry {
    /// A semantic entry (the document's factory function).
    pub fn semantic(evidence_quote: impl Into<String>) -> Self {
        Self::Semantic {
            evidence_quote: evidence_quote.into(),
        }
    }

    /// An episodic entry (the document's factory function).
    pub fn episodic(summary: impl Into<String>, themes: &[&str], is_catch_up: bool) -> Self {
        Self::Episodic {
            summary: summary.into(),
            primary_themes: themes.iter().map(|theme| (*theme).to_owned()).collect(),
            is_catch_up,
        }
    }
}

/// One entry as the prompt builders show it (`format_working_memory_entry`).
pub fn format_working_memory_entry(entry: &WorkingMemoryEntry) -> String {
    match entry {
        WorkingMemoryEntry::Semantic { evidence_quote } => {
            format!("Previously noted: {evidence_quote}")
        }
        WorkingMemoryEntry::Episodic {
            summary,
            primary_themes,
            is_catch_up,
        } => {
            let when = if *is_catch_up {
                "Earlier sessions"
            } else {
                "Last session"
            };
            format!("{when} ({}): {summary}", primary_themes.join(", "))
        }
        WorkingMemoryEntry::Legacy(text) => text.clone(),
    }
}

/// All entries, one per line (`format_working_memory_entries`).
pub fn format_working_memory_entries(entries: &[WorkingMemoryEntry]) -> String {
    entries
        .iter()
        .map(format_working_memory_entry)
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------------------
// The state (agent/state.py), field for field.
// ---------------------------------------------------------------------------

/// `memory.*`: what [`load_memory_node`] loaded for this turn besides
/// `working_memory`. Written whole by the loader (no reducer).
#[derive(state_core::AgentState, Debug, Clone, PartialEq)]
#[state(scope = turn)]
pub struct Memory {
    /// Retrieval summary for diagnostics: hit counts, store sizes, retrieval
    /// path.
    pub summary: String,
    /// Style rules from the user's procedural profile.
    pub procedural_rules: Vec<String>,
    /// Whether to surface recalled context proactively (the profile's recall
    /// toggle).
    pub proactive_recall_enabled: bool,
}

/// `progress` (`SessionProgressState`): per-turn fields beside cross-turn
/// exercise fields, merged key by key so that a turn writing only
/// `turn_count` and `stage` keeps the exercise.
#[derive(state_core::AgentState, Debug, Clone, PartialEq)]
pub struct Progress {
    /// Persistent callers derive from checkpoint; one-shot callers count
    /// from history.
    pub turn_count: u32,
    /// Conversation arc: opening, deepening, stabilizing, closing.
    #[default("opening")]
    pub stage: String,
    /// Multi-turn exercise identifier. Persists via the merge reducer.
    pub exercise_type: Option<String>,
    /// Current step index within the active exercise. Cleared when the
    /// exercise completes.
    pub exercise_step: Option<u32>,
}

/// `routing.*`: which branch and mode answer this turn. Written whole (no
/// reducer): a node that changes part of it carries the rest forward.
#[derive(state_core::AgentState, Debug, Clone, PartialEq)]
#[state(scope = turn)]
pub struct Routing {
    /// "crisis" or "therapeutic": decides which branch runs.
    #[default("therapeutic")]
    pub route: String,
    /// supportive, reflective, clarifying, psychoeducation, guided_exercise,
    /// closing.
    #[default("supportive")]
    pub mode: String,
    /// How the mode was selected: keyword, llm, default, or crisis_gate.
    #[default("default")]
    pub mode_source: String,
    /// THERAPEUTIC, OPERATIONAL, or CRISIS.
    pub mode_type: ModeType,
    /// Therapeutic modality: MI, CBT, ACT, DBT, grief, IPT, PFA, or None.
    pub modality: Option<String>,
}

/// `response.*`: the reply. Written whole by the node that wins the route.
#[derive(state_core::AgentState, Debug, Clone, PartialEq)]
#[state(scope = turn)]
pub struct Response {
    /// Generated reply from whichever node wins the route.
    pub text: String,
    /// THERAPEUTIC or CRISIS.
    pub kind: ResponseKind,
    /// Turn-specific prompt shaping hint.
    pub guidance: String,
}

/// `diagnostics.*`: per-turn timings, merged key by key so that nodes,
/// parallel ones included, write their own keys. A key is `None` until its
/// node has run once (a Python dict without the key).
#[derive(state_core::AgentState, Debug, Clone, PartialEq)]
pub struct Diagnostics {
    /// Total time for memory retrieval (all 3 namespaces).
    pub load_memory_ms: Option<f64>,
    /// Time for crisis classification (regex + optional LLM).
    pub crisis_gate_ms: Option<f64>,
    /// Time for semantic fact extraction (LLM call).
    pub extract_facts_ms: Option<f64>,
    /// Time for procedural rule extraction (LLM call).
    pub extract_procedural_ms: Option<f64>,
}

/// The therapy agent's `AgentState`. Fields in the document's order; each
/// doc comment starts with the document's lifecycle class.
#[derive(state_core::AgentState, Debug, Clone, PartialEq)]
pub struct TherapyState {
    /// Input. Current user message being processed.
    #[scope(turn)]
    pub message: String,
    /// Input. Normalized transport: TEST, WEB, SMS, WHATSAPP, TELEGRAM, VOICE.
    #[scope(turn)]
    pub channel: Channel,
    /// Input. Optional until auth/session plumbing exists, reserved for
    /// ownership checks.
    #[scope(turn)]
    pub user_id: Option<String>,
    /// Input. Thread identifier used by the persistence layer.
    #[scope(turn)]
    pub session_id: Option<String>,
    /// Input. Skill names resolved into prompt behavior by the graph.
    #[scope(turn)]
    pub installed_skills: Vec<String>,
    /// Reducer (operator.add). Each turn emits only new entries; the
    /// checkpointer keeps the rest.
    #[reducer(append)]
    pub history: Vec<Message>,
    /// Reducer (operator.add). Full durable conversation record: each turn
    /// appends, never reconstructs.
    #[reducer(append)]
    pub transcript: Vec<Message>,
    /// Loaded. Structured semantic and episodic entries, formatted on demand.
    #[scope(turn)]
    pub working_memory: Vec<WorkingMemoryEntry>,
    /// Loaded. Retrieval summary, procedural rules and the recall toggle.
    #[scope(turn)]
    pub memory: Memory,
    /// Reducer (_merge_dicts). Per-turn fields merge with cross-turn
    /// exercise fields from the checkpoint.
    #[reducer(merge)]
    pub progress: Progress,
    /// Turn-scoped. Level 0-3, confidence, reason, needs_crisis_response,
    /// needs_clarification.
    #[scope(turn)]
    pub crisis: CrisisAssessment,
    /// Turn-scoped. Route, mode, mode source, mode type and modality.
    #[scope(turn)]
    pub routing: Routing,
    /// Turn-scoped. The generated reply: text, kind, guidance.
    #[scope(turn)]
    pub response: Response,
    /// Reducer (_merge_dicts). Per-turn timings; nodes write their own keys,
    /// parallel extractors in the same step.
    #[reducer(merge)]
    pub diagnostics: Diagnostics,
}

/// `routing.route` of the crisis branch.
pub const ROUTE_CRISIS: &str = "crisis";
/// `routing.route` of the therapeutic branch.
pub const ROUTE_THERAPEUTIC: &str = "therapeutic";

// ---------------------------------------------------------------------------
// The public contract: AgentInput -> state -> AgentOutput.
// ---------------------------------------------------------------------------

/// What a caller sends for one turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentInput {
    /// The user's message.
    pub message: String,
    /// The transport it came from.
    pub channel: Channel,
    /// The user, once auth exists.
    pub user_id: Option<String>,
    /// The thread; with a checkpointer, the key of the saved state.
    pub session_id: Option<String>,
    /// Earlier turns, for one-shot callers without a checkpoint.
    pub history: Vec<Message>,
    /// Memory entries the caller already has (one-shot callers).
    pub working_memory: Vec<WorkingMemoryEntry>,
    /// Skills to enable.
    pub installed_skills: Vec<String>,
}

impl AgentInput {
    /// An input with the message and session set, everything else default.
    pub fn new(message: impl Into<String>, session_id: Option<&str>) -> Self {
        Self {
            message: message.into(),
            session_id: session_id.map(str::to_owned),
            ..Self::default()
        }
    }
}

/// What a caller gets back: the reply and what the graph decided, not the
/// state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentOutput {
    /// The reply.
    pub response_text: String,
    /// Which branch produced it.
    pub response_type: ResponseKind,
    /// The safety assessment.
    pub crisis: CrisisAssessment,
    /// The mode answered in.
    pub mode: String,
    /// The mode's category.
    pub mode_type: ModeType,
    /// How the mode was selected.
    pub mode_source: String,
    /// Whether this turn's memories were extracted and stored.
    pub should_persist_memory: bool,
    /// Timings.
    pub diagnostics: Diagnostics,
}

/// Input -> state (`build_initial_state`), as a delta on the state after
/// [`State::begin_turn`].
///
/// Writes the input fields, and emits only the current user turn into
/// `history` and `transcript`: their `append` reducer adds it to the
/// checkpoint's list. A one-shot caller (no checkpoint) passes earlier
/// turns in `input.history`; they are emitted before it. `turn_count` is
/// derived from the checkpoint when there is one, else counted from
/// `input.history`; `progress` merges, so the checkpoint's exercise fields
/// survive without being carried forward here.
pub fn build_initial_state(
    input: &AgentInput,
    checkpoint: Option<&TherapyState>,
) -> TherapyStateDelta {
    let user_turn = Message::user(input.message.as_str());
    let (turns, turn_count) = match checkpoint {
        Some(saved) => (vec![user_turn], saved.progress.turn_count + 1),
        None => {
            let earlier = input
                .history
                .iter()
                .filter(|turn| turn.role == MessageRole::User)
                .count();
            let mut turns = input.history.clone();
            turns.push(user_turn);
            (turns, count(earlier) + 1)
        }
    };
    TherapyState::delta()
        .message(input.message.as_str())
        .channel(input.channel)
        .user_id(input.user_id.clone())
        .session_id(input.session_id.clone())
        .installed_skills(input.installed_skills.clone())
        .history(turns.clone())
        .transcript(turns)
        .working_memory(input.working_memory.clone())
        .progress(Progress::delta().turn_count(turn_count))
}

/// State -> output (`state_to_output`).
pub fn state_to_output(state: &TherapyState, should_persist_memory: bool) -> AgentOutput {
    AgentOutput {
        response_text: state.response.text.clone(),
        response_type: state.response.kind,
        crisis: state.crisis.clone(),
        mode: state.routing.mode.clone(),
        mode_type: state.routing.mode_type,
        mode_source: state.routing.mode_source.clone(),
        should_persist_memory,
        diagnostics: state.diagnostics.clone(),
    }
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

// ---------------------------------------------------------------------------
// Runtime context (agent/runtime_context.py), simulated.
// ---------------------------------------------------------------------------

/// Whether the graph reads and writes long-term memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemoryMode {
    /// No retrieval, no extraction.
    Off,
    /// Retrieval only.
    ReadOnly,
    /// Retrieval, and extraction after therapeutic turns.
    #[default]
    ReadWrite,
}

/// A stand-in for the LLM client: with one, a message that no keyword
/// matches gets its mode from "the LLM" (`mode_source = "llm"`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LlmClient;

/// A stand-in for the embedding provider: with one, retrieval is hybrid
/// (keyword and vector, fused by RRF).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EmbeddingProvider;

/// The three memory namespaces of one user. Locked inside, so the
/// frozen context can be shared by parallel extractors; a handle, so a
/// copy of the context (one per run) reaches the same store, as the
/// Python dataclass holds a reference to it.
#[derive(Debug, Default, Clone)]
pub struct MemoryStore {
    inner: Arc<Mutex<Namespaces>>,
}

#[derive(Debug, Default, Clone)]
struct Namespaces {
    facts: Vec<String>,
    episodes: Vec<WorkingMemoryEntry>,
    rules: Vec<String>,
    recall: Option<bool>,
}

impl MemoryStore {
    /// A store holding these facts (the user's words) and earlier sessions.
    pub fn seeded(facts: &[&str], episodes: Vec<WorkingMemoryEntry>) -> Self {
        let namespaces = Namespaces {
            facts: facts.iter().map(|fact| (*fact).to_owned()).collect(),
            episodes,
            ..Namespaces::default()
        };
        Self {
            inner: Arc::new(Mutex::new(namespaces)),
        }
    }

    /// The stored semantic facts.
    pub fn facts(&self) -> Vec<String> {
        self.lock().facts.clone()
    }

    /// The user's procedural rules.
    pub fn procedural_rules(&self) -> Vec<String> {
        self.lock().rules.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Namespaces> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// One crisis event, as logged for review.
#[derive(Debug, Clone, PartialEq)]
pub struct CrisisLogEntry {
    /// The thread it happened in.
    pub session_id: Option<String>,
    /// The assessed level.
    pub level: u8,
    /// The gate's reason.
    pub reason: String,
}

/// Where crisis events are logged: a handle, shared by the copies of the
/// context that hold it.
#[derive(Debug, Default, Clone)]
pub struct CrisisLogBackend {
    entries: Arc<Mutex<Vec<CrisisLogEntry>>>,
}

impl CrisisLogBackend {
    /// Everything logged so far.
    pub fn entries(&self) -> Vec<CrisisLogEntry> {
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn log(&self, entry: CrisisLogEntry) {
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(entry);
    }
}

/// The runtime dependencies every node receives (`WorkflowContext`, a
/// frozen dataclass injected as `runtime.context`: here, the graph's
/// context type, given to each run with `with_context`, which the nodes
/// only borrow). Cloning it is cheap and shares its stores, as copying
/// the dataclass shares the objects it refers to.
#[derive(Debug, Default, Clone)]
pub struct WorkflowContext {
    /// The LLM, if configured.
    pub llm_client: Option<LlmClient>,
    /// Long-term memory.
    pub memory_store: MemoryStore,
    /// The crisis log.
    pub crisis_log_backend: CrisisLogBackend,
    /// What the graph may do with memory.
    pub memory_mode: MemoryMode,
    /// Embeddings, if configured.
    pub embedding_provider: Option<EmbeddingProvider>,
}

// ---------------------------------------------------------------------------
// The nodes. Each reads the state and returns a delta of what it writes.
// ---------------------------------------------------------------------------

/// The guided exercise the simulated agent offers, one step per turn.
pub const PACED_BREATHING: [&str; 3] = [
    "Breathe in slowly through your nose for a count of four.",
    "Hold that breath gently for a count of four.",
    "Now breathe out through your mouth for a count of six.",
];
/// The `exercise_type` of [`PACED_BREATHING`].
pub const EXERCISE: &str = "paced_breathing";

/// `load_memory_node`: fills `working_memory` and `memory.*` from the
/// store, and times it.
pub fn load_memory_node(state: &TherapyState, ctx: &WorkflowContext) -> TherapyStateDelta {
    let store = ctx.memory_store.lock().clone();
    let mut entries = state.working_memory.clone();
    let (summary, rules, recall) = if ctx.memory_mode == MemoryMode::Off {
        ("memory off".to_owned(), Vec::new(), false)
    } else {
        // Keyword retrieval: a fact is a hit when it shares a word of four
        // letters or more with the message.
        let content = |text: &str| -> Vec<String> {
            words(text)
                .into_iter()
                .filter(|word| word.chars().count() >= 4)
                .collect()
        };
        let wanted = content(&state.message);
        let hits: Vec<&String> = store
            .facts
            .iter()
            .filter(|fact| content(fact).iter().any(|word| wanted.contains(word)))
            .collect();
        let path = if ctx.embedding_provider.is_some() {
            "hybrid_rrf"
        } else {
            "keyword"
        };
        let summary = format!(
            "semantic {}/{} hits, episodic {}, procedural {} rules, path={path}",
            hits.len(),
            store.facts.len(),
            store.episodes.len(),
            store.rules.len()
        );
        entries.extend(hits.into_iter().map(WorkingMemoryEntry::semantic));
        entries.extend(store.episodes.iter().cloned());
        (summary, store.rules.clone(), store.recall.unwrap_or(true))
    };
    let elapsed = 1.5 + 0.25 * (store.facts.len() + store.episodes.len()) as f64;
    TherapyState::delta()
        .working_memory(entries)
        .memory(Memory {
            summary,
            procedural_rules: rules,
            proactive_recall_enabled: recall,
        })
        .diagnostics(Diagnostics::delta().load_memory_ms(elapsed))
}

/// Phrases the simulated classifier ("regex + optional LLM") looks for,
/// with the level each means.
const CRISIS_PHRASES: [(&str, u8); 6] = [
    ("end my life", 3),
    ("kill myself", 3),
    ("suicide", 3),
    ("hurt myself", 2),
    ("can't go on", 1),
    ("disappear", 1),
];

/// `crisis_gate_node`: assesses the message, sets `routing.route`, and logs
/// levels 2 and 3. An acute message gets the crisis routing whole; an
/// ambiguous one (level 1) stays therapeutic but asks first
/// (`mode = "clarifying"`, `mode_source = "crisis_gate"`).
pub fn crisis_gate_node(state: &TherapyState, ctx: &WorkflowContext) -> TherapyStateDelta {
    let text = state.message.to_lowercase();
    let hit = CRISIS_PHRASES
        .iter()
        .filter(|(phrase, _)| text.contains(phrase))
        .max_by_key(|(_, level)| *level);
    let crisis = match hit {
        Some(&(phrase, level)) => CrisisAssessment {
            level,
            confidence: if level >= 2 { 0.95 } else { 0.6 },
            reason: format!("matched {phrase:?}"),
            needs_crisis_response: level >= 2,
            needs_clarification: level == 1,
        },
        None => CrisisAssessment {
            confidence: 0.97,
            reason: "no risk indicators".into(),
            ..CrisisAssessment::default()
        },
    };
    let routing = if crisis.needs_crisis_response {
        ctx.crisis_log_backend.log(CrisisLogEntry {
            session_id: state.session_id.clone(),
            level: crisis.level,
            reason: crisis.reason.clone(),
        });
        Routing {
            route: ROUTE_CRISIS.into(),
            mode: "supportive".into(),
            mode_source: "crisis_gate".into(),
            mode_type: ModeType::Crisis,
            modality: Some("PFA".into()),
        }
    } else if crisis.needs_clarification {
        Routing {
            mode: "clarifying".into(),
            mode_source: "crisis_gate".into(),
            ..Routing::default()
        }
    } else {
        Routing::default()
    };
    TherapyState::delta()
        .crisis(crisis)
        .routing(routing)
        .diagnostics(Diagnostics::delta().crisis_gate_ms(0.8))
}

/// The branch after the gate: the crisis node, or the dispatcher.
pub fn route_after_crisis_gate(state: &TherapyState) -> &'static str {
    if state.routing.route == ROUTE_CRISIS {
        CRISIS_RESPONSE
    } else {
        SELECT_MODE
    }
}

/// Keywords of the dispatcher: (words, mode, modality).
const MODE_KEYWORDS: [(&[&str], &str, Option<&str>); 5] = [
    (&["goodbye", "bye", "goodnight"], "closing", None),
    (
        &["breathing", "exercise", "grounding"],
        "guided_exercise",
        Some("DBT"),
    ),
    (
        &["died", "loss", "grief", "miss"],
        "supportive",
        Some("grief"),
    ),
    (
        &["why", "explain", "anxiety"],
        "psychoeducation",
        Some("CBT"),
    ),
    (&["should", "maybe", "torn"], "reflective", Some("MI")),
];

/// The dispatcher (`select_mode`): picks the mode of a therapeutic turn and
/// moves the conversation arc and the exercise on.
///
/// An active exercise continues (`default`), a keyword picks a mode
/// (`keyword`), otherwise the LLM does if configured (`llm`), else the
/// routing keeps its reset value (`supportive`, `default`). The gate's
/// clarifying mode stands. `routing` has no reducer, so the route the gate
/// wrote is carried forward by hand, as the Python spreads the dict.
pub fn select_mode_node(state: &TherapyState, ctx: &WorkflowContext) -> TherapyStateDelta {
    let words = words(&state.message);
    let keyword = MODE_KEYWORDS
        .iter()
        .find(|(keys, _, _)| keys.iter().any(|key| words.contains(&(*key).to_owned())));
    let exercising = state.progress.exercise_type.is_some();
    let routing = if state.routing.mode_source == "crisis_gate" {
        state.routing.clone()
    } else if let Some((_, mode, modality)) = keyword.filter(|k| !exercising || k.1 == "closing") {
        Routing {
            mode: (*mode).into(),
            mode_source: "keyword".into(),
            modality: modality.map(str::to_owned),
            ..state.routing.clone()
        }
    } else if exercising {
        Routing {
            mode: "guided_exercise".into(),
            mode_source: "default".into(),
            modality: Some("DBT".into()),
            ..state.routing.clone()
        }
    } else if ctx.llm_client.is_some() {
        Routing {
            mode: "reflective".into(),
            mode_source: "llm".into(),
            modality: Some("ACT".into()),
            ..state.routing.clone()
        }
    } else {
        state.routing.clone()
    };

    let mut progress = Progress::delta().stage(stage(state, &routing.mode));
    if routing.mode == "guided_exercise" {
        let step = state.progress.exercise_step.map_or(1, |step| step + 1);
        progress = progress
            .exercise_type(EXERCISE)
            .exercise_step(step.min(count(PACED_BREATHING.len())));
    } else if routing.mode == "closing" {
        // Leaving mid-exercise ends it.
        progress = progress.exercise_type(None).exercise_step(None);
    }
    TherapyState::delta().routing(routing).progress(progress)
}

/// The conversation arc of this turn.
fn stage(state: &TherapyState, mode: &str) -> &'static str {
    match mode {
        "closing" => "closing",
        "guided_exercise" => "stabilizing",
        _ if state.progress.turn_count <= 1 => "opening",
        _ => "deepening",
    }
}

/// `therapeutic_response_node`: the reply of the therapeutic branch, shaped
/// by the mode, the exercise step, the recalled memory and the user's
/// procedural rules.
pub fn therapeutic_response_node(state: &TherapyState) -> TherapyStateDelta {
    let progress = &state.progress;
    let mut text = match state.routing.mode.as_str() {
        "guided_exercise" => {
            let step = progress.exercise_step.unwrap_or(1).max(1);
            let index = (step as usize).min(PACED_BREATHING.len()) - 1;
            let mut text = format!(
                "Step {step} of {}: {}",
                PACED_BREATHING.len(),
                PACED_BREATHING[index]
            );
            if exercise_completes(state) {
                text.push_str(" That was the last step. Notice how your body feels now.");
            }
            text
        }
        "clarifying" => "When you say that, do you mean you're thinking about hurting yourself, \
                         or that things feel like too much right now?"
            .to_owned(),
        "closing" => "Thank you for talking with me today. Take care of yourself.".to_owned(),
        "psychoeducation" => "Anxiety is the body's alarm system; it can fire even when \
                              nothing is wrong."
            .to_owned(),
        "reflective" => "It sounds like part of you wants this and part of you doesn't.".to_owned(),
        _ => "That sounds really hard. I'm here with you.".to_owned(),
    };
    if state.memory.proactive_recall_enabled && progress.turn_count <= 1 {
        let recalled = state.working_memory.iter().find_map(|entry| match entry {
            WorkingMemoryEntry::Episodic { primary_themes, .. } => primary_themes.first(),
            _ => None,
        });
        if let Some(theme) = recalled {
            text.push_str(&format!(" Last time we talked about {theme}."));
        }
    }
    let guidance = if state.memory.procedural_rules.is_empty() {
        format!("mode={}", state.routing.mode)
    } else {
        format!(
            "mode={}; {}",
            state.routing.mode,
            state.memory.procedural_rules.join(" ")
        )
    };
    TherapyState::delta().response(Response {
        text,
        kind: ResponseKind::Therapeutic,
        guidance,
    })
}

/// `crisis_response_node`: the reply of the crisis branch. It leaves the
/// exercise fields alone: `progress` merges, so the exercise is still there
/// next turn.
pub fn crisis_response_node(state: &TherapyState) -> TherapyStateDelta {
    let text = "I'm really glad you told me. Your safety matters most right now. \
                If you are in danger, please call your local emergency number, \
                or reach a crisis line such as 988 (US). Are you somewhere safe?";
    TherapyState::delta()
        .response(Response {
            text: text.into(),
            kind: ResponseKind::Crisis,
            guidance: format!("crisis level {}: safety first", state.crisis.level),
        })
        .progress(Progress::delta().stage("stabilizing"))
}

/// True when this turn delivered the exercise's last step.
pub fn exercise_completes(state: &TherapyState) -> bool {
    state.routing.mode == "guided_exercise"
        && state.progress.exercise_step == Some(count(PACED_BREATHING.len()))
}

/// `finalize_turn_node`: emits only the assistant turn into `history` and
/// `transcript`, and clears the exercise once its last step was delivered.
pub fn finalize_turn_node(state: &TherapyState) -> TherapyStateDelta {
    let turn = Message::assistant(state.response.text.as_str(), state.routing.mode.as_str());
    let delta = TherapyState::delta()
        .history(vec![turn.clone()])
        .transcript(vec![turn]);
    if exercise_completes(state) {
        delta.progress(Progress::delta().exercise_type(None).exercise_step(None))
    } else {
        delta
    }
}

/// Whether this turn's memories are extracted: memory is writable and the
/// turn was not a crisis.
pub fn should_persist_memory(state: &TherapyState, ctx: &WorkflowContext) -> bool {
    ctx.memory_mode == MemoryMode::ReadWrite && state.routing.route != ROUTE_CRISIS
}

/// `extract_facts` (runs in parallel with [`extract_procedural_node`]):
/// stores the user's "my ..." sentences as semantic facts. Writes only its
/// own diagnostics key.
pub fn extract_facts_node(state: &TherapyState, ctx: &WorkflowContext) -> TherapyStateDelta {
    let facts: Vec<String> = sentences(&state.message)
        .filter(|sentence| words(sentence).iter().any(|word| word == "my"))
        .collect();
    let elapsed = 12.0 + 2.0 * facts.len() as f64;
    ctx.memory_store.lock().facts.extend(facts);
    TherapyState::delta().diagnostics(Diagnostics::delta().extract_facts_ms(elapsed))
}

/// `extract_procedural` (runs in parallel with [`extract_facts_node`]):
/// stores style requests ("please keep ...", "don't bring up ...") as
/// procedural rules, and "don't bring up" as the recall toggle. Writes only
/// its own diagnostics key.
pub fn extract_procedural_node(state: &TherapyState, ctx: &WorkflowContext) -> TherapyStateDelta {
    let mut store = ctx.memory_store.lock();
    let mut found = 0;
    for sentence in sentences(&state.message) {
        let lower = sentence.to_lowercase();
        if lower.starts_with("please keep") {
            store.rules.push(sentence);
            found += 1;
        } else if lower.starts_with("don't bring up") {
            store.recall = Some(false);
            store.rules.push(sentence);
            found += 1;
        }
    }
    let elapsed = 9.0 + 2.0 * f64::from(found);
    TherapyState::delta().diagnostics(Diagnostics::delta().extract_procedural_ms(elapsed))
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn sentences(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split_inclusive(['.', '!', '?'])
        .map(str::trim)
        .filter(|sentence| !sentence.is_empty())
        .map(str::to_owned)
}

// ---------------------------------------------------------------------------
// The graph.
// ---------------------------------------------------------------------------

/// The node name of [`build_initial_state`] in [`Step`]s.
pub const BUILD_INITIAL_STATE: &str = "build_initial_state";
/// The node name of [`load_memory_node`].
pub const LOAD_MEMORY: &str = "load_memory";
/// The node name of [`crisis_gate_node`].
pub const CRISIS_GATE: &str = "crisis_gate";
/// The node name of [`select_mode_node`].
pub const SELECT_MODE: &str = "select_mode";
/// The node name of [`therapeutic_response_node`].
pub const THERAPEUTIC_RESPONSE: &str = "therapeutic_response";
/// The node name of [`crisis_response_node`].
pub const CRISIS_RESPONSE: &str = "crisis_response";
/// The node name of [`finalize_turn_node`].
pub const FINALIZE_TURN: &str = "finalize_turn";
/// The node name of [`extract_facts_node`].
pub const EXTRACT_FACTS: &str = "extract_facts";
/// The node name of [`extract_procedural_node`].
pub const EXTRACT_PROCEDURAL: &str = "extract_procedural";

/// One superstep: the nodes that ran in it and their deltas, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The nodes, with the delta each returned.
    pub writes: Vec<(&'static str, TherapyStateDelta)>,
}

/// One finished turn.
#[derive(Debug, Clone)]
pub struct Turn {
    /// The state after the turn (what the checkpointer saves).
    pub state: TherapyState,
    /// What the caller sees.
    pub output: AgentOutput,
    /// The supersteps, in order.
    pub steps: Vec<Step>,
}

/// The compiled graph: the nodes above, wired as the document describes.
#[derive(Debug, Default)]
pub struct TherapyAgent {
    /// The runtime dependencies.
    pub context: WorkflowContext,
}

impl TherapyAgent {
    /// A graph over this context.
    pub fn new(context: WorkflowContext) -> Self {
        Self { context }
    }

    /// Runs one turn: resets the turn-scoped fields of the checkpoint (or
    /// starts fresh), applies [`build_initial_state`], then
    /// load_memory -> crisis_gate -> (crisis_response | select_mode ->
    /// therapeutic_response) -> finalize_turn -> (extract_facts ||
    /// extract_procedural), the last two in one superstep.
    ///
    /// # Errors
    ///
    /// When a superstep's deltas conflict; the state is then as before that
    /// superstep.
    pub fn run_turn(
        &self,
        checkpoint: Option<TherapyState>,
        input: &AgentInput,
    ) -> Result<Turn, StateError> {
        let ctx = &self.context;
        let initial = build_initial_state(input, checkpoint.as_ref());
        let mut state = checkpoint.unwrap_or_default();
        state.begin_turn();
        let mut steps = Vec::new();
        run(&mut state, &mut steps, vec![(BUILD_INITIAL_STATE, initial)])?;

        let delta = load_memory_node(&state, ctx);
        run(&mut state, &mut steps, vec![(LOAD_MEMORY, delta)])?;
        let delta = crisis_gate_node(&state, ctx);
        run(&mut state, &mut steps, vec![(CRISIS_GATE, delta)])?;
        if route_after_crisis_gate(&state) == CRISIS_RESPONSE {
            let delta = crisis_response_node(&state);
            run(&mut state, &mut steps, vec![(CRISIS_RESPONSE, delta)])?;
        } else {
            let delta = select_mode_node(&state, ctx);
            run(&mut state, &mut steps, vec![(SELECT_MODE, delta)])?;
            let delta = therapeutic_response_node(&state);
            run(&mut state, &mut steps, vec![(THERAPEUTIC_RESPONSE, delta)])?;
        }
        let delta = finalize_turn_node(&state);
        run(&mut state, &mut steps, vec![(FINALIZE_TURN, delta)])?;

        let persist = should_persist_memory(&state, ctx);
        if persist {
            // Both read the same state and write in the same superstep.
            let facts = extract_facts_node(&state, ctx);
            let procedural = extract_procedural_node(&state, ctx);
            run(
                &mut state,
                &mut steps,
                vec![(EXTRACT_FACTS, facts), (EXTRACT_PROCEDURAL, procedural)],
            )?;
        }
        let output = state_to_output(&state, persist);
        Ok(Turn {
            state,
            output,
            steps,
        })
    }
}

fn run(
    state: &mut TherapyState,
    steps: &mut Vec<Step>,
    writes: Vec<(&'static str, TherapyStateDelta)>,
) -> Result<(), StateError> {
    state.apply_all(writes.iter().map(|(_, delta)| delta.clone()))?;
    steps.push(Step { writes });
    Ok(())
}

/// A checkpointer stand-in: one JSON snapshot per `session_id`, written
/// with [`State::to_json`] and read back with [`State::from_json`].
///
/// Kept to show what a checkpoint holds (and for the tests that compare
/// with it). The graph's checkpointer is a [`state_store::Store`]
/// ([`graph::compile`]): one thread per session, each superstep one logged
/// step (`examples/therapy.rs`).
#[derive(Debug, Default, Clone)]
pub struct Checkpointer {
    threads: BTreeMap<String, serde_json::Value>,
}

impl Checkpointer {
    /// Saves the state of a thread.
    ///
    /// # Errors
    ///
    /// A field with no JSON form ([`StateError::Serialize`]); nothing is
    /// saved then.
    pub fn put(&mut self, session_id: &str, state: &TherapyState) -> Result<(), StateError> {
        self.threads.insert(session_id.to_owned(), state.to_json()?);
        Ok(())
    }

    /// The saved state of a thread, if any.
    ///
    /// # Errors
    ///
    /// When the snapshot does not decode as a [`TherapyState`].
    pub fn get(&self, session_id: &str) -> Result<Option<TherapyState>, StateError> {
        self.threads
            .get(session_id)
            .map(|snapshot| TherapyState::from_json(snapshot.clone()))
            .transpose()
    }

    /// Runs one turn of `input.session_id`'s thread on `agent`: restores its
    /// checkpoint, runs the turn, saves the result. Without a session id the
    /// turn is one-shot.
    ///
    /// # Errors
    ///
    /// As [`TherapyAgent::run_turn`] and [`Checkpointer::get`].
    pub fn run_turn(
        &mut self,
        agent: &TherapyAgent,
        input: &AgentInput,
    ) -> Result<Turn, StateError> {
        let Some(session) = input.session_id.as_deref() else {
            return agent.run_turn(None, input);
        };
        let saved = self.get(session)?;
        let turn = agent.run_turn(saved, input)?;
        self.put(session, &turn.state)?;
        Ok(turn)
    }
}

/// The deltas of one superstep as one, as [`State::apply_all`] sees them.
///
/// # Errors
///
/// When two of them write the same last-write-wins field.
pub fn merged(step: &Step) -> Result<TherapyStateDelta, StateError> {
    step.writes
        .iter()
        .map(|(_, delta)| delta.clone())
        .try_fold(TherapyState::delta(), Delta::merge)
}

/// The walk-through's context (`examples/therapy.rs`), shared with the
/// tests: a user with one stored fact and one earlier session; the LLM is
/// on.
pub fn demo_context() -> WorkflowContext {
    WorkflowContext {
        llm_client: Some(LlmClient),
        memory_store: MemoryStore::seeded(
            &["I have a sister named Sarah."],
            vec![WorkingMemoryEntry::episodic(
                "talked about loss after my dog died.",
                &["grief"],
                false,
            )],
        ),
        memory_mode: MemoryMode::ReadWrite,
        ..WorkflowContext::default()
    }
}
