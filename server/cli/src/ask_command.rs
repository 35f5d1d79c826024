//! `lode ask`: a small ACP client of lode's own HTTP transport, for editors without an ACP client
//! (Helix) and for scripts. It connects to a running `lode acp --http` (`--connect URL`, else the
//! one started in this workspace, found by its record: `crate::acp_runtime`) (WebSocket, so updates and
//! the prompt's response arrive in order), sends one prompt — plus stdin as an embedded resource
//! when stdin is not a terminal — streams the answer text to stdout and tool activity to stderr,
//! answers permission questions "no" unless `--yes-to` allows them, and remembers named sessions
//! in `<root>/.lode/ask-sessions.json` so the next call with the same `--session` continues them.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, EmbeddedResource, EmbeddedResourceResource,
    InitializeRequest, NewSessionRequest, PermissionOptionKind, PromptRequest,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    ResumeSessionRequest, SelectedPermissionOutcome, SessionNotification, SessionUpdate,
    StopReason, TextResourceContents, ToolCallContent, ToolCallStatus,
};
use agent_client_protocol::{Client, ErrorCode};
use agent_client_protocol_http::HttpClient;
use anyhow::{Context, bail};
use clap::Args;
use lode_policy::{HeadlessGrants, SubjectKind};
use serde::{Deserialize, Serialize};

use crate::commands::WorkspaceArgs;
use crate::render::say;

/// Stdin context larger than this is refused: the server refuses messages over 1 MiB.
const MAX_STDIN_BYTES: usize = 768 * 1024;

/// The URI under which stdin is attached to the prompt.
const STDIN_URI: &str = "lode-ask:stdin";

/// Options of `lode ask`.
#[derive(Debug, Args)]
pub struct AskArgs {
    /// The prompt (several words are joined with spaces). Stdin, when it is not a terminal, is
    /// attached as extra context.
    pub prompt: Vec<String>,
    /// The `lode acp --http` endpoint, e.g. http://127.0.0.1:7878/acp. Without it, the server
    /// `lode acp --http` started in this workspace runs (found by the record it keeps beside its
    /// token file, with its token).
    #[arg(long, value_name = "URL", env = "LODE_ACP_URL")]
    pub connect: Option<String>,
    /// Continue the session remembered under this name (created on first use); without it
    /// every call starts a new session.
    #[arg(long, value_name = "NAME")]
    pub session: Option<String>,
    /// Start a new session under --session NAME, forgetting the one remembered.
    #[arg(long, requires = "session")]
    pub new_session: bool,
    /// Bearer token of the server. Without it, a server on this machine (127.0.0.1, [::1],
    /// localhost) gets the token `lode acp --http` keeps in $XDG_RUNTIME_DIR/lode/acp-token (or
    /// else <config dir>/lode/acp-token).
    #[arg(
        long,
        value_name = "TOKEN",
        env = "LODE_ACP_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
    /// Allow a tool call when everything the policy judged matches one of these globs
    /// (repeatable), as in `lode run`: the resolved workspace-relative path of each edited file
    /// (`src/**`), each simple command of a command line (`cargo test*`), or an MCP tool's name.
    /// Never the title; never a call only a person may approve. Everything else is denied.
    #[arg(long, value_name = "PATTERN")]
    pub yes_to: Vec<String>,
}

/// Named sessions, per server endpoint: `{"servers": {URL: {NAME: SESSION_ID}}}`.
#[derive(Debug, Default, Serialize, Deserialize)]
struct SessionBook {
    #[serde(default)]
    servers: BTreeMap<String, BTreeMap<String, String>>,
}

impl SessionBook {
    fn path(root: &Path) -> PathBuf {
        root.join(".lode/ask-sessions.json")
    }

    fn load(root: &Path) -> anyhow::Result<SessionBook> {
        let path = Self::path(root);
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .with_context(|| format!("{} is not a valid session file", path.display())),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                Ok(SessionBook::default())
            }
            Err(error) => Err(error).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    /// Writes through a temporary file and a rename, so a crash never leaves half a file.
    fn save(&self, root: &Path) -> anyhow::Result<()> {
        let path = Self::path(root);
        let dir = root.join(".lode");
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let temporary = dir.join(format!("ask-sessions.json.{}.tmp", std::process::id()));
        std::fs::write(&temporary, serde_json::to_string_pretty(self)? + "\n")
            .with_context(|| format!("cannot write {}", temporary.display()))?;
        std::fs::rename(&temporary, &path)
            .with_context(|| format!("cannot write {}", path.display()))
    }

    fn get(&self, server: &str, name: &str) -> Option<&String> {
        self.servers.get(server)?.get(name)
    }

    fn insert(&mut self, server: &str, name: &str, id: String) {
        self.servers
            .entry(server.to_string())
            .or_default()
            .insert(name.to_string(), id);
    }
}

/// What lode's server says it judged, under `_meta.lode` of a permission question (see
/// `lode_acp::mapping::permission_meta`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Judged {
    must_ask: bool,
    reason: String,
    subjects: Vec<String>,
    subject_kind: SubjectKind,
}

impl Judged {
    fn of(question: &RequestPermissionRequest) -> Judged {
        question
            .meta
            .as_ref()
            .and_then(|meta| meta.get("lode"))
            .and_then(|value| serde_json::from_value(value.clone()).ok())
            .unwrap_or_default()
    }
}

/// How permission questions are answered: allowed only when every subject the server's policy
/// judged (resolved paths, parsed commands, the tool's name) matches a `--yes-to` glob, and never
/// a must-ask. Titles are never matched: they carry what the model wrote.
struct Policy {
    allowed: HeadlessGrants,
}

impl Policy {
    fn new(patterns: &[String]) -> anyhow::Result<Policy> {
        Ok(Policy {
            allowed: HeadlessGrants::new(patterns).context("bad --yes-to pattern")?,
        })
    }

    fn answer(&self, question: &RequestPermissionRequest) -> RequestPermissionOutcome {
        let title = question.tool_call.fields.title.clone().unwrap_or_default();
        let judged = Judged::of(question);
        let wanted = if judged.must_ask {
            say!(
                "lode: refused {title}: only a person can approve this ({}); --yes-to cannot",
                judged.reason
            );
            PermissionOptionKind::RejectOnce
        } else if self
            .allowed
            .approve(false, judged.subject_kind, &judged.subjects)
        {
            PermissionOptionKind::AllowOnce
        } else {
            // lode names its "always" options "Always allow <pattern>": that pattern is what a
            // `--yes-to` would need for commands and paths.
            let pattern = match judged.subject_kind {
                SubjectKind::Tool => judged.subjects.first().cloned().unwrap_or_default(),
                SubjectKind::Path | SubjectKind::Command => question
                    .options
                    .iter()
                    .find(|option| option.kind == PermissionOptionKind::AllowAlways)
                    .and_then(|option| option.name.strip_prefix("Always allow "))
                    .unwrap_or_default()
                    .to_string(),
            };
            say!("lode: denied {title} (not allowed; rerun with --yes-to '{pattern}' to allow)");
            PermissionOptionKind::RejectOnce
        };
        match question.options.iter().find(|option| option.kind == wanted) {
            Some(option) => RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                option.option_id.clone(),
            )),
            None => RequestPermissionOutcome::Cancelled,
        }
    }
}

/// Prints one `session/update`: answer text on stdout, tool activity as short lines on stderr.
fn render(update: &SessionUpdate, at_line_start: &mut bool) {
    let finish_line = |at_line_start: &mut bool| {
        if !*at_line_start {
            println!();
            *at_line_start = true;
        }
    };
    match update {
        SessionUpdate::AgentMessageChunk(chunk) => {
            if let ContentBlock::Text(text) = &chunk.content {
                print!("{}", text.text);
                let _ = std::io::stdout().flush();
                *at_line_start = text.text.ends_with('\n');
            }
        }
        SessionUpdate::ToolCall(call) => {
            finish_line(at_line_start);
            say!("● {}", call.title);
        }
        SessionUpdate::ToolCallUpdate(update) => match update.fields.status {
            Some(ToolCallStatus::Completed) => {
                for content in update.fields.content.iter().flatten() {
                    if let ToolCallContent::Diff(diff) = content {
                        say!("  ⎿ edited {}", diff.path.display());
                    }
                }
            }
            Some(ToolCallStatus::Failed) => {
                let message = update
                    .fields
                    .content
                    .iter()
                    .flatten()
                    .find_map(|content| match content {
                        ToolCallContent::Content(block) => match &block.content {
                            ContentBlock::Text(text) => text
                                .text
                                .lines()
                                .find(|line| !line.trim().is_empty() && !line.starts_with('<'))
                                .map(str::to_owned),
                            _ => None,
                        },
                        _ => None,
                    })
                    .unwrap_or_else(|| "failed".to_string());
                say!("  ⎿ ✗ {message}");
            }
            _ => {}
        },
        _ => {}
    }
}

/// The endpoint as given, with `/acp` added when the path is empty.
fn endpoint(url: &str) -> anyhow::Result<String> {
    let trimmed = url.trim_end_matches('/');
    let Some((scheme, rest)) = trimmed.split_once("://") else {
        bail!("--connect {url:?} is not a URL (expected http://HOST:PORT/acp)");
    };
    if !matches!(scheme, "http" | "https") {
        bail!("--connect {url:?}: expected an http:// or https:// URL");
    }
    Ok(if rest.contains('/') {
        format!("{scheme}://{rest}")
    } else {
        format!("{scheme}://{rest}/acp")
    })
}

/// The running `lode acp --http` of the workspace at `root`, from its record
/// (`crate::acp_runtime`), with the record's path; an error saying how to start one when none
/// runs, or why its record is not trusted.
fn workspace_server(root: &Path) -> anyhow::Result<(crate::acp_runtime::ServerRecord, PathBuf)> {
    let start = format!(
        "start one in {} with `lode acp --http` (or pass --connect URL / set $LODE_ACP_URL)",
        root.display()
    );
    let Some(dir) = crate::acp_runtime::runtime_dir() else {
        bail!("no `lode acp --http` server is known for this workspace: {start}");
    };
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    match crate::acp_runtime::find_server(&dir, &root)? {
        crate::acp_runtime::Lookup::Running { record, path } => Ok((record, path)),
        crate::acp_runtime::Lookup::None { stale } => {
            if let Some(stale) = stale {
                say!(
                    "lode: removed {}: the server it named has exited",
                    stale.display()
                );
            }
            bail!("no `lode acp --http` server is running for this workspace: {start}")
        }
    }
}

/// The token to send and where it came from.
struct Token {
    value: String,
    /// The token file it was read from; `None` when given with --token / $LODE_ACP_TOKEN.
    file: Option<PathBuf>,
}

/// `--token` / `$LODE_ACP_TOKEN`; else, for a server on this machine, the token file that
/// `lode acp --http` keeps. Never sends the local token to another host.
fn resolve_token(given: Option<String>, endpoint: &str) -> anyhow::Result<Option<Token>> {
    if let Some(value) = given {
        return Ok(Some(Token { value, file: None }));
    }
    if !is_local(endpoint) {
        return Ok(None);
    }
    let Some(path) = lode_acp::token_file::default_token_path() else {
        return Ok(None);
    };
    Ok(lode_acp::token_file::read_token(&path)?.map(|value| Token {
        value,
        file: Some(path),
    }))
}

/// Whether the endpoint's host is this machine: a loopback address or `localhost`.
fn is_local(endpoint: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(endpoint) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Checks that the server answers and accepts the token, so failures read clearly.
async fn preflight(endpoint: &str, token: Option<&Token>) -> anyhow::Result<()> {
    let http = reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(10))
        .build()
        .context("cannot build the HTTP client")?;
    let base = endpoint.rsplit_once('/').map_or(endpoint, |(base, _)| base);
    let health = http
        .get(format!("{base}/health"))
        .send()
        .await
        .map_err(|error| {
            anyhow::anyhow!(
                "cannot reach lode at {endpoint} ({}); is `lode acp --http` running there?",
                root_cause(&error)
            )
        })?;
    if !health.status().is_success() {
        let status = health.status();
        let body = health.text().await.unwrap_or_default();
        bail!(
            "{base}/health answered {status}{}: is this a `lode acp --http` server?",
            explained(&body)
        );
    }
    let mut probe = http.get(endpoint);
    if let Some(token) = token {
        probe = probe.bearer_auth(&token.value);
    }
    let probe = probe
        .send()
        .await
        .with_context(|| format!("cannot reach lode at {endpoint}"))?;
    let status = probe.status();
    if status == reqwest::StatusCode::UNAUTHORIZED {
        match token {
            Some(Token { file: None, .. }) => bail!(
                "the server at {endpoint} refused the token (401): check --token / $LODE_ACP_TOKEN"
            ),
            Some(Token {
                file: Some(path), ..
            }) => bail!(
                "the server at {endpoint} refused the token in {} (401): if it was started \
                 with --token, pass the same --token or set $LODE_ACP_TOKEN",
                path.display()
            ),
            None => bail!(
                "the server at {endpoint} requires a token (401): pass --token or set $LODE_ACP_TOKEN"
            ),
        }
    }
    if matches!(
        status,
        reqwest::StatusCode::FORBIDDEN | reqwest::StatusCode::MISDIRECTED_REQUEST
    ) {
        let body = probe.text().await.unwrap_or_default();
        bail!(
            "the server at {endpoint} refused the request ({status}){}",
            explained(&body)
        );
    }
    Ok(())
}

/// `: BODY` for a short plain-text error body, else nothing.
fn explained(body: &str) -> String {
    let body = body.trim();
    if body.is_empty() || body.len() > 500 {
        String::new()
    } else {
        format!(": {body}")
    }
}

fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// Reads stdin when it is not a terminal; `None` when there is nothing.
fn stdin_context() -> anyhow::Result<Option<String>> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    stdin
        .lock()
        .take(MAX_STDIN_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .context("cannot read stdin")?;
    if bytes.len() > MAX_STDIN_BYTES {
        bail!(
            "stdin is larger than {} KiB; pass a smaller selection",
            MAX_STDIN_BYTES / 1024
        );
    }
    let text = String::from_utf8(bytes).context("stdin is not UTF-8 text")?;
    Ok((!text.trim().is_empty()).then_some(text))
}

/// `lode ask`.
pub fn run_ask(workspace: &WorkspaceArgs, args: AskArgs) -> anyhow::Result<ExitCode> {
    let root = crate::commands::resolve_root(workspace, None)?;
    let (endpoint, recorded_token) = match args.connect.as_deref() {
        Some(url) => (endpoint(url)?, None),
        None => {
            let (record, path) = workspace_server(&root)?;
            (endpoint(&record.url)?, Some((record.token, path)))
        }
    };
    let policy = Arc::new(Policy::new(&args.yes_to)?);
    let mut prompt: Vec<ContentBlock> = Vec::new();
    let text = args.prompt.join(" ");
    if !text.trim().is_empty() {
        prompt.push(text.into());
    }
    if let Some(context) = stdin_context()? {
        let mut resource = TextResourceContents::new(context, STDIN_URI);
        resource.mime_type = Some("text/plain".to_string());
        prompt.push(ContentBlock::Resource(EmbeddedResource::new(
            EmbeddedResourceResource::TextResourceContents(resource),
        )));
    }
    if prompt.is_empty() {
        bail!("nothing to ask: give a prompt or pipe text on stdin");
    }
    let book = SessionBook::load(&root)?;
    let remembered = match (&args.session, args.new_session) {
        (Some(name), false) => book.get(&endpoint, name).cloned(),
        _ => None,
    };

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let token = match (args.token.clone(), recorded_token) {
        (None, Some((value, path))) => Some(Token {
            value,
            file: Some(path),
        }),
        (given, _) => resolve_token(given, &endpoint)?,
    };
    let session_name = args.session.clone();
    let session_root = root.clone();
    let (endpoint, (session_id, stop)) = runtime.block_on(async move {
        preflight(&endpoint, token.as_ref()).await?;
        // WebSocket: one ordered stream, so every update is printed before the response lands.
        let ws_endpoint = endpoint.replacen("http", "ws", 1);
        let mut builder = HttpClient::builder_with_endpoint(&ws_endpoint);
        if let Some(token) = &token {
            let value = reqwest::header::HeaderValue::from_str(&format!("Bearer {}", token.value))
                .context("the token contains characters not allowed in a header")?;
            builder = builder.configure_http(move |http| {
                let mut headers = reqwest::header::HeaderMap::new();
                headers.insert(reqwest::header::AUTHORIZATION, value);
                http.default_headers(headers)
            });
        }
        let transport = builder.build().context("cannot set up the ACP client")?;
        let outcome = converse(
            transport,
            session_root,
            prompt,
            remembered,
            session_name,
            policy,
            &endpoint,
        )
        .await?;
        anyhow::Ok((endpoint, outcome))
    })?;
    if let Some(name) = &args.session {
        // Re-read: another `lode ask` may have saved a different name meanwhile.
        let mut book = SessionBook::load(&root)?;
        book.insert(&endpoint, name, session_id);
        book.save(&root)?;
    }
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    Ok(match stop {
        StopReason::EndTurn => ExitCode::SUCCESS,
        other => {
            say!("lode: the turn ended: {}", stop_reason_text(other));
            ExitCode::from(crate::agent_cli::EXIT_TURN_INCOMPLETE)
        }
    })
}

fn stop_reason_text(stop: StopReason) -> &'static str {
    match stop {
        StopReason::EndTurn => "finished",
        StopReason::MaxTokens => "the model hit its output limit",
        StopReason::MaxTurnRequests => "the tool-iteration limit was reached",
        StopReason::Refusal => "the model refused",
        StopReason::Cancelled => "cancelled",
        _ => "stopped",
    }
}

/// One ACP exchange: initialize, resume or create the session, prompt; Ctrl-C sends
/// `session/cancel`. Returns the session id and the stop reason.
async fn converse(
    transport: HttpClient,
    root: PathBuf,
    prompt: Vec<ContentBlock>,
    remembered: Option<String>,
    session_name: Option<String>,
    policy: Arc<Policy>,
    endpoint: &str,
) -> anyhow::Result<(String, StopReason)> {
    let at_line_start = Arc::new(parking_lot::Mutex::new(true));
    let printer = at_line_start.clone();
    let outcome = Client
        .v1()
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                let mut at_start = printer.lock();
                render(&notification.update, &mut at_start);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |question: RequestPermissionRequest,
                        responder: Responder<RequestPermissionResponse>,
                        _cx| {
                responder.respond(RequestPermissionResponse::new(policy.answer(&question)))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let session_id = match &remembered {
                Some(id) => {
                    match cx
                        .send_request(ResumeSessionRequest::new(id.clone(), root.clone()))
                        .block_task()
                        .await
                    {
                        Ok(_) => Ok(id.clone()),
                        Err(error) if error.code == ErrorCode::RESOURCE_NOT_FOUND => {
                            Err(format!(
                                "the server does not know session {:?} (id {id}); start it over with --new-session",
                                session_name.as_deref().unwrap_or_default()
                            ))
                        }
                        Err(error) => Err(format!("cannot resume session {id}: {}", error.message)),
                    }
                }
                None => {
                    let created = cx
                        .send_request(NewSessionRequest::new(root.clone()))
                        .block_task()
                        .await?;
                    Ok(created.session_id.0.to_string())
                }
            };
            let session_id = match session_id {
                Ok(id) => id,
                Err(message) => return Ok(Err(message)),
            };
            let turn = cx
                .send_request(PromptRequest::new(session_id.clone(), prompt))
                .block_task();
            tokio::pin!(turn);
            let response = tokio::select! {
                response = &mut turn => response?,
                _ = tokio::signal::ctrl_c() => {
                    cx.send_notification(CancelNotification::new(session_id.clone()))?;
                    turn.await?
                }
            };
            Ok(Ok((session_id, response.stop_reason)))
        })
        .await;
    {
        let mut at_start = at_line_start.lock();
        if !*at_start {
            println!();
            *at_start = true;
        }
    }
    match outcome {
        Ok(Ok(done)) => Ok(done),
        Ok(Err(message)) => bail!("{message}"),
        Err(error) => bail!("the ACP exchange with {endpoint} failed: {}", error.message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        PermissionOption, ToolCallUpdate, ToolCallUpdateFields,
    };

    #[test]
    fn endpoints_get_acp_only_when_the_path_is_empty() {
        assert_eq!(
            endpoint("http://127.0.0.1:7878").unwrap(),
            "http://127.0.0.1:7878/acp"
        );
        assert_eq!(
            endpoint("http://127.0.0.1:7878/").unwrap(),
            "http://127.0.0.1:7878/acp"
        );
        assert_eq!(
            endpoint("https://host/lode/acp").unwrap(),
            "https://host/lode/acp"
        );
        assert!(endpoint("127.0.0.1:7878").is_err());
        assert!(endpoint("ftp://host/acp").is_err());
    }

    #[test]
    fn only_this_machine_gets_the_local_token() {
        for local in [
            "http://127.0.0.1:7878/acp",
            "http://127.1.2.3:7878/acp",
            "http://localhost:7878/acp",
            "http://LocalHost:7878/acp",
            "http://[::1]:7878/acp",
        ] {
            assert!(is_local(local), "{local}");
        }
        for remote in [
            "http://192.0.2.7:7878/acp",
            "http://localhost.example:7878/acp",
            "http://127.0.0.1.nip.io:7878/acp",
            "https://lode.example/acp",
            "not a url",
        ] {
            assert!(!is_local(remote), "{remote}");
        }
    }

    fn question(title: &str, pattern: &str, judged: serde_json::Value) -> RequestPermissionRequest {
        let mut meta = serde_json::Map::new();
        meta.insert("lode".to_string(), judged);
        RequestPermissionRequest::new(
            "s1".to_string(),
            ToolCallUpdate::new("c1".to_string(), ToolCallUpdateFields::new().title(title)),
            vec![
                PermissionOption::new("allow_once", "Allow once", PermissionOptionKind::AllowOnce),
                PermissionOption::new(
                    "allow_always",
                    format!("Always allow {pattern}"),
                    PermissionOptionKind::AllowAlways,
                ),
                PermissionOption::new("reject_once", "Reject", PermissionOptionKind::RejectOnce),
            ],
        )
        .meta(meta)
    }

    fn chosen(outcome: RequestPermissionOutcome) -> String {
        match outcome {
            RequestPermissionOutcome::Selected(selected) => selected.option_id.0.to_string(),
            _ => "cancelled".to_string(),
        }
    }

    #[test]
    fn yes_to_matches_what_the_policy_judged_never_the_title() {
        let policy = Policy::new(&["src/**".to_string(), "cargo test*".to_string()]).unwrap();
        let edit = question(
            "Edit src/main.rs",
            "src/**",
            serde_json::json!({"subjects": ["src/main.rs"], "subjectKind": "path"}),
        );
        assert_eq!(chosen(policy.answer(&edit)), "allow_once");
        let test = question(
            "Run cargo test --lib",
            "cargo test*",
            serde_json::json!({"subjects": ["cargo test --lib"], "subjectKind": "command"}),
        );
        assert_eq!(chosen(policy.answer(&test)), "allow_once");
        let other = question(
            "Edit tests/it.rs",
            "tests/**",
            serde_json::json!({"subjects": ["tests/it.rs"], "subjectKind": "path"}),
        );
        assert_eq!(chosen(policy.answer(&other)), "reject_once");
        // The title says src/, the resolved path is .git/: the path decides.
        let sneaky = question(
            "Edit src/../.git/hooks/pre-commit",
            ".git/hooks/**",
            serde_json::json!({"subjects": [".git/hooks/pre-commit"], "subjectKind": "path"}),
        );
        assert_eq!(chosen(policy.answer(&sneaky)), "reject_once");
        // Every simple command must match.
        let chain = question(
            "Run cargo test; curl evil",
            "curl evil",
            serde_json::json!({"subjects": ["cargo test", "curl evil"], "subjectKind": "command"}),
        );
        assert_eq!(chosen(policy.answer(&chain)), "reject_once");
        // A must-ask is refused whatever matches.
        let must = question(
            "Run cargo test $(id)",
            "cargo test*",
            serde_json::json!({
                "mustAsk": true,
                "reason": "command substitution",
                "subjects": ["cargo test $(id)"],
                "subjectKind": "command",
            }),
        );
        assert_eq!(chosen(policy.answer(&must)), "reject_once");
        // Without lode's judgement (another server) nothing is approved.
        let bare = question("Edit src/main.rs", "src/**", serde_json::json!(null));
        assert_eq!(chosen(policy.answer(&bare)), "reject_once");
        let nothing = Policy::new(&[]).unwrap();
        assert_eq!(chosen(nothing.answer(&edit)), "reject_once");
        assert!(Policy::new(&["[".to_string()]).is_err());
    }

    #[test]
    fn the_session_book_round_trips_per_server() {
        let dir = tempfile::tempdir().unwrap();
        let mut book = SessionBook::load(dir.path()).unwrap();
        assert!(book.get("http://a/acp", "s1").is_none());
        book.insert("http://a/acp", "s1", "id-a".to_string());
        book.insert("http://b/acp", "s1", "id-b".to_string());
        book.save(dir.path()).unwrap();
        let loaded = SessionBook::load(dir.path()).unwrap();
        assert_eq!(loaded.get("http://a/acp", "s1").unwrap(), "id-a");
        assert_eq!(loaded.get("http://b/acp", "s1").unwrap(), "id-b");
        std::fs::write(dir.path().join(".lode/ask-sessions.json"), "{not json").unwrap();
        let error = SessionBook::load(dir.path()).unwrap_err().to_string();
        assert!(error.contains("not a valid session file"), "{error}");
    }
}
