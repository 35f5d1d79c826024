//! What lode's own slash commands do (see `crate::slash` for the list). They act on the agent that
//! runs them only through [`Controls`], which it implements: this module never names the agent.

use std::fmt::Write as _;

use tokio_util::sync::CancellationToken;

use std::sync::Arc;

use lode_index::Workspace;
use lode_llm::{ModelInfo, Provider};
use lode_policy::Mode;

use crate::event::{AgentEvent, StopReason};
use crate::host::SessionHost;
use crate::session::{AgentError, SessionInfo, Shared, SlashCommand, parse_mode};
use crate::store::Visibility;
use lode_llm::Message;

/// What the slash commands may ask of the agent that runs them.
#[async_trait::async_trait]
pub(crate) trait Controls: Sync {
    /// The configuration-dependent state in effect now.
    fn shared(&self) -> Arc<Shared>;
    fn slash_commands(&self) -> Vec<SlashCommand>;
    /// The configured models, the default first.
    fn models(&self) -> Vec<ModelInfo>;
    fn set_mode(&self, session_id: &str, mode: Mode) -> Result<(), AgentError>;
    fn set_model(&self, session_id: &str, provider_name: &str) -> Result<(), AgentError>;
    /// The provider named `name`, else the default one.
    fn provider(&self, name: &str) -> Result<Arc<dyn Provider>, AgentError>;
    fn list_sessions(&self) -> Result<Vec<SessionInfo>, AgentError>;
    /// The code index, once it has been brought up to date since the agent opened.
    async fn ready_index(&self) -> Arc<Workspace>;
}

/// Runs `/command argument` and answers through `host` as agent text.
pub(crate) async fn run(
    agent: &dyn Controls,
    info: &SessionInfo,
    command: &str,
    argument: &str,
    host: &dyn SessionHost,
    cancel: &CancellationToken,
) -> Result<StopReason, AgentError> {
    let text = match command {
        "help" => help(agent),
        "mode" => mode(agent, info, argument)?,
        "model" => model(agent, info, argument),
        "compact" => compact(agent, info, cancel).await?,
        "clear" => clear(agent, info)?,
        "map" => map(agent, argument).await?,
        "search" => search(agent, argument).await?,
        "remember" => remember(agent, info, argument).await?,
        "sessions" => sessions(agent)?,
        other => format!("unknown command /{other}\n"),
    };
    host.emit(AgentEvent::TextDelta { text });
    // Slash commands are recorded for the user only: they are not part of the model's conversation.
    let _ = Visibility::UserOnly;
    Ok(StopReason::EndTurn)
}

/// `/help`: the commands and what they do.
fn help(agent: &dyn Controls) -> String {
    let mut text = String::from("lode's commands:\n");
    for command in agent.slash_commands() {
        let hint = command
            .input_hint
            .map(|hint| format!(" {hint}"))
            .unwrap_or_default();
        let _ = writeln!(text, "- /{}{hint} — {}", command.name, command.description);
    }
    text
}

/// `/mode [NAME]`: shows or sets the session's mode.
fn mode(agent: &dyn Controls, info: &SessionInfo, argument: &str) -> Result<String, AgentError> {
    Ok(match argument {
        "" => format!("mode: {}\n", info.mode.as_str()),
        name => match parse_mode(name) {
            Some(mode) => {
                agent.set_mode(&info.id, mode)?;
                format!("mode: {}\n", mode.as_str())
            }
            None => format!("unknown mode {name:?}: ask, code or architect\n"),
        },
    })
}

/// `/model [NAME]`: shows the configured models or switches the session's.
fn model(agent: &dyn Controls, info: &SessionInfo, argument: &str) -> String {
    match argument {
        "" => {
            let mut text = format!("model: {}\nconfigured:\n", info.model);
            for model in agent.models() {
                let _ = writeln!(
                    text,
                    "- {} ({}, {} tokens)",
                    model.provider, model.model, model.context_window
                );
            }
            text
        }
        name => match agent.set_model(&info.id, name) {
            Ok(()) => format!("model: {name}\n"),
            Err(error) => format!("{error}\n"),
        },
    }
}

/// `/compact`: summarises the older part of the conversation now.
async fn compact(
    agent: &dyn Controls,
    info: &SessionInfo,
    cancel: &CancellationToken,
) -> Result<String, AgentError> {
    let provider = agent.provider(&info.model)?;
    let outcome = crate::compaction::compact_session(
        &agent.shared().store.clone(),
        &info.id,
        provider.as_ref(),
        1,
        cancel.child_token(),
    )
    .await?;
    Ok(match outcome {
        Some(outcome) => format!(
            "compacted {} messages ({} → {} tokens)\n",
            outcome.replaced_messages, outcome.tokens_before, outcome.tokens_after
        ),
        None => "nothing to compact yet\n".to_owned(),
    })
}

/// `/clear`: the model starts fresh; the stored history is kept.
fn clear(agent: &dyn Controls, info: &SessionInfo) -> Result<String, AgentError> {
    let store = agent.shared().store.clone();
    let history = store.load_history(&info.id)?;
    let last = history.last_seq();
    if last == 0 {
        return Ok("the conversation is already empty\n".to_owned());
    }
    let note = Message::user_text(
        "[The user cleared the conversation here. Earlier turns are not part of this conversation.]",
    );
    store.mark_compacted(&info.id, last, &note)?;
    Ok("cleared: the model starts fresh; your history is kept\n".to_owned())
}

/// `/map [FILES AND NAMES]`: the repo map, focused on the files and names given.
async fn map(agent: &dyn Controls, argument: &str) -> Result<String, AgentError> {
    let index = agent.ready_index().await;
    let words: Vec<String> = argument.split_whitespace().map(str::to_owned).collect();
    let map = tokio::task::spawn_blocking(move || {
        let (files, mentions): (Vec<String>, Vec<String>) = words
            .into_iter()
            .partition(|word| word.contains('/') || word.contains('.'));
        index.repo_map(&lode_index::MapRequest {
            max_tokens: 1024,
            focus_files: files,
            mentions,
        })
    })
    .await
    .map_err(|error| AgentError::Other(error.to_string()))??;
    Ok(if map.text.is_empty() {
        "the index has no definitions yet\n".to_owned()
    } else {
        map.text
    })
}

/// `/search QUERY`: the index's best matches.
async fn search(agent: &dyn Controls, argument: &str) -> Result<String, AgentError> {
    if argument.is_empty() {
        return Ok("usage: /search QUERY\n".to_owned());
    }
    let index = agent.ready_index().await;
    let query = argument.to_owned();
    let hits = tokio::task::spawn_blocking(move || {
        let mut request = lode_index::SearchRequest::new(query);
        request.limit = 10;
        index.search(&request)
    })
    .await
    .map_err(|error| AgentError::Other(error.to_string()))??;
    let mut text = String::new();
    for hit in &hits {
        let symbol = hit.symbol.as_deref().unwrap_or("");
        let _ = writeln!(
            text,
            "- {}:{}-{} {symbol}",
            hit.path, hit.start_line, hit.end_line
        );
    }
    if hits.is_empty() {
        text.push_str("no matches\n");
    }
    Ok(text)
}

/// `/remember TEXT`: saves a memory. Typed by the user: the one way to save a memory lode trusts.
async fn remember(
    agent: &dyn Controls,
    info: &SessionInfo,
    argument: &str,
) -> Result<String, AgentError> {
    if argument.is_empty() {
        return Ok("usage: /remember TEXT\n".to_owned());
    }
    let shared = agent.shared();
    let session_id = info.id.clone();
    let text = argument.to_owned();
    let saved = tokio::task::spawn_blocking(move || {
        shared.extensions.remember_from_user(&session_id, &text)
    })
    .await
    .map_err(|error| AgentError::Other(error.to_string()))?;
    Ok(match saved {
        Ok(Some(memory)) => format!(
            "remembered (memory {}, this workspace){}\n",
            memory.id,
            if memory.text != argument.trim() {
                "; secrets in it were redacted"
            } else {
                ""
            }
        ),
        Ok(None) => "long-term memory is off ([memory] enabled = false)\n".to_owned(),
        Err(error) => format!("could not remember that: {error}\n"),
    })
}

/// `/sessions`: the workspace's stored sessions, most recent first.
fn sessions(agent: &dyn Controls) -> Result<String, AgentError> {
    let mut text = String::new();
    for session in agent.list_sessions()? {
        let _ = writeln!(
            text,
            "- {} {} ({})",
            session.id,
            session.title.as_deref().unwrap_or("(untitled)"),
            session.updated_at.format("%Y-%m-%d %H:%M")
        );
    }
    Ok(text)
}
