//! The downstream language servers ([`crate::downstream`]) as the agent's
//! [`lode_tools::navigation::NavigationSource`]: `textDocument/hover`, `…/definition`,
//! `…/references`, the call hierarchy (`…/prepareCallHierarchy`, then
//! `callHierarchy/incomingCalls` or `…/outgoingCalls`) and `…/rename` (after
//! `…/prepareRename` when the server offers it) asked of the warm server a [`DiagnosticsProvider`] keeps per language, so
//! navigation and diagnostics share one process per language. The file asked about is sent as it
//! is on disk first; positions are converted between the agent's characters and LSP's UTF-16
//! code units. `resolved_by` is the server's program name (`pyright`, `rust-analyzer`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lode_tools::navigation::{
    CallDirection, CallItem, FileEdit, NavLocation, NavPoint, NavPosition, NavigationError,
    NavigationSource, Resolved, TextEdit,
};
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
        let (value, server) = self.ask_server(method, at, extra).await?;
        Ok((value, server_name(&server)))
    }

    /// [`Self::ask`], answering with the server itself for follow-up requests.
    async fn ask_server(
        &self,
        method: &str,
        at: &NavPoint,
        extra: Option<(&str, Value)>,
    ) -> Result<(Value, Arc<LanguageServerClient>), NavigationError> {
        let text = std::fs::read(&at.path)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .map_err(|error| {
                NavigationError::Failed(format!("cannot read {}: {error}", at.path.display()))
            })?;
        let line = at.line.saturating_sub(1);
        let character = line_text(&text, line).map_or(at.column.saturating_sub(1), |line| {
            utf16_of_chars(line, at.column.saturating_sub(1))
        });
        self.ask_server_in_text(method, &at.path, &text, line, character, extra)
            .await
    }

    /// Asks the server for `path`'s language `method` at a 0-based `line` and UTF-16
    /// `character` of `text` (the file's current text, which may be unsaved: `lode lsp` sends
    /// the editor's buffer), once more after a restart when the server had exited. Answers with
    /// the server's result as it is (positions in UTF-16) and the server's name.
    pub async fn ask_in_text(
        &self,
        method: &str,
        path: &Path,
        text: &str,
        line: u32,
        character: u32,
        extra: Option<(&str, Value)>,
    ) -> Result<(Value, String), NavigationError> {
        let (value, server) = self
            .ask_server_in_text(method, path, text, line, character, extra)
            .await?;
        Ok((value, server_name(&server)))
    }

    /// [`Self::ask_in_text`], answering with the server itself.
    async fn ask_server_in_text(
        &self,
        method: &str,
        path: &Path,
        text: &str,
        line: u32,
        character: u32,
        extra: Option<(&str, Value)>,
    ) -> Result<(Value, Arc<LanguageServerClient>), NavigationError> {
        let mut restarts_left = 1;
        loop {
            let server = self
                .provider
                .language_server(path)
                .await
                .map_err(NavigationError::Unavailable)?;
            let answer = match server.warm_up(path, text).await {
                Ok(()) => {
                    server
                        .position_request(
                            method,
                            path,
                            text.to_owned(),
                            line,
                            character,
                            extra.clone(),
                        )
                        .await
                }
                Err(error) => Err(error),
            };
            match answer {
                Ok(value) => return Ok((value, server)),
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

    async fn call_hierarchy(
        &self,
        at: &NavPoint,
        direction: CallDirection,
    ) -> Result<Resolved<Vec<CallItem>>, NavigationError> {
        let (prepared, server) = self
            .ask_server("textDocument/prepareCallHierarchy", at, None)
            .await?;
        let resolved_by = server_name(&server);
        if server.capability("callHierarchyProvider").is_none() {
            return Err(NavigationError::Unavailable(format!(
                "{resolved_by} has no call hierarchy"
            )));
        }
        let Some(item) = prepared.as_array().and_then(|items| items.first()).cloned() else {
            return Err(NavigationError::Failed(format!(
                "{resolved_by} finds no function at {}:{}:{}",
                at.path.display(),
                at.line,
                at.column
            )));
        };
        let (method, other_end) = match direction {
            CallDirection::Incoming => ("callHierarchy/incomingCalls", "from"),
            CallDirection::Outgoing => ("callHierarchy/outgoingCalls", "to"),
        };
        let calls = server
            .request(method, json!({ "item": item }), server.timeout())
            .await
            .map_err(|error| NavigationError::Failed(error.to_string()))?;
        let mut texts = Texts::default();
        let asked_uri = item.get("uri").cloned().unwrap_or(Value::Null);
        let mut items: Vec<CallItem> = calls
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter_map(|call| {
                let end = call.get(other_end)?;
                let uri = end.get("uri")?;
                let defined_at = texts.location(uri, end.pointer("/selectionRange/start")?)?;
                // The call sites are in the caller (incoming) or in the function asked about
                // (outgoing).
                let sites_uri = match direction {
                    CallDirection::Incoming => uri,
                    CallDirection::Outgoing => &asked_uri,
                };
                let calls = call
                    .get("fromRanges")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|range| texts.location(sites_uri, range.get("start")?))
                    .collect();
                Some(CallItem {
                    name: end.get("name")?.as_str()?.to_owned(),
                    detail: end
                        .get("detail")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    defined_at,
                    calls,
                })
            })
            .collect();
        items.sort_by(|a, b| a.defined_at.cmp(&b.defined_at));
        Ok(Resolved {
            value: items,
            resolved_by,
        })
    }

    async fn rename(
        &self,
        at: &NavPoint,
        new_name: &str,
    ) -> Result<Resolved<Vec<FileEdit>>, NavigationError> {
        let server = self
            .provider
            .language_server(&at.path)
            .await
            .map_err(NavigationError::Unavailable)?;
        let resolved_by = server_name(&server);
        let Some(provider) = server.capability("renameProvider").cloned() else {
            return Err(NavigationError::Unavailable(format!(
                "{resolved_by} does not rename"
            )));
        };
        if provider.get("prepareProvider").and_then(Value::as_bool) == Some(true) {
            let (prepared, _) = self
                .ask_server("textDocument/prepareRename", at, None)
                .await?;
            if prepared.is_null() {
                return Err(NavigationError::Failed(format!(
                    "{resolved_by} says there is nothing to rename at {}:{}:{}",
                    at.path.display(),
                    at.line,
                    at.column
                )));
            }
        }
        let (answer, server) = self
            .ask_server(
                "textDocument/rename",
                at,
                Some(("newName", Value::String(new_name.to_owned()))),
            )
            .await?;
        let edits = workspace_edit(&answer).map_err(NavigationError::Failed)?;
        // A file the server has open with other text than the disk's now: its edits are for
        // text that is no longer there.
        for edit in &edits {
            if let Some(sent) = server.sent_text(&edit.path).await {
                let now = std::fs::read(&edit.path)
                    .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                    .ok();
                if now.as_deref() != Some(sent.as_str()) {
                    return Err(NavigationError::Failed(format!(
                        "{} changed on disk since {resolved_by} read it; ask again",
                        edit.path.display()
                    )));
                }
            }
        }
        Ok(Resolved {
            value: edits,
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

/// Files' texts, read once each, for turning LSP positions into characters.
#[derive(Default)]
struct Texts(HashMap<PathBuf, Option<String>>);

impl Texts {
    /// The text of `path`, when it can be read.
    fn text(&mut self, path: &Path) -> Option<&str> {
        self.0
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                std::fs::read(path)
                    .ok()
                    .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            })
            .as_deref()
    }

    /// An LSP `position` (0-based, UTF-16) in `path` as a 1-based position in characters.
    fn position(&mut self, path: &Path, position: &Value) -> Option<NavPosition> {
        let line = position.get("line")?.as_u64()? as u32;
        let character = position.get("character")?.as_u64()? as u32;
        let column = self
            .text(path)
            .and_then(|text| line_text(text, line))
            .map_or(character, |text| chars_of_utf16(text, character));
        Some(NavPosition {
            line: line + 1,
            column: column + 1,
        })
    }

    /// A `uri` and `position` as a location.
    fn location(&mut self, uri: &Value, position: &Value) -> Option<NavLocation> {
        let path = uri_path(uri)?;
        let at = self.position(&path, position)?;
        Some(NavLocation {
            path,
            line: at.line,
            column: at.column,
        })
    }
}

/// The canonical path of a `file://` URI value (as it is when it cannot be canonicalised).
fn uri_path(uri: &Value) -> Option<PathBuf> {
    let uri: Uri = serde_json::from_value(uri.clone()).ok()?;
    let path = uri.to_file_path()?.into_owned();
    Some(std::fs::canonicalize(&path).unwrap_or(path))
}

/// Most files and edits a rename may change: a larger answer is refused, not applied.
const MAX_RENAME_FILES: usize = 1_000;
const MAX_RENAME_EDITS: usize = 20_000;

/// A rename's `WorkspaceEdit` (`changes`, or `documentChanges` of text edits) as edits per file,
/// positions in characters. File operations (create, rename, delete) and malformed answers
/// are refused with the reason.
fn workspace_edit(answer: &Value) -> Result<Vec<FileEdit>, String> {
    if answer.is_null() {
        return Err("the language server has no edits for this rename".into());
    }
    let mut per_file: Vec<(Value, &Value)> = Vec::new();
    if let Some(changes) = answer.get("documentChanges").and_then(Value::as_array) {
        for change in changes {
            if change.get("kind").is_some() {
                return Err(format!(
                    "the rename would {} a file; lode applies text edits only",
                    change
                        .get("kind")
                        .and_then(Value::as_str)
                        .unwrap_or("change")
                ));
            }
            let uri = change
                .pointer("/textDocument/uri")
                .ok_or("a documentChanges entry names no document")?;
            let edits = change
                .get("edits")
                .ok_or("a documentChanges entry has no edits")?;
            per_file.push((uri.clone(), edits));
        }
    } else if let Some(changes) = answer.get("changes").and_then(Value::as_object) {
        for (uri, edits) in changes {
            per_file.push((Value::String(uri.clone()), edits));
        }
    } else {
        return Err("the language server answered a rename without edits".into());
    }
    if per_file.len() > MAX_RENAME_FILES {
        return Err(format!(
            "the rename would change {} files, more than the {MAX_RENAME_FILES} lode applies",
            per_file.len()
        ));
    }
    let mut texts = Texts::default();
    let mut files: Vec<FileEdit> = Vec::new();
    let mut count = 0;
    for (uri, edits) in per_file {
        let path = uri_path(&uri).ok_or_else(|| format!("{uri} is not a local file"))?;
        let edits = edits.as_array().ok_or("a file's edits are not a list")?;
        let mut converted = Vec::with_capacity(edits.len());
        for edit in edits {
            count += 1;
            if count > MAX_RENAME_EDITS {
                return Err(format!(
                    "the rename has more than the {MAX_RENAME_EDITS} edits lode applies"
                ));
            }
            let malformed = || format!("a malformed edit for {}: {edit}", path.display());
            let start = edit.pointer("/range/start").ok_or_else(malformed)?;
            let end = edit.pointer("/range/end").ok_or_else(malformed)?;
            let new_text = edit
                .get("newText")
                .and_then(Value::as_str)
                .ok_or_else(malformed)?;
            converted.push(TextEdit {
                start: texts.position(&path, start).ok_or_else(malformed)?,
                end: texts.position(&path, end).ok_or_else(malformed)?,
                new_text: new_text.to_owned(),
            });
        }
        match files.iter_mut().find(|file| file.path == path) {
            Some(file) => file.edits.extend(converted),
            None => files.push(FileEdit {
                path,
                edits: converted,
            }),
        }
    }
    Ok(files)
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
