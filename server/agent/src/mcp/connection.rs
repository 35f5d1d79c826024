//! One live connection to an MCP server (rmcp client): starting it (a child process over stdio,
//! or streamable HTTP), the `initialize` handshake, listing its tools, calling them, and shutting
//! it down. A child's stderr is drained into a small tail kept for error messages, so a server
//! that dies at start is reported with what it said.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    Implementation,
};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::io::AsyncReadExt;

use super::config::{DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT, McpServerConfig, McpTransport};
use super::launch::{StdioServer, server_command};

/// Bytes of a child's stderr kept for error messages.
const STDERR_TAIL_BYTES: usize = 4_096;

/// lode's side of the MCP session: it only identifies itself; it offers no sampling, roots or
/// elicitation to servers.
#[derive(Debug, Clone, Default)]
pub struct LodeClient;

impl ClientHandler for LodeClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("lode", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// Why a server could not be used or a call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    #[error("cannot start `{command}`: {message}")]
    Spawn { command: String, message: String },
    #[error("not started: {0}")]
    Refused(String),
    #[error("the handshake failed: {message}{}", stderr_suffix(.stderr))]
    Handshake { message: String, stderr: String },
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("listing its tools failed: {0}")]
    ListTools(String),
    #[error("invalid header {0:?}")]
    BadHeader(String),
    #[error("the call failed: {0}")]
    Call(String),
    #[error("the server asked for more input, which lode does not support")]
    InputRequired,
}

fn stderr_suffix(stderr: &str) -> String {
    let stderr = stderr.trim();
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; its stderr ends with: {stderr}")
    }
}

/// The last bytes a child wrote to stderr.
#[derive(Debug, Default, Clone)]
pub struct StderrTail(Arc<Mutex<Vec<u8>>>);

impl StderrTail {
    fn push(&self, bytes: &[u8]) {
        let mut tail = self.0.lock();
        tail.extend_from_slice(bytes);
        if tail.len() > STDERR_TAIL_BYTES {
            let excess = tail.len() - STDERR_TAIL_BYTES;
            tail.drain(..excess);
        }
    }

    pub fn text(&self) -> String {
        let tail = self.0.lock();
        String::from_utf8_lossy(&tail).into_owned()
    }
}

/// A connected server and the tools it offered at startup.
pub struct McpConnection {
    pub name: String,
    pub tools: Vec<rmcp::model::Tool>,
    call_timeout: Duration,
    peer: rmcp::Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, LodeClient>>>,
    stderr: StderrTail,
    /// Why a stdio server runs outside the sandbox, when it does (said to the user once).
    pub unconfined: Option<String>,
}

impl std::fmt::Debug for McpConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpConnection")
            .field("name", &self.name)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl McpConnection {
    /// Starts (or reaches) the server, runs the handshake and lists its tools, all within the
    /// server's startup timeout. `default_cwd` is the workspace root: where a stdio server
    /// runs unless it names its own `cwd`, and what `sandbox` confines it to
    /// (`super::launch`).
    pub async fn connect(
        config: &McpServerConfig,
        default_cwd: Option<&Path>,
        sandbox: &lode_sandbox::Sandbox,
    ) -> Result<Self, McpError> {
        let startup = config.startup_timeout.unwrap_or(DEFAULT_STARTUP_TIMEOUT);
        let stderr = StderrTail::default();
        let mut unconfined = None;
        let (service, stderr_reader) = match &config.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let launch = server_command(
                    StdioServer {
                        name: &config.name,
                        source: config.source,
                        command,
                        args,
                        env,
                        cwd: cwd.as_deref(),
                    },
                    sandbox,
                    default_cwd,
                )?;
                unconfined = launch.unconfined;
                let mut process = launch.command;
                process.kill_on_drop(true);
                let (transport, child_stderr) = TokioChildProcess::builder(process)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|error| McpError::Spawn {
                        command: command.clone(),
                        message: spawn_message(&error),
                    })?;
                let reader = child_stderr.map(|mut pipe| {
                    let tail = stderr.clone();
                    tokio::spawn(async move {
                        let mut buffer = [0u8; 1024];
                        while let Ok(read) = pipe.read(&mut buffer).await {
                            if read == 0 {
                                break;
                            }
                            tail.push(&buffer[..read]);
                        }
                    })
                });
                let service = tokio::time::timeout(startup, LodeClient.serve(transport)).await;
                (service.map(|r| r.map_err(|e| e.to_string())), reader)
            }
            McpTransport::Http { url, headers } => {
                let mut custom = HashMap::new();
                let mut auth_header = None;
                for (name, value) in headers {
                    if name.eq_ignore_ascii_case("authorization") {
                        // rmcp sends this one itself, as `Authorization: Bearer <token>`.
                        auth_header = Some(
                            value
                                .strip_prefix("Bearer ")
                                .unwrap_or(value.as_str())
                                .to_owned(),
                        );
                        continue;
                    }
                    let header_name = reqwest_header_name(name)?;
                    let header_value = value
                        .parse()
                        .map_err(|_| McpError::BadHeader(name.clone()))?;
                    custom.insert(header_name, header_value);
                }
                let mut transport_config =
                    StreamableHttpClientTransportConfig::with_uri(url.as_str())
                        .custom_headers(custom);
                if let Some(token) = auth_header {
                    transport_config = transport_config.auth_header(token);
                }
                let transport = StreamableHttpClientTransport::from_config(transport_config);
                let service = tokio::time::timeout(startup, LodeClient.serve(transport)).await;
                (service.map(|r| r.map_err(|e| e.to_string())), None)
            }
        };
        let service = match service {
            Ok(Ok(service)) => service,
            Ok(Err(message)) => {
                finish_reader(stderr_reader).await;
                return Err(McpError::Handshake {
                    message,
                    stderr: stderr.text(),
                });
            }
            Err(_) => return Err(McpError::Timeout(startup)),
        };
        let peer = service.peer().clone();
        let tools = match tokio::time::timeout(startup, peer.list_all_tools()).await {
            Ok(Ok(tools)) => tools,
            Ok(Err(error)) => return Err(McpError::ListTools(error.to_string())),
            Err(_) => return Err(McpError::Timeout(startup)),
        };
        Ok(Self {
            name: config.name.clone(),
            tools,
            call_timeout: config.call_timeout.unwrap_or(DEFAULT_CALL_TIMEOUT),
            peer,
            service: tokio::sync::Mutex::new(Some(service)),
            stderr,
            unconfined,
        })
    }

    /// Calls one of the server's tools with a JSON object of arguments.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<CallToolResult, McpError> {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        match tokio::time::timeout(self.call_timeout, self.peer.call_tool_once(params)).await {
            Ok(Ok(CallToolResponse::Complete(result))) => Ok(result),
            Ok(Ok(_)) => Err(McpError::InputRequired),
            Ok(Err(error)) => {
                let stderr = self.stderr.text();
                Err(McpError::Call(format!(
                    "{error}{}",
                    stderr_suffix(last_lines(&stderr, 5))
                )))
            }
            Err(_) => Err(McpError::Timeout(self.call_timeout)),
        }
    }

    /// Whether the connection is still up.
    pub fn is_closed(&self) -> bool {
        self.peer.is_transport_closed()
    }

    /// Ends the session: closes the transport, which stops a child process (closing its stdin,
    /// then SIGTERM, then kill). Idempotent.
    pub async fn shutdown(&self) {
        let service = self.service.lock().await.take();
        if let Some(mut service) = service {
            let _ = service.close_with_timeout(Duration::from_secs(5)).await;
        }
    }
}

fn last_lines(text: &str, count: usize) -> &str {
    let mut start = text.len();
    for _ in 0..count {
        match text[..start.saturating_sub(1)].rfind('\n') {
            Some(at) if start > 0 => start = at + 1,
            _ => return text,
        }
    }
    &text[start..]
}

/// A header name of the `http` crate (re-exported by reqwest; rmcp uses the same crate).
fn reqwest_header_name(name: &str) -> Result<reqwest::header::HeaderName, McpError> {
    reqwest::header::HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| McpError::BadHeader(name.to_owned()))
}

async fn finish_reader(reader: Option<tokio::task::JoinHandle<()>>) {
    if let Some(reader) = reader {
        // The child is gone or going; its stderr reaches EOF quickly. Don't wait forever.
        let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
    }
}

fn spawn_message(error: &std::io::Error) -> String {
    if error.kind() == std::io::ErrorKind::NotFound {
        "command not found (is it installed and on PATH?)".to_owned()
    } else {
        error.to_string()
    }
}
