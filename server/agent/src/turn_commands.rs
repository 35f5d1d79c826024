//! What lode's own slash commands do (see `crate::slash` for the list).

use std::fmt::Write as _;

use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, AgentError, SessionInfo, parse_mode};
use crate::event::{AgentEvent, StopReason};
use crate::host::SessionHost;
use lode_llm::Message;
use crate::store::Visibility;

/// Runs `/command argument` and answers through `host` as agent text.
pub(crate) async fn run(
    agent: &Agent,
    info: &SessionInfo,
    command: &str,
    argument: &str,
    host: &dyn SessionHost,
    cancel: &CancellationToken,
) -> Result<StopReason, AgentError> {
    let say = |text: String| host.emit(AgentEvent::TextDelta { text });
    match command {
        "help" => {
            let mut text = String::from("lode's commands:\n");
            for command in agent.slash_commands() {
                let hint = command
                    .input_hint
                    .map(|hint| format!(" {hint}"))
                    .unwrap_or_default();
                let _ = writeln!(text, "- /{}{hint} — {}", command.name, command.description);
            }
            say(text);
        }
        "mode" => match argument {
            "" => say(format!("mode: {}\n", info.mode.as_str())),
            name => match parse_mode(name) {
                Some(mode) => {
                    agent.set_mode(&info.id, mode)?;
                    say(format!("mode: {}\n", mode.as_str()));
                }
                None => say(format!("unknown mode {name:?}: ask, code or architect\n")),
            },
        },
        "model" => match argument {
            "" => {
                let mut text = format!("model: {}\nconfigured:\n", info.model);
                for model in agent.models() {
                    let _ = writeln!(
                        text,
                        "- {} ({}, {} tokens)",
                        model.provider, model.model, model.context_window
                    );
                }
                say(text);
            }
            name => match agent.set_model(&info.id, name) {
                Ok(()) => say(format!("model: {name}\n")),
                Err(error) => say(format!("{error}\n")),
            },
        },
        "compact" => {
            let provider = agent.provider(&info.model)?;
            let outcome = crate::compaction::compact_session(
                &agent.shared().store.clone(),
                &info.id,
                provider.as_ref(),
                1,
                cancel.child_token(),
            )
            .await?;
            say(match outcome {
                Some(outcome) => format!(
                    "compacted {} messages ({} → {} tokens)\n",
                    outcome.replaced_messages, outcome.tokens_before, outcome.tokens_after
                ),
                None => "nothing to compact yet\n".to_owned(),
            });
        }
        "clear" => {
            let history = agent.shared().store.load_history(&info.id)?;
            let last = history.last_seq();
            if last == 0 {
                say("the conversation is already empty\n".to_owned());
            } else {
                let note = Message::user_text(
                    "[The user cleared the conversation here. Earlier turns are not part of this conversation.]",
                );
                agent.shared().store.mark_compacted(&info.id, last, &note)?;
                say("cleared: the model starts fresh; your history is kept\n".to_owned());
            }
        }
        "map" => {
            agent.ensure_index_ready().await;
            let index = agent.index().clone();
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
            say(if map.text.is_empty() {
                "the index has no definitions yet\n".to_owned()
            } else {
                map.text
            });
        }
        "search" => {
            if argument.is_empty() {
                say("usage: /search QUERY\n".to_owned());
            } else {
                agent.ensure_index_ready().await;
                let index = agent.index().clone();
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
                say(text);
            }
        }
        "remember" => {
            if argument.is_empty() {
                say("usage: /remember TEXT\n".to_owned());
            } else {
                // Typed by the user: the one way to save a memory lode trusts.
                let shared = agent.shared();
                let session_id = info.id.clone();
                let text = argument.to_owned();
                let saved = tokio::task::spawn_blocking(move || {
                    shared.extensions.remember_from_user(&session_id, &text)
                })
                .await
                .map_err(|error| AgentError::Other(error.to_string()))?;
                say(match saved {
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
                });
            }
        }
        "sessions" => {
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
            say(text);
        }
        other => say(format!("unknown command /{other}\n")),
    }
    // Slash commands are recorded for the user only: they are not part of the model's conversation.
    let _ = Visibility::UserOnly;
    Ok(StopReason::EndTurn)
}
