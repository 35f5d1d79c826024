//! `lode mcp`: lode's code intelligence as a Model Context Protocol server over stdio, so other
//! agents (Claude Code, Codex, Zed, ...) can search, map and navigate a workspace.
//!
//! A thin adapter over `lode-index`: `tools` holds the tool definitions and turns each call
//! into a query on the [`Workspace`] (after a flush through a running watcher or a quick
//! refresh, so answers reflect the files on disk); `guard` sits between stdio and rmcp and answers malformed, oversized and
//! out-of-order input with JSON-RPC errors. This crate knows nothing about the agent. stdout
//! carries only MCP frames; diagnostics go to stderr.

pub mod edits;
pub mod guard;
pub mod navigation;
pub mod tools;

use std::sync::Arc;

use lode_index::Workspace;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

pub use tools::CodeTools;

/// The largest message `lode mcp` accepts by default, in bytes (1 MiB).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 1024 * 1024;

/// How the server behaves.
#[derive(Clone)]
pub struct ServerOptions {
    /// Bring the index up to date before every call (the default).
    pub refresh: bool,
    /// Lines longer than this are discarded and answered with an error.
    pub max_message_bytes: usize,
    /// Offer the edit tools (`replace_symbol_body`, `insert_before_symbol`,
    /// `insert_after_symbol`, and `rename` with a navigator), confined to the workspace. Off
    /// unless `--allow-edits`.
    pub allow_edits: bool,
    /// Type-resolved navigation (`hover`, `definition`, `call_hierarchy`, `references` by
    /// symbol, `rename`): the binary plugs in the language servers. `None`: not offered.
    pub navigator: Option<Arc<dyn navigation::Navigator>>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            refresh: true,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            allow_edits: false,
            navigator: None,
        }
    }
}

/// Why serving ended abnormally.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("the MCP session could not start: {0}")]
    Start(String),
    #[error("the MCP session failed: {0}")]
    Session(String),
}

/// The MCP server: rmcp's handler over [`CodeTools`].
#[derive(Clone)]
pub struct LodeMcpServer {
    tools: Arc<CodeTools>,
}

impl LodeMcpServer {
    pub fn new(tools: Arc<CodeTools>) -> Self {
        LodeMcpServer { tools }
    }
}

const INSTRUCTIONS: &str = "lode indexes this workspace's code (tree-sitter symbols and \
references, BM25 and vector search, a ranked repository map) and keeps the index up to date \
before every call. Start with `map` to get oriented, `search` to find where something is done, \
`symbols` to jump to a definition, `references` to find its uses, and `read_file` to read the \
lines you need. Paths are relative to the workspace root.";

const EDIT_INSTRUCTIONS: &str = " Edits are allowed: `replace_symbol_body` replaces a whole \
definition named as FILE:NAME/PATH (`src/shapes.py:Circle/area`) or FILE:LINE:COLUMN, and \
`insert_before_symbol` / `insert_after_symbol` add a definition next to one; files under .git/ \
or .lode/ and outside the workspace are never changed.";

impl ServerHandler for LodeMcpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("lode", env!("CARGO_PKG_VERSION")))
            .with_instructions(if self.tools.allows_edits() {
                format!("{INSTRUCTIONS}{EDIT_INSTRUCTIONS}")
            } else {
                INSTRUCTIONS.to_owned()
            })
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.tool_list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tools = self.tools.clone();
        let name = request.name.to_string();
        let arguments = request.arguments;
        if let Some(navigation) = tools.navigation_call(&name, arguments.as_ref()) {
            let outcome = match navigation {
                Ok((navigator, tool, arguments)) => {
                    // An answer from the index needs it current, like every other call; a
                    // language server's does not (see `navigation::call`).
                    let refreshing = tools.clone();
                    let refresh = async move {
                        matches!(
                            tokio::task::spawn_blocking(move || refreshing.refresh_changed()).await,
                            Ok(Ok(true))
                        )
                    };
                    navigation::call(navigator.as_ref(), tool, arguments, refresh).await
                }
                Err(error) => Err(error),
            };
            return match outcome {
                Ok(result) => Ok(result.into()),
                Err(error) => error.into_response().map(Into::into),
            };
        }
        // Index queries and refreshes block (SQLite, tantivy, file reads).
        let outcome = tokio::task::spawn_blocking(move || tools.call(&name, arguments))
            .await
            .map_err(|error| {
                ErrorData::internal_error(format!("the call failed: {error}"), None)
            })?;
        match outcome {
            Ok(result) => Ok(result.into()),
            Err(error) => error.into_response().map(Into::into),
        }
    }
}

/// Serves MCP over stdin/stdout until the client closes stdin. The index is brought up to
/// date in the background at once, so the first call rarely waits for a full build.
pub async fn serve_stdio(
    workspace: Arc<Workspace>,
    options: ServerOptions,
) -> Result<(), ServeError> {
    serve(workspace, options, tokio::io::stdin(), tokio::io::stdout()).await
}

/// [`serve_stdio`] over any pair of byte streams.
pub async fn serve<I, O>(
    workspace: Arc<Workspace>,
    options: ServerOptions,
    input: I,
    output: O,
) -> Result<(), ServeError>
where
    I: tokio::io::AsyncRead + Unpin + Send + 'static,
    O: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let tools = Arc::new(
        CodeTools::new(workspace, options.refresh)
            .with_edits(options.allow_edits)
            .with_navigator(options.navigator.clone()),
    );
    let warm = tools.clone();
    let warming = tokio::task::spawn_blocking(move || {
        if let Err(error) = warm.refresh() {
            tracing::warn!(%error, "cannot update the index");
        }
    });
    let pipes = guard::guard(input, output, options.max_message_bytes);
    let (server_read, server_write) = (pipes.server_input, pipes.server_output);
    let served = match LodeMcpServer::new(tools)
        .serve((server_read, server_write))
        .await
    {
        Ok(running) => running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|error| ServeError::Session(error.to_string())),
        // The client went away before starting a session: not an error.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => Ok(()),
        Err(error) => Err(ServeError::Start(error.to_string())),
    };
    pipes.input_task.abort();
    let _ = pipes.output_task.await;
    // A refresh still running is left to finish or be cut short at exit: the index is
    // crash-safe, and the client is gone.
    drop(warming);
    served
}
