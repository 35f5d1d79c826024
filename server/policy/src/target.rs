//! What the policy judges and what a person answers: a tool call's [`PermissionTarget`] and the
//! [`PermissionAnswer`] to a question.

use serde::{Deserialize, Serialize};

/// What a tool call will touch, for the permission policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PermissionTarget {
    /// Reads only (files, the index): allowed in every mode.
    Read,
    /// Changes these files (paths as the model gave them; the policy resolves them).
    Edit { paths: Vec<String> },
    /// Runs this shell command line.
    Command { command: String },
    /// Something else with side effects (an MCP tool, a fetch): judged by tool name.
    Other,
    /// Writes lode's own long-term memory store (not the workspace): allowed by default in the
    /// modes that offer it, like a note the agent keeps; rules for the tool can still ask or deny.
    Memory,
}

/// The answer to a permission question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionAnswer {
    AllowOnce,
    /// Allow this one call, and let its command reach the network from inside the sandbox.
    AllowOnceWithNetwork,
    AllowAlways,
    RejectOnce,
    RejectAlways,
    /// The turn was cancelled while the question was open.
    Cancelled,
}

impl PermissionAnswer {
    pub fn allows(self) -> bool {
        matches!(
            self,
            PermissionAnswer::AllowOnce
                | PermissionAnswer::AllowOnceWithNetwork
                | PermissionAnswer::AllowAlways
        )
    }
}
