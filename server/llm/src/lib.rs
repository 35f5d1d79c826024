//! lode-llm: the language-model boundary.
//!
//! Owns a provider-neutral conversation model ([`ChatRequest`], [`Message`], [`ContentPart`]), the
//! stream of events a provider yields ([`StreamEvent`]), the [`Provider`] trait that the
//! OpenAI-compatible, Anthropic and Ollama clients implement, their SSE parsing, retries, provider
//! configuration and detection from the environment.
//!
//! It must not know about tools' behaviour, sessions, permissions or editors: a tool is a name, a
//! description and a JSON schema ([`ToolSpec`]); a tool call is an id, a name and JSON arguments.
//! The agent (`lode-agent`) drives providers; tools (`lode-tools`) only name their specs.

pub mod anthropic;
pub mod collect;
pub mod config;
pub mod detect;
mod encoded;
mod http;
pub mod ollama;
pub mod openai;
pub mod retry;
pub mod sse;

pub use collect::{CollectedResponse, ResponseCollector, collect};
pub use config::{
    ProviderConfig, ProviderConfigError, ProviderKind, build_provider, build_provider_with_env,
};
pub use detect::{DetectedProvider, NothingDetected};
pub use http::{ApiKey, Timeouts};
pub use retry::{RetryNotice, RetryPolicy, stream_with_retry};

use std::pin::Pin;
use std::time::Duration;

use futures::Stream;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

/// One part of a message. A user message carries text, images and tool results; an assistant
/// message carries text, thinking and tool calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    Text {
        text: String,
    },
    /// Text lode attaches to a user message that the user did not type: the turn's context
    /// (environment, retrieved code, repo map). Sent to the model as text like [`ContentPart::Text`],
    /// but not part of [`Message::text`] (the user's words) and never shown as the user's.
    Context {
        text: String,
    },
    /// Reasoning the model showed. `signature` is Anthropic's opaque token that must be sent back
    /// with the thinking block on the next request; other providers leave it empty.
    Thinking {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    Image {
        mime_type: String,
        /// Base64 without a data-URL prefix.
        data: String,
    },
    ToolCall(ToolCall),
    ToolResult(ToolResult),
}

/// A tool invocation the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as parsed JSON. When the model sent text that is not JSON, the text is kept as
    /// a JSON string so nothing is lost and the tool can answer with a clear error.
    pub arguments: serde_json::Value,
}

/// What a tool answered, sent back to the model in the next user message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    pub call_id: String,
    pub content: String,
    #[serde(default)]
    pub is_error: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<ContentPart>,
}

impl Message {
    pub fn user_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: vec![ContentPart::Text { text: text.into() }],
        }
    }

    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: vec![ContentPart::Text { text: text.into() }],
        }
    }

    /// The concatenated text parts, without attached context, thinking, tool calls or results.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for part in &self.content {
            if let ContentPart::Text { text } = part {
                out.push_str(text);
            }
        }
        out
    }

    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|part| match part {
            ContentPart::ToolCall(call) => Some(call),
            _ => None,
        })
    }
}

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// One request to a model: the system prompt, the conversation, the tools on offer.
///
/// Providers send it in the order tools, system prompt, messages, so that a conversation whose
/// requests only append messages has a stable prefix their prompt caches reuse.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    /// Output cap; the provider's configured default when `None`.
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    /// What ties requests sharing a prefix together (the session's id): sent as OpenAI's
    /// `prompt_cache_key` where the provider takes it, so they reach the same cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_key: Option<String>,
}

/// Why the model stopped producing output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model finished its answer.
    EndTurn,
    /// The model wants tool results before it continues.
    ToolUse,
    /// The output hit `max_tokens`.
    MaxTokens,
    /// The provider refused (content filter, safety).
    Refusal,
}

/// Token accounting for one request, as the provider reported it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Every input token of the request, cached or not.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache (billed at a fraction, and not
    /// processed again): OpenAI's `cached_tokens`, Anthropic's `cache_read_input_tokens`,
    /// llama.cpp's `cache_n`.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Input tokens written to the cache for later requests (Anthropic's
    /// `cache_creation_input_tokens`); part of the uncached input.
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Input tokens the provider processed afresh: the input less what came from its cache.
    pub fn uncached_input_tokens(&self) -> u64 {
        self.input_tokens.saturating_sub(self.cache_read_tokens)
    }
}

/// One event of a streamed model response, in order. Tool calls arrive as a start followed by any
/// number of argument fragments; `index` ties fragments to their call.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    TextDelta(String),
    ThinkingDelta(String),
    /// The opaque signature closing a thinking block (Anthropic).
    ThinkingSignature(String),
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    ToolCallArgumentsDelta {
        index: usize,
        fragment: String,
    },
    Usage(Usage),
    /// The last event of a successful stream.
    Finished(FinishReason),
}

/// Why a model request failed. The variants drive retries and compaction in the agent loop.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum LlmError {
    #[error("rate limited by the provider (HTTP 429){}", retry_hint(.retry_after))]
    RateLimited { retry_after: Option<Duration> },
    #[error("provider error HTTP {status}: {message}")]
    Server { status: u16, message: String },
    #[error("the request does not fit the model's context window: {message}")]
    ContextLength { message: String },
    #[error("the provider rejected the credentials (HTTP {status}): {message}")]
    Auth { status: u16, message: String },
    #[error("the provider rejected the request (HTTP {status}): {message}")]
    BadRequest { status: u16, message: String },
    #[error("timed out waiting for the provider ({0})")]
    Timeout(String),
    #[error("the response stream was malformed: {0}")]
    Malformed(String),
    #[error("the response stream ended before the model finished")]
    Truncated,
    #[error("could not reach the provider: {0}")]
    Transport(String),
    #[error("cancelled")]
    Cancelled,
}

fn retry_hint(retry_after: &Option<Duration>) -> String {
    match retry_after {
        Some(wait) => format!("; retry after {:.1}s", wait.as_secs_f64()),
        None => String::new(),
    }
}

impl LlmError {
    /// Whether sending the same request again may succeed (429, 5xx, timeouts, dropped streams).
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::RateLimited { .. }
            | LlmError::Timeout(_)
            | LlmError::Truncated
            | LlmError::Transport(_) => true,
            LlmError::Server { status, .. } => *status >= 500,
            _ => false,
        }
    }
}

/// A boxed stream of model events.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, LlmError>> + Send>>;

/// What a configured model is: used for budgeting and for the model picker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The provider's configured name (`[[llm.providers]] name`).
    pub provider: String,
    pub model: String,
    pub context_window: u32,
    pub max_output_tokens: u32,
    pub supports_images: bool,
}

/// A chat model reachable over HTTP. Implementations stream; they never retry (the caller does,
/// see `llm::retry`) and they stop promptly when `cancel` fires, yielding [`LlmError::Cancelled`].
#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    fn info(&self) -> &ModelInfo;

    /// Sends `request` and returns the response as a stream of events. Errors known before the
    /// first byte of the body (HTTP status, connection) are returned directly.
    async fn stream(
        &self,
        request: &ChatRequest,
        cancel: CancellationToken,
    ) -> Result<EventStream, LlmError>;
}
