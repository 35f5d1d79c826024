//! The MCP servers of one session: started together, their tools offered under unique prefixed
//! names, failures collected for the front end, and everything shut down at the end.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use super::config::McpServerConfig;
use super::connection::McpConnection;
use super::tool::{McpTool, exposed_tool_name};
use lode_tools::Tool;

/// A server that could not be used, with a message for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpFailure {
    pub server: String,
    pub message: String,
}

impl std::fmt::Display for McpFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "MCP server {:?} is not available: {}",
            self.server, self.message
        )
    }
}

/// Connected MCP servers and their tools.
#[derive(Debug, Default)]
pub struct McpManager {
    connections: Vec<Arc<McpConnection>>,
}

impl McpManager {
    /// Connects to every server at once (each within its startup timeout). Servers that fail
    /// (missing command, crash at start, handshake error, timeout, duplicate name) come back as
    /// failures; the others are ready.
    /// Stdio servers start through `sandbox` in `default_cwd` (the workspace root), as
    /// `super::launch` says.
    pub async fn connect_all(
        servers: &[McpServerConfig],
        default_cwd: Option<&Path>,
        sandbox: &lode_sandbox::Sandbox,
    ) -> (Self, Vec<McpFailure>) {
        let mut failures = Vec::new();
        let mut seen = HashSet::new();
        let mut unique = Vec::new();
        for server in servers {
            if seen.insert(server.name.clone()) {
                unique.push(server);
            } else {
                failures.push(McpFailure {
                    server: server.name.clone(),
                    message: "another MCP server already has this name; this one was skipped"
                        .to_owned(),
                });
            }
        }
        let attempts = futures::future::join_all(
            unique
                .iter()
                .map(|server| McpConnection::connect(server, default_cwd, sandbox)),
        )
        .await;
        let mut connections = Vec::new();
        for (server, attempt) in unique.iter().zip(attempts) {
            match attempt {
                Ok(connection) => connections.push(Arc::new(connection)),
                Err(error) => failures.push(McpFailure {
                    server: server.name.clone(),
                    message: error.to_string(),
                }),
            }
        }
        (Self { connections }, failures)
    }

    /// What to tell the user about the connected servers: those that run outside the sandbox.
    pub fn notices(&self) -> Vec<String> {
        self.connections
            .iter()
            .filter_map(|connection| connection.unconfined.clone())
            .collect()
    }

    /// Names of the connected servers.
    pub fn servers(&self) -> Vec<String> {
        self.connections.iter().map(|c| c.name.clone()).collect()
    }

    pub fn connections(&self) -> &[Arc<McpConnection>] {
        &self.connections
    }

    /// Every remote tool as a lode tool, named `mcp__<server>__<tool>`. A name already taken
    /// (two tools that sanitise alike) gets a numeric suffix.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut taken = HashSet::new();
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        for connection in &self.connections {
            for remote in &connection.tools {
                let base = exposed_tool_name(&connection.name, &remote.name);
                let mut name = base.clone();
                let mut counter = 2;
                while !taken.insert(name.clone()) {
                    let suffix = format!("_{counter}");
                    let keep = base
                        .len()
                        .min(super::tool::MAX_TOOL_NAME_CHARS - suffix.len());
                    name = format!("{}{suffix}", &base[..keep]);
                    counter += 1;
                }
                tools.push(Arc::new(McpTool::new(connection.clone(), remote, name)));
            }
        }
        tools
    }

    /// Closes every connection (child processes are stopped). Safe to call more than once.
    pub async fn shutdown(&self) {
        futures::future::join_all(self.connections.iter().map(|c| c.shutdown())).await;
    }
}
