//! `state-server`: serves a store's threads over HTTP (the library's
//! untyped router: threads, history and the live stream of updates; the
//! state needs a program that knows the state type).
//!
//! ```text
//! state-server agent.db
//! state-server --postgres postgres://user@host/db --bind 127.0.0.1:9000
//! ```

mod report;

use report::chain;
use state_server::Server;
use state_store::Store;
use std::error::Error;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

const DEFAULT_BIND: &str = "127.0.0.1:8123";
const TOKEN_ENV: &str = "STATE_SERVER_TOKEN";

const USAGE: &str = "\
Serve a state-store's threads over HTTP: the inspector at / (every thread,
then each thread step by step, live), and GET /threads,
/threads/{id}/history, /threads/{id}/stream (server-sent events, live;
?mode=updates) as JSON (the state at a step needs your state type: mount
state_server::router::<YourState>(store) in your own program for it).

Usage: state-server [OPTIONS] <SQLITE_FILE>
       state-server [OPTIONS] --postgres <URL>

Options:
  --bind <ADDR>     the address to listen on [default: 127.0.0.1:8123];
                    anything but a loopback address exposes the store
  --token <TOKEN>   require `Authorization: Bearer <TOKEN>` on every request
                    (or set STATE_SERVER_TOKEN, which `ps` does not show)
  --postgres <URL>  serve a PostgreSQL store instead of a SQLite file
  --allow-writes    let the inspector fork threads (read-only otherwise)
  -h, --help        print this help
  -V, --version     print the version";

/// What to serve, and how.
#[derive(Debug, PartialEq)]
struct Options {
    bind: SocketAddr,
    token: Option<String>,
    source: Source,
    allow_writes: bool,
}

#[derive(Debug, PartialEq)]
enum Source {
    Sqlite(PathBuf),
    Postgres(String),
}

/// What the command line asks for.
#[derive(Debug, PartialEq)]
enum Command {
    Serve(Options),
    Help,
    Version,
}

/// Reads the flags (`--flag value` or `--flag=value`); `env_token` is
/// `STATE_SERVER_TOKEN`, used when `--token` is not given.
fn parse(args: Vec<OsString>, env_token: Option<OsString>) -> Result<Command, String> {
    let mut bind = None;
    let mut token = None;
    let mut postgres = None;
    let mut sqlite = None;
    let mut allow_writes = false;
    let mut args = args.into_iter();
    let mut flags_done = false;
    while let Some(arg) = args.next() {
        let arg = arg
            .into_string()
            .map_err(|arg| format!("argument {arg:?} is not valid UTF-8"))?;
        if flags_done || !arg.starts_with('-') || arg == "-" {
            if sqlite.is_some() {
                return Err(format!(
                    "unexpected argument {arg:?}: give one SQLite file (or --postgres URL)"
                ));
            }
            sqlite = Some(PathBuf::from(arg));
            continue;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_owned(), Some(value.to_owned()))
            }
            _ => (arg, None),
        };
        let slot = match flag.as_str() {
            "--" => {
                flags_done = true;
                continue;
            }
            "-h" | "--help" => return Ok(Command::Help),
            "-V" | "--version" => return Ok(Command::Version),
            "--allow-writes" if inline.is_none() => {
                allow_writes = true;
                continue;
            }
            "--allow-writes" => return Err("--allow-writes takes no value".to_owned()),
            "--bind" => &mut bind,
            "--token" => &mut token,
            "--postgres" => &mut postgres,
            _ => return Err(format!("unknown flag {flag:?}")),
        };
        let value = match inline {
            Some(value) => value,
            None => args
                .next()
                .ok_or_else(|| format!("{flag} needs a value"))?
                .into_string()
                .map_err(|value| format!("{flag}: {value:?} is not valid UTF-8"))?,
        };
        if slot.replace(value).is_some() {
            return Err(format!("{flag} is given twice"));
        }
    }

    let bind = bind.as_deref().unwrap_or(DEFAULT_BIND);
    let bind: SocketAddr = bind.parse().map_err(|_| {
        format!("--bind {bind:?}: expected IP:PORT, such as 127.0.0.1:8123 or [::1]:8123")
    })?;
    let token = match token {
        Some(token) => Some(token),
        None => match env_token {
            Some(token) => Some(
                token
                    .into_string()
                    .map_err(|_| format!("{TOKEN_ENV} is not valid UTF-8"))?,
            ),
            None => None,
        },
    };
    if let Some(token) = &token
        && (token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()))
    {
        return Err(
            "the token must be non-empty visible ASCII (no spaces or control characters)"
                .to_owned(),
        );
    }
    let source = match (sqlite, postgres) {
        (Some(path), None) => Source::Sqlite(path),
        (None, Some(url)) => Source::Postgres(url),
        (Some(_), Some(_)) => {
            return Err("give a SQLite file or --postgres URL, not both".to_owned());
        }
        (None, None) => {
            return Err("nothing to serve: give a SQLite file or --postgres URL".to_owned());
        }
    };
    Ok(Command::Serve(Options {
        bind,
        token,
        source,
        allow_writes,
    }))
}

#[tokio::main]
async fn main() -> ExitCode {
    let env_token = std::env::var_os(TOKEN_ENV).filter(|token| !token.is_empty());
    let options = match parse(std::env::args_os().skip(1).collect(), env_token) {
        Ok(Command::Serve(options)) => options,
        Ok(Command::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(Command::Version) => {
            println!("state-server {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("state-server: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match serve(options).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("state-server: {}", chain(&*error));
            ExitCode::FAILURE
        }
    }
}

async fn serve(options: Options) -> Result<(), Box<dyn Error>> {
    let (store, what) = open(&options.source).await?;
    let mut server = Server::new(store).allow_writes(options.allow_writes);
    if let Some(token) = &options.token {
        server = server.token(token.as_str());
    }
    let listener = tokio::net::TcpListener::bind(options.bind)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", options.bind))?;
    let addr = listener.local_addr()?;
    if !addr.ip().is_loopback() && options.token.is_none() {
        eprintln!(
            "state-server: warning: {addr} is not a loopback address and no token is set: \
             anyone who can reach it can read every thread (set --token or {TOKEN_ENV})"
        );
    }
    let guarded = if options.token.is_some() {
        "bearer token required"
    } else {
        "no token"
    };
    let writes = if options.allow_writes {
        "writes allowed"
    } else {
        "read-only"
    };
    println!("state-server: serving {what} on http://{addr} ({guarded}, {writes})");
    // TCP_NODELAY: a streamed answer (a wait, an SSE event) is written in
    // small pieces after its headers; with Nagle's algorithm each piece
    // waits for the client's delayed ACK, ~40 ms a response on a kept-alive
    // connection (BENCHMARKS.md section 16).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, server.untyped_router())
        .with_graceful_shutdown(stop_signal())
        .await?;
    Ok(())
}

/// Opens the store, and says what it is (without credentials).
async fn open(source: &Source) -> Result<(Store, String), Box<dyn Error>> {
    match source {
        Source::Sqlite(path) => {
            // Serving a typo would create an empty database: refuse.
            if !path.is_file() {
                return Err(format!(
                    "{}: no such file (state-server serves an existing SQLite store)",
                    path.display()
                )
                .into());
            }
            open_sqlite(path)
                .await
                .map(|store| (store, format!("SQLite file {}", path.display())))
        }
        Source::Postgres(url) => open_postgres(url)
            .await
            .map(|store| (store, format!("PostgreSQL at {}", host_of(url)))),
    }
}

#[cfg(feature = "sqlite")]
async fn open_sqlite(path: &std::path::Path) -> Result<Store, Box<dyn Error>> {
    Ok(Store::sqlite(path).await?)
}

#[cfg(not(feature = "sqlite"))]
async fn open_sqlite(_: &std::path::Path) -> Result<Store, Box<dyn Error>> {
    Err("this build has no SQLite support: build state-server with the `sqlite` feature".into())
}

#[cfg(feature = "postgres")]
async fn open_postgres(url: &str) -> Result<Store, Box<dyn Error>> {
    Ok(Store::postgres(url).await?)
}

#[cfg(not(feature = "postgres"))]
async fn open_postgres(_: &str) -> Result<Store, Box<dyn Error>> {
    Err(
        "this build has no PostgreSQL support: build state-server with the `postgres` feature"
            .into(),
    )
}

/// `host[:port]` of a connection URL, without credentials.
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, rest)| rest);
    rest.split(['/', '?']).next().unwrap_or(rest)
}

/// Ctrl-C, or SIGTERM on Unix: stop taking connections, finish the open
/// requests.
async fn stop_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    fn serve(list: &[&str]) -> Options {
        match parse(args(list), None) {
            Ok(Command::Serve(options)) => options,
            other => panic!("{list:?}: {other:?}"),
        }
    }

    fn refused(list: &[&str]) -> String {
        parse(args(list), None).expect_err(&format!("{list:?} should be refused"))
    }

    #[test]
    fn the_default_address_is_loopback() {
        let options = serve(&["agent.db"]);
        assert_eq!(options.bind, "127.0.0.1:8123".parse().unwrap());
        assert!(options.bind.ip().is_loopback());
        assert_eq!(options.source, Source::Sqlite("agent.db".into()));
        assert_eq!(options.token, None);
        assert!(!options.allow_writes, "read-only unless told");
        assert!(serve(&["--allow-writes", "agent.db"]).allow_writes);
    }

    #[test]
    fn flags_take_a_value_after_a_space_or_an_equals_sign() {
        let options = serve(&[
            "--bind",
            "[::1]:9000",
            "--token=abc",
            "--postgres",
            "postgres://h/db",
        ]);
        assert_eq!(options.bind, "[::1]:9000".parse().unwrap());
        assert_eq!(options.token.as_deref(), Some("abc"));
        assert_eq!(options.source, Source::Postgres("postgres://h/db".into()));
        let options = serve(&["--", "--odd-name.db"]);
        assert_eq!(options.source, Source::Sqlite("--odd-name.db".into()));
    }

    #[test]
    fn the_token_may_come_from_the_environment() {
        let Ok(Command::Serve(options)) = parse(args(&["a.db"]), Some("env-token".into())) else {
            panic!()
        };
        assert_eq!(options.token.as_deref(), Some("env-token"));
        let Ok(Command::Serve(options)) =
            parse(args(&["a.db", "--token", "flag"]), Some("env".into()))
        else {
            panic!()
        };
        assert_eq!(options.token.as_deref(), Some("flag"));
    }

    #[test]
    fn bad_command_lines_are_refused_with_a_reason() {
        assert_eq!(
            refused(&["--verbose", "a.db"]),
            "unknown flag \"--verbose\""
        );
        assert_eq!(refused(&["a.db", "--bind"]), "--bind needs a value");
        assert!(refused(&["a.db", "--bind", "0.0.0.0"]).contains("expected IP:PORT"));
        assert!(refused(&["a.db", "--bind", "localhost:80"]).contains("expected IP:PORT"));
        assert_eq!(
            refused(&["a.db", "b.db"]).split(':').next(),
            Some("unexpected argument \"b.db\"")
        );
        assert!(refused(&["a.db", "--postgres", "postgres://h/db"]).contains("not both"));
        assert!(refused(&[]).starts_with("nothing to serve"));
        assert_eq!(
            refused(&["a.db", "--token", "a", "--token", "b"]),
            "--token is given twice"
        );
        assert!(refused(&["a.db", "--token", ""]).contains("non-empty"));
        assert!(refused(&["a.db", "--token", "a b"]).contains("visible ASCII"));
        assert_eq!(
            refused(&["a.db", "--allow-writes=yes"]),
            "--allow-writes takes no value"
        );
    }

    #[test]
    fn help_and_version() {
        assert_eq!(parse(args(&["--help"]), None), Ok(Command::Help));
        assert_eq!(parse(args(&["a.db", "-V"]), None), Ok(Command::Version));
    }

    #[test]
    fn urls_are_shown_without_credentials() {
        assert_eq!(host_of("postgres://u:secret@db:5432/app?x=1"), "db:5432");
        assert_eq!(host_of("postgres://localhost/app"), "localhost");
    }
}
