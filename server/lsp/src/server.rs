//! The language server: LSP requests and notifications translated into calls on the live
//! index and the open buffers' analyses. Definitions and references are resolved by type when
//! a downstream language server answers for the file's language ([`crate::resolved`]), else
//! by name (tree-sitter tags). No request waits for the index's writer: open buffers answer
//! from their own analysis, other files from what the index has committed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use lode_index::{
    FileTags, IndexError, Language, Nearness, QueryLetters, RefreshMode, SymbolRank,
    WorkspaceOptions, same_file_references, symbol_rank,
};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::lsp_types::*;
use tower_lsp_server::{Client, LanguageServer, UriExt};

use crate::buffers::{Analysis, Buffers};
use crate::document::{Document, utf16_column};
use crate::live::LiveIndex;
use crate::navigate::identifier_at;
use crate::outline::{buffer_tags, find_word, name_span, symbol_kind_named};
use crate::resolved::{Question, TypeResolved};
use crate::watch::{DiskWatcher, watch_disk};

/// At most this many results for `workspace/symbol`.
const WORKSPACE_SYMBOL_LIMIT: usize = 100;
/// How long the first indexing waits, after it is done, for the client to answer the request
/// that creates its progress token.
const PROGRESS_CREATE_PATIENCE: Duration = Duration::from_secs(10);
/// Definitions of one name considered for `textDocument/definition`.
const DEFINITION_LIMIT: usize = 200;
/// References of one name considered for `textDocument/references`.
const REFERENCE_LIMIT: usize = 2000;
/// How long definition and references wait for a downstream language server by default.
pub const DEFAULT_NAVIGATION_DEADLINE: Duration = Duration::from_secs(5);

/// How `lode lsp` is set up (command-line flags).
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Workspace root; wins over what the client says.
    pub root: Option<PathBuf>,
    /// Where the index lives (default `<root>/.lode/index`).
    pub index_dir: Option<PathBuf>,
    /// Scan options (excludes, size cap) as for the other commands.
    pub scan: lode_index::ScanOptions,
    /// Quiet time before a changed buffer is re-indexed.
    pub debounce: Duration,
    /// Watch the workspace for changes made outside the editor.
    pub watch: bool,
    /// Largest accepted message.
    pub max_message_bytes: usize,
    /// Embeds chunks for semantic and hybrid search (`None`: lexical only).
    pub embedder: Option<std::sync::Arc<dyn lode_index::Embedder>>,
    /// The config file with the highest precedence (`--config`), for the code actions' agent.
    pub config_file: Option<PathBuf>,
    /// `[lsp.diagnostics]`: what checks the code actions' edits (`None`: nothing).
    pub diagnostics: Option<crate::actions::DiagnosticsSettings>,
    /// Confines the commands of the code actions' agent (see `lode_agent::AgentOptions`).
    pub sandbox_launcher: Option<PathBuf>,
    /// How long definition and references wait for the downstream language server of the
    /// file's language (from `[lsp.diagnostics]`) before answering by name from the index;
    /// `None`: never ask it.
    pub navigation_deadline: Option<Duration>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            root: None,
            index_dir: None,
            scan: lode_index::ScanOptions::default(),
            debounce: crate::live::DEFAULT_DEBOUNCE,
            watch: true,
            max_message_bytes: crate::framing::DEFAULT_MAX_MESSAGE_BYTES,
            embedder: None,
            config_file: None,
            diagnostics: None,
            sandbox_launcher: None,
            navigation_deadline: Some(DEFAULT_NAVIGATION_DEADLINE),
        }
    }
}

/// The state behind one LSP connection.
pub struct LodeServer {
    client: Client,
    options: ServerOptions,
    index: OnceLock<LiveIndex>,
    documents: Mutex<HashMap<Uri, Document>>,
    /// The open buffers' syntax, analysed off the async workers (set by `initialize`).
    buffers: OnceLock<Buffers>,
    /// The transport's side of answering outlines (given the buffers at `initialize`).
    direct: Arc<crate::direct::DirectAnswers>,
    /// Buffers the user was already told are too large to parse.
    told_too_large: Mutex<std::collections::HashSet<Uri>>,
    progress_supported: AtomicBool,
    watcher: Arc<Mutex<Option<DiskWatcher>>>,
    shut_down: Arc<AtomicBool>,
    /// The agent behind the code actions; `None` when no model is configured.
    actions: OnceLock<Option<crate::actions::Actions>>,
    /// Definition and references by type; `None` when no language server is configured.
    resolved: OnceLock<Option<Arc<TypeResolved>>>,
}

fn internal(error: impl std::fmt::Display) -> Error {
    Error {
        code: ErrorCode::InternalError,
        message: error.to_string().into(),
        data: None,
    }
}

impl LodeServer {
    /// `window/workDoneProgress/cancel`: the user cancelled a code action's progress.
    pub async fn work_done_progress_cancel(&self, params: WorkDoneProgressCancelParams) {
        let cancelled = self
            .actions()
            .is_some_and(|actions| actions.cancel_progress(&params.token));
        if !cancelled {
            tracing::info!(
                "no running action has the progress token {:?}",
                params.token
            );
        }
    }

    pub fn new(
        client: Client,
        options: ServerOptions,
        shut_down: Arc<AtomicBool>,
        direct: Arc<crate::direct::DirectAnswers>,
    ) -> LodeServer {
        LodeServer {
            direct,
            client,
            options,
            index: OnceLock::new(),
            documents: Mutex::default(),
            buffers: OnceLock::new(),
            told_too_large: Mutex::default(),
            progress_supported: AtomicBool::new(false),
            watcher: Arc::default(),
            shut_down,
            actions: OnceLock::new(),
            resolved: OnceLock::new(),
        }
    }

    fn actions(&self) -> Option<&crate::actions::Actions> {
        self.actions.get().and_then(Option::as_ref)
    }

    fn index(&self) -> Result<&LiveIndex> {
        self.index
            .get()
            .ok_or_else(|| internal("the workspace index is not open"))
    }

    fn root_from(&self, params: &InitializeParams) -> Result<PathBuf> {
        if let Some(root) = &self.options.root {
            return Ok(root.clone());
        }
        let from_folders = params
            .workspace_folders
            .as_ref()
            .and_then(|folders| folders.first())
            .and_then(|folder| folder.uri.to_file_path().map(|p| p.into_owned()));
        #[allow(deprecated)] // rootUri is what older clients send.
        let from_root_uri = params
            .root_uri
            .as_ref()
            .and_then(|uri| uri.to_file_path().map(|p| p.into_owned()));
        match from_folders.or(from_root_uri) {
            Some(root) => Ok(root),
            None => std::env::current_dir().map_err(internal),
        }
    }

    fn buffers(&self) -> Result<&Buffers> {
        self.buffers
            .get()
            .ok_or_else(|| internal("the server is not initialized"))
    }

    /// Buffers larger than this are not parsed: four times the index's file-size limit.
    fn parse_limit(&self) -> usize {
        usize::try_from(self.options.scan.max_file_bytes.saturating_mul(4)).unwrap_or(usize::MAX)
    }

    /// The text and tags of a document: the open buffer's analysis for the version the editor
    /// last sent, else the file on disk, read and parsed off the async workers.
    async fn analysis_of(&self, uri: &Uri) -> Result<Arc<Analysis>> {
        let version = self.documents.lock().get(uri).map(Document::version);
        if let Some(version) = version
            && let Some(analysis) = self.buffers()?.analysis(uri, version).await
        {
            if let Some(reason) = &analysis.skipped
                && self.told_too_large.lock().insert(uri.clone())
            {
                tracing::warn!("{} — {reason}", uri.as_str());
                self.client
                    .log_message(MessageType::WARNING, reason.clone())
                    .await;
            }
            return Ok(analysis);
        }
        let path = file_path(uri)?;
        let limit = self.parse_limit();
        tokio::task::spawn_blocking(move || read_and_analyse(&path, limit))
            .await
            .map_err(internal)?
            .map(Arc::new)
    }

    /// The workspace-relative path of a document, when it is inside the workspace.
    fn relative(&self, index: &LiveIndex, uri: &Uri) -> Option<String> {
        let path = uri.to_file_path()?;
        index.reader().relative(&path).ok()
    }

    /// Same-file and indexed definitions of the identifier at a position, nearest first.
    async fn definitions_at(
        &self,
        uri: &Uri,
        position: Position,
    ) -> Result<Option<(String, Vec<Location>, Vec<Location>)>> {
        let index = self.index()?.clone();
        let analysis = self.analysis_of(uri).await?;
        let (document, tags) = (&analysis.document, &analysis.tags);
        let Some((start, end)) = identifier_at(document.text(), document.offset_of(position))
        else {
            return Ok(None);
        };
        let name = document.text()[start..end].to_string();
        let current = self.relative(&index, uri);
        let local: Vec<Location> = tags
            .definitions
            .iter()
            .filter(|def| def.name == name)
            .map(|def| {
                let (from, to) = name_span(document.text(), def);
                Location::new(uri.clone(), document.range_of(from, to))
            })
            .collect();
        let reader = index.reader();
        let lookup = name.clone();
        let hits = tokio::task::spawn_blocking(move || reader.symbols(&lookup, DEFINITION_LIMIT))
            .await
            .map_err(internal)?
            .or_else(empty_on_bad_name)?;
        let nearness = Nearness::of_buffer(current, document.text(), tags);
        let mut lines = LineSource::new(index.root(), &self.documents);
        let elsewhere: Vec<Location> = nearness
            .definitions(&name, hits)
            .into_iter()
            .filter_map(|hit| lines.name_location(&hit.path, hit.start_line, None, &name))
            .collect();
        Ok(Some((name, local, elsewhere)))
    }
}

impl LodeServer {
    /// The downstream language server's answer to `question` at a position (on the buffer's
    /// text when the document is open, else the file's), or `None` when the index answers.
    async fn resolved_at(
        &self,
        question: Question,
        uri: &Uri,
        position: Position,
    ) -> Option<Vec<Location>> {
        let resolved = self.resolved.get()?.as_ref()?.clone();
        let path = uri.to_file_path()?.into_owned();
        let open = self
            .documents
            .lock()
            .get(uri)
            .map(|document| document.text().to_owned());
        let text = match open {
            Some(text) => text,
            None => tokio::fs::read(&path)
                .await
                .ok()
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())?,
        };
        resolved.locations(question, &path, text, position).await
    }
}

/// The initial index build, run beside the requests, then the disk watcher.
struct IndexingTask {
    client: Client,
    index: LiveIndex,
    progress: bool,
    watch: bool,
    watcher: Arc<Mutex<Option<DiskWatcher>>>,
}

impl IndexingTask {
    async fn run(self) {
        let IndexingTask {
            client,
            index,
            progress: with_progress,
            watch,
            watcher,
        } = self;
        // The build starts now, whether or not (or whenever) the client answers the request
        // that creates the progress report.
        let (updates, mut received) = tokio::sync::mpsc::unbounded_channel();
        let refresh = index.refresh(RefreshMode::Quick, move |step| {
            let _ = updates.send(step);
        });
        let reporter = async {
            let token = NumberOrString::String("lode/indexing".into());
            let create = async {
                if !with_progress {
                    return std::future::pending().await;
                }
                let created = client
                    .send_request::<request::WorkDoneProgressCreate>(WorkDoneProgressCreateParams {
                        token: token.clone(),
                    })
                    .await;
                match created {
                    Ok(()) => Some(
                        client
                            .progress(token.clone(), "lode: indexing")
                            .with_percentage(0)
                            .begin()
                            .await,
                    ),
                    Err(_) => std::future::pending().await,
                }
            };
            tokio::pin!(create);
            let mut progress = None;
            let mut last = None;
            loop {
                tokio::select! {
                    created = &mut create, if progress.is_none() => progress = created,
                    step = received.recv() => {
                        let Some(step) = step else { break };
                        let percent = (step.done * 100).checked_div(step.total).unwrap_or(100) as u32;
                        if last != Some(percent) {
                            last = Some(percent);
                            if let Some(progress) = &progress {
                                progress
                                    .report_with_message(
                                        format!("{}/{} files", step.done, step.total),
                                        percent,
                                    )
                                    .await;
                            }
                        }
                    }
                }
            }
            // A quick refresh can end before the client has answered the progress request:
            // wait for that answer (bounded), so the client that asked for progress still
            // sees it begin and end rather than a request with nothing after it.
            if progress.is_none() && with_progress {
                progress = tokio::time::timeout(PROGRESS_CREATE_PATIENCE, &mut create)
                    .await
                    .ok()
                    .flatten();
            }
            progress
        };
        let (result, progress) = tokio::join!(refresh, reporter);
        let summary = match &result {
            Ok(stats) => format!(
                "indexed {} files ({} parsed): {} symbols",
                stats.files, stats.parsed, stats.total_definitions
            ),
            Err(error) => format!("indexing failed: {error}"),
        };
        match &result {
            Ok(_) => tracing::info!("{summary}"),
            Err(_) => tracing::error!("{summary}"),
        }
        if let Some(progress) = progress {
            progress.finish_with_message(summary.clone()).await;
        }
        if let Err(error) = result {
            client
                .show_message(MessageType::ERROR, format!("lode: {error}"))
                .await;
        }
        if watch {
            match watch_disk(index.root(), index.clone()) {
                Ok(disk_watcher) => *watcher.lock() = Some(disk_watcher),
                Err(error) => {
                    tracing::warn!(%error, "cannot watch the workspace for changes")
                }
            }
        }
    }
}

/// A file the editor has not opened, read and parsed (nothing when it is over `limit` bytes).
fn read_and_analyse(path: &Path, limit: usize) -> Result<Analysis> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| internal(format!("cannot read {}: {error}", path.display())))?;
    let document = Document::new(text, 0, "");
    let tags = if document.text().len() > limit {
        FileTags::default()
    } else {
        buffer_tags(Language::from_path(path), document.text()).map_err(internal)?
    };
    Ok(Analysis::new(document, tags, None))
}

/// An unusable name (too long) finds nothing rather than failing the request.
fn empty_on_bad_name<T>(error: IndexError) -> Result<Vec<T>> {
    match error {
        IndexError::InvalidQuery(_) => Ok(Vec::new()),
        other => Err(internal(other)),
    }
}

fn file_path(uri: &Uri) -> Result<PathBuf> {
    uri.to_file_path()
        .map(|path| path.into_owned())
        .ok_or_else(|| Error::invalid_params(format!("not a file URI: {}", uri.as_str())))
}

/// Lines of workspace files for locating names: open buffers first, then the disk, cached
/// for one request. A file's text is kept whole (an open buffer's shared, not copied) with
/// where its lines start, and only the lines asked for are copied out.
struct LineSource<'a> {
    root: PathBuf,
    documents: &'a Mutex<HashMap<Uri, Document>>,
    cache: HashMap<String, Option<FileLines>>,
}

/// A file's text and the byte offsets where its lines start.
type FileLines = (Arc<String>, Vec<usize>);

impl<'a> LineSource<'a> {
    fn new(root: &Path, documents: &'a Mutex<HashMap<Uri, Document>>) -> LineSource<'a> {
        LineSource {
            root: root.to_path_buf(),
            documents,
            cache: HashMap::new(),
        }
    }

    fn uri(&self, rel_path: &str) -> Option<Uri> {
        Uri::from_file_path(self.root.join(rel_path))
    }

    fn line(&mut self, rel_path: &str, line: u32) -> Option<String> {
        let root = &self.root;
        let documents = self.documents;
        let text = self.cache.entry(rel_path.to_string()).or_insert_with(|| {
            let absolute = root.join(rel_path);
            let open = Uri::from_file_path(&absolute)
                .and_then(|uri| documents.lock().get(&uri).map(Document::shared_text));
            let text = open.or_else(|| std::fs::read_to_string(&absolute).ok().map(Arc::new))?;
            let starts = crate::document::line_starts(&text);
            Some((text, starts))
        });
        let (text, starts) = text.as_ref()?;
        let index = line.checked_sub(1)? as usize;
        let start = *starts.get(index)?;
        let end = starts.get(index + 1).map_or(text.len(), |next| next - 1);
        let line = text.get(start..end)?;
        // As `str::lines`: a line ends before its `\r\n`.
        Some(line.strip_suffix('\r').unwrap_or(line).to_owned())
    }

    /// The location of `name` on a 1-based line: at `byte_column` (1-based) when known, else
    /// its first whole-word occurrence on the line, else the line's start.
    fn name_location(
        &mut self,
        rel_path: &str,
        line: u32,
        byte_column: Option<u32>,
        name: &str,
    ) -> Option<Location> {
        let uri = self.uri(rel_path)?;
        let text = self.line(rel_path, line).unwrap_or_default();
        let start_byte = match byte_column {
            Some(column) => column.saturating_sub(1) as usize,
            None => find_word(&text, name).unwrap_or(0),
        };
        let start = utf16_column(&text, start_byte);
        let width = name.chars().map(char::len_utf16).sum::<usize>() as u32;
        let line = line.saturating_sub(1);
        Some(Location::new(
            uri,
            Range::new(
                Position::new(line, start),
                Position::new(line, start + width),
            ),
        ))
    }
}

impl LanguageServer for LodeServer {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let root = self.root_from(&params)?;
        let progress = params
            .capabilities
            .window
            .as_ref()
            .and_then(|window| window.work_done_progress)
            .unwrap_or(false);
        self.progress_supported.store(progress, Ordering::SeqCst);
        let mut options = WorkspaceOptions::new(&root);
        options.index_dir = self.options.index_dir.clone();
        options.scan = self.options.scan.clone();
        options.embedder = self.options.embedder.clone();
        let debounce = self.options.debounce;
        let index = tokio::task::spawn_blocking(move || LiveIndex::open(options, debounce))
            .await
            .map_err(internal)?
            .map_err(|error| {
                internal(format!(
                    "cannot open the index of {}: {error}",
                    root.display()
                ))
            })?;
        tracing::info!("workspace {}", index.root().display());
        let turns = Arc::new(crate::actions::RunningTurns::default());
        // One set of warm language servers checks the code actions' edits and answers both
        // the agent's navigation and this server's definition and references.
        let provider = match &self.options.diagnostics {
            Some(settings) => settings.provider_for(index.root()),
            None => Ok(None),
        };
        let resolved = match (&provider, self.options.navigation_deadline) {
            (Ok(Some(provider)), Some(deadline)) => {
                Some(Arc::new(TypeResolved::new(provider.clone(), deadline)))
            }
            (Err(error), Some(_)) => {
                tracing::warn!(%error, "definitions and references by name only");
                None
            }
            _ => None,
        };
        let setup = crate::actions::AgentSetup {
            config_file: self.options.config_file.clone(),
            provider,
            turns: turns.clone(),
            sandbox_launcher: self.options.sandbox_launcher.clone(),
        };
        let actions = crate::actions::open_agent(index.root(), index.reader(), setup)
            .await
            .map(|agent| crate::actions::Actions::new(agent, self.client.clone(), progress, turns));
        let offers_actions = actions.is_some();
        let buffers = Buffers::start(self.parse_limit())
            .map_err(|error| internal(format!("cannot start the buffer analysis: {error}")))?;
        self.direct.set_buffers(buffers.clone());
        let _ = self.buffers.set(buffers);
        let _ = self.actions.set(actions);
        let _ = self.resolved.set(resolved);
        let _ = self.index.set(index);

        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                position_encoding: Some(PositionEncodingKind::UTF16),
                text_document_sync: Some(TextDocumentSyncCapability::Options(
                    TextDocumentSyncOptions {
                        open_close: Some(true),
                        change: Some(TextDocumentSyncKind::INCREMENTAL),
                        save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions {
                            include_text: Some(false),
                        })),
                        ..TextDocumentSyncOptions::default()
                    },
                )),
                workspace_symbol_provider: Some(OneOf::Left(true)),
                document_symbol_provider: Some(OneOf::Left(true)),
                definition_provider: Some(OneOf::Left(true)),
                references_provider: Some(OneOf::Left(true)),
                code_action_provider: offers_actions
                    .then_some(CodeActionProviderCapability::Simple(true)),
                execute_command_provider: offers_actions.then(|| ExecuteCommandOptions {
                    commands: crate::actions::COMMANDS.map(str::to_owned).to_vec(),
                    ..ExecuteCommandOptions::default()
                }),
                ..ServerCapabilities::default()
            },
            server_info: Some(ServerInfo {
                name: "lode".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        // Indexing runs beside the requests; they answer from what is committed meanwhile.
        let Some(index) = self.index.get().cloned() else {
            return;
        };
        // The workspace's own settings wait for the user's word (asked once, in the background,
        // so requests are answered meanwhile).
        let root = index.root().to_path_buf();
        let agent = self.actions().map(|actions| actions.agent().clone());
        let ignored = crate::trust_prompt::ignored_settings(
            &root,
            self.options.config_file.as_deref(),
            agent.as_ref(),
        );
        if !ignored.is_empty() {
            let client = self.client.clone();
            tokio::spawn(async move {
                crate::trust_prompt::ask(&client, root, ignored, agent).await;
            });
        }
        let task = IndexingTask {
            client: self.client.clone(),
            index,
            progress: self.progress_supported.load(Ordering::SeqCst),
            watch: self.options.watch,
            watcher: self.watcher.clone(),
        };
        tokio::spawn(task.run());
    }

    async fn shutdown(&self) -> Result<()> {
        self.shut_down.store(true, Ordering::SeqCst);
        if let Some(index) = self.index.get() {
            index.flush().await;
        }
        if let Some(Some(resolved)) = self.resolved.get() {
            // A server still starting holds its slot until its handshake ends: not worth
            // keeping the editor waiting for (it ends with its input when this process exits).
            let _ = tokio::time::timeout(Duration::from_secs(10), resolved.shutdown()).await;
        }
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let item = params.text_document;
        let document = Document::new(item.text, item.version, item.language_id);
        let path = item.uri.to_file_path().map(|path| path.into_owned());
        if let (Ok(index), Some(path)) = (self.index(), &path) {
            index.open_buffer(path, document.shared_text());
        }
        if let Ok(buffers) = self.buffers() {
            let language = path.as_deref().and_then(Language::from_path);
            buffers.open(item.uri.clone(), language, document.clone());
        }
        self.told_too_large.lock().remove(&item.uri);
        self.documents.lock().insert(item.uri, document);
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        let uri = params.text_document.uri;
        let updated = {
            let mut documents = self.documents.lock();
            match documents.get_mut(&uri) {
                None => Err(format!(
                    "didChange for {} which is not open; ignored",
                    uri.as_str()
                )),
                Some(document) => document
                    .apply_changes(&params.content_changes, params.text_document.version)
                    .map(|edits| (document.clone(), edits))
                    .map_err(|error| format!("cannot apply a change to {}: {error}", uri.as_str())),
            }
        };
        match updated {
            Ok((document, edits)) => {
                if let (Ok(index), Some(path)) = (self.index(), uri.to_file_path()) {
                    index.change_buffer(&path, document.shared_text());
                }
                if let Ok(buffers) = self.buffers() {
                    buffers.change(uri, document, edits);
                }
            }
            Err(message) => {
                tracing::warn!("{message}");
                self.client.log_message(MessageType::WARNING, message).await;
            }
        }
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        if let (Ok(index), Some(path)) = (self.index(), params.text_document.uri.to_file_path()) {
            index.save_buffer(&path);
        }
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        let uri = params.text_document.uri;
        self.documents.lock().remove(&uri);
        self.told_too_large.lock().remove(&uri);
        if let Ok(buffers) = self.buffers() {
            buffers.close(&uri);
        }
        if let (Ok(index), Some(path)) = (self.index(), uri.to_file_path()) {
            index.close_buffer(&path);
        }
    }

    async fn symbol(
        &self,
        params: WorkspaceSymbolParams,
    ) -> Result<Option<OneOf<Vec<SymbolInformation>, Vec<WorkspaceSymbol>>>> {
        let index = self.index()?.clone();
        let query = params.query.trim().to_string();
        if query.is_empty() {
            return Ok(Some(OneOf::Right(Vec::new())));
        }
        // Open buffers answer for themselves (their text may be ahead of the index); the
        // index answers for every other file, from what it has committed. Its query runs on
        // a blocking thread while the buffers' analyses are awaited.
        let versions: Vec<(Uri, i32)> = self
            .documents
            .lock()
            .iter()
            .map(|(uri, document)| (uri.clone(), document.version()))
            .collect();
        let open_paths: std::collections::HashSet<String> = versions
            .iter()
            .filter_map(|(uri, _)| self.relative(&index, uri))
            .collect();
        let reader = index.reader();
        let lookup = query.clone();
        let wanted = WORKSPACE_SYMBOL_LIMIT + open_paths.len() * 8;
        let index_hits = tokio::task::spawn_blocking(move || reader.symbols(&lookup, wanted));
        let buffers = self.buffers()?;
        let mut open = Vec::with_capacity(versions.len());
        for (uri, version) in versions {
            if let Some(analysis) = buffers.analysis(&uri, version).await {
                open.push((uri, analysis));
            }
        }
        let hits = index_hits
            .await
            .map_err(internal)?
            .or_else(empty_on_bad_name)?;

        // Rank every candidate first; only the ones kept get a location.
        enum Candidate {
            Indexed(lode_index::SymbolHit),
            InBuffer { buffer: usize, definition: usize },
        }
        let mut ranked: Vec<(SymbolRank, Candidate)> = hits
            .into_iter()
            .filter(|hit| !open_paths.contains(&hit.path))
            .filter_map(|hit| Some((symbol_rank(&query, &hit.name)?, Candidate::Indexed(hit))))
            .collect();
        let folded = QueryLetters::of(&query);
        for (buffer, (_, analysis)) in open.iter().enumerate() {
            for (definition, found) in analysis.tags.definitions.iter().enumerate() {
                if !folded.may_match(&found.name) {
                    continue;
                }
                if let Some(rank) = symbol_rank(&query, &found.name) {
                    ranked.push((rank, Candidate::InBuffer { buffer, definition }));
                }
            }
        }
        ranked.sort_by_key(|(rank, _)| *rank);
        ranked.truncate(WORKSPACE_SYMBOL_LIMIT);

        let mut lines = LineSource::new(index.root(), &self.documents);
        let symbols = ranked
            .into_iter()
            .filter_map(|(_, candidate)| match candidate {
                Candidate::Indexed(hit) => {
                    let location =
                        lines.name_location(&hit.path, hit.start_line, None, &hit.name)?;
                    Some(WorkspaceSymbol {
                        kind: symbol_kind_named(&hit.kind),
                        container_name: Some(hit.scope.join(" > ")).filter(|s| !s.is_empty()),
                        name: hit.name,
                        tags: None,
                        location: OneOf::Left(location),
                        data: None,
                    })
                }
                Candidate::InBuffer { buffer, definition } => {
                    let (uri, analysis) = &open[buffer];
                    let found = &analysis.tags.definitions[definition];
                    let (start, end) = name_span(analysis.document.text(), found);
                    Some(WorkspaceSymbol {
                        kind: crate::outline::symbol_kind(found.kind),
                        container_name: Some(found.scope.join(" > ")).filter(|s| !s.is_empty()),
                        name: found.name.clone(),
                        tags: None,
                        location: OneOf::Left(Location::new(
                            uri.clone(),
                            analysis.document.range_of(start, end),
                        )),
                        data: None,
                    })
                }
            })
            .collect();
        Ok(Some(OneOf::Right(symbols)))
    }

    async fn document_symbol(
        &self,
        params: DocumentSymbolParams,
    ) -> Result<Option<DocumentSymbolResponse>> {
        let analysis = self.analysis_of(&params.text_document.uri).await?;
        Ok(Some(DocumentSymbolResponse::Nested(
            analysis.outline().to_vec(),
        )))
    }

    async fn goto_definition(
        &self,
        params: GotoDefinitionParams,
    ) -> Result<Option<GotoDefinitionResponse>> {
        let position = params.text_document_position_params;
        self.index()?;
        if let Some(found) = self
            .resolved_at(
                Question::Definition,
                &position.text_document.uri,
                position.position,
            )
            .await
        {
            return Ok(Some(GotoDefinitionResponse::Array(found)));
        }
        let Some((_, local, elsewhere)) = self
            .definitions_at(&position.text_document.uri, position.position)
            .await?
        else {
            return Ok(None);
        };
        let all: Vec<Location> = local.into_iter().chain(elsewhere).collect();
        Ok((!all.is_empty()).then_some(GotoDefinitionResponse::Array(all)))
    }

    async fn references(&self, params: ReferenceParams) -> Result<Option<Vec<Location>>> {
        let uri = params.text_document_position.text_document.uri;
        let position = params.text_document_position.position;
        self.index()?;
        let question = Question::References {
            include_declaration: params.context.include_declaration,
        };
        if let Some(found) = self.resolved_at(question, &uri, position).await {
            return Ok(Some(found));
        }
        let Some((name, local_defs, other_defs)) = self.definitions_at(&uri, position).await?
        else {
            return Ok(None);
        };
        let index = self.index()?.clone();
        let analysis = self.analysis_of(&uri).await?;
        let (document, tags) = (&analysis.document, &analysis.tags);
        let nearness = Nearness::of_buffer(self.relative(&index, &uri), document.text(), tags);

        // The index orders the answer: this file, imported files, the rest.
        let mut found: Vec<Location> = Vec::new();
        let lines_of = crate::document::line_starts(document.text());
        for reference in same_file_references(tags, &name) {
            let line_start = lines_of
                .get(reference.line.saturating_sub(1) as usize)
                .copied()
                .unwrap_or(0);
            let start = line_start + reference.column.saturating_sub(1) as usize;
            found.push(Location::new(
                uri.clone(),
                document.range_of(start, start + name.len()),
            ));
        }
        let reader = index.reader();
        let lookup = name.clone();
        let hits = tokio::task::spawn_blocking(move || reader.references(&lookup, REFERENCE_LIMIT))
            .await
            .map_err(internal)?
            .or_else(empty_on_bad_name)?;
        let mut lines = LineSource::new(index.root(), &self.documents);
        found.extend(
            nearness.references(hits).into_iter().filter_map(|hit| {
                lines.name_location(&hit.path, hit.line, Some(hit.column), &name)
            }),
        );
        let mut locations: Vec<Location> = Vec::new();
        if params.context.include_declaration {
            locations.extend(local_defs);
            locations.extend(other_defs);
        }
        locations.extend(found);
        Ok(Some(locations))
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        if self.actions().is_none() {
            return Ok(None);
        }
        let uri = params.text_document.uri;
        let analysis = self.analysis_of(&uri).await?;
        let line = params.range.start.line + 1;
        let enclosing = analysis
            .tags
            .definitions
            .iter()
            .filter(|def| def.start_line <= line && line <= def.end_line)
            .min_by_key(|def| def.end_line - def.start_line)
            .map(|def| def.name.clone());
        Ok(Some(crate::actions::code_actions(
            &uri,
            params.range,
            &params.context.diagnostics,
            enclosing.as_deref(),
        )))
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<LSPAny>> {
        let Some(actions) = self.actions().cloned() else {
            return Err(Error::invalid_params(
                "lode code actions are off: no model is configured ([[llm.providers]])",
            ));
        };
        if !crate::actions::COMMANDS.contains(&params.command.as_str()) {
            return Err(Error::invalid_params(format!(
                "unknown command {:?}",
                params.command
            )));
        }
        let buffers: crate::actions::Buffers = self
            .documents
            .lock()
            .iter()
            .filter_map(|(uri, document)| Some((file_path(uri).ok()?, document.clone())))
            .collect();
        let client = self.client.clone();
        // The turn runs beside the requests; its results arrive as applyEdit, messages and
        // diagnostics, and the request is answered when it is over. `$/cancelRequest` drops
        // this future: the guard then cancels the turn, which stops and tells the user.
        let cancel = CancellationToken::new();
        let guard = cancel.clone().drop_guard();
        let turn = tokio::spawn(async move {
            if let Err(error) = actions
                .run(&params.command, params.arguments, buffers, cancel)
                .await
            {
                tracing::warn!(%error, "{}", params.command);
                client
                    .show_message(MessageType::ERROR, format!("lode: {error}"))
                    .await;
            }
        });
        let _ = turn.await;
        guard.disarm();
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_letters_never_rule_out_a_name_the_index_would_match() {
        let names = [
            "get_user",
            "GetUser",
            "getUser",
            "user_get",
            "Index",
            "IndexWriter",
            "x",
            "g_e_t",
            "Kelvin\u{212A}",
            "über",
        ];
        let queries = [
            "getusr", "get_user", "GETUSER", "ind", "dexwr", "k", "x", "g_e", "üb",
        ];
        for query in queries {
            let letters = QueryLetters::of(query);
            for name in names {
                if symbol_rank(query, name).is_some() {
                    assert!(letters.may_match(name), "{query:?} would skip {name:?}");
                }
            }
        }
        assert!(!QueryLetters::of("zzz").may_match("get_user"));
        assert!(!QueryLetters::of("resu").may_match("user"));
    }
}
