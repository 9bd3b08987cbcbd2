//! Struct attributes: `#[state(crate = "...")]` for crates that re-export
//! state-core, `#[state(delta = "Name")]`, several at once; and the
//! visibility of the generated delta.

/// A framework crate re-exporting state-core under its own path.
mod framework {
    pub use state_core;
}

mod via_reexport {
    use super::framework::state_core::{AgentState, Delta, State};

    #[derive(AgentState, Debug, Clone, PartialEq)]
    #[state(crate = "super::framework::state_core")]
    pub struct Reexported {
        #[reducer(append)]
        pub log: Vec<String>,
        #[reducer(merge)]
        pub meta: std::collections::BTreeMap<String, i32>,
        #[scope(turn)]
        #[default("start")]
        pub next: String,
    }

    #[test]
    fn crate_path_through_a_reexport() {
        let mut state = Reexported::default();
        let delta = Reexported::delta().log(vec!["a".to_owned()]).next("x");
        assert_eq!(delta.fields(), ["log", "next"]);
        state.apply(delta).unwrap();
        state
            .apply_all([
                Reexported::delta().log(vec!["b".to_owned()]),
                Reexported::delta()
                    .overwrite_meta(std::collections::BTreeMap::from([("k".to_owned(), 1)])),
            ])
            .unwrap();
        assert_eq!(state.log, ["a", "b"]);
        assert_eq!(state.meta.get("k"), Some(&1));
        state.begin_turn();
        assert_eq!(state.next, "start");
        let json = serde_json::to_value(Reexported::delta().next("y")).unwrap();
        let back: ReexportedDelta = serde_json::from_value(json).unwrap();
        assert_eq!(back, Reexported::delta().next("y"));
    }
}

/// The path form from the crate root: `crate::...` (this file is a module
/// of the test binary, so the path goes through it).
mod via_crate_path {
    use state_core::{AgentState, State};

    #[derive(AgentState, Debug, Clone, PartialEq)]
    #[state(crate = "crate::derive_struct_attrs::framework::state_core")]
    pub struct FromRoot {
        pub value: u32,
    }

    #[test]
    fn crate_path_from_the_crate_root() {
        let mut state = FromRoot::default();
        state.apply(FromRoot::delta().value(3u32)).unwrap();
        assert_eq!(state.value, 3);
    }
}

/// An absolute path to the real crate, as written by hand.
mod via_absolute_path {
    use state_core::{AgentState, State};

    #[derive(AgentState, Debug, Clone, PartialEq)]
    #[state(crate = "::state_core")]
    pub struct Absolute {
        pub value: u32,
    }

    #[test]
    fn crate_path_absolute() {
        let mut state = Absolute::default();
        state.apply(Absolute::delta().value(1u32)).unwrap();
        assert_eq!(state.value, 1);
    }
}

mod renamed_delta {
    use state_core::{AgentState, Delta, State};

    #[derive(AgentState, Debug, Clone, PartialEq)]
    #[state(delta = "Update")]
    pub struct Execution {
        pub task: String,
        #[reducer(append)]
        pub trace: Vec<String>,
    }

    #[test]
    fn the_delta_takes_the_given_name() {
        let update: Update = Execution::delta().task("plan").trace(vec!["t".to_owned()]);
        // The associated type is the renamed struct.
        let same: <Execution as State>::Delta = update.clone();
        assert_eq!(same.fields(), ["task", "trace"]);
        let mut state = Execution::default();
        state.apply(update).unwrap();
        assert_eq!(state.task, "plan");
        let back: Update = serde_json::from_value(serde_json::json!({"trace": ["u"]})).unwrap();
        assert_eq!(back, Execution::delta().trace(vec!["u".to_owned()]));
    }
}

mod all_struct_attributes {
    use super::framework::state_core::{AgentState, State};

    #[derive(AgentState, Debug, Clone, PartialEq)]
    #[state(crate = "super::framework::state_core", scope = turn, delta = "Patch")]
    pub struct Combined {
        #[default(1)]
        pub step: u32,
        #[scope(persistent)]
        #[reducer(append)]
        pub history: Vec<u32>,
    }

    #[test]
    fn crate_scope_and_delta_together() {
        let mut state = Combined::default();
        let patch: Patch = Combined::delta().step(5u32).history(vec![5]);
        state.apply(patch).unwrap();
        state.begin_turn();
        assert_eq!(state.step, 1);
        assert_eq!(state.history, [5]);
    }
}

/// Visibility: a `pub(crate)` state gets a delta usable in the whole crate.
mod internal {
    use state_core::AgentState;

    #[derive(AgentState, Debug, Clone, PartialEq)]
    pub(crate) struct Hidden {
        pub(crate) count: u32,
        #[reducer(append)]
        pub(crate) log: Vec<String>,
    }

    pub(super) mod deeper {
        use state_core::AgentState;

        #[derive(AgentState, Debug)]
        pub(in crate::derive_struct_attrs::internal) struct Scoped {
            pub(in crate::derive_struct_attrs::internal) value: u8,
        }

        #[derive(AgentState, Debug)]
        pub(super) struct SuperVisible {
            pub(super) value: u8,
        }
    }

    /// `pub(in crate::derive_struct_attrs::internal)` reaches here, the
    /// parent of `deeper`.
    pub(crate) fn use_scoped() -> u8 {
        use state_core::State;
        let mut state = deeper::Scoped::default();
        let delta: deeper::ScopedDelta = deeper::Scoped::delta().value(4u8);
        state.apply(delta).unwrap();
        let mut other = deeper::SuperVisible::default();
        let delta: deeper::SuperVisibleDelta = deeper::SuperVisible::delta().value(1u8);
        other.apply(delta).unwrap();
        state.value + other.value
    }
}

#[test]
fn a_pub_crate_state_has_a_delta_usable_across_the_crate() {
    use state_core::{Delta, State};
    let delta: internal::HiddenDelta = internal::Hidden::delta()
        .count(2u32)
        .overwrite_log(vec!["x".to_owned()]);
    assert_eq!(delta.fields(), ["count", "log"]);
    let mut state = internal::Hidden::default();
    state.apply(delta).unwrap();
    assert_eq!((state.count, state.log.len()), (2, 1));
    assert_eq!(internal::use_scoped(), 5);
}
