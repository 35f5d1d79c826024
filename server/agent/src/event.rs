//! What the agent tells a front end while it works. Every step of a turn is an [`AgentEvent`];
//! ACP maps them to `session/update`s, the terminal renders them, `lode run --json` prints them.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How a tool call should be presented (ACP's tool kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    Fetch,
    Think,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Pending,
    InProgress,
    Completed,
    Failed,
}

/// A place in the workspace a tool call touches, so an editor can follow along.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    /// Absolute path.
    pub path: PathBuf,
    /// 1-based line, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// Something a tool call produced that a front end can show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolContent {
    Text {
        text: String,
    },
    /// A file change: `old_text` is `None` for a new file.
    Diff {
        path: PathBuf,
        old_text: Option<String>,
        new_text: String,
    },
    /// Output lives in a client terminal (ACP `terminal/create`), shown live by the client.
    Terminal {
        terminal_id: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallStart {
    /// The model's tool call id.
    pub id: String,
    /// The tool's name as the model called it.
    pub tool: String,
    /// A human title, e.g. "Read src/main.rs" or "Run `cargo test`".
    pub title: String,
    pub kind: ToolKind,
    pub locations: Vec<Location>,
    pub raw_input: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallUpdate {
    pub id: String,
    pub status: ToolStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Replaces the content shown so far when non-empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<ToolContent>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<Location>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    Pending,
    InProgress,
    Completed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanPriority {
    High,
    Medium,
    Low,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanEntry {
    pub content: String,
    pub priority: PlanPriority,
    pub status: PlanStatus,
}

/// Why a turn ended (ACP's stop reasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    MaxTurnRequests,
    Refusal,
    Cancelled,
}

/// One step of a turn, in the order it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AgentEvent {
    /// Only when replaying a stored session: what the user said.
    UserMessage {
        text: String,
    },
    TextDelta {
        text: String,
    },
    ThoughtDelta {
        text: String,
    },
    ToolCallStarted(ToolCallStart),
    ToolCallUpdated(ToolCallUpdate),
    /// The full current plan (replaces any earlier one).
    Plan {
        entries: Vec<PlanEntry>,
    },
    /// Context use after a model request: `used` tokens of `size`.
    Usage {
        used: u64,
        size: u64,
        input_tokens: u64,
        output_tokens: u64,
    },
    /// The session got (or changed) its title.
    TitleChanged {
        title: String,
    },
    /// Something the user should know that is not the model's output: a retry, a compaction.
    Notice {
        message: String,
    },
    /// The turn ended.
    TurnFinished {
        stop_reason: StopReason,
    },
}
