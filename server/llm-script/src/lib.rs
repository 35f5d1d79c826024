//! A scripted LLM server for tests and demos: a real HTTP server on 127.0.0.1 that speaks the
//! OpenAI chat-completions and Anthropic Messages streaming APIs and answers from scripts in
//! `fixtures/llm/*.json`, with faults injected on demand.
//!
//! It must not depend on lode's agent: it is a stand-in for a provider, nothing more.
//!
//! ```no_run
//! # async fn demo() -> Result<(), lode_llm_script::ScriptError> {
//! let script = lode_llm_script::Script::load("fixtures/llm/hello.json".as_ref())?;
//! let server = lode_llm_script::ScriptedServer::start(script).await?;
//! // Point an OpenAI-kind provider at server.openai_base_url(), an Anthropic-kind one at
//! // server.base_url(); assert on server.requests() afterwards.
//! # Ok(()) }
//! ```

mod conversation;
mod script;
mod server;
mod wire;

pub use script::{
    Chunks, DEFAULT_CHUNK_CHARS, Fault, Finish, Matcher, Respond, Script, ScriptError,
    ScriptToolCall, ScriptUsage, Turn,
};
pub use server::{
    DEFAULT_BODY_LIMIT, RecordedRequest, ScriptedServer, ScriptedServerHandle, ServerOptions,
};
