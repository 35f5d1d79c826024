//! The agent facade: the one door through which front ends (ACP, LSP code actions, `lode chat`,
//! `lode run`) open sessions and run turns.
//!
//! An [`Agent`] owns the configuration, the configured models, the shared code index, the session
//! store, the permission policy and the audit log of one workspace. It is cheap to clone and
//! `Send + Sync`: one value serves every session of a process. Turns run in `crate::turn`.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lode_index::{ScanOptions, Workspace, WorkspaceOptions};
use tokio_util::sync::CancellationToken;

use crate::audit::AuditLog;
use crate::config::{Config, ConfigError, LoadedConfig};
use crate::event::{AgentEvent, StopReason, ToolCallStart, ToolCallUpdate, ToolContent};
use crate::host::SessionHost;
use crate::mcp::McpServerConfig;
use crate::session::{
    AgentError, NamedProviders, SessionInfo, Shared, SlashCommand, UserInput, parse_mode,
};
use crate::store::{NewSession, SessionStore, StoreError, Visibility};
use lode_llm::{ContentPart, ModelInfo, Provider, Role};
use lode_policy::{Mode, PermissionPolicy, PermissionStore};
use lode_tools::ToolRegistry;

/// How to open an agent.
#[derive(Clone, Default)]
pub struct AgentOptions {
    /// `--config PATH` (see `Config::load` for the search order).
    pub config_file: Option<PathBuf>,
    /// Where the code index lives (default `<root>/.lode/index`).
    pub index_dir: Option<PathBuf>,
    pub scan: Option<ScanOptions>,
    /// Embeds chunks for hybrid search when the agent opens the index itself (`None`: lexical
    /// only). Ignored when `index` is given.
    pub embedder: Option<Arc<dyn lode_index::Embedder>>,
    /// Where vectors live when the agent opens the index itself (`None`: the embedded store).
    pub vector_store: Option<Arc<dyn lode_index::VectorStore>>,
    /// An index already open in this process (e.g. by the LSP server), shared instead of opened.
    pub index: Option<Arc<Workspace>>,
    /// Where sessions and the audit log live (default `<root>/.lode`).
    pub data_dir: Option<PathBuf>,
    /// The user's own state, outside the workspace: workspace trust, remembered "always"
    /// permission answers, skill trust (default `crate::trust::user_state_dir`). A repository
    /// cannot pre-seed any of it.
    pub state_dir: Option<PathBuf>,
    /// Compiler diagnostics fed back to the model after edits (see `lode_tools::diagnostics`).
    pub diagnostics: Option<Arc<dyn lode_tools::diagnostics::DiagnosticsSource>>,
    /// Type-resolved answers for `hover`, `definition` and `references` (see
    /// `lode_tools::navigation`); without one they answer from the index.
    pub navigation: Option<Arc<dyn lode_tools::navigation::NavigationSource>>,
    /// The program that confines commands (`lode`, which runs `lode sandbox-exec`). `None`:
    /// commands cannot be confined, so every command that runs workspace code asks first.
    pub sandbox_launcher: Option<PathBuf>,
    /// Opens even when no LLM provider is configured (`lode acp`, so that an editor can show
    /// the reason instead of a process that exited): [`Agent::models`] is then empty and a turn
    /// that needs a model fails with [`AgentError::NoProvider`], naming the fix. Without it,
    /// `open` fails with that configuration error.
    pub allow_no_provider: bool,
    /// Where zero-config detection reads its variables (`ANTHROPIC_API_KEY`, `OLLAMA_HOST`, …;
    /// see `lode_llm::detect`) when no provider is configured; `None`: the process
    /// environment. Tests give a fixed one so that the machine's keys and Ollama play no part.
    /// Providers' keys are looked up here first, then in the process environment.
    pub provider_env: Option<ProviderEnv>,
}

/// A lookup of environment variables by name.
pub type ProviderEnv = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// What outlives a reload of the configuration: the index, the stores, and what sessions hold.
struct Lasting {
    root: PathBuf,
    index: Arc<Workspace>,
    /// Whether the index must be brought up to date once after opening (not when it was given).
    needs_first_build: bool,
    /// Set when the first build has been started (`crate::indexing`).
    first_build: std::sync::OnceLock<()>,
    /// The sessions being shown the build's progress.
    progress_shown: Arc<crate::indexing::ProgressShown>,
    code_cache: Arc<crate::code_cache::CodeCache>,
    store: Arc<SessionStore>,
    audit: Arc<AuditLog>,
    tools: Arc<ToolRegistry>,
    diagnostics: Arc<dyn lode_tools::diagnostics::DiagnosticsSource>,
    pushed_diagnostics: Arc<lode_tools::pushed_diagnostics::PushedDiagnostics>,
    /// Sessions with a turn running, so a second prompt is refused instead of interleaved.
    running: Arc<Mutex<HashMap<String, CancellationToken>>>,
    mcp_servers: Arc<Mutex<HashMap<String, Vec<McpServerConfig>>>>,
    told_unconfined: Arc<Mutex<std::collections::HashSet<String>>>,
    /// `--config PATH`.
    config_file: Option<PathBuf>,
    /// The user's state folder (`crate::trust`).
    state_dir: Option<PathBuf>,
    sandbox_launcher: Option<PathBuf>,
    /// [`AgentOptions::allow_no_provider`].
    allow_no_provider: bool,
    /// [`AgentOptions::provider_env`].
    provider_env: Option<ProviderEnv>,
}

struct AgentInner {
    lasting: Lasting,
    /// The configuration-dependent state; replaced when the user trusts the workspace.
    current: parking_lot::RwLock<Arc<Shared>>,
    /// The workspace's untrusted settings are still to be asked about, once per process
    /// (`Agent::settle_workspace_trust`).
    trust_question_open: std::sync::atomic::AtomicBool,
    /// The user trusted the workspace for this process only ("allow once").
    trusted_for_process: std::sync::atomic::AtomicBool,
}

/// The agent of one workspace. Clone it freely.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<AgentInner>,
}

impl Agent {
    /// Loads the configuration, opens (or shares) the code index and the stores, and starts
    /// bringing the index up to date in the background.
    pub fn open(root: &Path, options: AgentOptions) -> Result<Agent, AgentError> {
        let root = std::fs::canonicalize(root)
            .map_err(|error| AgentError::Other(format!("workspace {}: {error}", root.display())))?;
        let state_dir = options
            .state_dir
            .clone()
            .or_else(crate::trust::user_state_dir);
        let (index, needs_refresh) = match options.index {
            Some(index) => (index, false),
            None => {
                let mut workspace_options = WorkspaceOptions::new(&root);
                workspace_options.index_dir = options.index_dir.clone();
                if let Some(scan) = options.scan.clone() {
                    workspace_options.scan = scan;
                }
                workspace_options.embedder = options.embedder.clone();
                workspace_options.vector_store = options.vector_store.clone();
                (Arc::new(Workspace::open(workspace_options)?), true)
            }
        };
        let data_dir = options.data_dir.unwrap_or_else(|| root.join(".lode"));
        std::fs::create_dir_all(&data_dir).map_err(|error| {
            AgentError::Other(format!("cannot create {}: {error}", data_dir.display()))
        })?;
        let store = Arc::new(SessionStore::open(&data_dir.join("agent.sqlite"))?);
        let pushed_diagnostics = Arc::new(lode_tools::pushed_diagnostics::PushedDiagnostics::new());
        let configured_diagnostics = options.diagnostics.is_some();
        let diagnostics: Arc<dyn lode_tools::diagnostics::DiagnosticsSource> =
            Arc::new(lode_tools::pushed_diagnostics::PushedFirst::new(
                pushed_diagnostics.clone(),
                options.diagnostics,
            ));
        // The `diagnostics` tool keeps its `cargo check` default unless a source is configured;
        // with one, it answers like the edits' diagnostics: the editor's pushed ones first.
        let tools = Arc::new(tools_with_sources(
            configured_diagnostics.then(|| diagnostics.clone()),
            options.navigation.clone(),
        ));
        let code_cache = Arc::new(crate::code_cache::CodeCache::new(index.index_dir()));
        let lasting = Lasting {
            root,
            index,
            needs_first_build: needs_refresh,
            first_build: std::sync::OnceLock::new(),
            progress_shown: Arc::default(),
            code_cache,
            store,
            audit: Arc::new(AuditLog::new(data_dir.join("audit.jsonl"))),
            tools,
            diagnostics,
            pushed_diagnostics,
            running: Arc::new(Mutex::new(HashMap::new())),
            mcp_servers: Arc::new(Mutex::new(HashMap::new())),
            told_unconfined: Arc::new(Mutex::new(std::collections::HashSet::new())),
            config_file: options.config_file,
            state_dir,
            sandbox_launcher: options.sandbox_launcher,
            allow_no_provider: options.allow_no_provider,
            provider_env: options.provider_env,
        };
        let shared = configure(&lasting, false)?;
        let question_open = !shared.untrusted_ignored.is_empty();
        Ok(Agent {
            inner: Arc::new(AgentInner {
                lasting,
                current: parking_lot::RwLock::new(Arc::new(shared)),
                trust_question_open: std::sync::atomic::AtomicBool::new(question_open),
                trusted_for_process: std::sync::atomic::AtomicBool::new(false),
            }),
        })
    }

    /// The configuration-dependent state in effect now. A turn keeps the one it started with.
    pub(crate) fn shared(&self) -> Arc<Shared> {
        self.inner.current.read().clone()
    }

    /// The provider lode took from the environment because none is configured (zero-config
    /// models, `lode_llm::detect`); front ends say so on stderr.
    pub fn detected_provider(&self) -> Option<lode_llm::DetectedProvider> {
        self.shared().detected.clone()
    }

    /// Settings of the workspace's `.lode/config.toml` that are not applied because the user
    /// has not trusted it (empty when trusted or when it only tightens).
    pub fn untrusted_settings(&self) -> Vec<String> {
        self.shared().untrusted_ignored.clone()
    }

    /// Whether the user trusts the workspace as it is now: recorded in the user's store and
    /// unchanged since, or granted for this process.
    pub fn workspace_trusted(&self) -> bool {
        let lasting = &self.inner.lasting;
        self.inner
            .trusted_for_process
            .load(std::sync::atomic::Ordering::SeqCst)
            || lasting.state_dir.as_ref().is_some_and(|state| {
                crate::trust::TrustStore::new(state)
                    .status(&lasting.root)
                    .is_trusted()
            })
    }

    /// Applies the workspace's own settings in full; with `remember`, then records the trust in
    /// the user's store (bound to the file's content), without it for this process only.
    /// Sessions' next turns use the new configuration.
    pub fn trust_workspace(&self, remember: bool) -> Result<(), AgentError> {
        let lasting = &self.inner.lasting;
        // Applied first: settings that cannot be used (a provider's key variable unset, a bad
        // rule) are reported and nothing is recorded.
        let shared = configure(lasting, true)?;
        if remember {
            let state = lasting.state_dir.as_ref().ok_or_else(|| {
                AgentError::Other(crate::trust::TrustError::NoStateDir.to_string())
            })?;
            crate::trust::TrustStore::new(state)
                .trust(&lasting.root)
                .map_err(|error| AgentError::Other(error.to_string()))?;
        } else {
            self.inner
                .trusted_for_process
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        *self.inner.current.write() = Arc::new(shared);
        self.inner
            .trust_question_open
            .store(false, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }

    /// Before a turn: when the workspace ships settings the user has not trusted, asks once per
    /// process through the host (a permission question no rule, skill or `--yes-to` answers).
    /// "Always" records the trust per user; "once" applies it for this process; a refusal keeps
    /// the settings ignored. Either way the session is told what is ignored. `true` when the
    /// workspace is trusted now, which replaced the configuration and the session's model.
    pub(crate) async fn settle_workspace_trust(
        &self,
        session_id: &str,
        host: &dyn SessionHost,
        cancel: &CancellationToken,
    ) -> bool {
        // Whoever takes the flag asks; every other turn goes on without a question.
        if !self
            .inner
            .trust_question_open
            .swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            return false;
        }
        let ignored = self.untrusted_settings();
        if ignored.is_empty() {
            return false;
        }
        let file = self
            .inner
            .lasting
            .root
            .join(crate::config::WORKSPACE_CONFIG);
        let request = crate::trust::question::trust_request(session_id, &file, &ignored);
        let answer = tokio::select! {
            _ = cancel.cancelled() => crate::host::PermissionAnswer::Cancelled,
            answer = host.request_permission(request) => answer,
        };
        let mut trusted_now = false;
        let message = match answer {
            crate::host::PermissionAnswer::AllowAlways
            | crate::host::PermissionAnswer::AllowOnce
            | crate::host::PermissionAnswer::AllowOnceWithNetwork => {
                let remember = answer == crate::host::PermissionAnswer::AllowAlways;
                // The session follows the workspace's default model from now on, as a session
                // started after the trust would.
                let trusted = self.trust_workspace(remember).and_then(|()| {
                    let model = self.default_model_name();
                    Ok(self
                        .shared()
                        .store
                        .set_model(session_id, model.as_deref())?)
                });
                trusted_now = trusted.is_ok();
                match trusted {
                    Ok(()) if remember => format!(
                        "{} is trusted (until it changes); its settings apply from now on",
                        file.display()
                    ),
                    Ok(()) => format!(
                        "{}'s settings apply until lode exits (`lode trust` keeps them)",
                        file.display()
                    ),
                    Err(error) => format!("could not trust {}: {error}", file.display()),
                }
            }
            _ => format!(
                "{} is not trusted, so lode ignores: {}. Run `lode trust` to review and trust it.",
                file.display(),
                ignored.join("; ")
            ),
        };
        host.emit(AgentEvent::Notice { message });
        trusted_now
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.inner.lasting.root
    }

    /// Diagnostics the editor computed (its `_lode/diagnostics` notifications): they replace
    /// what was pushed before for each file and take precedence over lode's own checkers.
    /// Files outside the workspace are ignored; returns how many files were accepted.
    pub fn push_diagnostics(&self, files: Vec<lode_tools::diagnostics::FileDiagnostics>) -> usize {
        let mut accepted = 0;
        for file in files {
            let path = std::fs::canonicalize(&file.path).unwrap_or(file.path);
            let climbs = path
                .components()
                .any(|part| part == std::path::Component::ParentDir);
            if climbs || !path.is_absolute() || !path.starts_with(self.root()) {
                continue;
            }
            self.inner
                .lasting
                .pushed_diagnostics
                .push(path, file.diagnostics);
            accepted += 1;
        }
        accepted
    }

    /// The editor saved `path`: index it now, from disk. Only a file inside the workspace,
    /// outside `.git/` and `.lode/`, of a kind lode indexes; returns whether it was indexed.
    /// Blocking (it parses the file).
    pub fn file_saved(&self, path: &Path) -> bool {
        let Ok(path) = std::fs::canonicalize(path) else {
            return false;
        };
        let private = path
            .components()
            .any(|part| part.as_os_str() == ".git" || part.as_os_str() == ".lode");
        if private || !path.starts_with(self.root()) || !path.is_file() {
            return false;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            return false;
        };
        self.index().update_file(&path, &text).unwrap_or(false)
    }

    /// How much of the editor's pushed diagnostics is kept (`[acp.lsp]` cache caps).
    pub fn limit_pushed_diagnostics(&self, limits: lode_tools::pushed_diagnostics::PushedLimits) {
        self.inner.lasting.pushed_diagnostics.set_limits(limits);
    }

    /// The shared code index.
    pub fn index(&self) -> &Arc<Workspace> {
        &self.inner.lasting.index
    }

    /// How commands are confined (or why they are not).
    pub fn sandbox(&self) -> Arc<lode_sandbox::Sandbox> {
        self.shared().sandbox.clone()
    }

    /// The configuration in effect.
    pub fn config(&self) -> Config {
        self.shared().config.clone()
    }

    /// The config files that were read, highest precedence first.
    pub fn config_files(&self) -> Vec<PathBuf> {
        self.shared().config_files.clone()
    }

    /// The configured models, the default first.
    pub fn models(&self) -> Vec<ModelInfo> {
        self.shared()
            .providers
            .iter()
            .map(|(_, provider)| provider.info().clone())
            .collect()
    }

    /// Starts bringing the index up to date in the background, once since the agent opened
    /// (`crate::indexing`); later changes reach it through the watcher and the tools' edits.
    pub fn start_indexing(&self) {
        if !self.inner.lasting.needs_first_build {
            return;
        }
        self.inner
            .lasting
            .first_build
            .get_or_init(|| crate::indexing::start_build(self.index().clone()));
    }

    /// Makes sure the index has been brought up to date once since the agent opened, waiting
    /// for the whole build (slash commands that show the index).
    pub(crate) async fn ensure_index_ready(&self) {
        self.start_indexing();
        crate::indexing::wait_until_built(self.index(), None).await;
    }

    /// Before a turn: starts the first build if needed and, while the index is being built,
    /// waits a short while ([`crate::indexing::TURN_PATIENCE`]) for it, showing the session its
    /// progress once the build has taken longer than [`crate::indexing::SHOW_AFTER`]; the turn
    /// then goes on with or without it.
    async fn index_for_turn(&self, session_id: &str, host: &Arc<dyn SessionHost>) {
        self.start_indexing();
        // A build that ends within a moment (a small workspace, a quick check) shows nothing.
        let quiet = crate::indexing::SHOW_AFTER;
        if crate::indexing::wait_until_built(self.index(), Some(quiet)).await {
            return;
        }
        self.inner
            .lasting
            .progress_shown
            .show(self.index(), session_id, host.clone());
        let rest = crate::indexing::TURN_PATIENCE.saturating_sub(quiet);
        crate::indexing::wait_until_built(self.index(), Some(rest)).await;
    }

    /// The default provider's name; `None` when no provider is configured.
    fn default_model_name(&self) -> Option<String> {
        self.shared()
            .providers
            .first()
            .map(|(name, _)| name.clone())
    }

    /// The provider named `name`, else the default one. Fails only when no provider is
    /// configured at all ([`AgentOptions::allow_no_provider`]).
    pub(crate) fn provider(&self, name: &str) -> Result<Arc<dyn Provider>, AgentError> {
        let shared = self.shared();
        shared
            .providers
            .iter()
            .find(|(candidate, _)| candidate == name)
            .or_else(|| shared.providers.first())
            .map(|(_, provider)| provider.clone())
            .ok_or_else(|| {
                AgentError::NoProvider(
                    shared
                        .no_provider
                        .clone()
                        .unwrap_or_else(|| "no LLM provider is configured".to_owned()),
                )
            })
    }

    /// Starts a session in `cwd` (inside the workspace) with the configured default mode and model.
    pub fn new_session(
        &self,
        cwd: PathBuf,
        mcp_servers: Vec<McpServerConfig>,
    ) -> Result<SessionInfo, AgentError> {
        let record = self.shared().store.create_session(&NewSession {
            cwd,
            mode: self.shared().config.agent.default_mode.as_str().to_owned(),
            model: self.default_model_name(),
        })?;
        if !mcp_servers.is_empty() {
            crate::turn::remember_mcp_servers(&self.shared(), &record.id, mcp_servers);
        }
        Ok(self.session_info(record))
    }

    fn session_info(&self, record: crate::store::SessionInfo) -> SessionInfo {
        SessionInfo {
            mode: parse_mode(&record.mode).unwrap_or(self.shared().config.agent.default_mode),
            model: record
                .model
                .or_else(|| self.default_model_name())
                .unwrap_or_default(),
            id: record.id,
            title: record.title,
            cwd: record.cwd,
            updated_at: record.updated_at,
        }
    }

    /// Every stored session of this workspace, most recently used first.
    pub fn list_sessions(&self) -> Result<Vec<SessionInfo>, AgentError> {
        Ok(self
            .shared()
            .store
            .list_sessions(None)?
            .into_iter()
            .map(|record| self.session_info(record))
            .collect())
    }

    pub fn session(&self, id: &str) -> Result<SessionInfo, AgentError> {
        let record = self
            .shared()
            .store
            .get_session(id)?
            .ok_or_else(|| AgentError::NoSuchSession(id.to_owned()))?;
        Ok(self.session_info(record))
    }

    /// The session and its user-visible history as events to replay: user messages, the
    /// agent's text and thinking, and every tool call in its final state.
    pub fn load_session(&self, id: &str) -> Result<(SessionInfo, Vec<AgentEvent>), AgentError> {
        let info = self.session(id)?;
        let history = self.shared().store.load_history(id)?;
        let mut events = Vec::new();
        for message in history
            .messages
            .iter()
            .filter(|message| message.visibility.to_user())
        {
            for part in &message.content {
                match (message.role, part) {
                    (Role::User, ContentPart::Text { text }) => {
                        events.push(AgentEvent::UserMessage { text: text.clone() })
                    }
                    (Role::Assistant, ContentPart::Text { text }) => {
                        events.push(AgentEvent::TextDelta { text: text.clone() })
                    }
                    (Role::Assistant, ContentPart::Thinking { text, .. }) if !text.is_empty() => {
                        events.push(AgentEvent::ThoughtDelta { text: text.clone() })
                    }
                    (Role::Assistant, ContentPart::ToolCall(call)) => {
                        if let Some(stored) = history.tool_calls.get(&call.id) {
                            let tool = self.shared().tools.get(&stored.tool);
                            let (title, kind) = match &tool {
                                Some(tool) => (
                                    tool.present(&stored.raw_input, &self.replay_context())
                                        .title,
                                    tool.kind(),
                                ),
                                None => (stored.tool.clone(), crate::event::ToolKind::Other),
                            };
                            events.push(AgentEvent::ToolCallStarted(ToolCallStart {
                                id: stored.id.clone(),
                                tool: stored.tool.clone(),
                                title,
                                kind,
                                locations: stored.locations.clone(),
                                raw_input: stored.raw_input.clone(),
                            }));
                            let mut content = stored.display.clone();
                            if content.is_empty()
                                && let Some(output) = &stored.output
                            {
                                content.push(ToolContent::Text {
                                    text: output.clone(),
                                });
                            }
                            events.push(AgentEvent::ToolCallUpdated(ToolCallUpdate {
                                id: stored.id.clone(),
                                status: stored.status,
                                title: None,
                                content,
                                locations: Vec::new(),
                                raw_output: None,
                            }));
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok((info, events))
    }

    /// A context for presenting stored tool calls (no host, nothing runs).
    fn replay_context(&self) -> lode_tools::ToolContext {
        crate::turn::tool_context(
            &self.shared(),
            Arc::new(crate::turn::SilentHost),
            String::new(),
            CancellationToken::new(),
        )
    }

    /// MCP servers a client passes when it loads or resumes a session; they join the session's
    /// tools on its next turn (servers already connected for the session stay as they are).
    pub fn attach_mcp_servers(
        &self,
        id: &str,
        servers: Vec<McpServerConfig>,
    ) -> Result<(), AgentError> {
        self.session(id)?;
        if !servers.is_empty() {
            crate::turn::remember_mcp_servers(&self.shared(), id, servers);
        }
        Ok(())
    }

    /// Picks a stored session up again without replaying it.
    pub fn resume_session(&self, id: &str) -> Result<SessionInfo, AgentError> {
        self.session(id)
    }

    /// Ends a session's activity (a running turn is cancelled); it stays listed and loadable.
    pub fn close_session(&self, id: &str) -> Result<(), AgentError> {
        self.cancel(id);
        self.shared()
            .store
            .close_session(id)
            .map_err(|error| match error {
                StoreError::NoSuchSession(id) => AgentError::NoSuchSession(id),
                other => other.into(),
            })?;
        // A session that did something leaves a summary for later sessions to recall.
        let history = self.shared().store.load_history(id)?;
        let messages = history.model_messages();
        if messages
            .iter()
            .any(|message| message.role == Role::Assistant)
        {
            let title = history.session.title.clone().unwrap_or_default();
            let summary = format!(
                "Session \"{title}\" ({}):\n{}",
                history.session.updated_at.format("%Y-%m-%d"),
                crate::compaction::metadata_summary(&messages)
            );
            self.shared().extensions.save_session_summary(id, &summary);
        }
        self.end_extensions(id);
        self.forget_mcp_servers(id);
        self.shared().store.forget_view(id);
        Ok(())
    }

    /// Lets go of what an idle session holds in memory, its MCP server connections and the
    /// store's copy of its history, without touching the stored session: the session stays
    /// listed and loadable, and the MCP servers the client passed for it reconnect on its next
    /// turn. A session with a running turn keeps everything; returns whether the session was
    /// released.
    pub fn release_session(&self, id: &str) -> bool {
        let running = self.inner.lasting.running.lock().contains_key(id);
        if running {
            return false;
        }
        self.end_extensions(id);
        self.shared().store.forget_view(id);
        true
    }

    /// Forgets the MCP servers a client passed for the session (a closed or deleted session
    /// gets them again from the client's `session/load` or `session/resume`).
    fn forget_mcp_servers(&self, id: &str) {
        self.inner.lasting.mcp_servers.lock().remove(id);
    }

    /// Disconnects the session's MCP servers in the background.
    fn end_extensions(&self, id: &str) {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let shared = self.shared();
            let id = id.to_owned();
            runtime.spawn(async move { shared.extensions.end_session(&id).await });
        }
    }

    /// Deletes a session and its history.
    pub fn delete_session(&self, id: &str) -> Result<(), AgentError> {
        self.cancel(id);
        self.end_extensions(id);
        self.forget_mcp_servers(id);
        if self.shared().store.delete_session(id)? {
            Ok(())
        } else {
            Err(AgentError::NoSuchSession(id.to_owned()))
        }
    }

    /// Cancels the session's running turn, if any. The turn returns [`StopReason::Cancelled`].
    pub fn cancel(&self, id: &str) {
        let running = self.inner.lasting.running.lock();
        if let Some(token) = running.get(id) {
            token.cancel();
        }
    }

    pub fn set_mode(&self, id: &str, mode: Mode) -> Result<(), AgentError> {
        self.session(id)?;
        self.shared().store.set_mode(id, mode.as_str())?;
        Ok(())
    }

    /// Switches the session to another configured provider (by its `name`).
    pub fn set_model(&self, id: &str, provider_name: &str) -> Result<(), AgentError> {
        self.session(id)?;
        if !self
            .shared()
            .providers
            .iter()
            .any(|(name, _)| name == provider_name)
        {
            return Err(AgentError::UnknownModel {
                name: provider_name.to_owned(),
                available: self
                    .shared()
                    .providers
                    .iter()
                    .map(|(name, _)| name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        self.shared().store.set_model(id, Some(provider_name))?;
        Ok(())
    }

    /// The commands lode answers itself (ACP `available_commands_update`, `/help`).
    pub fn slash_commands(&self) -> Vec<SlashCommand> {
        crate::slash::COMMANDS
            .iter()
            .map(|(name, description, hint)| SlashCommand {
                name: (*name).to_owned(),
                description: (*description).to_owned(),
                input_hint: hint.map(str::to_owned),
            })
            .collect()
    }

    /// Runs one turn: the user's input, then model steps and tool calls until the model finishes,
    /// a limit is hit or `cancel` fires. Every step is emitted through `host`.
    pub async fn prompt(
        &self,
        id: &str,
        input: Vec<UserInput>,
        host: Arc<dyn SessionHost>,
        cancel: CancellationToken,
    ) -> Result<StopReason, AgentError> {
        let info = self.session(id)?;
        {
            let mut running = self.inner.lasting.running.lock();
            if running.contains_key(id) {
                return Err(AgentError::Busy(id.to_owned()));
            }
            running.insert(id.to_owned(), cancel.clone());
        }
        let outcome = self.run_prompt(&info, input, host.clone(), cancel).await;
        self.inner.lasting.running.lock().remove(id);
        let stop = outcome?;
        host.emit(AgentEvent::TurnFinished { stop_reason: stop });
        Ok(stop)
    }

    /// One prompt: lode's own slash command, or a turn with the model. Before a turn the
    /// workspace's trust is settled (trusting it replaces the configuration, and may change the
    /// session's model), then the turn runs on the configuration in effect.
    async fn run_prompt(
        &self,
        info: &SessionInfo,
        input: Vec<UserInput>,
        host: Arc<dyn SessionHost>,
        cancel: CancellationToken,
    ) -> Result<StopReason, AgentError> {
        if let [UserInput::Text(text)] = input.as_slice()
            && let Some((command, argument)) = crate::slash::parse(text)
        {
            return crate::turn_commands::run(
                self,
                info,
                command,
                &argument,
                host.as_ref(),
                &cancel,
            )
            .await;
        }
        self.index_for_turn(&info.id, &host).await;
        let reread;
        let info = if self
            .settle_workspace_trust(&info.id, host.as_ref(), &cancel)
            .await
        {
            // Trusting the workspace changed the session's model.
            reread = self.session(&info.id)?;
            &reread
        } else {
            info
        };
        let shared = self.shared();
        let provider = self.provider(&info.model)?;
        crate::turn::run_turn(&shared, info, provider, input, host, cancel).await
    }

    /// The user-visible messages of a session (for tests and front ends that show history).
    pub fn visible_messages(&self, id: &str) -> Result<Vec<lode_llm::Message>, AgentError> {
        Ok(self
            .shared()
            .store
            .load_history(id)?
            .messages
            .iter()
            .filter(|message| {
                message.visibility == Visibility::Both || message.visibility == Visibility::UserOnly
            })
            .map(|message| message.to_message())
            .collect())
    }
}

#[async_trait::async_trait]
impl crate::turn_commands::Controls for Agent {
    fn shared(&self) -> Arc<Shared> {
        Agent::shared(self)
    }

    fn slash_commands(&self) -> Vec<SlashCommand> {
        Agent::slash_commands(self)
    }

    fn models(&self) -> Vec<ModelInfo> {
        Agent::models(self)
    }

    fn set_mode(&self, session_id: &str, mode: Mode) -> Result<(), AgentError> {
        Agent::set_mode(self, session_id, mode)
    }

    fn set_model(&self, session_id: &str, provider_name: &str) -> Result<(), AgentError> {
        Agent::set_model(self, session_id, provider_name)
    }

    fn provider(&self, name: &str) -> Result<Arc<dyn Provider>, AgentError> {
        Agent::provider(self, name)
    }

    fn list_sessions(&self) -> Result<Vec<SessionInfo>, AgentError> {
        Agent::list_sessions(self)
    }

    async fn ready_index(&self) -> Arc<Workspace> {
        self.ensure_index_ready().await;
        self.index().clone()
    }
}

/// Loads the configuration and builds what depends on it: providers, the policy over the
/// user's remembered answers, the sandbox and the extensions. `trusted_now`: the user trusted
/// the workspace for this process, so its settings apply whatever the store says.
fn configure(lasting: &Lasting, trusted_now: bool) -> Result<Shared, AgentError> {
    let root = &lasting.root;
    let state_dir = lasting.state_dir.as_deref();
    let mut sources = crate::config::ConfigSources::discover_with_state(
        lasting.config_file.as_deref(),
        root,
        state_dir,
    );
    sources.workspace_trusted |= trusted_now;
    let mut loaded = Config::load_from(&sources)?;
    // Zero-config models: a provider from the environment when none is configured.
    let env = |name: &str| match &lasting.provider_env {
        Some(env) => env(name),
        None => std::env::var(name).ok(),
    };
    loaded.detect_provider(&env);
    let detected = loaded.detected.clone();
    // Keys: the given lookup first, then the process (a configured provider's key variable).
    let keys = |name: &str| env(name).or_else(|| std::env::var(name).ok());
    let (providers, no_provider) = match build_providers(&loaded, &keys) {
        Ok(providers) => (providers, None),
        Err(AgentError::Config(
            error @ (ConfigError::NoProvider { .. } | ConfigError::UntrustedProviders { .. }),
        )) if lasting.allow_no_provider => (Vec::new(), Some(error.to_string())),
        Err(error) => return Err(error),
    };
    let LoadedConfig {
        config,
        files,
        untrusted_ignored,
        ..
    } = loaded;
    // Remembered answers live with the user, never in the workspace's `.lode/`.
    let permissions = match state_dir {
        Some(state) => Some(Arc::new(
            PermissionStore::open(&crate::trust::grants_database(state, root))
                .map_err(|error| AgentError::Other(error.to_string()))?,
        )),
        None => None,
    };
    let sandbox = Arc::new(sandbox_for(lasting.sandbox_launcher.clone(), &config));
    let policy = PermissionPolicy::without_store(config.permissions.clone())
        .map_err(|error| AgentError::Other(format!("[permissions]: {error}")))?;
    let policy = match permissions {
        Some(store) => policy.with_store(store),
        None => policy,
    }
    .with_roots(vec![root.clone()])
    .with_sandbox(sandbox.is_confined());
    let extensions = crate::extensions::Extensions::open(root, &config, state_dir, sandbox.clone());
    Ok(Shared {
        root: root.clone(),
        config_files: files,
        config,
        providers,
        no_provider,
        detected,
        index: lasting.index.clone(),
        code_cache: lasting.code_cache.clone(),
        store: lasting.store.clone(),
        policy,
        audit: lasting.audit.clone(),
        tools: lasting.tools.clone(),
        diagnostics: Some(lasting.diagnostics.clone()),
        mcp_servers: lasting.mcp_servers.clone(),
        extensions,
        sandbox,
        told_unconfined: lasting.told_unconfined.clone(),
        untrusted_ignored,
    })
}

/// The providers of `loaded`, their keys read through `env`.
fn build_providers(
    loaded: &LoadedConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<NamedProviders, AgentError> {
    let config = &loaded.config;
    let default = loaded.provider(None)?;
    let mut providers = Vec::new();
    let mut ordered: Vec<&lode_llm::ProviderConfig> = vec![default];
    ordered.extend(
        config
            .llm
            .providers
            .iter()
            .filter(|entry| entry.name != default.name),
    );
    for entry in ordered {
        let provider = lode_llm::build_provider_with_env(entry, env)
            .map_err(|error| AgentError::Provider(error.to_string()))?;
        providers.push((entry.name.clone(), provider));
    }
    Ok(providers)
}

/// The models `loaded` configures, the default first, as an agent opened on it offers them; none
/// when it configures no provider. An error where opening an agent would fail (a provider that
/// cannot be built, a `default` naming none). For a front end that answers before it has a
/// workspace (`lode acp` started outside a project).
pub fn configured_models(loaded: &LoadedConfig) -> Result<Vec<ModelInfo>, AgentError> {
    match build_providers(loaded, &|name| std::env::var(name).ok()) {
        Ok(providers) => Ok(providers
            .iter()
            .map(|(_, provider)| provider.info().clone())
            .collect()),
        Err(AgentError::Config(
            ConfigError::NoProvider { .. } | ConfigError::UntrustedProviders { .. },
        )) => Ok(Vec::new()),
        Err(error) => Err(error),
    }
}

/// The sandbox of an agent: through `launcher` with the user's `[sandbox]` settings, keeping
/// every provider's key variable out of commands.
pub fn sandbox_for(launcher: Option<PathBuf>, config: &Config) -> lode_sandbox::Sandbox {
    let Some(launcher) = launcher else {
        return lode_sandbox::Sandbox::unavailable(
            "no sandbox launcher (lode's agent library is running without the lode binary)",
        );
    };
    let secret_env = config
        .llm
        .providers
        .iter()
        .filter_map(|provider| provider.api_key_env.clone())
        .collect();
    lode_sandbox::Sandbox::new(launcher, config.sandbox.clone(), secret_env)
}

/// The built-in tools; with a diagnostics source, `diagnostics` asks it for single files; with
/// a navigation source, `hover`, `definition` and `references` ask it before the index.
fn tools_with_sources(
    source: Option<Arc<dyn lode_tools::diagnostics::DiagnosticsSource>>,
    navigation: Option<Arc<dyn lode_tools::navigation::NavigationSource>>,
) -> ToolRegistry {
    let mut tools = lode_tools::default_tools();
    if let Some(source) = source {
        tools.register(Arc::new(
            lode_tools::diagnostics::SourceDiagnosticsTool::new(source),
        ));
    }
    if let Some(navigation) = navigation {
        for question in [
            lode_tools::navigate::Question::Hover,
            lode_tools::navigate::Question::Definition,
            lode_tools::navigate::Question::References,
        ] {
            tools.register(Arc::new(lode_tools::navigate::NavigateTool::new(
                question,
                Some(navigation.clone()),
            )));
        }
        tools.register(Arc::new(
            lode_tools::call_hierarchy::CallHierarchyTool::new(Some(navigation.clone())),
        ));
        tools.register(Arc::new(lode_tools::rename::RenameTool::new(Some(
            navigation,
        ))));
    }
    tools
}
