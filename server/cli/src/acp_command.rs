//! `lode acp`: lode as an Agent Client Protocol agent, on stdio (what editors spawn) or, with
//! `--http`, over the streamable HTTP / WebSocket transport for clients that connect to a
//! long-running lode. Opens the agent of the starting workspace, when it starts in one (see
//! [`Start`]), and hands `lode_acp` the set of workspaces it may grow into (one per session
//! `cwd`); stdout is the protocol.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use lode_acp::{
    AgentBackend, BackendError, ConnectionOptions, HttpOptions, OpenWorkspace, WorkspaceOpener,
    Workspaces,
};

use crate::commands::WorkspaceArgs;
use crate::render::say;

/// Options of `lode acp`.
#[derive(Debug, Args)]
pub struct AcpArgs {
    /// Serve HTTP + SSE and WebSocket on this address instead of stdio (default 127.0.0.1:0, a
    /// free port; the bound address is printed on stderr).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:0")]
    pub http: Option<SocketAddr>,
    /// Bearer token HTTP clients must send (required on a non-loopback address). Without it,
    /// lode uses the token it keeps in $XDG_RUNTIME_DIR/lode/acp-token (or else
    /// <config dir>/lode/acp-token), made on first start.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "LODE_ACP_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
    /// Print the bearer token on stderr once at start (never on stdout).
    #[arg(long, requires = "http")]
    pub print_token: bool,
    /// Serve requests from this browser origin (scheme://host[:port], repeatable); requests
    /// carrying any other Origin header are refused.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    pub allow_origin: Vec<String>,
    /// Accept this name in the Host header besides the bound address (NAME or NAME:PORT,
    /// repeatable), e.g. behind a reverse proxy; other names are refused.
    #[arg(long, value_name = "HOST", requires = "http")]
    pub allow_host: Vec<String>,
    /// Do not watch the workspace for changes on disk (the index is then refreshed once, before
    /// the first turn, and by the agent's own edits).
    #[arg(long)]
    pub no_watch: bool,
}

pub fn run_acp(workspace: &WorkspaceArgs, args: AcpArgs) -> anyhow::Result<ExitCode> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let start = start_in(workspace, home.as_deref())?;
    let setup = crate::agent_cli::AgentSetup::from_args(workspace)?;
    // The starting workspace and its agent's options, when lode starts in one.
    let starting = match start {
        Start::Workspace(root) => {
            let mut options = setup.options_for(&root, workspace.index_dir.clone())?;
            // Without a provider lode still answers `initialize`, and each prompt says how to
            // add one.
            options.allow_no_provider = true;
            Some((root, options))
        }
        Start::Outside(why) => {
            tracing::info!(
                "{why}, so no workspace is opened now; each session opens the one its cwd names"
            );
            if workspace.index_dir.is_some() {
                tracing::warn!(
                    "--index-dir ($LODE_INDEX_DIR) is not used: it is the starting workspace's, \
                     and there is none (--root gives one)"
                );
            }
            None
        }
    };
    let start_root = starting.as_ref().map(|(root, _)| root.clone());
    // The token is settled before anything starts, so a bad token file stops lode at once.
    let http = match args.http {
        None => None,
        Some(addr) if !addr.ip().is_loopback() && args.token.is_none() => {
            return Err(lode_acp::TransportError::TokenRequired(addr).into());
        }
        Some(addr) => Some((addr, http_token(args.token.clone(), start_root.as_deref())?)),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("lode-acp")
        .build()
        .context("cannot start the async runtime")?;
    let outcome = runtime.block_on(async {
        let mut opener = Opener {
            setup,
            watch: !args.no_watch,
            models: Vec::new(),
        };
        let (workspaces, connection) = match starting {
            Some((root, options)) => {
                let agent =
                    lode_agent::Agent::open(&root, options).context("cannot open the agent")?;
                crate::agent_cli::announce_detected_provider(&agent);
                let connection = acp_settings(&agent.config().acp);
                if agent.models().is_empty() {
                    tracing::warn!(
                        "no LLM provider is configured; prompts are refused until one is \
                         (`lode config` shows where lode looks)"
                    );
                }
                let default = opener.serve(agent);
                let workspaces = Workspaces::new(opener, &root, default, home.as_deref());
                (workspaces, connection)
            }
            None => {
                // No workspace's file applies: the user's own configuration answers until a
                // session opens a workspace, which then layers its own file over it.
                let sources = lode_agent::config::ConfigSources::outside_workspace(
                    opener.setup.config_file(),
                );
                let mut loaded = lode_agent::config::Config::load_from(&sources)
                    .context("cannot read the configuration")?;
                // Zero-config models: the provider the environment offers when none is
                // configured (a workspace's agent detects again when it opens).
                if let Some(detected) = loaded.detect_provider(&|name| std::env::var(name).ok()) {
                    tracing::info!("{}", detected.notice());
                }
                opener.models = lode_agent::configured_models(&loaded)
                    .context("cannot use the configured LLM providers")?;
                let connection = acp_settings(&loaded.config.acp);
                if opener.models.is_empty() {
                    tracing::warn!(
                        "no LLM provider is configured outside the workspaces; prompts are \
                         refused until one is, but for a workspace whose own .lode/config.toml \
                         adds one (`lode config` shows where lode looks)"
                    );
                }
                (
                    Workspaces::without_default(opener, home.as_deref()),
                    connection,
                )
            }
        };
        let backend: Arc<dyn AgentBackend> = Arc::new(workspaces);
        match http {
            None => lode_acp::serve_stdio(backend, connection).await?,
            Some((addr, (token, token_given))) => {
                let options = HttpOptions {
                    token,
                    token_given,
                    allow_origins: args.allow_origin,
                    allow_hosts: args.allow_host,
                    connection,
                };
                let listener = lode_acp::bind_http(addr, &options).await?;
                let bound = listener
                    .local_addr()
                    .context("cannot read the bound address")?;
                if args.print_token {
                    say!("lode acp: bearer token: {}", options.token);
                }
                // `lode ask` in the starting workspace finds this server by its record, which
                // goes when lode exits (also on Ctrl-C and SIGTERM, handled below). Written
                // before the address is announced, so whoever waits for that finds it.
                let _record = start_root
                    .as_deref()
                    .and_then(|root| record_server(root, bound, &options.token));
                say!("lode acp: listening on http://{bound}/acp (WebSocket: ws://{bound}/acp)");
                tokio::select! {
                    served = lode_acp::serve_http(backend, listener, options) => served?,
                    () = termination() => {
                        tracing::info!("lode acp: stopping on a signal");
                    }
                }
            }
        }
        anyhow::Ok(())
    });
    // A read of stdin may still be parked on a blocking thread, and turns of a vanished client
    // are already cancelled: do not wait for either.
    runtime.shutdown_timeout(Duration::from_millis(200));
    outcome.map(|()| ExitCode::SUCCESS)
}

/// Where `lode acp` starts.
#[derive(Debug, PartialEq, Eq)]
enum Start {
    /// In the workspace at this root, opened at once: `--root`, else the project the current
    /// directory lies in.
    Workspace(PathBuf),
    /// In no workspace, for this reason: the current directory lies in no project, or is `/` or
    /// the home directory itself. Editors often start agents there and name the project in
    /// each session's `cwd`; opening the directory would index and watch everything below it
    /// (or fail, where lode cannot write) for a workspace no session can use.
    Outside(String),
}

/// Where `lode acp` starts (see [`Start`]). With `--root` as every command does; else in the
/// project the current directory lies in: its nearest ancestor marked with `.lode/` or `.git`
/// (the directory itself included), unless that is `/` or `home` itself.
fn start_in(workspace: &WorkspaceArgs, home: Option<&Path>) -> anyhow::Result<Start> {
    let root = crate::commands::resolve_root(workspace, None)?;
    if workspace.root.is_some() {
        return Ok(Start::Workspace(root));
    }
    let dir = std::env::current_dir().context("cannot read the current directory")?;
    Ok(start_at(&dir, root, home))
}

/// [`start_in`] without `--root`: `dir` is the current directory, `root` what root discovery
/// made of it.
fn start_at(dir: &Path, root: PathBuf, home: Option<&Path>) -> Start {
    let real = |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let canonical_root = real(&root);
    if canonical_root.parent().is_none() {
        return Start::Outside(format!(
            "{} is the root of the file system, too wide to be one workspace",
            dir.display()
        ));
    }
    if home.map(real).as_deref() == Some(canonical_root.as_path()) {
        return Start::Outside(format!(
            "{} is your home directory itself, too wide to be one workspace",
            dir.display()
        ));
    }
    match marked_root(dir) {
        Some(_) => Start::Workspace(root),
        None => Start::Outside(format!(
            "{} is in no project (no .lode/ or .git marks it or a folder above it)",
            dir.display()
        )),
    }
}

/// The root of the project `dir` lies in as the disk marks it: the nearest ancestor, `dir`
/// itself included, with `.lode/` or `.git`; `None` when nothing marks one.
fn marked_root(dir: &Path) -> Option<PathBuf> {
    let root = crate::root::discover_root(dir);
    // `discover_root` falls back to `dir` itself when no marker is found.
    let marked = root != dir || dir.join(".lode").is_dir() || dir.join(".git").exists();
    marked.then_some(root)
}

/// Opens the workspace a session's `cwd` names, as `lode acp` opens its own: an agent with the
/// same global flags (its index in `<root>/.lode/index`: `--index-dir` is the starting
/// workspace's), its own config layering and trust, and a watcher holding its lease.
struct Opener {
    setup: crate::agent_cli::AgentSetup,
    watch: bool,
    /// The models of the user's own configuration, when lode started in no workspace.
    models: Vec<lode_llm::ModelInfo>,
}

impl Opener {
    /// The agent as the sessions of its workspace see it, with the watcher that keeps its index
    /// current for them and, through the lease, lets query commands in a terminal skip their
    /// freshness check.
    fn serve(&self, agent: lode_agent::Agent) -> OpenWorkspace {
        // The cache caps of the editor's pushed diagnostics are the workspace's own `[acp.lsp]`.
        agent.limit_pushed_diagnostics(agent.config().acp.lsp.limits());
        let watcher = if self.watch {
            match crate::watch_command::start_watcher(
                agent.index().clone(),
                "lode acp",
                false,
                false,
            ) {
                Ok(watcher) => Some(watcher),
                Err(error) => {
                    tracing::warn!(%error, "not watching {}", agent.root().display());
                    None
                }
            }
        } else {
            None
        };
        OpenWorkspace {
            backend: Arc::new(agent),
            keep_alive: Box::new(watcher),
        }
    }
}

impl WorkspaceOpener for Opener {
    fn root_for(&self, dir: &Path) -> Option<PathBuf> {
        marked_root(dir)
    }

    fn open(&self, root: &Path) -> Result<OpenWorkspace, BackendError> {
        let refused = |error: String| {
            BackendError::Internal(format!(
                "cannot open the workspace {}: {error}",
                root.display()
            ))
        };
        let mut options = self
            .setup
            .options_for(root, None)
            .map_err(|error| refused(format!("{error:#}")))?;
        options.allow_no_provider = true;
        let agent =
            lode_agent::Agent::open(root, options).map_err(|error| refused(error.to_string()))?;
        tracing::info!("opened the workspace {}", root.display());
        crate::agent_cli::announce_detected_provider(&agent);
        Ok(self.serve(agent))
    }

    fn models(&self) -> Vec<lode_llm::ModelInfo> {
        self.models.clone()
    }
}

/// Writes the record `lode ask` finds this server by (`crate::acp_runtime`); a failure is
/// logged, not fatal: `lode ask --connect` still works.
fn record_server(
    root: &Path,
    bound: SocketAddr,
    token: &str,
) -> Option<crate::acp_runtime::RecordGuard> {
    let dir = crate::acp_runtime::runtime_dir()?;
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    match crate::acp_runtime::write_record(&dir, &root, bound, token) {
        Ok(guard) => Some(guard),
        Err(error) => {
            tracing::warn!("`lode ask` will not find this server without --connect: {error}");
            None
        }
    }
}

/// Resolves on SIGINT or SIGTERM, so that lode exits through its own clean-up.
async fn termination() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        // Without handlers the default (exit) applies; wait forever here.
        return std::future::pending().await;
    };
    tokio::select! {
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
    }
}

/// The bearer token of `lode acp --http`, and whether it was given: `--token` /
/// `$LODE_ACP_TOKEN`, else the one kept in the token file (made on first start), which must not
/// lie inside the starting workspace `root` (when lode starts in one).
fn http_token(given: Option<String>, root: Option<&Path>) -> anyhow::Result<(String, bool)> {
    if let Some(token) = given {
        anyhow::ensure!(
            !token.trim().is_empty(),
            "--token / $LODE_ACP_TOKEN is empty"
        );
        return Ok((token, true));
    }
    let path = lode_acp::token_file::default_token_path()
        .ok_or(lode_acp::token_file::TokenFileError::NoLocation)?;
    let (token, created) = lode_acp::token_file::load_or_create_token(&path, root)?;
    say!(
        "lode acp: bearer token {} {} (`lode ask` reads it; --print-token shows it)",
        if created { "saved in" } else { "read from" },
        path.display()
    );
    Ok((token, false))
}

/// The connection's options from the `[acp]` section (checked by the config loader).
fn acp_settings(acp: &lode_agent::config::AcpSection) -> ConnectionOptions {
    ConnectionOptions {
        idle_session_timeout: acp.idle_session_timeout(),
        // The transport sets it: `lode_acp::serve_http` marks its connections remote.
        remote: false,
        lsp: acp.lsp.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[acp]` read through the config loader, as `lode acp` reads it.
    fn parse(text: &str) -> ConnectionOptions {
        let config =
            lode_agent::config::Config::from_toml_str(text, Path::new("config.toml")).unwrap();
        acp_settings(&config.acp)
    }

    #[test]
    fn idle_session_timeout_defaults_reads_and_turns_off() {
        assert_eq!(
            parse("").idle_session_timeout,
            Some(Duration::from_secs(30 * 60))
        );
        assert_eq!(
            parse("[acp]\nidle_session_timeout_secs = 90").idle_session_timeout,
            Some(Duration::from_secs(90))
        );
        assert_eq!(
            parse("[acp]\nidle_session_timeout_secs = 0").idle_session_timeout,
            None
        );
    }

    #[test]
    fn lode_starts_in_a_project_and_outside_anything_else() {
        let temp = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(temp.path()).unwrap().join("home");
        let project = home.join("code/project");
        let notes = home.join("notes");
        std::fs::create_dir_all(project.join(".git")).unwrap();
        std::fs::create_dir_all(project.join("src")).unwrap();
        std::fs::create_dir_all(&notes).unwrap();
        let start = |dir: &Path| start_at(dir, crate::root::discover_root(dir), Some(&home));
        let outside = |dir: &Path| match start(dir) {
            Start::Outside(why) => why,
            other => panic!("{dir:?} should start outside any workspace, got {other:?}"),
        };
        // A project, from its root or from a folder inside it, is opened at once.
        assert_eq!(start(&project), Start::Workspace(project.clone()));
        assert_eq!(
            start(&project.join("src")),
            Start::Workspace(project.clone())
        );
        // A folder no marker claims is no project.
        assert!(outside(&notes).contains("is in no project"));
        // The home directory itself is too wide, marked or not; so is the file system's root.
        assert!(outside(&home).contains("your home directory itself"));
        std::fs::create_dir_all(home.join(".git")).unwrap();
        assert!(outside(&home).contains("your home directory itself"));
        assert!(outside(Path::new("/")).contains("the root of the file system"));
    }

    #[test]
    fn acp_lsp_settings_reach_the_connection() {
        let defaults = lode_acp::ext_lsp::LspSettings::default();
        assert_eq!(parse("[acp]").lsp, defaults);
        let set = parse(
            "[acp.lsp]\nenabled = false\ntimeout_ms = 250\nmax_diagnostics_per_file = 7\n\
             max_diagnostics_total = 70\nmax_files = 9",
        )
        .lsp;
        assert!(!set.enabled);
        assert_eq!(set.timeout(), Duration::from_millis(250));
        assert_eq!(
            (
                set.limits().per_file,
                set.limits().total,
                set.limits().files
            ),
            (7, 70, 9)
        );
    }
}
