//! `lode lsp`'s own `textDocument/definition` and `textDocument/references`, resolved by type:
//! asked of the downstream language server lode already runs for the file's language (the
//! navigation service of [`crate::agent_navigation`], the same warm process that checks the
//! code actions' edits and answers the agent's `definition` and `references`).
//!
//! The question is asked on the editor's buffer text (unsaved edits included), in UTF-16
//! positions both ways, as the editor and the server speak. Anything short of an answer — no
//! server for the language, a server that fails, exits or is slower than the deadline, an
//! empty answer — gives `None`, and the caller answers from lode's own index by name. A
//! question that misses the deadline keeps running in the background, so a server still
//! warming up (its first answer waits for the workspace to load) is warm for the next one.

use parking_lot::Mutex;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tower_lsp_server::lsp_types::{GotoDefinitionResponse, Location, Position};

use crate::agent_navigation::ServerNavigation;
use crate::downstream::{DiagnosticsProvider, language_id};
use lode_tools::navigation::NavigationError;

/// The position requests answered by type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Question {
    Definition,
    /// With the declaration or without.
    References {
        include_declaration: bool,
    },
}

impl Question {
    fn method(self) -> &'static str {
        match self {
            Question::Definition => "textDocument/definition",
            Question::References { .. } => "textDocument/references",
        }
    }
}

/// The downstream servers as `lode lsp`'s navigation.
pub struct TypeResolved {
    navigation: Arc<ServerNavigation>,
    provider: Arc<DiagnosticsProvider>,
    /// How long a request waits for the server before the index answers.
    deadline: Duration,
    /// Why a language has no server, said once each.
    told: Mutex<HashSet<String>>,
}

impl TypeResolved {
    pub fn new(provider: Arc<DiagnosticsProvider>, deadline: Duration) -> TypeResolved {
        TypeResolved {
            navigation: Arc::new(ServerNavigation::new(provider.clone())),
            provider,
            deadline,
            told: Mutex::default(),
        }
    }

    /// The server's locations for `question` at `position` of `path`, whose current text is
    /// `text`; `None` when the index should answer instead (the reason is logged).
    pub async fn locations(
        &self,
        question: Question,
        path: &Path,
        text: String,
        position: Position,
    ) -> Option<Vec<Location>> {
        language_id(path)?;
        let path = tokio::fs::canonicalize(path)
            .await
            .unwrap_or_else(|_| path.to_path_buf());
        let asked = self.ask(question, path.clone(), text, position);
        let answer = match tokio::time::timeout(self.deadline, asked).await {
            Ok(answer) => answer,
            Err(_) => Err(NavigationError::Failed(format!(
                "no answer within {} ms (it keeps working on it)",
                self.deadline.as_millis()
            ))),
        };
        match answer {
            Ok((value, by)) => {
                let found = parse_locations(question, value);
                if found.is_empty() {
                    tracing::info!(
                        "{by} found nothing for {} at {}:{}:{}; answering by name",
                        question.method(),
                        path.display(),
                        position.line + 1,
                        position.character + 1
                    );
                    return None;
                }
                Some(found)
            }
            Err(NavigationError::Unavailable(reason)) => {
                let told = self.told.lock().insert(reason.clone());
                if told {
                    tracing::warn!(
                        error = %reason,
                        "definitions and references by name for {}",
                        path.extension()
                            .map_or_else(String::new, |ext| format!(".{}", ext.to_string_lossy()))
                    );
                }
                None
            }
            Err(failed) => {
                tracing::warn!(
                    error = %failed,
                    "{} by name, the language server failed",
                    question.method()
                );
                None
            }
        }
    }

    /// Asks on a task of its own, so a question dropped at the deadline (or cancelled by the
    /// editor) still finishes, bounded by the client's own request timeout.
    async fn ask(
        &self,
        question: Question,
        path: PathBuf,
        text: String,
        position: Position,
    ) -> Result<(Value, String), NavigationError> {
        let navigation = self.navigation.clone();
        let extra = match question {
            Question::Definition => None,
            Question::References {
                include_declaration,
            } => Some((
                "context",
                json!({ "includeDeclaration": include_declaration }),
            )),
        };
        let task = tokio::spawn(async move {
            navigation
                .ask_in_text(
                    question.method(),
                    &path,
                    &text,
                    position.line,
                    position.character,
                    extra,
                )
                .await
        });
        task.await
            .map_err(|error| NavigationError::Failed(error.to_string()))?
    }

    /// Stops the language servers.
    pub async fn shutdown(&self) {
        self.provider.shutdown().await;
    }
}

/// A definition or references answer (`Location`, `Location[]`, `LocationLink[]` or null) as
/// locations; a link points at its target's name (`targetSelectionRange`).
fn parse_locations(question: Question, value: Value) -> Vec<Location> {
    if value.is_null() {
        return Vec::new();
    }
    let parsed = match question {
        Question::References { .. } => serde_json::from_value::<Vec<Location>>(value)
            .map(GotoDefinitionResponse::Array)
            .ok(),
        Question::Definition => serde_json::from_value::<GotoDefinitionResponse>(value).ok(),
    };
    match parsed {
        None => Vec::new(),
        Some(GotoDefinitionResponse::Scalar(location)) => vec![location],
        Some(GotoDefinitionResponse::Array(locations)) => locations,
        Some(GotoDefinitionResponse::Link(links)) => links
            .into_iter()
            .map(|link| Location::new(link.target_uri, link.target_selection_range))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_answer_shape_becomes_locations() {
        let range =
            json!({"start": {"line": 2, "character": 4}, "end": {"line": 2, "character": 8}});
        let wide =
            json!({"start": {"line": 1, "character": 0}, "end": {"line": 5, "character": 0}});
        let location = json!({"uri": "file:///w/a.py", "range": range});
        let link = json!({"targetUri": "file:///w/a.py", "targetRange": wide,
                          "targetSelectionRange": range});
        let references = Question::References {
            include_declaration: true,
        };
        for (question, answer) in [
            (Question::Definition, location.clone()),
            (Question::Definition, json!([location])),
            (Question::Definition, json!([link])),
            (references, json!([location])),
        ] {
            let found = parse_locations(question, answer.clone());
            assert_eq!(found.len(), 1, "{answer}");
            assert_eq!(found[0].range.start, Position::new(2, 4), "{answer}");
            assert_eq!(found[0].uri.as_str(), "file:///w/a.py");
        }
        assert!(parse_locations(Question::Definition, Value::Null).is_empty());
        assert!(parse_locations(references, json!({"not": "a list"})).is_empty());
        assert!(parse_locations(Question::Definition, json!([{"uri": 3}])).is_empty());
    }
}
