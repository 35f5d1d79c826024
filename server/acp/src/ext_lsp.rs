//! The ACP LSP extension (Zeph's shape, so an editor implements it once for both agents): when
//! the client's `initialize` carries `"lsp": true` in `clientCapabilities._meta`, lode answers
//! with the `lsp/*` methods it may call (`agentCapabilities._meta.lsp`), asks the editor's own
//! language servers through them (hover, definition, references, document and workspace
//! symbols, code actions, diagnostics), and accepts the editor's `lsp/publishDiagnostics` and
//! `lsp/didSave` notifications. ACP extension methods carry a leading underscore on the wire
//! (`_lsp/hover`). Positions on the wire are 1-based, columns in characters; the editor converts.
//! `docs/acp.md` is the specification an editor implements.
//!
//! This module owns the wire shapes and their validation; [`AcpEditorLsp`] is the agent's
//! [`EditorLanguageServer`] over one connection, and the notification handlers live in
//! `connection`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{ClientCapabilities, SessionId};
use agent_client_protocol::{Client, JsonRpcMessage, JsonRpcNotification, UntypedMessage};
use lode_tools::diagnostics::{Diagnostic, Severity};
use lode_tools::editor_lsp::{
    EDITOR, EditorCodeAction, EditorLanguageServer, EditorSymbol, EditorTextEdit, NavRange,
};
use lode_tools::navigation::{NavLocation, NavPoint, NavigationError, NavigationSource, Resolved};
use serde::Deserialize;
use serde_json::{Value, json};

/// The `_meta` key of the capability, on both sides.
pub const META_KEY: &str = "lsp";
/// The requests lode sends to the editor (without ACP's leading underscore).
pub const METHODS: [&str; 7] = [
    "lsp/hover",
    "lsp/definition",
    "lsp/references",
    "lsp/documentSymbols",
    "lsp/workspaceSymbol",
    "lsp/codeActions",
    "lsp/diagnostics",
];
/// The notifications lode accepts from the editor (without ACP's leading underscore).
pub const NOTIFICATIONS: [&str; 2] = ["lsp/publishDiagnostics", "lsp/didSave"];
/// The wire names of the two notifications.
pub const PUBLISH_DIAGNOSTICS: &str = "_lsp/publishDiagnostics";
pub const DID_SAVE: &str = "_lsp/didSave";
/// Most locations or symbols taken from one answer; the rest are dropped.
pub const MAX_ITEMS: usize = 1_000;
/// Most characters kept of a hover text or a diagnostic message.
pub const MAX_TEXT_CHARS: usize = 16_000;
pub const MAX_MESSAGE_CHARS: usize = 2_000;

/// `[acp.lsp]`: the extension's settings, a section of lode's configuration (read and checked by
/// its loader).
pub use lode_agent::config::AcpLspSettings as LspSettings;

/// Whether the client offers the extension: `clientCapabilities._meta.lsp` is `true` or an
/// object (Zeph's clients send an object).
pub fn client_offers(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .meta
        .as_ref()
        .and_then(|meta| meta.get(META_KEY))
        .is_some_and(|offer| offer.as_bool() == Some(true) || offer.is_object())
}

/// What lode answers in `agentCapabilities._meta.lsp`.
pub fn advertised() -> Value {
    json!({ "methods": METHODS, "notifications": NOTIFICATIONS })
}

/// A 1-based position of a file as the wire carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
struct WirePosition {
    line: u32,
    character: u32,
}

fn file_uri(path: &Path) -> Result<String, NavigationError> {
    lode_tools::paths::path_to_file_uri(path)
        .map_err(|error| NavigationError::Failed(error.to_string()))
}

fn uri_path(uri: &str) -> Result<PathBuf, String> {
    lode_tools::paths::file_uri_to_path(uri).map_err(|error| error.to_string())
}

/// A 1-based `{line, character}`; zero or a missing field is an error naming `what`.
fn position(value: &Value, what: &str) -> Result<(u32, u32), String> {
    let position: WirePosition = serde_json::from_value(value.clone())
        .map_err(|error| format!("{what} must be {{line, character}}: {error}"))?;
    if position.line == 0 || position.character == 0 {
        return Err(format!(
            "{what} is 1-based, got line {} character {}",
            position.line, position.character
        ));
    }
    Ok((position.line, position.character))
}

fn range(value: &Value, what: &str) -> Result<NavRange, String> {
    Ok(NavRange {
        start: position(
            value.get("start").unwrap_or(&Value::Null),
            &format!("{what}.start"),
        )?,
        end: position(
            value.get("end").unwrap_or(&Value::Null),
            &format!("{what}.end"),
        )?,
    })
}

fn wire_range(range: &NavRange) -> Value {
    json!({
        "start": {"line": range.start.0, "character": range.start.1},
        "end": {"line": range.end.0, "character": range.end.1},
    })
}

/// The items of an answer: a bare array (Zeph's shape) or `{ <field>: [...], "server"? }`; and
/// the server the editor named, if any.
fn items<'a>(answer: &'a Value, field: &str) -> Result<(&'a [Value], Option<String>), String> {
    match answer {
        Value::Array(items) => Ok((items.as_slice(), None)),
        Value::Null => Ok((&[], None)),
        Value::Object(object) => {
            let items = match object.get(field) {
                Some(Value::Array(items)) => items.as_slice(),
                None | Some(Value::Null) => &[],
                Some(_) => return Err(format!("{field} must be an array")),
            };
            Ok((items, server_name(answer)))
        }
        _ => Err(format!(
            "the answer must be an array or an object with {field}"
        )),
    }
}

fn server_name(answer: &Value) -> Option<String> {
    answer
        .get("server")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|name| !name.is_empty() && name.len() <= 64)
        .map(str::to_owned)
}

fn resolved_by(server: Option<String>) -> String {
    server.unwrap_or_else(|| EDITOR.to_owned())
}

/// Parses a `Location` (`{uri, range}`), 1-based.
fn location(item: &Value, what: &str) -> Result<NavLocation, String> {
    let uri = item
        .get("uri")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{what}.uri must be a string"))?;
    let path = uri_path(uri).map_err(|why| format!("{what}.uri: {why}"))?;
    let range = range(
        item.get("range").unwrap_or(&Value::Null),
        &format!("{what}.range"),
    )?;
    Ok(NavLocation {
        path,
        line: range.start.0,
        column: range.start.1,
    })
}

/// `lsp/hover`'s answer: `{contents: string | MarkupContent | null, range?, server?}` or null.
pub fn parse_hover(answer: &Value) -> Result<Resolved<Option<String>>, String> {
    let server = server_name(answer);
    let contents = match answer {
        Value::Null => None,
        Value::Object(object) => match object.get("contents") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(text.clone()),
            Some(Value::Object(markup)) => Some(
                markup
                    .get("value")
                    .and_then(Value::as_str)
                    .ok_or("contents.value must be a string")?
                    .to_owned(),
            ),
            Some(_) => return Err("contents must be a string or {kind, value}".into()),
        },
        _ => return Err("the answer must be an object {contents} or null".into()),
    };
    Ok(Resolved {
        value: contents.map(|text| text.chars().take(MAX_TEXT_CHARS).collect()),
        resolved_by: resolved_by(server),
    })
}

/// `lsp/definition` and `lsp/references` answers: `Location[]` or `{locations, server?}`.
pub fn parse_locations(answer: &Value) -> Result<Resolved<Vec<NavLocation>>, String> {
    let (list, server) = items(answer, "locations")?;
    let value = list
        .iter()
        .take(MAX_ITEMS)
        .enumerate()
        .map(|(index, item)| location(item, &format!("locations[{index}]")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Resolved {
        value,
        resolved_by: resolved_by(server),
    })
}

/// LSP's `SymbolKind` numbers in words.
fn symbol_kind(kind: &Value) -> String {
    const KINDS: [&str; 26] = [
        "file",
        "module",
        "namespace",
        "package",
        "class",
        "method",
        "property",
        "field",
        "constructor",
        "enum",
        "interface",
        "function",
        "variable",
        "constant",
        "string",
        "number",
        "boolean",
        "array",
        "object",
        "key",
        "null",
        "enum member",
        "struct",
        "event",
        "operator",
        "type parameter",
    ];
    kind.as_u64()
        .and_then(|n| KINDS.get((n as usize).wrapping_sub(1)))
        .map_or_else(|| "symbol".to_owned(), |kind| (*kind).to_owned())
}

fn symbol_name(item: &Value, what: &str) -> Result<String, String> {
    item.get("name")
        .and_then(Value::as_str)
        .map(|name| name.chars().take(200).collect())
        .ok_or_else(|| format!("{what}.name must be a string"))
}

/// `lsp/documentSymbols`' answer: `DocumentSymbol[]` (nested through `children`) or
/// `{symbols, server?}`; flattened with each symbol's containers.
pub fn parse_document_symbols(
    path: &Path,
    answer: &Value,
) -> Result<Resolved<Vec<EditorSymbol>>, String> {
    fn walk(
        path: &Path,
        list: &[Value],
        container: &[String],
        what: &str,
        out: &mut Vec<EditorSymbol>,
        depth: usize,
    ) -> Result<(), String> {
        if depth > 64 {
            return Err(format!("{what} is nested more than 64 deep"));
        }
        for (index, item) in list.iter().enumerate() {
            if out.len() >= MAX_ITEMS {
                return Ok(());
            }
            let what = format!("{what}[{index}]");
            let name = symbol_name(item, &what)?;
            let range = range(
                item.get("range").unwrap_or(&Value::Null),
                &format!("{what}.range"),
            )?;
            out.push(EditorSymbol {
                name: name.clone(),
                kind: symbol_kind(item.get("kind").unwrap_or(&Value::Null)),
                path: path.to_path_buf(),
                range,
                container: container.to_vec(),
            });
            if let Some(children) = item.get("children").and_then(Value::as_array) {
                let mut inner = container.to_vec();
                inner.push(name);
                walk(
                    path,
                    children,
                    &inner,
                    &format!("{what}.children"),
                    out,
                    depth + 1,
                )?;
            }
        }
        Ok(())
    }
    let (list, server) = items(answer, "symbols")?;
    let mut value = Vec::new();
    walk(path, list, &[], "symbols", &mut value, 0)?;
    Ok(Resolved {
        value,
        resolved_by: resolved_by(server),
    })
}

/// `lsp/workspaceSymbol`'s answer: `SymbolInformation[]` (`{name, kind, location}`) or
/// `{symbols, server?}`.
pub fn parse_workspace_symbols(answer: &Value) -> Result<Resolved<Vec<EditorSymbol>>, String> {
    let (list, server) = items(answer, "symbols")?;
    let value = list
        .iter()
        .take(MAX_ITEMS)
        .enumerate()
        .map(|(index, item)| {
            let what = format!("symbols[{index}]");
            let place = item.get("location").unwrap_or(&Value::Null);
            let uri = place
                .get("uri")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("{what}.location.uri must be a string"))?;
            Ok(EditorSymbol {
                name: symbol_name(item, &what)?,
                kind: symbol_kind(item.get("kind").unwrap_or(&Value::Null)),
                path: uri_path(uri).map_err(|why| format!("{what}.location.uri: {why}"))?,
                range: range(
                    place.get("range").unwrap_or(&Value::Null),
                    &format!("{what}.location.range"),
                )?,
                container: item
                    .get("containerName")
                    .and_then(Value::as_str)
                    .map(|name| vec![name.to_owned()])
                    .unwrap_or_default(),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Resolved {
        value,
        resolved_by: resolved_by(server),
    })
}

/// `lsp/codeActions`' answer: `CodeAction[]` or `{actions, server?}`; actions without an edit
/// (commands only) are dropped.
pub fn parse_code_actions(answer: &Value) -> Result<Resolved<Vec<EditorCodeAction>>, String> {
    let (list, server) = items(answer, "actions")?;
    let mut value = Vec::new();
    for (index, item) in list.iter().take(MAX_ITEMS).enumerate() {
        let what = format!("actions[{index}]");
        let title = item
            .get("title")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{what}.title must be a string"))?;
        let Some(changes) = item
            .get("edit")
            .and_then(|edit| edit.get("changes"))
            .and_then(Value::as_object)
        else {
            continue;
        };
        let mut edits = Vec::new();
        for (uri, list) in changes {
            let path = uri_path(uri).map_err(|why| format!("{what}.edit.changes: {why}"))?;
            let list = list
                .as_array()
                .ok_or_else(|| format!("{what}.edit.changes[{uri}] must be an array"))?;
            for (n, edit) in list.iter().enumerate() {
                let at = format!("{what}.edit.changes[{uri}][{n}]");
                let new_text = edit
                    .get("new_text")
                    .or_else(|| edit.get("newText"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("{at}.new_text must be a string"))?;
                edits.push(EditorTextEdit {
                    path: path.clone(),
                    range: range(
                        edit.get("range").unwrap_or(&Value::Null),
                        &format!("{at}.range"),
                    )?,
                    new_text: new_text.to_owned(),
                });
            }
        }
        value.push(EditorCodeAction {
            title: title.chars().take(500).collect(),
            kind: item.get("kind").and_then(Value::as_str).map(str::to_owned),
            preferred: item
                .get("is_preferred")
                .or_else(|| item.get("isPreferred"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
            edits,
        });
    }
    Ok(Resolved {
        value,
        resolved_by: resolved_by(server),
    })
}

/// One diagnostic on the wire: `{range, severity?: 1-4, message, code?, source?}`, 1-based.
pub fn parse_diagnostic(item: &Value, what: &str) -> Result<Diagnostic, String> {
    let range = range(
        item.get("range").unwrap_or(&Value::Null),
        &format!("{what}.range"),
    )?;
    let severity = match item.get("severity") {
        None | Some(Value::Null) => Severity::Error,
        Some(value) => match value.as_u64() {
            Some(1) => Severity::Error,
            Some(2) => Severity::Warning,
            Some(3) => Severity::Information,
            Some(4) => Severity::Hint,
            _ => return Err(format!("{what}.severity must be 1-4, got {value}")),
        },
    };
    let message = item
        .get("message")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{what}.message must be a string"))?;
    let code = match item.get("code") {
        None | Some(Value::Null) => None,
        Some(Value::String(code)) => Some(code.clone()),
        Some(Value::Number(code)) => Some(code.to_string()),
        Some(_) => return Err(format!("{what}.code must be a string or a number")),
    };
    let source = match item.get("source") {
        None | Some(Value::Null) => None,
        Some(Value::String(source)) => Some(source.clone()),
        Some(_) => return Err(format!("{what}.source must be a string")),
    };
    Ok(Diagnostic {
        severity,
        line: range.start.0,
        column: range.start.1,
        message: message.chars().take(MAX_MESSAGE_CHARS).collect(),
        code,
        source,
    })
}

fn wire_diagnostic(diagnostic: &Diagnostic) -> Value {
    let severity = match diagnostic.severity {
        Severity::Error => 1,
        Severity::Warning => 2,
        Severity::Information => 3,
        Severity::Hint => 4,
    };
    json!({
        "range": {
            "start": {"line": diagnostic.line, "character": diagnostic.column},
            "end": {"line": diagnostic.line, "character": diagnostic.column},
        },
        "severity": severity,
        "message": diagnostic.message,
        "code": diagnostic.code,
        "source": diagnostic.source,
    })
}

/// `lsp/diagnostics`' answer: `Diagnostic[]` or `{diagnostics, server?}`, at most `cap`.
pub fn parse_diagnostics(answer: &Value, cap: usize) -> Result<Resolved<Vec<Diagnostic>>, String> {
    let (list, server) = items(answer, "diagnostics")?;
    let value = list
        .iter()
        .take(cap)
        .enumerate()
        .map(|(index, item)| parse_diagnostic(item, &format!("diagnostics[{index}]")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Resolved {
        value,
        resolved_by: resolved_by(server),
    })
}

/// A pushed `lsp/publishDiagnostics`, validated: `{uri, diagnostics, version?}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    pub path: PathBuf,
    pub diagnostics: Vec<Diagnostic>,
}

pub fn parse_publish(params: &Value, cap: usize) -> Result<Published, String> {
    if !params.is_object() {
        return Err("params must be an object {uri, diagnostics}".into());
    }
    let uri = params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or("uri must be a string")?;
    let path = uri_path(uri)?;
    let list = params
        .get("diagnostics")
        .and_then(Value::as_array)
        .ok_or("diagnostics must be an array")?;
    let diagnostics = list
        .iter()
        .take(cap)
        .enumerate()
        .map(|(index, item)| parse_diagnostic(item, &format!("diagnostics[{index}]")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Published { path, diagnostics })
}

/// A `lsp/didSave`'s file: `{uri}`.
pub fn parse_did_save(params: &Value) -> Result<PathBuf, String> {
    let uri = params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or("params must be an object {uri}")?;
    uri_path(uri)
}

/// Implements `JsonRpcMessage` for an `_lsp/*` message type whose params stay raw: it
/// matches every `_lsp/` method and keeps the method name and params as they came.
macro_rules! raw_lsp_message {
    ($message:ident) => {
        impl JsonRpcMessage for $message {
            fn matches_method(method: &str) -> bool {
                method.starts_with("_lsp/")
            }

            fn method(&self) -> &str {
                &self.method
            }

            fn to_untyped_message(&self) -> Result<UntypedMessage, agent_client_protocol::Error> {
                UntypedMessage::new(&self.method, &self.params)
            }

            fn parse_message(
                method: &str,
                params: &Value,
            ) -> Result<Self, agent_client_protocol::Error> {
                if !Self::matches_method(method) {
                    return Err(agent_client_protocol::Error::method_not_found());
                }
                Ok($message {
                    method: method.to_owned(),
                    params: params.clone(),
                })
            }
        }
    };
}

/// An `_lsp/*` notification from the editor, its params still raw so malformed params reach
/// our validation (and a log line) instead of failing inside the protocol library.
#[derive(Debug, Clone)]
pub struct LspNotification {
    pub method: String,
    pub params: Value,
}

raw_lsp_message!(LspNotification);

impl JsonRpcNotification for LspNotification {}

/// An `_lsp/*` request from the editor: lode serves none (the requests go the other way), so
/// each gets an error that says what the editor should do instead.
#[derive(Debug, Clone)]
pub struct LspRequest {
    pub method: String,
    pub params: Value,
}

raw_lsp_message!(LspRequest);

impl agent_client_protocol::JsonRpcRequest for LspRequest {
    type Response = Value;
}

/// Why an `_lsp/*` request from the editor is refused.
pub fn refusal(method: &str) -> String {
    let bare = method.trim_start_matches('_');
    if NOTIFICATIONS.contains(&bare) {
        format!("{method} is a notification: send it without an id")
    } else if METHODS.contains(&bare) {
        format!("{method} is a request lode sends to the editor, not one the editor sends to lode")
    } else {
        format!(
            "lode has no method {method}; the editor may send {PUBLISH_DIAGNOSTICS} and \
             {DID_SAVE} (notifications)"
        )
    }
}

/// The editor's language servers over one ACP connection, for one session's turns.
pub struct AcpEditorLsp {
    connection: ConnectionTo<Client>,
    /// Sent as `sessionId` with each request, when the request is for a session's turn.
    session_id: Option<SessionId>,
    timeout: Duration,
    per_file: usize,
}

impl AcpEditorLsp {
    pub fn new(
        connection: ConnectionTo<Client>,
        session_id: SessionId,
        settings: &LspSettings,
    ) -> AcpEditorLsp {
        AcpEditorLsp {
            connection,
            session_id: Some(session_id),
            timeout: settings.timeout(),
            per_file: settings.max_diagnostics_per_file,
        }
    }

    /// For requests that belong to no session (after `lsp/didSave`).
    pub fn without_session(
        connection: ConnectionTo<Client>,
        settings: &LspSettings,
    ) -> AcpEditorLsp {
        AcpEditorLsp {
            connection,
            session_id: None,
            timeout: settings.timeout(),
            per_file: settings.max_diagnostics_per_file,
        }
    }

    /// Sends `_<method>` and waits at most the timeout for the answer.
    async fn ask(&self, method: &str, mut params: Value) -> Result<Value, NavigationError> {
        if let (Some(object), Some(session)) = (params.as_object_mut(), &self.session_id) {
            object.insert("sessionId".into(), json!(session.0.as_ref()));
        }
        let wire = format!("_{method}");
        let request = UntypedMessage::new(&wire, &params).map_err(|error| {
            NavigationError::Failed(format!("the editor ({method}): cannot send: {error}"))
        })?;
        let answer = self.connection.send_request(request).block_task();
        match tokio::time::timeout(self.timeout, answer).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(NavigationError::Failed(format!(
                "the editor ({method}) failed: {error}"
            ))),
            Err(_) => Err(NavigationError::Failed(format!(
                "the editor ({method}) did not answer within {} ms",
                self.timeout.as_millis()
            ))),
        }
    }

    fn malformed(method: &str, why: String) -> NavigationError {
        NavigationError::Failed(format!("the editor's {method} answer is malformed: {why}"))
    }

    async fn at(
        &self,
        method: &str,
        at: &NavPoint,
        extra: Option<(&str, Value)>,
    ) -> Result<Value, NavigationError> {
        let mut params = json!({
            "uri": file_uri(&at.path)?,
            "line": at.line,
            "character": at.column,
        });
        if let Some((key, value)) = extra
            && let Some(object) = params.as_object_mut()
        {
            object.insert(key.into(), value);
        }
        self.ask(method, params).await
    }
}

#[async_trait::async_trait]
impl NavigationSource for AcpEditorLsp {
    async fn hover(&self, at: &NavPoint) -> Result<Resolved<Option<String>>, NavigationError> {
        let answer = self.at("lsp/hover", at, None).await?;
        parse_hover(&answer).map_err(|why| Self::malformed("lsp/hover", why))
    }

    async fn definition(
        &self,
        at: &NavPoint,
    ) -> Result<Resolved<Vec<NavLocation>>, NavigationError> {
        let answer = self.at("lsp/definition", at, None).await?;
        parse_locations(&answer).map_err(|why| Self::malformed("lsp/definition", why))
    }

    async fn references(
        &self,
        at: &NavPoint,
    ) -> Result<Resolved<Vec<NavLocation>>, NavigationError> {
        let answer = self
            .at(
                "lsp/references",
                at,
                Some(("include_declaration", json!(true))),
            )
            .await?;
        parse_locations(&answer).map_err(|why| Self::malformed("lsp/references", why))
    }
}

#[async_trait::async_trait]
impl EditorLanguageServer for AcpEditorLsp {
    async fn document_symbols(
        &self,
        path: &Path,
    ) -> Result<Resolved<Vec<EditorSymbol>>, NavigationError> {
        let answer = self
            .ask("lsp/documentSymbols", json!({"uri": file_uri(path)?}))
            .await?;
        parse_document_symbols(path, &answer)
            .map_err(|why| Self::malformed("lsp/documentSymbols", why))
    }

    async fn workspace_symbol(
        &self,
        query: &str,
    ) -> Result<Resolved<Vec<EditorSymbol>>, NavigationError> {
        let answer = self
            .ask("lsp/workspaceSymbol", json!({"query": query}))
            .await?;
        parse_workspace_symbols(&answer).map_err(|why| Self::malformed("lsp/workspaceSymbol", why))
    }

    async fn code_actions(
        &self,
        path: &Path,
        range: &NavRange,
        diagnostics: &[Diagnostic],
    ) -> Result<Resolved<Vec<EditorCodeAction>>, NavigationError> {
        let params = json!({
            "uri": file_uri(path)?,
            "range": wire_range(range),
            "diagnostics": diagnostics.iter().map(wire_diagnostic).collect::<Vec<_>>(),
        });
        let answer = self.ask("lsp/codeActions", params).await?;
        parse_code_actions(&answer).map_err(|why| Self::malformed("lsp/codeActions", why))
    }

    async fn diagnostics(&self, path: &Path) -> Result<Resolved<Vec<Diagnostic>>, NavigationError> {
        let answer = self
            .ask("lsp/diagnostics", json!({"uri": file_uri(path)?}))
            .await?;
        parse_diagnostics(&answer, self.per_file)
            .map_err(|why| Self::malformed("lsp/diagnostics", why))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(line: u32, character: u32) -> Value {
        json!({"start": {"line": line, "character": character}, "end": {"line": line, "character": character + 3}})
    }

    #[test]
    fn the_capability_is_true_or_an_object() {
        let mut capabilities = ClientCapabilities::new();
        assert!(!client_offers(&capabilities));
        for (offer, expected) in [
            (json!(true), true),
            (json!({"version": 1}), true),
            (json!(false), false),
            (json!("yes"), false),
        ] {
            let mut meta = serde_json::Map::new();
            meta.insert("lsp".into(), offer.clone());
            capabilities = ClientCapabilities::new().meta(meta);
            assert_eq!(client_offers(&capabilities), expected, "{offer}");
        }
    }

    #[test]
    fn hover_answers_of_every_shape() {
        let plain = parse_hover(&json!({"contents": "def area(self) -> float"})).unwrap();
        assert_eq!(plain.value.as_deref(), Some("def area(self) -> float"));
        assert_eq!(plain.resolved_by, "ide");
        let markup = parse_hover(
            &json!({"contents": {"kind": "markdown", "value": "x"}, "server": "pyright"}),
        )
        .unwrap();
        assert_eq!(markup.value.as_deref(), Some("x"));
        assert_eq!(markup.resolved_by, "pyright");
        assert_eq!(parse_hover(&Value::Null).unwrap().value, None);
        assert!(parse_hover(&json!([1])).is_err());
        assert!(parse_hover(&json!({"contents": 5})).is_err());
    }

    #[test]
    fn locations_are_one_based_and_zero_is_refused() {
        let answer = json!([{"uri": "file:///w/a%20b.py", "range": r(3, 9)}]);
        let found = parse_locations(&answer).unwrap();
        assert_eq!(found.value[0].path, PathBuf::from("/w/a b.py"));
        assert_eq!((found.value[0].line, found.value[0].column), (3, 9));
        let wrapped = json!({"locations": [{"uri": "file:///w/a.py", "range": r(1, 1)}], "server": "tsserver"});
        assert_eq!(parse_locations(&wrapped).unwrap().resolved_by, "tsserver");
        let zero = json!([{"uri": "file:///w/a.py", "range": r(0, 1)}]);
        assert!(parse_locations(&zero).unwrap_err().contains("1-based"));
        assert!(parse_locations(&json!([{"uri": "http://x/a.py", "range": r(1, 1)}])).is_err());
        assert!(parse_locations(&json!("nope")).is_err());
        let many: Vec<Value> = (0..MAX_ITEMS + 50)
            .map(|_| json!({"uri": "file:///w/a.py", "range": r(1, 1)}))
            .collect();
        assert_eq!(
            parse_locations(&json!(many)).unwrap().value.len(),
            MAX_ITEMS
        );
    }

    #[test]
    fn symbols_actions_and_diagnostics_parse() {
        let outline = json!([{"name": "Circle", "kind": 5, "range": r(1, 1), "selection_range": r(1, 7),
            "children": [{"name": "area", "kind": 6, "range": r(2, 5), "selection_range": r(2, 9)}]}]);
        let symbols = parse_document_symbols(Path::new("/w/a.py"), &outline).unwrap();
        assert_eq!(symbols.value.len(), 2);
        assert_eq!(symbols.value[1].container, ["Circle"]);
        assert_eq!(symbols.value[1].kind, "method");
        let found = parse_workspace_symbols(&json!([{"name": "area", "kind": 6,
            "location": {"uri": "file:///w/a.py", "range": r(2, 5)}}]))
        .unwrap();
        assert_eq!(found.value[0].range.start, (2, 5));
        let actions = parse_code_actions(&json!([
            {"title": "Add import", "kind": "quickfix", "is_preferred": true,
             "edit": {"changes": {"file:///w/a.py": [{"range": r(1, 1), "new_text": "import math\n"}]}}},
            {"title": "Run a command only", "command": {"command": "x"}}
        ]))
        .unwrap();
        assert_eq!(actions.value.len(), 1);
        assert!(actions.value[0].preferred);
        assert_eq!(actions.value[0].edits[0].new_text, "import math\n");
        let diagnostics = parse_diagnostics(
            &json!([{"range": r(4, 2), "severity": 2, "message": "unused", "code": 7}]),
            10,
        )
        .unwrap();
        assert_eq!(diagnostics.value[0].line, 4);
        assert_eq!(diagnostics.value[0].code.as_deref(), Some("7"));
        assert_eq!(diagnostics.value[0].severity, Severity::Warning);
    }

    #[test]
    fn malformed_pushes_are_refused_with_a_reason() {
        for (params, why) in [
            (json!([]), "params must be an object"),
            (json!({"uri": 1, "diagnostics": []}), "uri"),
            (
                json!({"uri": "file:///a.py"}),
                "diagnostics must be an array",
            ),
            (
                json!({"uri": "file:///a.py", "diagnostics": [{"range": r(0, 1), "message": "m"}]}),
                "1-based",
            ),
            (
                json!({"uri": "file:///a.py", "diagnostics": [{"range": r(1, 1), "severity": 7, "message": "m"}]}),
                "severity",
            ),
            (
                json!({"uri": "file:///a.py", "diagnostics": [{"range": r(1, 1)}]}),
                "message",
            ),
        ] {
            let error = parse_publish(&params, 10).unwrap_err();
            assert!(error.contains(why), "{params}: {error}");
        }
        let list: Vec<Value> = (0..20)
            .map(|_| json!({"range": r(1, 1), "message": "m"}))
            .collect();
        let capped =
            parse_publish(&json!({"uri": "file:///a.py", "diagnostics": list}), 5).unwrap();
        assert_eq!(capped.diagnostics.len(), 5);
        assert!(parse_did_save(&json!({"uri": 3})).is_err());
    }

    #[test]
    fn settings_below_one_are_refused_by_name() {
        let zero = LspSettings {
            timeout_ms: 0,
            ..LspSettings::default()
        };
        assert!(zero.validate().unwrap_err().contains("timeout_ms"));
        let none = LspSettings {
            max_files: 0,
            ..LspSettings::default()
        };
        assert!(none.validate().unwrap_err().contains("max_files"));
        assert!(LspSettings::default().validate().is_ok());
    }

    #[test]
    fn refusals_say_what_to_do_instead() {
        assert!(refusal("_lsp/didSave").contains("notification"));
        assert!(refusal("_lsp/hover").contains("lode sends to the editor"));
        assert!(refusal("_lsp/frobnicate").contains("no method"));
    }

    #[test]
    fn uris_are_percent_encoded() {
        assert_eq!(
            file_uri(Path::new("/w/a b#.py")).unwrap(),
            "file:///w/a%20b%23.py"
        );
        assert_eq!(
            uri_path(&file_uri(Path::new("/w/é.py")).unwrap()).unwrap(),
            PathBuf::from("/w/é.py")
        );
    }
}
