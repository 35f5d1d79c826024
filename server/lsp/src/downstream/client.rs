//! An LSP client for one downstream language server (pyright, rust-analyzer, ...): started over
//! stdio, initialized for the workspace, told about the files whose diagnostics are wanted, and
//! listened to for `textDocument/publishDiagnostics` until they settle.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::io::BufReader;
use tokio::process::{Child, ChildStdin};
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;
use tower_lsp_server::UriExt;
use tower_lsp_server::lsp_types::{
    self, ClientCapabilities, DiagnosticSeverity, InitializeParams, NumberOrString,
    PublishDiagnosticsClientCapabilities, PublishDiagnosticsParams, TextDocumentClientCapabilities,
    Uri, WindowClientCapabilities, WorkspaceClientCapabilities, WorkspaceFolder,
};

use super::{Diagnostic, DiagnosticsError, Severity, language_id, sort_diagnostics};
use crate::framing::{FRAMING, Frame};

/// Largest message accepted from a downstream server.
const MAX_INCOMING_BYTES: usize = 256 * 1024 * 1024;

/// Timing of a downstream server.
#[derive(Clone, Copy, Debug)]
pub struct ClientSettings {
    /// Diagnostics count as settled after this long without a new publish for the files.
    pub settle: Duration,
    /// The longest a `diagnostics_for` call waits for a first publish.
    pub timeout: Duration,
    /// The longest `initialize` may take.
    pub initialize_timeout: Duration,
}

impl Default for ClientSettings {
    fn default() -> Self {
        ClientSettings {
            settle: Duration::from_millis(400),
            timeout: Duration::from_secs(30),
            initialize_timeout: Duration::from_secs(60),
        }
    }
}

/// The latest diagnostics a server published for one file.
#[derive(Clone, Debug)]
struct Published {
    diagnostics: Vec<lsp_types::Diagnostic>,
    version: Option<i32>,
    /// Increases with every publish the client receives (for any file).
    sequence: u64,
    at: Instant,
}

#[derive(Default)]
struct Shared {
    pending: Mutex<HashMap<i64, oneshot::Sender<Result<Value, String>>>>,
    published: Mutex<HashMap<PathBuf, Published>>,
    sequence: Mutex<u64>,
    publishes: Notify,
    exited: AtomicBool,
}

/// A file as the server was last told about it.
struct OpenFile {
    version: i32,
    text: String,
}

/// A running downstream language server.
pub struct LanguageServerClient {
    command: String,
    root: PathBuf,
    settings: ClientSettings,
    stdin: Arc<tokio::sync::Mutex<ChildStdin>>,
    child: tokio::sync::Mutex<Child>,
    shared: Arc<Shared>,
    next_id: AtomicI64,
    open: tokio::sync::Mutex<HashMap<PathBuf, OpenFile>>,
    /// Whether the server has published diagnostics once (see [`Self::warm_up`]).
    warm: AtomicBool,
    /// The `capabilities` of the server's `initialize` answer.
    capabilities: std::sync::OnceLock<Value>,
}

impl LanguageServerClient {
    /// Starts `program args...` in `root` and initializes it for that workspace.
    pub async fn start(
        program: &str,
        args: &[String],
        root: &Path,
        settings: ClientSettings,
        confinement: super::Confinement<'_>,
    ) -> Result<LanguageServerClient, DiagnosticsError> {
        let command = std::iter::once(program.to_string())
            .chain(args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        let root = std::fs::canonicalize(root).map_err(|source| DiagnosticsError::Spawn {
            command: command.clone(),
            source,
        })?;
        let arguments: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut child = confinement
            .command(program, &arguments)
            .current_dir(&root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // Its stderr goes to the language-server log, never to lode's own stderr (the
            // user's terminal, the editor's log): see `server_log`.
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| DiagnosticsError::Spawn {
                command: command.clone(),
                source,
            })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(DiagnosticsError::Protocol {
                command,
                message: "no stdio pipes".into(),
            });
        };
        let last_words = super::server_log::LastWords::default();
        let stderr_done = tokio::spawn(super::server_log::drain(
            stderr,
            command.clone(),
            last_words.clone(),
        ));
        let stdin = Arc::new(tokio::sync::Mutex::new(stdin));
        let shared = Arc::new(Shared::default());
        tokio::spawn(read_loop(
            BufReader::new(stdout),
            stdin.clone(),
            shared.clone(),
            root.clone(),
        ));
        let client = LanguageServerClient {
            command,
            root,
            settings,
            stdin,
            child: tokio::sync::Mutex::new(child),
            shared,
            next_id: AtomicI64::new(1),
            open: tokio::sync::Mutex::default(),
            warm: AtomicBool::new(false),
            capabilities: std::sync::OnceLock::new(),
        };
        if let Err(error) = client.initialize().await {
            // A server that dies before it answers (a rustup proxy without its component) says
            // why on its stderr: that goes into the one notice, not line by line.
            let _ = tokio::time::timeout(Duration::from_secs(2), stderr_done).await;
            let said = last_words.summary();
            if said.is_empty() {
                return Err(error);
            }
            if let Some(missing) = super::server_log::missing_rustup_component(&said, program) {
                return Err(DiagnosticsError::NotInstalled(missing));
            }
            let log = super::server_log::log_path()
                .map(|path| format!(" (its output: {})", path.display()))
                .unwrap_or_default();
            return Err(DiagnosticsError::Protocol {
                command: client.command.clone(),
                message: format!("{error}; it said: {said}{log}"),
            });
        }
        Ok(client)
    }

    /// The command line the server was started with.
    pub fn command(&self) -> &str {
        &self.command
    }

    async fn initialize(&self) -> Result<(), DiagnosticsError> {
        let root_uri = Uri::from_file_path(&self.root)
            .ok_or_else(|| self.protocol_error("the root is not a file path"))?;
        let name = self
            .root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        #[allow(deprecated)] // root_uri and root_path are still what some servers read.
        let params = InitializeParams {
            // No process id: servers built on vscode-languageserver (pyright, the TypeScript
            // server) poll it with `kill(pid, 0)` and exit when that fails, and the sandbox's
            // signal scoping makes it fail, so they died a few seconds in. The server ends
            // with its stdin instead, and is killed when its client is dropped.
            process_id: None,
            root_uri: Some(root_uri.clone()),
            workspace_folders: Some(vec![WorkspaceFolder {
                uri: root_uri,
                name,
            }]),
            capabilities: ClientCapabilities {
                text_document: Some(TextDocumentClientCapabilities {
                    publish_diagnostics: Some(PublishDiagnosticsClientCapabilities {
                        related_information: Some(false),
                        version_support: Some(true),
                        ..PublishDiagnosticsClientCapabilities::default()
                    }),
                    // The agent's `rename` asks `prepareRename` first, and its
                    // `call_hierarchy` the call hierarchy.
                    rename: Some(lsp_types::RenameClientCapabilities {
                        prepare_support: Some(true),
                        ..lsp_types::RenameClientCapabilities::default()
                    }),
                    call_hierarchy: Some(lsp_types::CallHierarchyClientCapabilities::default()),
                    ..TextDocumentClientCapabilities::default()
                }),
                workspace: Some(WorkspaceClientCapabilities {
                    configuration: Some(true),
                    workspace_folders: Some(true),
                    ..WorkspaceClientCapabilities::default()
                }),
                window: Some(WindowClientCapabilities {
                    work_done_progress: Some(false),
                    ..WindowClientCapabilities::default()
                }),
                ..ClientCapabilities::default()
            },
            client_info: Some(lsp_types::ClientInfo {
                name: "lode".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            ..InitializeParams::default()
        };
        let params = serde_json::to_value(params).map_err(|e| self.protocol_error(e))?;
        let answer = self
            .request("initialize", params, self.settings.initialize_timeout)
            .await?;
        let capabilities = answer.get("capabilities").cloned().unwrap_or(Value::Null);
        let _ = self.capabilities.set(capabilities);
        self.notify("initialized", json!({})).await
    }

    /// The server's capability `name` (`renameProvider`, `callHierarchyProvider`) as it
    /// answered `initialize`; `None` when it did not announce it (or announced `false`).
    pub fn capability(&self, name: &str) -> Option<&Value> {
        self.capabilities
            .get()
            .and_then(|capabilities| capabilities.get(name))
            .filter(|value| !value.is_null() && **value != Value::Bool(false))
    }

    /// How long a request waits for its answer.
    pub fn timeout(&self) -> Duration {
        self.settings.timeout
    }

    /// The text the server was last sent for `path` (canonical), if it has the file open.
    pub async fn sent_text(&self, path: &Path) -> Option<String> {
        self.open
            .lock()
            .await
            .get(path)
            .map(|file| file.text.clone())
    }

    fn protocol_error(&self, message: impl std::fmt::Display) -> DiagnosticsError {
        DiagnosticsError::Protocol {
            command: self.command.clone(),
            message: message.to_string(),
        }
    }

    /// Sends a request and waits (bounded) for its answer.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, DiagnosticsError> {
        if self.shared.exited.load(Ordering::SeqCst) {
            return Err(DiagnosticsError::Exited {
                command: self.command.clone(),
            });
        }
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (answer, answered) = oneshot::channel();
        self.shared.pending.lock().insert(id, answer);
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        self.send(&message).await?;
        match tokio::time::timeout(timeout, answered).await {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(error))) => Err(self.protocol_error(format!("{method}: {error}"))),
            Ok(Err(_)) => Err(DiagnosticsError::Exited {
                command: self.command.clone(),
            }),
            Err(_) => {
                self.shared.pending.lock().remove(&id);
                Err(DiagnosticsError::Timeout {
                    command: self.command.clone(),
                    method: method.to_string(),
                    seconds: timeout.as_secs(),
                })
            }
        }
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), DiagnosticsError> {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }))
            .await
    }

    async fn send(&self, message: &Value) -> Result<(), DiagnosticsError> {
        let body = message.to_string();
        let mut stdin = self.stdin.lock().await;
        FRAMING
            .write(&mut *stdin, body.as_bytes())
            .await
            .map_err(|_| DiagnosticsError::Exited {
                command: self.command.clone(),
            })
    }

    /// The server's diagnostics for these files as they are now — their text in `texts` (by
    /// canonical path) when given, else on disk: files it has not seen are opened, changed
    /// ones are sent again, then the client waits until every such file has a publish newer
    /// than the change and no publish came for the settle interval (or the timeout passed:
    /// then what has arrived is the answer).
    pub async fn diagnostics_for(
        &self,
        paths: &[PathBuf],
        texts: &HashMap<PathBuf, String>,
    ) -> Result<Vec<(PathBuf, Vec<Diagnostic>)>, DiagnosticsError> {
        let mut waiting: Vec<(PathBuf, u64, i32)> = Vec::new();
        let mut files = Vec::new();
        {
            let mut open = self.open.lock().await;
            for path in paths {
                let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
                let text = match texts
                    .get(&path)
                    .map(|text| Ok(text.clone()))
                    .unwrap_or_else(|| {
                        std::fs::read(&path)
                            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                    }) {
                    Ok(text) => text,
                    Err(_) => {
                        // Gone: the server should forget it too.
                        if open.remove(&path).is_some()
                            && let Some(uri) = Uri::from_file_path(&path)
                        {
                            self.notify(
                                "textDocument/didClose",
                                json!({ "textDocument": { "uri": uri } }),
                            )
                            .await?;
                        }
                        self.shared.published.lock().remove(&path);
                        continue;
                    }
                };
                let Some(uri) = Uri::from_file_path(&path) else {
                    continue;
                };
                let sequence_now = *self.shared.sequence.lock();
                match self.send_text(&mut open, &path, &uri, text).await? {
                    Some(version) => waiting.push((path.clone(), sequence_now, version)),
                    None => {
                        if !self.shared.published.lock().contains_key(&path)
                            && let Some(file) = open.get(&path)
                        {
                            waiting.push((path.clone(), 0, file.version));
                        }
                    }
                }
                files.push(path);
            }
        }
        self.wait_for_settled(&waiting).await;
        // A server that went away mid-check leaves what it published for the old text: that
        // must not read as the answer for the new one.
        if self.has_exited() {
            return Err(DiagnosticsError::Exited {
                command: self.command.clone(),
            });
        }
        let published = self.shared.published.lock();
        Ok(files
            .into_iter()
            .map(|path| {
                let mut diagnostics: Vec<Diagnostic> = published
                    .get(&path)
                    .map(|p| p.diagnostics.iter().map(convert).collect())
                    .unwrap_or_default();
                sort_diagnostics(&mut diagnostics);
                (path, diagnostics)
            })
            .collect())
    }

    /// Tells the server `path`'s text: opens a file it has not seen, changes one whose text
    /// differs. The version sent, or `None` when the server already has this text.
    async fn send_text(
        &self,
        open: &mut HashMap<PathBuf, OpenFile>,
        path: &Path,
        uri: &Uri,
        text: String,
    ) -> Result<Option<i32>, DiagnosticsError> {
        match open.get_mut(path) {
            None => {
                let language = language_id(path).unwrap_or("plaintext");
                self.notify(
                    "textDocument/didOpen",
                    json!({ "textDocument": {
                        "uri": uri, "languageId": language, "version": 1, "text": text,
                    }}),
                )
                .await?;
                open.insert(path.to_path_buf(), OpenFile { version: 1, text });
                Ok(Some(1))
            }
            Some(file) if file.text != text => {
                file.version += 1;
                self.notify(
                    "textDocument/didChange",
                    json!({
                        "textDocument": { "uri": uri, "version": file.version },
                        "contentChanges": [{ "text": text }],
                    }),
                )
                .await?;
                file.text = text;
                Ok(Some(file.version))
            }
            Some(_) => Ok(None),
        }
    }

    /// The first time only: waits until the server has published diagnostics for `path` (with
    /// `text`), the sign that it has loaded the workspace. Before that, pyright answers
    /// `references` from the open files alone.
    pub async fn warm_up(&self, path: &Path, text: &str) -> Result<(), DiagnosticsError> {
        if self.warm.load(Ordering::SeqCst) {
            return Ok(());
        }
        let texts = HashMap::from([(path.to_path_buf(), text.to_owned())]);
        self.diagnostics_for(&[path.to_path_buf()], &texts).await?;
        self.warm.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Asks `method` (`textDocument/hover`, `…/definition`, `…/references`) at a 0-based
    /// `line` and UTF-16 `character` of `path` (canonical), after telling the server the file's
    /// current text (`text`). `extra` joins the position parameters (`context` for references).
    /// Answers with the server's result as it is.
    pub async fn position_request(
        &self,
        method: &str,
        path: &Path,
        text: String,
        line: u32,
        character: u32,
        extra: Option<(&str, Value)>,
    ) -> Result<Value, DiagnosticsError> {
        let uri = Uri::from_file_path(path)
            .ok_or_else(|| self.protocol_error("the file is not a file path"))?;
        {
            let mut open = self.open.lock().await;
            self.send_text(&mut open, path, &uri, text).await?;
        }
        let mut params = json!({
            "textDocument": { "uri": uri },
            "position": { "line": line, "character": character },
        });
        if let Some((key, value)) = extra {
            params[key] = value;
        }
        self.request(method, params, self.settings.timeout).await
    }

    async fn wait_for_settled(&self, waiting: &[(PathBuf, u64, i32)]) {
        if waiting.is_empty() {
            return;
        }
        let deadline = Instant::now() + self.settings.timeout;
        loop {
            // Register for the next publish before looking, so none slips between.
            let next_publish = self.shared.publishes.notified();
            tokio::pin!(next_publish);
            next_publish.as_mut().enable();
            let (all_fresh, last_at) = {
                let published = self.shared.published.lock();
                let mut all_fresh = true;
                let mut last_at: Option<Instant> = None;
                for (path, after, version) in waiting {
                    match published.get(path) {
                        Some(p)
                            if p.sequence > *after && p.version.is_none_or(|v| v >= *version) =>
                        {
                            last_at = Some(last_at.map_or(p.at, |t| t.max(p.at)));
                        }
                        _ => all_fresh = false,
                    }
                }
                (all_fresh, last_at)
            };
            let now = Instant::now();
            if now >= deadline || self.shared.exited.load(Ordering::SeqCst) {
                return;
            }
            let wake_at = match (all_fresh, last_at) {
                (true, Some(last)) => {
                    let settled_at = last + self.settings.settle;
                    if settled_at <= now {
                        return;
                    }
                    settled_at.min(deadline)
                }
                _ => deadline,
            };
            tokio::select! {
                _ = tokio::time::sleep_until(wake_at) => {}
                _ = &mut next_publish => {}
            }
        }
    }

    /// Asks the server to shut down and exit, then waits for it (killing it if it lingers).
    pub async fn shutdown(&self) {
        let _ = self
            .request("shutdown", Value::Null, Duration::from_secs(5))
            .await;
        let _ = self.notify("exit", Value::Null).await;
        let mut child = self.child.lock().await;
        if tokio::time::timeout(Duration::from_secs(5), child.wait())
            .await
            .is_err()
        {
            let _ = child.kill().await;
        }
    }

    /// Whether the server process has gone away.
    pub fn has_exited(&self) -> bool {
        self.shared.exited.load(Ordering::SeqCst)
    }
}

/// Reads the server's messages: answers, its own requests (configuration, registrations,
/// progress tokens), and diagnostics.
async fn read_loop(
    mut stdout: BufReader<tokio::process::ChildStdout>,
    stdin: Arc<tokio::sync::Mutex<ChildStdin>>,
    shared: Arc<Shared>,
    root: PathBuf,
) {
    loop {
        let body = match FRAMING.read(&mut stdout, MAX_INCOMING_BYTES).await {
            Ok(Some(Frame::Message(body))) => body,
            Ok(Some(_)) => continue,
            Ok(None) | Err(_) => break,
        };
        let Ok(message) = serde_json::from_slice::<Value>(&body) else {
            continue;
        };
        let method = message.get("method").and_then(Value::as_str);
        match (method, message.get("id")) {
            (None, Some(id)) => {
                let Some(id) = id.as_i64() else { continue };
                let Some(answer) = shared.pending.lock().remove(&id) else {
                    continue;
                };
                let result = match message.get("error") {
                    Some(error) => Err(error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("error")
                        .to_string()),
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                };
                let _ = answer.send(result);
            }
            (Some(method), Some(id)) => {
                let reply = answer_server_request(method, message.get("params"), &root);
                let response = match reply {
                    Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
                    Err(message) => json!({ "jsonrpc": "2.0", "id": id,
                        "error": { "code": -32601, "message": message } }),
                };
                let mut stdin = stdin.lock().await;
                if FRAMING
                    .write(&mut *stdin, response.to_string().as_bytes())
                    .await
                    .is_err()
                {
                    break;
                }
            }
            (Some("textDocument/publishDiagnostics"), None) => {
                let Some(params) = message
                    .get("params")
                    .cloned()
                    .and_then(|p| serde_json::from_value::<PublishDiagnosticsParams>(p).ok())
                else {
                    continue;
                };
                let Some(path) = params.uri.to_file_path() else {
                    continue;
                };
                let path = std::fs::canonicalize(&path).unwrap_or_else(|_| path.into_owned());
                let sequence = {
                    let mut sequence = shared.sequence.lock();
                    *sequence += 1;
                    *sequence
                };
                shared.published.lock().insert(
                    path,
                    Published {
                        diagnostics: params.diagnostics,
                        version: params.version,
                        sequence,
                        at: Instant::now(),
                    },
                );
                shared.publishes.notify_waiters();
            }
            _ => {}
        }
    }
    shared.exited.store(true, Ordering::SeqCst);
    // Whoever waits for an answer learns the server is gone.
    shared.pending.lock().clear();
    shared.publishes.notify_waiters();
}

/// What lode answers to a downstream server's requests.
fn answer_server_request(
    method: &str,
    params: Option<&Value>,
    root: &Path,
) -> Result<Value, String> {
    match method {
        // No settings of our own: every section gets the server's defaults.
        "workspace/configuration" => {
            let items = params
                .and_then(|p| p.get("items"))
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            Ok(Value::Array(vec![Value::Null; items]))
        }
        "workspace/workspaceFolders" => {
            let uri = Uri::from_file_path(root).map(|u| u.as_str().to_string());
            Ok(json!([{ "uri": uri, "name": root.file_name().map(|n| n.to_string_lossy()) }]))
        }
        "client/registerCapability"
        | "client/unregisterCapability"
        | "window/workDoneProgress/create"
        | "workspace/diagnostic/refresh"
        | "workspace/semanticTokens/refresh"
        | "workspace/inlayHint/refresh"
        | "workspace/codeLens/refresh" => Ok(Value::Null),
        "window/showMessageRequest" => Ok(Value::Null),
        other => Err(format!("lode does not handle {other}")),
    }
}

fn convert(diagnostic: &lsp_types::Diagnostic) -> Diagnostic {
    let severity = match diagnostic.severity {
        Some(DiagnosticSeverity::WARNING) => Severity::Warning,
        Some(DiagnosticSeverity::INFORMATION) => Severity::Information,
        Some(DiagnosticSeverity::HINT) => Severity::Hint,
        // The protocol says a missing severity is the client's call: treat it as an error.
        _ => Severity::Error,
    };
    Diagnostic {
        severity,
        line: diagnostic.range.start.line + 1,
        column: diagnostic.range.start.character + 1,
        end_line: diagnostic.range.end.line + 1,
        end_column: diagnostic.range.end.character + 1,
        message: diagnostic.message.clone(),
        code: diagnostic.code.as_ref().map(|code| match code {
            NumberOrString::Number(n) => n.to_string(),
            NumberOrString::String(s) => s.clone(),
        }),
        source: diagnostic.source.clone(),
    }
}
