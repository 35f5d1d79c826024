//! The downstream language servers ([`crate::downstream`]) as the agent's
//! [`lode_agent::navigation::NavigationSource`]: `textDocument/hover`, `…/definition` and
//! `…/references` asked of the warm server a [`DiagnosticsProvider`] keeps per language, so
//! navigation and diagnostics share one process per language. The file asked about is sent as it
//! is on disk first; positions are converted between the agent's characters and LSP's UTF-16
//! code units. `resolved_by` is the server's program name (`pyright`, `rust-analyzer`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lode_agent::navigation::{NavLocation, NavPoint, NavigationError, NavigationSource, Resolved};
use serde_json::{Value, json};
use tower_lsp_server::UriExt;
use tower_lsp_server::lsp_types::Uri;

use crate::downstream::{DiagnosticsError, DiagnosticsProvider, LanguageServerClient};

/// Navigation through the provider's language servers.
pub struct ServerNavigation {
    provider: Arc<DiagnosticsProvider>,
}

impl ServerNavigation {
    pub fn new(provider: Arc<DiagnosticsProvider>) -> ServerNavigation {
        ServerNavigation { provider }
    }

    /// Asks the server for `at`'s language `method` at `at`, once more after a restart when the
    /// server had exited.
    async fn ask(
        &self,
        method: &str,
        at: &NavPoint,
        extra: Option<(&str, Value)>,
    ) -> Result<(Value, String), NavigationError> {
        let text = std::fs::read(&at.path)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .map_err(|error| {
                NavigationError::Failed(format!("cannot read {}: {error}", at.path.display()))
            })?;
        let line = at.line.saturating_sub(1);
        let character = line_text(&text, line).map_or(at.column.saturating_sub(1), |line| {
            utf16_of_chars(line, at.column.saturating_sub(1))
        });
        let mut restarts_left = 1;
        loop {
            let server = self
                .provider
                .language_server(&at.path)
                .await
                .map_err(NavigationError::Unavailable)?;
            let answer = match server.warm_up(&at.path, &text).await {
                Ok(()) => {
                    server
                        .position_request(
                            method,
                            &at.path,
                            text.clone(),
                            line,
                            character,
                            extra.clone(),
                        )
                        .await
                }
                Err(error) => Err(error),
            };
            match answer {
                Ok(value) => return Ok((value, server_name(&server))),
                Err(DiagnosticsError::Exited { .. }) if restarts_left > 0 => restarts_left -= 1,
                Err(error) => return Err(NavigationError::Failed(error.to_string())),
            }
        }
    }
}

#[async_trait::async_trait]
impl NavigationSource for ServerNavigation {
    async fn hover(&self, at: &NavPoint) -> Result<Resolved<Option<String>>, NavigationError> {
        let (value, resolved_by) = self.ask("textDocument/hover", at, None).await?;
        let text = value
            .get("contents")
            .map(hover_text)
            .filter(|t| !t.is_empty());
        Ok(Resolved {
            value: text,
            resolved_by,
        })
    }

    async fn definition(
        &self,
        at: &NavPoint,
    ) -> Result<Resolved<Vec<NavLocation>>, NavigationError> {
        let (value, resolved_by) = self.ask("textDocument/definition", at, None).await?;
        Ok(Resolved {
            value: locations(&value),
            resolved_by,
        })
    }

    async fn references(
        &self,
        at: &NavPoint,
    ) -> Result<Resolved<Vec<NavLocation>>, NavigationError> {
        let context = ("context", json!({ "includeDeclaration": true }));
        let (value, resolved_by) = self
            .ask("textDocument/references", at, Some(context))
            .await?;
        Ok(Resolved {
            value: locations(&value),
            resolved_by,
        })
    }
}

/// The program a client runs, without its directory and a `-langserver` /
/// `-language-server` suffix: `pyright`, `rust-analyzer`, `typescript`, `gopls`.
pub fn server_name(server: &LanguageServerClient) -> String {
    let program = server.command().split(' ').next().unwrap_or_default();
    let name = Path::new(program)
        .file_name()
        .map_or_else(|| program.to_owned(), |n| n.to_string_lossy().into_owned());
    name.strip_suffix("-langserver")
        .or_else(|| name.strip_suffix("-language-server"))
        .unwrap_or(&name)
        .to_owned()
}

/// A 0-based line of a text.
fn line_text(text: &str, line: u32) -> Option<&str> {
    text.lines().nth(line as usize)
}

/// The UTF-16 offset of the `chars`-th character of a line.
fn utf16_of_chars(line: &str, chars: u32) -> u32 {
    let counted: u32 = line
        .chars()
        .take(chars as usize)
        .map(|c| c.len_utf16() as u32)
        .sum();
    let missing = chars.saturating_sub(line.chars().count() as u32);
    counted + missing
}

/// The count of characters in the first `utf16` code units of a line.
fn chars_of_utf16(line: &str, utf16: u32) -> u32 {
    let mut units = 0;
    let mut chars = 0;
    for c in line.chars() {
        if units >= utf16 {
            break;
        }
        units += c.len_utf16() as u32;
        chars += 1;
    }
    chars + utf16.saturating_sub(units)
}

/// A hover's `contents` as text: `MarkupContent`, a `MarkedString` or a list of them.
fn hover_text(contents: &Value) -> String {
    match contents {
        Value::String(text) => text.clone(),
        Value::Array(items) => items
            .iter()
            .map(hover_text)
            .filter(|text| !text.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n"),
        Value::Object(object) => {
            let value = object.get("value").and_then(Value::as_str).unwrap_or("");
            match object.get("language").and_then(Value::as_str) {
                Some(language) => format!("```{language}\n{value}\n```"),
                None => value.to_owned(),
            }
        }
        _ => String::new(),
    }
}

/// Locations of a definition or references answer (`Location`, `Location[]`,
/// `LocationLink[]`, or null), 1-based, columns in characters.
fn locations(value: &Value) -> Vec<NavLocation> {
    let items: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        Value::Object(_) => vec![value],
        _ => Vec::new(),
    };
    let mut texts: HashMap<PathBuf, Option<String>> = HashMap::new();
    items
        .into_iter()
        .filter_map(|item| {
            let uri = item.get("uri").or_else(|| item.get("targetUri"))?;
            let range = item
                .get("range")
                .or_else(|| item.get("targetSelectionRange"))?;
            let uri: Uri = serde_json::from_value(uri.clone()).ok()?;
            let path = uri.to_file_path()?.into_owned();
            let path = std::fs::canonicalize(&path).unwrap_or(path);
            let line = range.pointer("/start/line")?.as_u64()? as u32;
            let character = range.pointer("/start/character")?.as_u64()? as u32;
            let text = texts
                .entry(path.clone())
                .or_insert_with(|| std::fs::read_to_string(&path).ok());
            let column = text
                .as_deref()
                .and_then(|text| line_text(text, line))
                .map_or(character, |line| chars_of_utf16(line, character));
            Some(NavLocation {
                path,
                line: line + 1,
                column: column + 1,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_convert_between_characters_and_utf16() {
        let line = "s = \"é😀\"; c.area()";
        let area = line.find("area").unwrap();
        let chars = line[..area].chars().count() as u32;
        let units = utf16_of_chars(line, chars);
        assert_eq!(units, chars + 1, "the emoji is two UTF-16 units");
        assert_eq!(chars_of_utf16(line, units), chars);
    }

    #[test]
    fn hover_contents_of_every_shape_become_text() {
        let markup = json!({"kind": "markdown", "value": "```python\ndef area()\n```"});
        assert_eq!(hover_text(&markup), "```python\ndef area()\n```");
        let marked = json!([{"language": "rust", "value": "fn f()"}, "docs"]);
        assert_eq!(hover_text(&marked), "```rust\nfn f()\n```\n\ndocs");
        assert_eq!(hover_text(&Value::Null), "");
    }

    #[test]
    fn definition_answers_of_every_shape_become_locations() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.py");
        std::fs::write(&file, "x = 1\n").unwrap();
        let uri = Uri::from_file_path(&file).unwrap();
        let range =
            json!({"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}});
        let location = json!({"uri": uri, "range": range});
        let link = json!([{"targetUri": uri, "targetRange": range, "targetSelectionRange": range}]);
        for answer in [location.clone(), json!([location]), link] {
            let found = locations(&answer);
            assert_eq!(found.len(), 1, "{answer}");
            assert_eq!((found[0].line, found[0].column), (1, 1));
        }
        assert!(locations(&Value::Null).is_empty());
        assert!(locations(&json!([{"uri": 3}])).is_empty());
    }
}
