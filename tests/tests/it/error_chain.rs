//! A custom reducer's own error is found the standard way: walking
//! `source()` with `downcast_ref`, as `anyhow` and error reporters do,
//! through the state layer, the store and the graph runner.

use state_core::{AgentState, State, StateError};
use std::error::Error;

#[derive(Debug, PartialEq, thiserror::Error)]
#[error("spending {wanted} would overdraw the budget of {left}")]
struct BudgetError {
    wanted: u32,
    left: u32,
}

fn spend(budget: &mut u32, cost: u32) -> Result<(), BudgetError> {
    *budget = budget.checked_sub(cost).ok_or(BudgetError {
        wanted: cost,
        left: *budget,
    })?;
    Ok(())
}

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Wallet {
    #[reducer(with = spend)]
    #[default(10)]
    budget: u32,
}

/// The first error of type `E` in `error`'s chain, itself included.
fn find<'a, E: Error + 'static>(error: &'a (dyn Error + 'static)) -> Option<&'a E> {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(found) = e.downcast_ref::<E>() {
            return Some(found);
        }
        next = e.source();
    }
    None
}

fn overdraw() -> StateError {
    let mut wallet = Wallet::default();
    wallet.apply(Wallet::delta().budget(25u32)).unwrap_err()
}

#[test]
fn a_plain_source_walk_finds_the_reducers_error() {
    let err = overdraw();
    let found = find::<BudgetError>(&err).expect("BudgetError in the chain");
    assert_eq!(
        *found,
        BudgetError {
            wanted: 25,
            left: 10
        }
    );
    // Printed once: the state error, then the reducer's own message.
    let mut chain = Vec::new();
    let mut next: Option<&(dyn Error + 'static)> = Some(&err);
    while let Some(e) = next {
        chain.push(e.to_string());
        next = e.source();
    }
    assert_eq!(
        chain,
        [
            "field \"budget\": the reducer refused the update",
            "spending 25 would overdraw the budget of 10",
        ]
    );
}

#[test]
fn anyhow_finds_it_and_prints_the_chain_once() {
    let err = anyhow::Error::new(overdraw());
    assert!(err.chain().any(|e| e.is::<BudgetError>()));
    assert_eq!(
        err.chain().find_map(|e| e.downcast_ref::<BudgetError>()),
        Some(&BudgetError {
            wanted: 25,
            left: 10
        })
    );
    assert_eq!(
        format!("{err:#}"),
        "field \"budget\": the reducer refused the update: spending 25 would overdraw the budget of 10"
    );
}

#[tokio::test]
async fn through_the_store_and_the_graph_runner_too() {
    use state_graph::{END, START, StateGraph};
    let store = state_store::Store::memory();
    let mut thread = store.thread::<Wallet>("w").await.unwrap();
    let err = thread
        .apply(Wallet::delta().budget(25u32))
        .await
        .unwrap_err();
    assert!(find::<BudgetError>(&err).is_some(), "{err:?}");

    let mut g = StateGraph::<Wallet>::new();
    g.add_node("shop", |_: &Wallet| Wallet::delta().budget(25u32));
    g.add_edge(START, "shop");
    g.add_edge("shop", END);
    let app = g.compile().unwrap().with_store(store);
    let err = app.invoke_thread("g", Wallet::delta()).await.unwrap_err();
    assert_eq!(find::<BudgetError>(&err).map(|e| e.wanted), Some(25));
}
