//! `langgraph dev` with a `langgraph.json`, in Rust: the seed graphs (GAIA,
//! OHMind, the therapy agent, Alpha Berkeley, AgentFlow) and the
//! quickstart's ReAct agent served as LangGraph's Agent Server API on
//! 127.0.0.1:2024, so that LangGraph's clients talk to them unchanged:
//! `langgraph-sdk` (Python or JavaScript), `RemoteGraph`, LangGraph Studio,
//! Agent Chat UI. Run it with
//!
//! ```sh
//! cargo run --example agent_server                  # ./agent_server.db, port 2024
//! cargo run --example agent_server -- --memory --port 8123
//! ```
//!
//! It prints the URL and the Python that talks to it. The models are the
//! offline scripted ones unless the environment names a provider
//! (`OPENAI_API_KEY`, `OPENAI_BASE_URL` or `ANTHROPIC_API_KEY`, as the
//! `react_agent` example reads them). The graphs and the server are built
//! by `state_examples::agent_server` (which the tests serve too).
//!
//! The Python original: a `langgraph.json` beside the graphs' modules,
//! served with the LangGraph CLI, for comparison:
/*
{
  "dependencies": ["."],
  "graphs": {
    "agent": "./react_agent.py:agent",
    "gaia": "./gaia/graph.py:graph",
    "ohmind": "./ohmind/graph.py:app",
    "therapy": "./therapy/graph.py:graph",
    "alpha_berkeley": "./alpha_berkeley/graph.py:graph",
    "agentflow": "./agentflow/graph.py:app"
  },
  "env": ".env"
}

$ pip install -U "langgraph-cli[inmem]"
$ langgraph dev            # http://127.0.0.1:2024, Studio opened in the browser

# and, from Python:
from langgraph_sdk import get_client
client = get_client(url="http://127.0.0.1:2024")
thread = await client.threads.create()
print(await client.runs.wait(thread["thread_id"], "agent", input={"messages": [{"role": "user", "content": "what is the weather in sf"}]}))
*/

use state_examples::agent_server::{Options, PORT_VAR, banner, router};
use state_examples::langgraph::react_agent::{AgentModel, ModelEnv, choose_model};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

#[tokio::main]
async fn main() -> ExitCode {
    let env_port = std::env::var(PORT_VAR).ok();
    let options = match Options::parse(std::env::args().skip(1), env_port.as_deref()) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    match serve(options).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("agent_server: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(options: Options) -> Result<(), Box<dyn std::error::Error>> {
    let (model, which) = choose_model(&ModelEnv::from_env());
    // Offline, the agent's tokens come a little apart, as a provider's do,
    // so that a streamed run shows them arrive.
    let model = match model {
        AgentModel::Scripted(scripted) => {
            AgentModel::Scripted(scripted.delay(Duration::from_millis(40)))
        }
        other => other,
    };
    let store = options
        .store
        .open()
        .await
        .map_err(|e| format!("opening the store ({}): {e}", options.store.describe()))?;
    let app = router(store, model)?;
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, options.port));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("listening on {addr}: {e} (another port: --port N)"))?;
    let url = format!("http://{}", listener.local_addr()?);
    println!("{}", banner(&url, &options.store.describe()));
    println!("The agents' model: {which}");
    // Each answer as soon as it is written: without TCP_NODELAY a wait's
    // or a stream's last bytes sit ~40 ms in the kernel (Nagle's
    // algorithm against the client's delayed ACK).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            // Without a Ctrl-C handler there is nothing to wait for: serve on.
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        })
        .await?;
    Ok(())
}
