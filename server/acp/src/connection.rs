//! One ACP connection: the v1 agent builder with a handler per method. Handlers only translate and
//! answer; a turn runs in a task spawned on the connection (`cx.spawn`), never inside a handler,
//! so `session/cancel` and the client's answers keep flowing while the agent works.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthenticateRequest, AuthenticateResponse, CancelNotification,
    ClientCapabilities, CloseSessionRequest, CloseSessionResponse, DeleteSessionRequest,
    DeleteSessionResponse, Error as SchemaError, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest,
    LoadSessionResponse, McpCapabilities, NewSessionRequest, NewSessionResponse,
    PromptCapabilities, PromptRequest, PromptResponse, ResumeSessionRequest, ResumeSessionResponse,
    SessionCapabilities, SessionCloseCapabilities, SessionConfigOption, SessionDeleteCapabilities,
    SessionId, SessionListCapabilities, SessionModeState, SessionNotification,
    SessionResumeCapabilities, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
    SetSessionModeRequest, SetSessionModeResponse, StopReason as AcpStopReason,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, ConnectTo, Error, ErrorCode};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::backend::{AgentBackend, BackendError, SessionSummary};
use crate::client_host::{AcpSessionHost, send_event};
use crate::ext_diagnostics::{self, DiagnosticsNotification};
use crate::mapping;

/// Settings every ACP connection shares (`[acp]` in the config).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnectionOptions {
    /// Sessions without a request or a running turn for this long are released from memory
    /// (see [`ConnectionState::reap_idle`]); `None` keeps them until the connection ends.
    pub idle_session_timeout: Option<Duration>,
    /// The client is remote (HTTP or WebSocket): MCP servers it passes as commands (stdio) are
    /// started only in a workspace the user trusts (`lode trust`), since a command line from
    /// the network would otherwise run as the user.
    pub remote: bool,
    /// `[acp.lsp]`: the ACP LSP extension (`crate::ext_lsp`).
    pub lsp: crate::ext_lsp::LspSettings,
}

/// A session this connection opened: in memory, or released after being idle (its id and cwd are
/// kept so the next request on it picks it up again from the store, in its workspace).
enum OpenSession {
    Active {
        summary: SessionSummary,
        last_active: Instant,
    },
    Released {
        cwd: PathBuf,
    },
}

/// What one connection remembers: the client's capabilities, the sessions it opened, and the turn
/// running in each.
pub(crate) struct ConnectionState {
    pub(crate) backend: Arc<dyn AgentBackend>,
    client: Mutex<ClientCapabilities>,
    sessions: Mutex<HashMap<String, OpenSession>>,
    turns: Mutex<HashMap<String, CancellationToken>>,
    /// See [`ConnectionOptions::remote`].
    remote: bool,
    /// The LSP extension's settings, and whether this client negotiated it in `initialize`.
    pub(crate) lsp: crate::ext_lsp::LspSettings,
    pub(crate) lsp_negotiated: std::sync::atomic::AtomicBool,
}

impl ConnectionState {
    /// The session as this connection knows it, marked active now. A session released for being
    /// idle is picked up again from the store, transparently: to the client it never went away.
    fn session(&self, id: &SessionId) -> Result<SessionSummary, Error> {
        let not_found = || -> Error { SchemaError::session_not_found(id.clone()).into() };
        let cwd = {
            let mut sessions = self.sessions.lock();
            match sessions.get_mut(&*id.0) {
                None => return Err(not_found()),
                Some(OpenSession::Active {
                    summary,
                    last_active,
                }) => {
                    *last_active = Instant::now();
                    return Ok(summary.clone());
                }
                Some(OpenSession::Released { cwd }) => cwd.clone(),
            }
        };
        match self.backend.resume_session(&id.0, &cwd) {
            Ok(summary) => {
                self.remember(summary.clone());
                Ok(summary)
            }
            Err(BackendError::SessionNotFound(_)) => {
                self.sessions.lock().remove(&*id.0);
                Err(not_found())
            }
            Err(error) => Err(backend_error(error)),
        }
    }

    fn remember(&self, summary: SessionSummary) {
        self.sessions.lock().insert(
            summary.id.clone(),
            OpenSession::Active {
                summary,
                last_active: Instant::now(),
            },
        );
    }

    fn forget(&self, id: &str) {
        self.sessions.lock().remove(id);
    }

    fn update_session(
        &self,
        id: &str,
        change: impl FnOnce(&mut SessionSummary),
    ) -> Option<SessionSummary> {
        let mut sessions = self.sessions.lock();
        match sessions.get_mut(id)? {
            OpenSession::Active {
                summary,
                last_active,
            } => {
                change(summary);
                *last_active = Instant::now();
                Some(summary.clone())
            }
            OpenSession::Released { .. } => None,
        }
    }

    /// Releases the sessions idle for `timeout` or longer: no request named them and no turn ran
    /// in them. Their summaries leave this connection and the backend lets go of what it holds
    /// for them (MCP servers); the store keeps everything. A session with a running turn is
    /// never released.
    fn reap_idle(&self, timeout: Duration) {
        let now = Instant::now();
        let mut released = Vec::new();
        {
            // Lock order: turns, then sessions (nothing else holds both).
            let turns = self.turns.lock();
            let mut sessions = self.sessions.lock();
            for (id, session) in sessions.iter_mut() {
                let (idle, cwd) = match session {
                    OpenSession::Active {
                        last_active,
                        summary,
                    } => (now.duration_since(*last_active), summary.cwd.clone()),
                    OpenSession::Released { .. } => continue,
                };
                if idle >= timeout && !turns.contains_key(id) {
                    *session = OpenSession::Released { cwd };
                    released.push((id.clone(), idle));
                }
            }
        }
        for (id, idle) in released {
            if self.backend.release_session(&id) {
                tracing::info!(
                    "released idle session {id} from memory after {}s without activity; its next \
                     request picks it up again",
                    idle.as_secs()
                );
            }
        }
    }

    fn cancel_turn(&self, id: &str) {
        if let Some(token) = self.turns.lock().get(id) {
            token.cancel();
        }
    }

    fn images_supported(&self, session: &SessionSummary) -> bool {
        self.backend
            .models(Some(&session.id))
            .iter()
            .any(|model| model.provider == session.model && model.supports_images)
    }

    /// The session's mode and model options, its model choices from its own workspace.
    fn config_options(&self, session: &SessionSummary) -> Vec<SessionConfigOption> {
        mapping::config_options(session, &self.backend.models(Some(&session.id)))
    }

    fn capabilities(&self) -> AgentCapabilities {
        let images = self
            .backend
            .models(None)
            .iter()
            .any(|model| model.supports_images);
        AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(
                PromptCapabilities::new()
                    .embedded_context(true)
                    .image(images),
            )
            .mcp_capabilities(McpCapabilities::new().http(true))
            .session_capabilities(
                SessionCapabilities::new()
                    .list(SessionListCapabilities::new())
                    .resume(SessionResumeCapabilities::new())
                    .close(SessionCloseCapabilities::new())
                    .delete(SessionDeleteCapabilities::new()),
            )
    }

    fn notices_supported(&self) -> bool {
        self.client
            .lock()
            .session
            .as_ref()
            .is_some_and(|session| session.notices.is_some())
    }
}

fn backend_error(error: BackendError) -> Error {
    match error {
        BackendError::SessionNotFound(id) => SchemaError::session_not_found(id).into(),
        BackendError::InvalidInput(message) => Error::new(ErrorCode::INVALID_PARAMS, message),
        BackendError::AuthRequired(message) => Error::new(ErrorCode::AUTH_REQUIRED, message),
        BackendError::Internal(message) => Error::new(ErrorCode::INTERNAL_ERROR, message),
    }
}

fn invalid_params(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, message)
}

fn notify(
    cx: &ConnectionTo<Client>,
    session_id: &str,
    update: agent_client_protocol::v1::schema::SessionUpdate,
) {
    let _ = cx.send_notification(SessionNotification::new(session_id.to_string(), update));
}

/// Checks for idle sessions every quarter of the timeout, within these bounds.
const REAP_EVERY_AT_LEAST: Duration = Duration::from_millis(50);
const REAP_EVERY_AT_MOST: Duration = Duration::from_secs(30);

/// Releases the connection's idle sessions until the connection is gone (its state dropped).
fn spawn_reaper(state: &Arc<ConnectionState>, timeout: Duration) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let state = Arc::downgrade(state);
    let every = (timeout / 4).clamp(REAP_EVERY_AT_LEAST, REAP_EVERY_AT_MOST);
    runtime.spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            let Some(state) = state.upgrade() else { return };
            state.reap_idle(timeout);
        }
    });
}

/// One ACP request: its type, its response type, and the call that answers it with the
/// connection's state (`$state`), the request, its responder and the connection (`$cx`).
macro_rules! on_request {
    ($builder:expr, $shared:expr, $request:ty => $response:ty,
     |$state:ident, $req:ident, $responder:ident, $cx:pat_param| $answer:expr) => {
        $builder.on_receive_request(
            {
                let $state = Arc::clone($shared);
                async move |$req: $request,
                            $responder: Responder<$response>,
                            $cx: ConnectionTo<Client>| { $answer }
            },
            agent_client_protocol::on_receive_request!(),
        )
    };
}

/// One ACP notification: its type and what receiving it does.
macro_rules! on_notification {
    ($builder:expr, $shared:expr, $notification:ty,
     |$state:ident, $note:ident, $cx:pat_param| $receive:expr) => {
        $builder.on_receive_notification(
            {
                let $state = Arc::clone($shared);
                async move |$note: $notification, $cx: ConnectionTo<Client>| {
                    $receive;
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_notification!(),
        )
    };
}

/// A fresh ACP v1 agent connection over `backend`, ready to connect to a transport (stdio, or
/// one HTTP/WebSocket connection).
pub fn agent_connection(
    backend: Arc<dyn AgentBackend>,
    options: ConnectionOptions,
) -> impl ConnectTo<Client> + 'static {
    let state = Arc::new(ConnectionState {
        backend,
        client: Mutex::new(ClientCapabilities::new()),
        sessions: Mutex::new(HashMap::new()),
        turns: Mutex::new(HashMap::new()),
        remote: options.remote,
        lsp: options.lsp,
        lsp_negotiated: std::sync::atomic::AtomicBool::new(false),
    });
    if let Some(timeout) = options.idle_session_timeout {
        spawn_reaper(&state, timeout);
    }
    // The routing table: which function answers each ACP method; each handler holds its own
    // reference to the connection's state.
    let state = &state;
    let agent = Agent.v1().name("lode");
    let agent = on_request!(agent, state, InitializeRequest => InitializeResponse,
        |state, request, responder, _| initialize(&state, request, responder));
    let agent = on_request!(agent, state, AuthenticateRequest => AuthenticateResponse,
        |_state, request, responder, _| authenticate(request, responder));
    let agent = on_request!(agent, state, NewSessionRequest => NewSessionResponse,
        |state, request, responder, cx| new_session(&state, request, responder, &cx));
    let agent = on_request!(agent, state, LoadSessionRequest => LoadSessionResponse,
        |state, request, responder, cx| load_session(&state, request, responder, &cx));
    let agent = on_request!(agent, state, ResumeSessionRequest => ResumeSessionResponse,
        |state, request, responder, cx| resume_session(&state, request, responder, &cx));
    let agent = on_request!(agent, state, ListSessionsRequest => ListSessionsResponse,
        |state, request, responder, _| list_sessions(&state, request, responder));
    let agent = on_request!(agent, state, CloseSessionRequest => CloseSessionResponse,
        |state, request, responder, _| close_session(&state, request, responder));
    let agent = on_request!(agent, state, DeleteSessionRequest => DeleteSessionResponse,
        |state, request, responder, _| delete_session(&state, request, responder));
    let agent = on_request!(agent, state, SetSessionModeRequest => SetSessionModeResponse,
        |state, request, responder, cx| set_session_mode(&state, request, responder, &cx));
    let agent = on_request!(agent, state, SetSessionConfigOptionRequest => SetSessionConfigOptionResponse,
        |state, request, responder, cx| set_config_option(&state, request, responder, &cx));
    let agent = on_request!(agent, state, PromptRequest => PromptResponse,
        |state, request, responder, cx| start_turn(&state, request, responder, cx));
    let agent = on_notification!(
        agent,
        state,
        CancelNotification,
        |state, notification, _| state.cancel_turn(&notification.session_id.0)
    );
    let agent = on_notification!(
        agent,
        state,
        DiagnosticsNotification,
        |state, notification, _| receive_diagnostics(&state, &notification.params)
    );
    let agent = on_notification!(
        agent,
        state,
        crate::ext_lsp::LspNotification,
        |state, notification, cx| crate::ext_lsp_handlers::receive(&state, notification, &cx)
    );
    // lode never accepts `lsp/*` requests from the client: it is the one asking.
    on_request!(agent, state, crate::ext_lsp::LspRequest => serde_json::Value,
    |_state, request, responder, _| responder.respond_with_error(Error::new(
        ErrorCode::METHOD_NOT_FOUND,
        crate::ext_lsp::refusal(&request.method),
    )))
}

/// `initialize`: negotiates the `lsp/*` extension, keeps the client's capabilities and answers
/// with lode's.
fn initialize(
    state: &ConnectionState,
    request: InitializeRequest,
    responder: Responder<InitializeResponse>,
) -> Result<(), Error> {
    let lsp = crate::ext_lsp_handlers::negotiate(state, &request);
    *state.client.lock() = request.client_capabilities;
    responder.respond(
        InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(crate::ext_lsp_handlers::advertise(
                state.capabilities(),
                lsp,
            ))
            .auth_methods(crate::auth::auth_methods())
            .agent_info(Implementation::new("lode", env!("CARGO_PKG_VERSION")).title("lode")),
    )
}

/// `authenticate`: checks that the chosen method's API-key variable is set.
fn authenticate(
    request: AuthenticateRequest,
    responder: Responder<AuthenticateResponse>,
) -> Result<(), Error> {
    // The SDK refuses `authenticate` before `initialize` (-32600).
    let env = |name: &str| std::env::var(name).ok();
    match crate::auth::authenticate(&request.method_id.0, &env) {
        Ok(_) => responder.respond(AuthenticateResponse::new()),
        Err(error) => responder.respond_with_error(crate::auth::acp_error(&error)),
    }
}

/// `session/new`: an absolute cwd, the client's MCP servers (command ones from a remote client
/// only in a trusted workspace), then the new session's modes, options and commands.
fn new_session(
    state: &ConnectionState,
    request: NewSessionRequest,
    responder: Responder<NewSessionResponse>,
    cx: &ConnectionTo<Client>,
) -> Result<(), Error> {
    if !request.cwd.is_absolute() {
        return responder.respond_with_error(invalid_params(format!(
            "cwd must be an absolute path, got {}",
            request.cwd.display()
        )));
    }
    let servers = match allowed_servers(state, request.mcp_servers, &request.cwd) {
        Ok(servers) => servers,
        Err(error) => return responder.respond_with_error(error),
    };
    let session = match state.backend.new_session(request.cwd, servers) {
        Ok(session) => session,
        Err(error) => return responder.respond_with_error(backend_error(error)),
    };
    state.remember(session.clone());
    let options = state.config_options(&session);
    responder.respond(
        NewSessionResponse::new(session.id.clone())
            .modes(mapping::mode_state(&session.mode))
            .config_options(options),
    )?;
    announce_commands(state, cx, &session.id);
    Ok(())
}

/// `session/load`: replays the stored history as updates, then reopens the session.
fn load_session(
    state: &ConnectionState,
    request: LoadSessionRequest,
    responder: Responder<LoadSessionResponse>,
    cx: &ConnectionTo<Client>,
) -> Result<(), Error> {
    let servers = match allowed_servers(state, request.mcp_servers.clone(), &request.cwd) {
        Ok(servers) => servers,
        Err(error) => return responder.respond_with_error(error),
    };
    let loaded = state
        .backend
        .load_session(&request.session_id.0, &request.cwd);
    let (session, history) = match loaded {
        Ok(loaded) => loaded,
        Err(error) => return responder.respond_with_error(backend_error(error)),
    };
    let notices = state.notices_supported();
    for event in &history {
        send_event(cx, &request.session_id, event, notices);
    }
    let (modes, options) = match reopen(state, &session, servers) {
        Ok(answer) => answer,
        Err(error) => return responder.respond_with_error(error),
    };
    responder.respond(
        LoadSessionResponse::new()
            .modes(modes)
            .config_options(options),
    )?;
    announce_commands(state, cx, &session.id);
    Ok(())
}

/// `session/resume`: reopens the session without replaying its history.
fn resume_session(
    state: &ConnectionState,
    request: ResumeSessionRequest,
    responder: Responder<ResumeSessionResponse>,
    cx: &ConnectionTo<Client>,
) -> Result<(), Error> {
    let servers = match allowed_servers(state, request.mcp_servers.clone(), &request.cwd) {
        Ok(servers) => servers,
        Err(error) => return responder.respond_with_error(error),
    };
    let resumed = state
        .backend
        .resume_session(&request.session_id.0, &request.cwd);
    let session = match resumed {
        Ok(session) => session,
        Err(error) => return responder.respond_with_error(backend_error(error)),
    };
    let (modes, options) = match reopen(state, &session, servers) {
        Ok(answer) => answer,
        Err(error) => return responder.respond_with_error(error),
    };
    responder.respond(
        ResumeSessionResponse::new()
            .modes(modes)
            .config_options(options),
    )?;
    announce_commands(state, cx, &session.id);
    Ok(())
}

/// `session/list`: the stored sessions, those of `cwd` when one is given.
fn list_sessions(
    state: &ConnectionState,
    request: ListSessionsRequest,
    responder: Responder<ListSessionsResponse>,
) -> Result<(), Error> {
    let sessions = match state.backend.list_sessions(request.cwd.as_deref()) {
        Ok(sessions) => sessions,
        Err(error) => return responder.respond_with_error(backend_error(error)),
    };
    let listed = sessions
        .iter()
        .filter(|session| request.cwd.as_ref().is_none_or(|cwd| &session.cwd == cwd))
        .map(mapping::session_info)
        .collect();
    responder.respond(ListSessionsResponse::new(listed))
}

/// `session/close`: cancels its turn and lets the session go (it stays stored).
fn close_session(
    state: &ConnectionState,
    request: CloseSessionRequest,
    responder: Responder<CloseSessionResponse>,
) -> Result<(), Error> {
    state.cancel_turn(&request.session_id.0);
    state.forget(&request.session_id.0);
    match state.backend.close_session(&request.session_id.0) {
        Ok(()) => responder.respond(CloseSessionResponse::new()),
        Err(error) => responder.respond_with_error(backend_error(error)),
    }
}

/// `session/delete`: cancels its turn and deletes the session.
fn delete_session(
    state: &ConnectionState,
    request: DeleteSessionRequest,
    responder: Responder<DeleteSessionResponse>,
) -> Result<(), Error> {
    state.cancel_turn(&request.session_id.0);
    state.forget(&request.session_id.0);
    match state.backend.delete_session(&request.session_id.0) {
        Ok(()) => responder.respond(DeleteSessionResponse::new()),
        Err(error) => responder.respond_with_error(backend_error(error)),
    }
}

/// `session/set_mode`: switches the mode and tells the client the new mode and options.
fn set_session_mode(
    state: &ConnectionState,
    request: SetSessionModeRequest,
    responder: Responder<SetSessionModeResponse>,
    cx: &ConnectionTo<Client>,
) -> Result<(), Error> {
    match set_mode(state, &request.session_id, &request.mode_id.0) {
        Ok(session) => {
            let options = state.config_options(&session);
            notify(cx, &session.id, mapping::current_mode_update(&session.mode));
            notify(cx, &session.id, mapping::config_option_update(options));
            responder.respond(SetSessionModeResponse::new())
        }
        Err(error) => responder.respond_with_error(error),
    }
}

/// `session/set_config_option`: the mode or the model, by select value.
fn set_config_option(
    state: &ConnectionState,
    request: SetSessionConfigOptionRequest,
    responder: Responder<SetSessionConfigOptionResponse>,
    cx: &ConnectionTo<Client>,
) -> Result<(), Error> {
    let Some(value) = request.value.as_value_id().map(|value| value.0.to_string()) else {
        return responder
            .respond_with_error(invalid_params("config option values are select values"));
    };
    let result = match &*request.config_id.0 {
        mapping::MODE_OPTION_ID => set_mode(state, &request.session_id, &value),
        mapping::MODEL_OPTION_ID => set_model(state, &request.session_id, &value),
        other => Err(invalid_params(format!("unknown config option {other:?}"))),
    };
    match result {
        Ok(session) => {
            let options = state.config_options(&session);
            if &*request.config_id.0 == mapping::MODE_OPTION_ID {
                notify(cx, &session.id, mapping::current_mode_update(&session.mode));
            }
            notify(
                cx,
                &session.id,
                mapping::config_option_update(options.clone()),
            );
            responder.respond(SetSessionConfigOptionResponse::new(options))
        }
        Err(error) => responder.respond_with_error(error),
    }
}

/// The MCP servers a session request passes, checked: each must be well formed (invalid
/// params otherwise), and command (stdio) servers from a remote client need a trusted workspace.
fn allowed_servers(
    state: &ConnectionState,
    servers: Vec<agent_client_protocol::v1::schema::McpServer>,
    cwd: &Path,
) -> Result<Vec<crate::backend::McpServerSpec>, Error> {
    let servers = mapping::mcp_server_specs(servers).map_err(invalid_params)?;
    remote_servers_allowed(state, &servers, cwd)?;
    Ok(servers)
}

/// Refuses command (stdio) MCP servers from a remote client unless the workspace of `cwd` is
/// trusted.
fn remote_servers_allowed(
    state: &ConnectionState,
    servers: &[crate::backend::McpServerSpec],
    cwd: &Path,
) -> Result<(), Error> {
    let commands: Vec<&str> = servers
        .iter()
        .filter_map(|server| match server {
            crate::backend::McpServerSpec::Stdio { name, .. } => Some(name.as_str()),
            crate::backend::McpServerSpec::Http { .. } => None,
        })
        .collect();
    if !state.remote || commands.is_empty() {
        return Ok(());
    }
    if state
        .backend
        .workspace_trusted(cwd)
        .map_err(backend_error)?
    {
        return Ok(());
    }
    Err(invalid_params(format!(
        "MCP servers that run a command ({}) can be passed over HTTP only in a workspace you \
         trust: run `lode trust` in the workspace first, or pass them over stdio or as HTTP \
         servers",
        commands.join(", ")
    )))
}

/// The shared tail of `session/load` and `session/resume`: the client's MCP servers join the
/// session and the connection remembers it; returns the modes and config options to answer with.
fn reopen(
    state: &ConnectionState,
    session: &SessionSummary,
    servers: Vec<crate::backend::McpServerSpec>,
) -> Result<(SessionModeState, Vec<SessionConfigOption>), Error> {
    state
        .backend
        .attach_mcp_servers(&session.id, servers)
        .map_err(backend_error)?;
    state.remember(session.clone());
    Ok((
        mapping::mode_state(&session.mode),
        state.config_options(session),
    ))
}

/// Sent after a session is opened (`session/new`, `session/load`, `session/resume`).
fn announce_commands(state: &ConnectionState, cx: &ConnectionTo<Client>, session_id: &str) {
    notify(
        cx,
        session_id,
        mapping::available_commands(&state.backend.slash_commands()),
    );
}

/// `_lode/diagnostics`: a notification, so nothing is answered; what cannot be used is logged to
/// the log (never stdout, which carries the protocol) and dropped.
fn receive_diagnostics(state: &ConnectionState, params: &serde_json::Value) {
    let file = match ext_diagnostics::parse_params(params) {
        Ok(file) => file,
        Err(why) => {
            tracing::warn!(error = %why, "ignored a malformed {}", ext_diagnostics::METHOD);
            return;
        }
    };
    let shown = file.path.display().to_string();
    if !state
        .backend
        .push_diagnostics(file.session_id.as_deref(), file.path, file.diagnostics)
    {
        tracing::warn!(
            "ignored {} for {shown}: not a file in an open workspace (a session whose cwd is in \
             the project opens it)",
            ext_diagnostics::METHOD
        );
    }
}

fn set_mode(state: &ConnectionState, id: &SessionId, mode: &str) -> Result<SessionSummary, Error> {
    state.session(id)?;
    if !mapping::is_known_mode(mode) {
        return Err(invalid_params(format!(
            "unknown mode {mode:?}; lode's modes are ask, code and architect"
        )));
    }
    state.backend.set_mode(&id.0, mode).map_err(backend_error)?;
    state
        .update_session(&id.0, |session| session.mode = mode.to_string())
        .ok_or_else(|| SchemaError::session_not_found(id.clone()).into())
}

fn set_model(
    state: &ConnectionState,
    id: &SessionId,
    provider: &str,
) -> Result<SessionSummary, Error> {
    state.session(id)?;
    if !state
        .backend
        .models(Some(&id.0))
        .iter()
        .any(|model| model.provider == provider)
    {
        return Err(invalid_params(format!(
            "no configured provider is named {provider:?}"
        )));
    }
    state
        .backend
        .set_model(&id.0, provider)
        .map_err(backend_error)?;
    state
        .update_session(&id.0, |session| session.model = provider.to_string())
        .ok_or_else(|| SchemaError::session_not_found(id.clone()).into())
}

/// Checks the prompt, then runs the turn in a task of its own and answers when it ends. The
/// turn's token fires on `session/cancel`, on `$/cancel_request` for the prompt, and when the
/// connection drops the task (a vanished client leaves nothing running).
fn start_turn(
    state: &Arc<ConnectionState>,
    request: PromptRequest,
    responder: Responder<PromptResponse>,
    cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    let session = match state.session(&request.session_id) {
        Ok(session) => session,
        Err(error) => return responder.respond_with_error(error),
    };
    let input = match mapping::prompt_inputs(request.prompt, state.images_supported(&session)) {
        Ok(input) => input,
        Err(message) => return responder.respond_with_error(invalid_params(message)),
    };
    let cancel = CancellationToken::new();
    {
        let mut turns = state.turns.lock();
        if turns.contains_key(&session.id) {
            drop(turns);
            return responder.respond_with_error(Error::new(
                ErrorCode::INVALID_REQUEST,
                "a turn is already running in this session; cancel it first",
            ));
        }
        turns.insert(session.id.clone(), cancel.clone());
    }
    let host = Arc::new(
        AcpSessionHost::new(
            cx.clone(),
            request.session_id.clone(),
            state.client.lock().clone(),
            cancel.clone(),
        )
        .with_editor_lsp(crate::ext_lsp_handlers::editor_lsp(
            state,
            &cx,
            &request.session_id,
        )),
    );
    let state = state.clone();
    cx.spawn(async move {
        let stop_on_drop = cancel.clone().drop_guard();
        let backend = state.backend.clone();
        let session_id = session.id.clone();
        let turn_cancel = cancel.clone();
        // The turn runs on its own tokio task so a panic inside it fails this prompt only.
        let mut turn =
            tokio::spawn(
                async move { backend.prompt(&session_id, input, host, turn_cancel).await },
            );
        let request_cancelled = responder.cancellation();
        let outcome = tokio::select! {
            outcome = &mut turn => outcome,
            () = request_cancelled.cancelled() => {
                cancel.cancel();
                turn.await
            }
        };
        state.turns.lock().remove(&session.id);
        // Idle time counts from the end of the turn.
        state.update_session(&session.id, |_| {});
        let answer = match outcome {
            // Whatever a cancelled turn ran into, the client asked for `cancelled`.
            _ if cancel.is_cancelled() => Ok(PromptResponse::new(AcpStopReason::Cancelled)),
            Ok(Ok(reason)) => Ok(PromptResponse::new(mapping::stop_reason(reason))),
            Ok(Err(error)) => Err(backend_error(error)),
            Err(join_error) => Err(Error::new(
                ErrorCode::INTERNAL_ERROR,
                format!("the turn failed inside lode: {join_error}"),
            )),
        };
        stop_on_drop.disarm();
        // A client that has gone away cannot be answered; that is not the connection's failure.
        let _ = responder.respond_with_result(answer);
        Ok(())
    })
}
