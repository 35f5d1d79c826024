//! The MCP client: lode connects to the MCP servers named in its config (`[[mcp.servers]]`) and
//! to those an ACP client passes in `session/new`, and offers their tools to the model.
//!
//! This module owns server configuration (`config`), one live connection per server
//! (`connection`, on rmcp), the adapter that makes each remote tool a [`lode_tools::Tool`]
//! (`tool`), the per-session set of connections (`manager`), and how a stdio server is started
//! through the sandbox (`launch`). Remote tools are never
//! read-only, go through the permission policy as `Other` (default ask), and their output is
//! capped and marked untrusted. A server that fails to start is returned as an
//! [`McpFailure`] for the front end to show once; the session goes on without it.

pub mod config;
pub mod connection;
pub mod launch;
pub mod manager;
pub mod tool;

pub use config::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT, McpConfigError, McpServerConfig, McpServerEntry,
    McpSettings, McpSource, McpTransport,
};
pub use connection::{McpConnection, McpError};
pub use manager::{McpFailure, McpManager};
pub use tool::{McpTool, exposed_tool_name};
