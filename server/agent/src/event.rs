//! What the agent tells a front end while it works. Every step of a turn is an [`AgentEvent`];
//! ACP maps them to `session/update`s, the terminal renders them, `lode run --json` prints them.
//!
//! A tool call's payload (kind, status, locations, content, plan entries) is the tools' own
//! vocabulary (`lode_tools::event`); it is re-exported here because every [`AgentEvent`] consumer
//! matches on it.

use serde::{Deserialize, Serialize};

pub use lode_tools::event::{
    Location, PlanEntry, PlanPriority, PlanStatus, ToolCallStart, ToolCallUpdate, ToolContent,
    ToolKind, ToolStatus,
};

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
    /// Context use after a model request: `used` tokens of `size`. `input_tokens` is every
    /// input token; `cached_input_tokens` of them came from the provider's prompt cache and
    /// `uncached_input_tokens` were processed afresh (of which `cache_write_tokens` were
    /// written to the cache for later requests, where the provider says so).
    Usage {
        used: u64,
        size: u64,
        input_tokens: u64,
        output_tokens: u64,
        #[serde(default)]
        cached_input_tokens: u64,
        #[serde(default)]
        uncached_input_tokens: u64,
        #[serde(default)]
        cache_write_tokens: u64,
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
    /// The workspace's code index is being built behind the turn (`crate::indexing`): files
    /// parsed (`done`) of those found (`total`, 0 while they are still being looked for). One
    /// `Started`, `Progress` at most once a second, one `Finished`, all with the same `id`;
    /// may arrive after the turn has finished. Front ends show it as a progress card (ACP: a
    /// tool call) or on stderr, never as the answer.
    IndexProgress {
        id: String,
        stage: IndexStage,
        done: usize,
        total: usize,
    },
}

/// Where an index build reported by [`AgentEvent::IndexProgress`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexStage {
    Started,
    Progress,
    Finished,
}

/// How an index build's progress reads: `indexing 1200/5000 files`, `index ready (5000 files)`.
/// Once every file is parsed the build still commits (`writing the index`).
pub fn index_progress_text(stage: IndexStage, done: usize, total: usize) -> String {
    match stage {
        IndexStage::Finished if total > 0 => format!("index ready ({total} files)"),
        IndexStage::Finished => "index ready".to_owned(),
        _ if total == 0 => "indexing: looking for files".to_owned(),
        _ if done >= total => format!("indexing {total} files: writing the index"),
        _ => format!("indexing {done}/{total} files"),
    }
}
