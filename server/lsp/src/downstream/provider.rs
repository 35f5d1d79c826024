//! Picks a diagnostics source per language and keeps language servers warm between calls:
//! the configured (or default, when on `PATH`) language server first, then a checker command.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::client::{ClientSettings, LanguageServerClient};
use super::commands::{self, ByFile};
use super::{
    Confinement, DiagnosticsError, DiagnosticsSource, FileDiagnostics, find_on_path,
    language_family, language_id,
};

/// Which checkers to use.
#[derive(Clone, Debug)]
pub struct DiagnosticsConfig {
    /// Language server command lines by family (`rust`, `python`, `typescript`, `go`);
    /// an entry replaces the default, an empty one turns servers off for the family.
    pub servers: HashMap<String, Vec<String>>,
    /// Try the default servers when they are on `PATH`: `rust-analyzer`,
    /// `pyright-langserver --stdio`, `typescript-language-server --stdio`, `gopls`, `clangd`,
    /// `jdtls`, `csharp-ls`, `kotlin-language-server`, `sourcekit-lsp`, `ruby-lsp`,
    /// `phpactor language-server`, `metals`, `lua-language-server`, `bash-language-server start`,
    /// `zls`, `elixir-ls`, `haskell-language-server-wrapper --lsp`, `ocamllsp`.
    pub default_servers: bool,
    /// Fall back to checker commands (`cargo check`, `pyright`, `tsc`).
    pub commands: bool,
    pub client: ClientSettings,
    /// Confines the servers and commands (by default it cannot: the Rust ones are then not
    /// started, since they run the workspace's build scripts).
    pub sandbox: Arc<lode_sandbox::Sandbox>,
}

impl Default for DiagnosticsConfig {
    fn default() -> Self {
        DiagnosticsConfig {
            servers: HashMap::new(),
            default_servers: true,
            commands: true,
            client: ClientSettings::default(),
            sandbox: Arc::new(lode_sandbox::Sandbox::unavailable(
                "no sandbox launcher was given to the diagnostics provider",
            )),
        }
    }
}

/// The default server command line of a family.
pub fn default_server(family: &str) -> Option<Vec<String>> {
    let parts: &[&str] = match family {
        "rust" => &["rust-analyzer"],
        "python" => &["pyright-langserver", "--stdio"],
        "typescript" => &["typescript-language-server", "--stdio"],
        "go" => &["gopls"],
        "c" => &["clangd"],
        "java" => &["jdtls"],
        "csharp" => &["csharp-ls"],
        "kotlin" => &["kotlin-language-server"],
        "swift" => &["sourcekit-lsp"],
        "ruby" => &["ruby-lsp"],
        "php" => &["phpactor", "language-server"],
        "scala" => &["metals"],
        "lua" => &["lua-language-server"],
        "bash" => &["bash-language-server", "start"],
        "zig" => &["zls"],
        "elixir" => &["elixir-ls"],
        "haskell" => &["haskell-language-server-wrapper", "--lsp"],
        "ocaml" => &["ocamllsp"],
        _ => return None,
    };
    Some(parts.iter().map(|s| s.to_string()).collect())
}

enum Slot {
    Running(Arc<LanguageServerClient>),
    /// No server, or it failed to start or died: the reason.
    Unavailable(String),
}

/// Diagnostics for files of a workspace, from whatever can produce them.
pub struct DiagnosticsProvider {
    root: PathBuf,
    config: DiagnosticsConfig,
    servers: tokio::sync::Mutex<HashMap<&'static str, Slot>>,
}

impl DiagnosticsProvider {
    pub fn new(root: impl Into<PathBuf>, config: DiagnosticsConfig) -> DiagnosticsProvider {
        let root = root.into();
        let root = std::fs::canonicalize(&root).unwrap_or(root);
        DiagnosticsProvider {
            root,
            config,
            servers: tokio::sync::Mutex::default(),
        }
    }

    /// The current diagnostics of each file (as saved on disk), errors first. Files of
    /// languages nothing can check come back empty with `source: None` and a reason.
    pub async fn diagnostics_for(&self, paths: &[PathBuf]) -> Vec<FileDiagnostics> {
        self.diagnostics_for_texts(paths, &HashMap::new()).await
    }

    /// As [`Self::diagnostics_for`], with `texts` (by canonical absolute path) standing in for
    /// the disk: unsaved text. A language server is sent that text; a checker command can only
    /// read the disk, so a file whose given text differs from it is reported unchecked.
    pub async fn diagnostics_for_texts(
        &self,
        paths: &[PathBuf],
        texts: &HashMap<PathBuf, String>,
    ) -> Vec<FileDiagnostics> {
        let mut by_family: HashMap<&'static str, Vec<PathBuf>> = HashMap::new();
        let mut unsupported = Vec::new();
        for path in paths {
            let absolute = if path.is_absolute() {
                path.clone()
            } else {
                self.root.join(path)
            };
            let absolute = std::fs::canonicalize(&absolute).unwrap_or(absolute);
            match language_id(&absolute).map(language_family) {
                Some(family) => by_family.entry(family).or_default().push(absolute),
                None => unsupported.push(absolute),
            }
        }
        let mut results: Vec<FileDiagnostics> = unsupported
            .into_iter()
            .map(|path| FileDiagnostics {
                path,
                diagnostics: Vec::new(),
                source: DiagnosticsSource::None,
                error: Some("no checker for this kind of file".into()),
            })
            .collect();
        for (family, files) in by_family {
            results.extend(self.for_family(family, &files, texts).await);
        }
        // Answer in the order asked.
        let order: HashMap<PathBuf, usize> = paths
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let absolute = if p.is_absolute() {
                    p.clone()
                } else {
                    self.root.join(p)
                };
                (std::fs::canonicalize(&absolute).unwrap_or(absolute), i)
            })
            .collect();
        results.sort_by_key(|r| order.get(&r.path).copied().unwrap_or(usize::MAX));
        results
    }

    async fn for_family(
        &self,
        family: &'static str,
        files: &[PathBuf],
        texts: &HashMap<PathBuf, String>,
    ) -> Vec<FileDiagnostics> {
        let mut server_problem = None;
        // A server that exits mid-check is started again once (a crash, or an editor-side
        // restart); one that keeps exiting is given up on.
        let mut restarts_left = 1;
        while let Some(server) = self.server(family).await {
            match server.diagnostics_for(files, texts).await {
                Ok(found) => {
                    let source = DiagnosticsSource::Server(server.command().to_string());
                    return found
                        .into_iter()
                        .map(|(path, diagnostics)| FileDiagnostics {
                            path,
                            diagnostics,
                            source: source.clone(),
                            error: None,
                        })
                        .collect();
                }
                Err(DiagnosticsError::Exited { .. }) if restarts_left > 0 => {
                    restarts_left -= 1;
                    tracing::warn!("diagnostics server for {family} exited; starting it again");
                    self.servers.lock().await.remove(family);
                }
                Err(error) => {
                    tracing::warn!(%error, "diagnostics server for {family}");
                    server_problem = Some(error.to_string());
                    self.servers
                        .lock()
                        .await
                        .insert(family, Slot::Unavailable(error.to_string()));
                    break;
                }
            }
        }
        // A checker command reads the disk: when no file has its text there, it cannot help.
        if self.config.commands && files.iter().all(|path| unsaved(path, texts)) {
            return unchecked(
                files,
                format!(
                    "{}the {family} checker commands read the disk, where this text is not saved",
                    server_problem.map(|p| format!("{p}; ")).unwrap_or_default()
                ),
            );
        }
        if self.config.commands
            && let Some((command, result)) = self.run_command(family, files).await
        {
            return match result {
                Ok(found) => files
                    .iter()
                    .map(|path| {
                        if unsaved(path, texts) {
                            return FileDiagnostics {
                                path: path.clone(),
                                diagnostics: Vec::new(),
                                source: DiagnosticsSource::None,
                                error: Some(format!(
                                    "{command} checks the files on disk, and this file's text is not saved"
                                )),
                            };
                        }
                        FileDiagnostics {
                            path: path.clone(),
                            diagnostics: found.get(path).cloned().unwrap_or_default(),
                            source: DiagnosticsSource::Command(command.clone()),
                            error: None,
                        }
                    })
                    .collect(),
                Err(error) => unchecked(files, error.to_string()),
            };
        }
        let reason = server_problem.unwrap_or_else(|| {
            let unavailable = match self.servers.try_lock() {
                Ok(servers) => match servers.get(family) {
                    Some(Slot::Unavailable(reason)) => Some(reason.clone()),
                    _ => None,
                },
                Err(_) => None,
            };
            unavailable.unwrap_or_else(|| {
                format!("no language server or checker for {family} is available")
            })
        });
        unchecked(files, reason)
    }

    /// The warm language server for files like `path` (the one whose diagnostics this
    /// provider collects, so navigation and diagnostics share one process), started on first
    /// use and again after it exited; or why there is none.
    pub async fn language_server(&self, path: &Path) -> Result<Arc<LanguageServerClient>, String> {
        let family = language_id(path)
            .map(language_family)
            .ok_or_else(|| "no language server for this kind of file".to_owned())?;
        if let Some(server) = self.server(family).await {
            return Ok(server);
        }
        match self.servers.lock().await.get(family) {
            Some(Slot::Unavailable(reason)) => Err(reason.clone()),
            _ => Err(format!("no language server for {family} is available")),
        }
    }

    /// The warm server of a family, started on first use.
    async fn server(&self, family: &'static str) -> Option<Arc<LanguageServerClient>> {
        let mut servers = self.servers.lock().await;
        match servers.get(family) {
            Some(Slot::Running(client)) if !client.has_exited() => return Some(client.clone()),
            Some(Slot::Unavailable(_)) => return None,
            _ => {}
        }
        let command = match self.config.servers.get(family) {
            Some(configured) => configured.clone(),
            None if self.config.default_servers => default_server(family)?,
            None => Vec::new(),
        };
        let Some((program, args)) = command.split_first() else {
            servers.insert(
                family,
                Slot::Unavailable(format!("no language server configured for {family}")),
            );
            return None;
        };
        // A missing server is said first: "install it" helps more than "it would not run here".
        if find_on_path(program).is_none() {
            servers.insert(
                family,
                Slot::Unavailable(format!("{program} is not on PATH")),
            );
            return None;
        }
        if let Some(reason) = super::refuse_unconfined(&self.config.sandbox, program) {
            servers.insert(family, Slot::Unavailable(reason));
            return None;
        }
        let confinement = self.confinement();
        match LanguageServerClient::start(
            program,
            args,
            &self.root,
            self.config.client,
            confinement,
        )
        .await
        {
            Ok(client) => {
                let client = Arc::new(client);
                servers.insert(family, Slot::Running(client.clone()));
                Some(client)
            }
            Err(DiagnosticsError::NotInstalled(message)) => {
                // Said once: the slot remembers it for the provider's (the session's) life.
                tracing::warn!("{message}");
                servers.insert(family, Slot::Unavailable(message));
                None
            }
            Err(error) => {
                tracing::warn!(%error, "cannot use {program} for {family} diagnostics");
                servers.insert(family, Slot::Unavailable(error.to_string()));
                None
            }
        }
    }

    async fn run_command(
        &self,
        family: &str,
        files: &[PathBuf],
    ) -> Option<(String, Result<ByFile, DiagnosticsError>)> {
        let first = files.first()?;
        match family {
            "rust" => {
                find_on_path("cargo")?;
                let dir = commands::project_dir(first, &self.root, "Cargo.toml")?;
                Some((
                    "cargo check --message-format=json".into(),
                    commands::cargo_check(&dir, self.confinement()).await,
                ))
            }
            "python" => {
                let program = find_on_path("pyright")?;
                let program = program.to_string_lossy().into_owned();
                Some((
                    "pyright --outputjson".into(),
                    commands::pyright(&program, &self.root, files, self.confinement()).await,
                ))
            }
            "typescript" => {
                let program = find_on_path("tsc")?;
                let program = program.to_string_lossy().into_owned();
                let config_dir = commands::project_dir(first, &self.root, "tsconfig.json");
                let dir = config_dir.clone().unwrap_or_else(|| self.root.clone());
                Some((
                    "tsc --noEmit".into(),
                    commands::tsc(
                        &program,
                        &dir,
                        files,
                        config_dir.is_some(),
                        self.confinement(),
                    )
                    .await,
                ))
            }
            _ => None,
        }
    }

    /// Stops the warm servers.
    pub async fn shutdown(&self) {
        let mut servers = self.servers.lock().await;
        for (_, slot) in servers.drain() {
            if let Slot::Running(client) = slot {
                client.shutdown().await;
            }
        }
    }

    fn confinement(&self) -> Confinement<'_> {
        Confinement {
            sandbox: &self.config.sandbox,
            root: &self.root,
        }
    }

    /// The workspace root the provider checks.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// Whether `texts` has text for `path` that differs from the file on disk.
fn unsaved(path: &Path, texts: &HashMap<PathBuf, String>) -> bool {
    texts
        .get(path)
        .is_some_and(|text| std::fs::read(path).map_or(true, |disk| disk != text.as_bytes()))
}

fn unchecked(files: &[PathBuf], reason: String) -> Vec<FileDiagnostics> {
    files
        .iter()
        .map(|path| FileDiagnostics {
            path: path.clone(),
            diagnostics: Vec::new(),
            source: DiagnosticsSource::None,
            error: Some(reason.clone()),
        })
        .collect()
}
