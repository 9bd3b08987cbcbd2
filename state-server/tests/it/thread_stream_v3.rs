//! The v3 thread protocol (`client.threads.stream`): LangGraph's Python
//! client drives `tests/sdk/thread_stream_v3.py` against our server on
//! each backend.

use crate::agent_sdk::{Chat, run_script, server, sqlite_store};
use crate::support::serve;
use state_store::Store;

#[tokio::test]
async fn thread_stream_v3() {
    let addr = serve(server(Store::memory()).router::<Chat>()).await;
    run_script("thread_stream_v3.py", &format!("http://{addr}")).await;
}

#[tokio::test]
async fn thread_stream_v3_on_sqlite() {
    let (store, _dir) = sqlite_store().await;
    let addr = serve(server(store).router::<Chat>()).await;
    run_script("thread_stream_v3.py", &format!("http://{addr}")).await;
}

#[tokio::test]
async fn thread_stream_v3_on_postgres() {
    let db = crate::support::postgres::shared().fresh_database("sdk_v3");
    let store = Store::postgres(&db.url).await.expect("a PostgreSQL store");
    let addr = serve(server(store).router::<Chat>()).await;
    run_script("thread_stream_v3.py", &format!("http://{addr}")).await;
}
