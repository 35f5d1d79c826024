//! Code actions and commands that run the agent headless: "lode: fix this diagnostic",
//! "lode: explain", "lode: write a test for this function", "lode: document this" and
//! "lode: review".
//!
//! Each runs one agent turn in a fresh session under the permission policy; the mode, the prompt
//! and the parsing of a review's findings are the agent's (`lode_agent::actions`), and the file
//! is admitted by the one path door (`lode_policy::paths`). [`ActionHost`] is the front end: it
//! answers every permission question "no" except edits, and it is the agent's file system —
//! reads see the editor's buffers, writes are captured instead of touching the disk. The captured
//! files go back to the editor as one `WorkspaceEdit` through `workspace/applyEdit`, so the editor
//! applies them and can undo. Progress is `$/progress` work-done; the answer text goes to
//! `window/showMessage`. Review findings are published as diagnostics with source `lode` (only lode's own: other servers' are never re-published).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lode_agent::actions::{
    ActionDiagnostic, ActionKind, ActionPrompt, ActionRequest, Finding, FindingSeverity,
    parse_findings, prompt_for,
};
use lode_agent::event::AgentEvent;
use lode_agent::host::{PermissionAnswer, PermissionRequest, SessionHost};
use lode_agent::{Agent, UserInput};
use lode_policy::Mode;
use lode_policy::paths::{PathDoor, PathUse};
use lode_tools::host::{ClientFs, HostError};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use tower_lsp_server::lsp_types::*;
use tower_lsp_server::{Cancellable, Client, OngoingProgress, Unbounded, UriExt};

use crate::agent_diagnostics::{ProviderSource, UnsavedTexts};
use crate::document::Document;
use crate::downstream::{DiagnosticsConfig, DiagnosticsProvider};

/// The commands lode offers (`workspace/executeCommand`).
pub const FIX: &str = "lode.fix";
pub const EXPLAIN: &str = "lode.explain";
pub const WRITE_TEST: &str = "lode.writeTest";
pub const DOCUMENT: &str = "lode.document";
pub const REVIEW: &str = "lode.review";
pub const COMMANDS: [&str; 5] = [FIX, EXPLAIN, WRITE_TEST, DOCUMENT, REVIEW];
/// The `source` of the diagnostics `lode: review` publishes.
pub const REVIEW_SOURCE: &str = "lode";

/// What a command works on: a document and a range in it, plus the diagnostic to fix.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ActionTarget {
    pub uri: Uri,
    pub range: Range,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostic: Option<Diagnostic>,
    /// The definition the action is about, when one encloses the range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
}

/// Why a command could not run.
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("unknown lode command {0:?}")]
    UnknownCommand(String),
    #[error("bad arguments for {command}: {message}")]
    BadArguments { command: String, message: String },
    #[error("{0}")]
    Agent(#[from] lode_agent::AgentError),
}

/// The code actions offered at a range.
pub fn code_actions(
    uri: &Uri,
    range: Range,
    diagnostics: &[Diagnostic],
    enclosing: Option<&str>,
) -> Vec<CodeActionOrCommand> {
    let mut actions = Vec::new();
    let action = |title: String, kind: CodeActionKind, command: &str, target: ActionTarget| {
        let argument = serde_json::to_value(&target).unwrap_or(serde_json::Value::Null);
        CodeActionOrCommand::CodeAction(CodeAction {
            title: title.clone(),
            kind: Some(kind),
            diagnostics: target.diagnostic.clone().map(|d| vec![d]),
            command: Some(Command {
                title,
                command: command.into(),
                arguments: Some(vec![argument]),
            }),
            ..CodeAction::default()
        })
    };
    let target = |diagnostic: Option<Diagnostic>| ActionTarget {
        uri: uri.clone(),
        range,
        diagnostic,
        symbol: enclosing.map(str::to_owned),
    };
    for diagnostic in diagnostics {
        actions.push(action(
            "lode: fix this diagnostic".into(),
            CodeActionKind::QUICKFIX,
            FIX,
            target(Some(diagnostic.clone())),
        ));
    }
    actions.push(action(
        "lode: explain".into(),
        CodeActionKind::EMPTY,
        EXPLAIN,
        target(None),
    ));
    if enclosing.is_some() {
        actions.push(action(
            "lode: write a test for this function".into(),
            CodeActionKind::REFACTOR,
            WRITE_TEST,
            target(None),
        ));
        actions.push(action(
            "lode: document this".into(),
            CodeActionKind::REFACTOR,
            DOCUMENT,
            target(None),
        ));
    }
    actions.push(action(
        "lode: review".into(),
        CodeActionKind::SOURCE,
        REVIEW,
        target(None),
    ));
    actions
}

/// What `[lsp.diagnostics]` says for a workspace root: what to check the agent's edits with,
/// `None` when turned off, or why the section is wrong. The binary reads the config.
#[derive(Clone)]
pub struct DiagnosticsSettings(pub Arc<DiagnosticsSettingsFn>);

/// Reads `[lsp.diagnostics]` for a workspace root (see [`DiagnosticsSettings`]).
pub type DiagnosticsSettingsFn =
    dyn Fn(&Path) -> Result<Option<DiagnosticsConfig>, String> + Send + Sync;

impl std::fmt::Debug for DiagnosticsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DiagnosticsSettings")
    }
}

impl DiagnosticsSettings {
    /// The warm language servers for a workspace root, as `[lsp.diagnostics]` configures them.
    pub fn provider_for(&self, root: &Path) -> Result<Option<Arc<DiagnosticsProvider>>, String> {
        Ok((self.0)(root)?.map(|config| Arc::new(DiagnosticsProvider::new(root, config))))
    }
}

/// How the agent behind the code actions is opened.
pub struct AgentSetup {
    /// The config file with the highest precedence (`--config`).
    pub config_file: Option<PathBuf>,
    /// The warm language servers that check the agent's edits and answer its navigation
    /// (`Ok(None)`: none; `Err`: `[lsp.diagnostics]` is wrong, so no code actions), the same
    /// ones `lode lsp`'s own definition and references ask.
    pub provider: Result<Option<Arc<DiagnosticsProvider>>, String>,
    /// The text the agent's turns see, for the diagnostics to check.
    pub turns: Arc<RunningTurns>,
    /// Confines the agent's commands (`None`: they cannot be confined, so they ask).
    pub sandbox_launcher: Option<PathBuf>,
}

/// Opens the agent over the server's index; `None` (with one line on stderr) when it cannot be
/// opened, e.g. because no model is configured: the server then offers no code actions.
pub async fn open_agent(
    root: &Path,
    index: Arc<lode_index::Workspace>,
    setup: AgentSetup,
) -> Option<Agent> {
    let root = root.to_path_buf();
    let (diagnostics, navigation) = match setup.provider {
        Ok(None) => (None, None),
        Ok(Some(provider)) => {
            // One set of warm servers answers the diagnostics and the navigation.
            let source = ProviderSource::with_unsaved(provider.clone(), setup.turns);
            let navigation = crate::agent_navigation::ServerNavigation::new(provider);
            (
                Some(Arc::new(source) as Arc<dyn lode_tools::diagnostics::DiagnosticsSource>),
                Some(Arc::new(navigation) as Arc<dyn lode_tools::navigation::NavigationSource>),
            )
        }
        Err(error) => {
            tracing::warn!(%error, "code actions are off");
            return None;
        }
    };
    let options = lode_agent::AgentOptions {
        index: Some(index),
        config_file: setup.config_file,
        diagnostics,
        navigation,
        sandbox_launcher: setup.sandbox_launcher,
        ..lode_agent::AgentOptions::default()
    };
    match tokio::task::spawn_blocking(move || Agent::open(&root, options)).await {
        Ok(Ok(agent)) => Some(agent),
        Ok(Err(error)) => {
            tracing::warn!(%error, "code actions are off");
            None
        }
        Err(error) => {
            tracing::warn!(%error, "code actions are off");
            None
        }
    }
}

/// The agent behind the code actions, and where to reach the editor.
#[derive(Clone)]
pub struct Actions {
    agent: Agent,
    client: Client,
    progress: bool,
    turns: Arc<RunningTurns>,
    /// Cancels the turn behind each work-done progress token (`window/workDoneProgress/cancel`).
    progress_cancels: Arc<Mutex<HashMap<NumberOrString, CancellationToken>>>,
}

/// The file systems of the action turns now running: what each agent sees (its captured
/// edits, then the editor's buffers), so its diagnostics check that text and not the disk.
#[derive(Default)]
pub struct RunningTurns {
    turns: Mutex<HashMap<u64, Arc<CapturingFs>>>,
}

impl UnsavedTexts for RunningTurns {
    fn text_of(&self, path: &Path) -> Option<String> {
        // Concurrent turns editing the same file are not told apart: the first found wins.
        self.turns.lock().values().find_map(|fs| fs.text_of(path))
    }
}

/// Removes a turn from [`RunningTurns`] when it ends, however it ends.
struct TurnRegistration {
    turns: Arc<RunningTurns>,
    id: u64,
}

impl Drop for TurnRegistration {
    fn drop(&mut self) {
        self.turns.turns.lock().remove(&self.id);
    }
}

/// Forgets a progress token's cancellation when the turn ends.
struct ProgressRegistration {
    cancels: Arc<Mutex<HashMap<NumberOrString, CancellationToken>>>,
    token: NumberOrString,
}

impl Drop for ProgressRegistration {
    fn drop(&mut self) {
        self.cancels.lock().remove(&self.token);
    }
}

/// A snapshot of the editor's open buffers, by absolute path, with their versions.
pub type Buffers = HashMap<PathBuf, Document>;

impl Actions {
    /// The agent behind the code actions.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    pub fn new(agent: Agent, client: Client, progress: bool, turns: Arc<RunningTurns>) -> Actions {
        Actions {
            agent,
            client,
            progress,
            turns,
            progress_cancels: Arc::default(),
        }
    }

    /// `window/workDoneProgress/cancel`: cancels the turn behind the token, if one is running.
    pub fn cancel_progress(&self, token: &NumberOrString) -> bool {
        match self.progress_cancels.lock().get(token) {
            Some(cancel) => {
                cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Runs a command to the end: the agent turn, then the edit, message or diagnostics.
    /// When `cancel` fires (or the user cancels the progress), the turn stops, nothing is
    /// applied or published, and the user is told.
    pub async fn run(
        &self,
        command: &str,
        arguments: Vec<serde_json::Value>,
        buffers: Buffers,
        cancel: CancellationToken,
    ) -> Result<(), ActionError> {
        if !COMMANDS.contains(&command) {
            return Err(ActionError::UnknownCommand(command.into()));
        }
        let bad = |message: String| ActionError::BadArguments {
            command: command.into(),
            message,
        };
        let first = arguments
            .into_iter()
            .next()
            .ok_or_else(|| bad("expected one argument {uri, range}".into()))?;
        let target: ActionTarget =
            serde_json::from_value(first).map_err(|error| bad(error.to_string()))?;
        let path = target
            .uri
            .to_file_path()
            .map(|path| path.into_owned())
            .ok_or_else(|| bad(format!("not a file URI: {}", target.uri.as_str())))?;
        // The one path door (`lode_policy::paths`), as the agent's tools and `lode mcp` use it:
        // the editor's path may go through a symlink, but only to a file inside the workspace.
        let roots = vec![self.agent.root().to_path_buf()];
        let relative = PathDoor::new(roots.clone())
            .resolve(
                path.to_str()
                    .ok_or_else(|| bad(format!("{} is not UTF-8", path.display())))?,
                PathUse::Any,
            )
            .map(|resolved| resolved.display(&roots))
            .map_err(|error| {
                bad(format!(
                    "{} is outside the workspace: {}",
                    path.display(),
                    error.message
                ))
            })?;
        let text = match buffers.get(&path) {
            Some(document) => document.text().to_owned(),
            None => std::fs::read_to_string(&path)
                .map_err(|error| bad(format!("cannot read {}: {error}", path.display())))?,
        };
        let diagnostic = target.diagnostic.as_ref().map(action_diagnostic);
        let request = action_request(
            &target,
            &relative,
            &text,
            diagnostic.as_ref(),
            target.symbol.as_deref(),
        );
        let ActionPrompt {
            mode,
            prompt,
            title,
        } = prompt_for(action_kind(command), &request);
        let progress = self.begin_progress(&title, &cancel).await;
        let host = Arc::new(ActionHost::new(Arc::new(buffers)));
        let registration = TurnRegistration {
            turns: self.turns.clone(),
            id: uuid_like(),
        };
        self.turns
            .turns
            .lock()
            .insert(registration.id, host.fs.clone());
        let mut status = host.status.subscribe();
        let turn = self.run_turn(mode, prompt, host.clone(), cancel.clone());
        tokio::pin!(turn);
        // What the agent is doing goes to the progress as it happens.
        let outcome = loop {
            tokio::select! {
                outcome = &mut turn => break outcome,
                changed = status.changed() => {
                    if changed.is_err() {
                        break turn.await;
                    }
                    let message = status.borrow_and_update().clone();
                    if let Some((progress, _)) = &progress {
                        progress.report_with_message(message, None).await;
                    }
                }
            }
        };
        drop(registration);
        if let Some((progress, _registration)) = progress {
            progress.finish().await;
        }
        if cancel.is_cancelled() {
            self.client
                .show_message(
                    MessageType::INFO,
                    format!("{title} was cancelled; nothing was changed"),
                )
                .await;
            return Ok(());
        }
        outcome?;
        let answer = host.answer();
        if command == REVIEW {
            let findings = parse_findings(&answer, self.agent.root());
            self.publish_review(&target.uri, &path, findings).await;
            return Ok(());
        }
        let edits = host.captured();
        if !edits.is_empty() {
            let edit = workspace_edit(&edits, &host.buffers);
            let applied = self
                .client
                .apply_edit(edit)
                .await
                .map(|response| response.applied)
                .unwrap_or(false);
            if !applied {
                self.client
                    .show_message(
                        MessageType::WARNING,
                        "lode: the editor did not apply the edit",
                    )
                    .await;
            }
        }
        if !answer.trim().is_empty() {
            self.client
                .show_message(MessageType::INFO, format!("lode: {}", answer.trim()))
                .await;
        }
        Ok(())
    }

    async fn run_turn(
        &self,
        mode: Mode,
        prompt: String,
        host: Arc<ActionHost>,
        cancel: CancellationToken,
    ) -> Result<(), ActionError> {
        let session = self
            .agent
            .new_session(self.agent.root().to_path_buf(), Vec::new())?;
        self.agent.set_mode(&session.id, mode)?;
        self.agent
            .prompt(&session.id, vec![UserInput::Text(prompt)], host, cancel)
            .await?;
        Ok(())
    }

    /// Cancellable work-done progress for the turn, when the client takes it.
    async fn begin_progress(
        &self,
        title: &str,
        cancel: &CancellationToken,
    ) -> Option<(
        OngoingProgress<Unbounded, Cancellable>,
        ProgressRegistration,
    )> {
        if !self.progress {
            return None;
        }
        let token = NumberOrString::String(format!("lode/action/{}", uuid_like()));
        self.client
            .send_request::<request::WorkDoneProgressCreate>(WorkDoneProgressCreateParams {
                token: token.clone(),
            })
            .await
            .ok()?;
        self.progress_cancels
            .lock()
            .insert(token.clone(), cancel.clone());
        let registration = ProgressRegistration {
            cancels: self.progress_cancels.clone(),
            token: token.clone(),
        };
        let progress = self
            .client
            .progress(token, title.to_owned())
            .with_cancel_button()
            .begin()
            .await;
        Some((progress, registration))
    }

    async fn publish_review(&self, uri: &Uri, path: &Path, findings: Vec<Finding>) {
        let mut by_file: BTreeMap<PathBuf, Vec<Diagnostic>> = BTreeMap::new();
        // The reviewed file is always published, so an empty review clears old findings.
        by_file.insert(path.to_path_buf(), Vec::new());
        for finding in findings {
            by_file
                .entry(finding.path.clone())
                .or_default()
                .push(finding_diagnostic(&finding));
        }
        for (file, diagnostics) in by_file {
            let target = if file == path {
                Some(uri.clone())
            } else {
                Uri::from_file_path(&file)
            };
            if let Some(target) = target {
                self.client
                    .publish_diagnostics(target, diagnostics, None)
                    .await;
            }
        }
    }
}

/// The agent's action behind a command.
fn action_kind(command: &str) -> ActionKind {
    match command {
        FIX => ActionKind::Fix,
        EXPLAIN => ActionKind::Explain,
        WRITE_TEST => ActionKind::WriteTest,
        DOCUMENT => ActionKind::Document,
        _ => ActionKind::Review,
    }
}

/// What the agent's action needs of a command's target.
fn action_request<'a>(
    target: &ActionTarget,
    relative: &'a str,
    text: &'a str,
    diagnostic: Option<&'a ActionDiagnostic>,
    symbol: Option<&'a str>,
) -> ActionRequest<'a> {
    ActionRequest {
        relative,
        text,
        start_line: target.range.start.line,
        end_line: target.range.end.line,
        symbol,
        diagnostic,
    }
}

/// The diagnostic a fix is about, as the agent takes it.
fn action_diagnostic(diagnostic: &Diagnostic) -> ActionDiagnostic {
    ActionDiagnostic {
        line: diagnostic.range.start.line,
        message: diagnostic.message.clone(),
        source: diagnostic.source.clone(),
    }
}

/// A review finding as a diagnostic with source `lode`.
fn finding_diagnostic(finding: &Finding) -> Diagnostic {
    let line = finding.line.saturating_sub(1);
    Diagnostic {
        range: Range::new(Position::new(line, 0), Position::new(line, u32::MAX / 2)),
        severity: Some(match finding.severity {
            FindingSeverity::Error => DiagnosticSeverity::ERROR,
            FindingSeverity::Warning => DiagnosticSeverity::WARNING,
            FindingSeverity::Information => DiagnosticSeverity::INFORMATION,
            FindingSeverity::Hint => DiagnosticSeverity::HINT,
        }),
        source: Some(REVIEW_SOURCE.into()),
        message: finding.message.clone(),
        ..Diagnostic::default()
    }
}

/// One `WorkspaceEdit` replacing each captured file whole (new files are created first).
pub fn workspace_edit(captured: &BTreeMap<PathBuf, String>, buffers: &Buffers) -> WorkspaceEdit {
    let mut operations = Vec::new();
    for (path, new_text) in captured {
        let Some(uri) = Uri::from_file_path(path) else {
            continue;
        };
        let (old_text, version) = match buffers.get(path) {
            Some(document) => (Some(document.text().to_owned()), Some(document.version())),
            None => (std::fs::read_to_string(path).ok(), None),
        };
        let range = match &old_text {
            Some(text) => {
                let document = Document::new(text.clone(), 0, "");
                document.range_of(0, text.len())
            }
            None => {
                operations.push(DocumentChangeOperation::Op(ResourceOp::Create(
                    CreateFile {
                        uri: uri.clone(),
                        options: None,
                        annotation_id: None,
                    },
                )));
                Range::default()
            }
        };
        operations.push(DocumentChangeOperation::Edit(TextDocumentEdit {
            text_document: OptionalVersionedTextDocumentIdentifier { uri, version },
            edits: vec![OneOf::Left(TextEdit {
                range,
                new_text: new_text.clone(),
            })],
        }));
    }
    WorkspaceEdit {
        document_changes: Some(DocumentChanges::Operations(operations)),
        ..WorkspaceEdit::default()
    }
}

/// A token unique within this process, for progress.
fn uuid_like() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The front end of a headless action turn.
pub struct ActionHost {
    buffers: Arc<Buffers>,
    fs: Arc<CapturingFs>,
    text: Mutex<String>,
    /// What the agent is doing now ("writing the answer", a tool's title), for the progress.
    status: tokio::sync::watch::Sender<String>,
}

impl ActionHost {
    pub fn new(buffers: Arc<Buffers>) -> ActionHost {
        ActionHost {
            fs: Arc::new(CapturingFs {
                buffers: buffers.clone(),
                captured: Mutex::default(),
            }),
            buffers,
            text: Mutex::default(),
            status: tokio::sync::watch::Sender::new(String::new()),
        }
    }

    fn set_status(&self, status: &str) {
        self.status.send_if_modified(|current| {
            let changed = current != status;
            if changed {
                status.clone_into(current);
            }
            changed
        });
    }

    /// The files the agent wrote, with their new text.
    pub fn captured(&self) -> BTreeMap<PathBuf, String> {
        self.fs.captured.lock().clone()
    }

    /// What the model said.
    pub fn answer(&self) -> String {
        self.text.lock().clone()
    }
}

#[async_trait::async_trait]
impl SessionHost for ActionHost {
    fn emit(&self, event: AgentEvent) {
        match event {
            AgentEvent::TextDelta { text } => {
                self.text.lock().push_str(&text);
                self.set_status("writing the answer");
            }
            AgentEvent::ThoughtDelta { .. } => self.set_status("thinking"),
            AgentEvent::ToolCallStarted(start) => self.set_status(&start.title),
            _ => {}
        }
    }

    async fn request_permission(&self, request: PermissionRequest) -> PermissionAnswer {
        // Edits are captured, not written, so the editor decides; nothing else is allowed.
        if lode_tools::FILE_EDIT_TOOLS.contains(&request.tool.as_str()) {
            PermissionAnswer::AllowOnce
        } else {
            PermissionAnswer::RejectOnce
        }
    }

    fn client_fs(&self) -> Option<Arc<dyn ClientFs>> {
        Some(self.fs.clone())
    }
}

/// The agent's file system during an action: captured writes first, then the editor's
/// buffers, then the disk; writes never reach the disk.
pub struct CapturingFs {
    buffers: Arc<Buffers>,
    captured: Mutex<BTreeMap<PathBuf, String>>,
}

impl CapturingFs {
    /// What the agent sees of `path` when that is not the disk: its own edit, else the buffer.
    fn text_of(&self, path: &Path) -> Option<String> {
        if let Some(text) = self.captured.lock().get(path) {
            return Some(text.clone());
        }
        self.buffers
            .get(path)
            .map(|document| document.text().to_owned())
    }
}

#[async_trait::async_trait]
impl ClientFs for CapturingFs {
    async fn read_text_file(
        &self,
        path: &Path,
        line: Option<u32>,
        limit: Option<u32>,
    ) -> Result<String, HostError> {
        let whole = match self.captured.lock().get(path) {
            Some(text) => text.clone(),
            None => match self.buffers.get(path) {
                Some(document) => document.text().to_owned(),
                None => std::fs::read_to_string(path)
                    .map_err(|error| HostError(format!("{}: {error}", path.display())))?,
            },
        };
        if line.is_none() && limit.is_none() {
            return Ok(whole);
        }
        let skip = line.unwrap_or(1).saturating_sub(1) as usize;
        let take = limit.map(|n| n as usize).unwrap_or(usize::MAX);
        Ok(whole.split_inclusive('\n').skip(skip).take(take).collect())
    }

    async fn write_text_file(&self, path: &Path, content: &str) -> Result<(), HostError> {
        self.captured
            .lock()
            .insert(path.to_path_buf(), content.to_owned());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_become_lode_diagnostics_on_their_line() {
        let finding = Finding {
            path: PathBuf::from("/w/src/a.rs"),
            line: 3,
            severity: FindingSeverity::Warning,
            message: "careful".into(),
        };
        let diagnostic = finding_diagnostic(&finding);
        assert_eq!(diagnostic.source.as_deref(), Some("lode"));
        assert_eq!(diagnostic.range.start.line, 2);
        assert_eq!(diagnostic.severity, Some(DiagnosticSeverity::WARNING));
        assert_eq!(diagnostic.message, "careful");
    }

    #[test]
    fn a_new_file_is_created_before_its_text_is_inserted() {
        let dir = std::env::temp_dir().join(format!("lode-actions-{}", std::process::id()));
        let path = dir.join("new_test.rs");
        let mut captured = BTreeMap::new();
        captured.insert(path.clone(), "#[test]\nfn t() {}\n".to_owned());
        let edit = workspace_edit(&captured, &Buffers::new());
        let Some(DocumentChanges::Operations(operations)) = edit.document_changes else {
            panic!("expected operations");
        };
        assert_eq!(operations.len(), 2);
        assert!(matches!(
            &operations[0],
            DocumentChangeOperation::Op(ResourceOp::Create(create))
                if create.uri.to_file_path().map(|p| p.into_owned()) == Some(path.clone())
        ));
        let DocumentChangeOperation::Edit(text_edit) = &operations[1] else {
            panic!("expected an edit after the create");
        };
        assert_eq!(text_edit.text_document.version, None);
        let OneOf::Left(only) = &text_edit.edits[0] else {
            panic!("plain text edit expected");
        };
        assert_eq!(only.range, Range::default());
        assert_eq!(only.new_text, "#[test]\nfn t() {}\n");
    }

    #[test]
    fn a_command_becomes_the_agents_action_on_the_target() {
        let target = ActionTarget {
            uri: Uri::from_file_path("/w/a.rs").unwrap(),
            range: Range::new(Position::new(9, 0), Position::new(2, 0)),
            diagnostic: None,
            symbol: None,
        };
        let request = action_request(&target, "a.rs", "text", None, Some("f"));
        assert_eq!((request.start_line, request.end_line), (9, 2));
        assert_eq!((request.relative, request.symbol), ("a.rs", Some("f")));
        for (command, kind) in [
            (FIX, ActionKind::Fix),
            (EXPLAIN, ActionKind::Explain),
            (WRITE_TEST, ActionKind::WriteTest),
            (DOCUMENT, ActionKind::Document),
            (REVIEW, ActionKind::Review),
        ] {
            assert_eq!(action_kind(command), kind);
        }
    }

    /// Every file edit the agent has (the edits by symbol too) is allowed and captured: it is
    /// resolved on the editor's buffer and its result never reaches the disk.
    #[tokio::test]
    async fn edits_by_symbol_are_allowed_and_captured_like_edit_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let file = root.join("lib.rs");
        let disk = "pub fn add(a: u32, b: u32) -> u32 {\n    a - b\n}\n";
        std::fs::write(&file, disk).unwrap();
        let mut buffers = Buffers::new();
        let unsaved = format!("// unsaved\n{disk}");
        buffers.insert(file.clone(), Document::new(unsaved.clone(), 2, "rust"));
        let host = Arc::new(ActionHost::new(Arc::new(buffers)));
        let question = |tool: &str| PermissionRequest {
            tool_call_id: "call".into(),
            tool: tool.into(),
            title: String::new(),
            kind: lode_agent::event::ToolKind::Edit,
            raw_input: serde_json::Value::Null,
            always_pattern: String::new(),
            offer_network: false,
            must_ask: false,
            reason: String::new(),
            subjects: Vec::new(),
            subject_kind: Default::default(),
        };
        for tool in lode_tools::FILE_EDIT_TOOLS {
            assert_eq!(
                host.request_permission(question(tool)).await,
                PermissionAnswer::AllowOnce,
                "{tool}"
            );
        }
        assert_eq!(
            host.request_permission(question("run_command")).await,
            PermissionAnswer::RejectOnce
        );

        let index = lode_index::Workspace::open(lode_index::WorkspaceOptions::new(&root)).unwrap();
        let context = lode_tools::ToolContext {
            roots: vec![root.clone()],
            index: Arc::new(index),
            host: lode_agent::host::tool_host(host.clone()),
            call_id: "call".into(),
            cancel: CancellationToken::new(),
            sandbox: Arc::new(lode_sandbox::Sandbox::unavailable("no commands")),
            network: false,
            sources: Default::default(),
        };
        let tool = lode_tools::default_tools()
            .get("replace_symbol_body")
            .unwrap();
        tool.run(
            serde_json::json!({"symbol": "lib.rs:2:1", "text": "pub fn add(a: u32, b: u32) -> u32 {\n    a + b\n}"}),
            &context,
        )
        .await
        .unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), disk);
        assert_eq!(
            host.captured().get(&file).map(String::as_str),
            Some(unsaved.replace("a - b", "a + b").as_str())
        );
    }

    #[tokio::test]
    async fn the_capturing_fs_reads_buffers_and_keeps_writes_off_the_disk() {
        let dir = std::env::temp_dir().join(format!("lode-capture-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let open = dir.join("open.rs");
        let closed = dir.join("closed.rs");
        std::fs::write(&open, "disk\n").unwrap();
        std::fs::write(&closed, "one\ntwo\nthree\n").unwrap();
        let mut buffers = Buffers::new();
        buffers.insert(open.clone(), Document::new("buffer\n".into(), 3, "rust"));
        let host = ActionHost::new(Arc::new(buffers));
        let fs = host.client_fs().unwrap();
        assert_eq!(
            fs.read_text_file(&open, None, None).await.unwrap(),
            "buffer\n"
        );
        assert_eq!(
            fs.read_text_file(&closed, Some(2), Some(1)).await.unwrap(),
            "two\n"
        );
        fs.write_text_file(&open, "edited\n").await.unwrap();
        assert_eq!(
            fs.read_text_file(&open, None, None).await.unwrap(),
            "edited\n"
        );
        assert_eq!(std::fs::read_to_string(&open).unwrap(), "disk\n");
        assert_eq!(
            host.captured().get(&open).map(String::as_str),
            Some("edited\n")
        );
        assert!(
            fs.read_text_file(&dir.join("missing.rs"), None, None)
                .await
                .is_err()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
