//! Sessions in the workspaces their `cwd`s name. One `lode acp` (stdio or HTTP) holds a set of
//! open workspaces keyed by canonical root, each behind its own [`AgentBackend`] (for lode, an
//! agent with its own index, watch lease, configuration layering and trust, its tools confined
//! to its root). [`Workspaces`] is the backend a connection sees: `session/new`, `session/load`
//! and `session/resume` (and `session/list` naming a `cwd`) open or reuse the workspace of the
//! request's `cwd`, and every other call goes to the workspace that holds the session.
//!
//! A process that started in a project has that workspace open from the start (the default);
//! one that started elsewhere ([`Workspaces::without_default`]) has none until a session names
//! one, and answers what needs a workspace but names none from what is open (nothing, at first).
//!
//! Routing only: which directory is a workspace's root and how a workspace is opened belong to
//! a [`WorkspaceOpener`] (the binary's); what a workspace does belongs to its backend.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lode_agent::event::{AgentEvent, StopReason};
use lode_agent::host::SessionHost;
use lode_llm::ModelInfo;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::backend::{
    AgentBackend, BackendError, McpServerSpec, PromptInput, SessionSummary, SlashCommandInfo,
};

/// The most workspaces one process keeps open (each holds an index, a watcher and stores).
pub const MAX_OPEN_WORKSPACES: usize = 16;

/// A workspace as its opener hands it over.
pub struct OpenWorkspace {
    /// What serves the workspace's sessions.
    pub backend: Arc<dyn AgentBackend>,
    /// What must live as long as the workspace is open (its file watcher, say).
    pub keep_alive: Box<dyn Send>,
}

/// Finds and opens workspaces for [`Workspaces`].
pub trait WorkspaceOpener: Send + Sync + 'static {
    /// The root of the project `dir` lies in as the disk marks it (for lode the nearest
    /// ancestor, `dir` itself included, with `.lode/` or `.git`); `None` when nothing marks
    /// one. `dir` is canonical, an existing directory [`check_cwd`] accepted.
    fn root_for(&self, dir: &Path) -> Option<PathBuf>;
    /// Opens the workspace at `root` (canonical). Called once per root, one call at a time.
    fn open(&self, root: &Path) -> Result<OpenWorkspace, BackendError>;
    /// The models of the configuration that belongs to no workspace (for lode the user's own),
    /// for what belongs to no session (`initialize`) when no workspace was open at start.
    fn models(&self) -> Vec<ModelInfo> {
        Vec::new()
    }
}

struct Opened {
    backend: Arc<dyn AgentBackend>,
    _keep_alive: Box<dyn Send>,
}

/// The open workspaces of one process and which of them holds each session (see the module
/// docs). The workspace the process started in, if it started in one, is the default: it
/// answers what belongs to no session (models, slash commands).
pub struct Workspaces {
    opener: Box<dyn WorkspaceOpener>,
    /// The user's home directory, canonical: too wide to be a workspace.
    home: Option<PathBuf>,
    /// The root and backend of the workspace the process started in, when it started in one.
    default: Option<(PathBuf, Arc<dyn AgentBackend>)>,
    open: Mutex<HashMap<PathBuf, Opened>>,
    /// Held while a workspace opens, so that two requests for a new root open it once.
    opening: Mutex<()>,
    /// Session id → the root of the workspace that holds it.
    sessions: Mutex<HashMap<String, PathBuf>>,
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Why `dir` (canonical) is too wide to be a workspace: the file system's root, or the home
/// directory itself.
fn too_wide(dir: &Path, home: Option<&Path>) -> Option<String> {
    let what = if dir.parent().is_none() {
        "the root of the file system"
    } else if Some(dir) == home {
        "your home directory itself"
    } else {
        return None;
    };
    let example = home.map_or_else(
        || "/home/you/code/myproject".to_owned(),
        |home| home.join("code/myproject").display().to_string(),
    );
    Some(format!(
        "cwd {} is {what}, too wide to be one workspace (lode would index and let the agent \
         edit everything below it): open a project directory instead (a folder inside your \
         home, e.g. {example})",
        dir.display()
    ))
}

/// The canonical form of a session's `cwd` (symlinks resolved), or why it cannot be one: it must
/// be an absolute path to an existing directory, neither `/` nor the home directory itself
/// (`home`, canonical).
pub fn check_cwd(cwd: &Path, home: Option<&Path>) -> Result<PathBuf, BackendError> {
    let refuse = |message: String| Err(BackendError::InvalidInput(message));
    if !cwd.is_absolute() {
        return refuse(format!(
            "cwd must be an absolute path, got {}",
            cwd.display()
        ));
    }
    let dir = match std::fs::canonicalize(cwd) {
        Ok(dir) => dir,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return refuse(format!(
                "cwd {} does not exist: give the project directory the session works in",
                cwd.display()
            ));
        }
        Err(error) => return refuse(format!("cannot use cwd {}: {error}", cwd.display())),
    };
    if !dir.is_dir() {
        return refuse(format!(
            "cwd {} is a file, not a directory: give the project directory the session works in",
            cwd.display()
        ));
    }
    match too_wide(&dir, home) {
        Some(why) => refuse(why),
        None => Ok(dir),
    }
}

impl Workspaces {
    /// The workspaces of a process that started in `default_root`, already open as `default`.
    /// `home` is the user's home directory (`$HOME`), refused as a session's `cwd`.
    pub fn new(
        opener: impl WorkspaceOpener,
        default_root: &Path,
        default: OpenWorkspace,
        home: Option<&Path>,
    ) -> Workspaces {
        let default_root = canonical(default_root);
        let mut workspaces = Workspaces::without_default(opener, home);
        workspaces.default = Some((default_root.clone(), default.backend.clone()));
        workspaces.open.lock().insert(
            default_root,
            Opened {
                backend: default.backend,
                _keep_alive: default.keep_alive,
            },
        );
        workspaces
    }

    /// The workspaces of a process that started in no workspace (its directory is no project,
    /// or too wide to be one): none is open until a session's `cwd` names one. Until then what
    /// belongs to no session is answered from the opener's [`WorkspaceOpener::models`], a
    /// listing is empty and diagnostics are dropped.
    pub fn without_default(opener: impl WorkspaceOpener, home: Option<&Path>) -> Workspaces {
        Workspaces {
            opener: Box::new(opener),
            home: home.map(canonical),
            default: None,
            open: Mutex::new(HashMap::new()),
            opening: Mutex::new(()),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// The roots of the open workspaces, the default first.
    pub fn roots(&self) -> Vec<PathBuf> {
        let default_root = self.default.as_ref().map(|(root, _)| root);
        let mut roots: Vec<PathBuf> = self.open.lock().keys().cloned().collect();
        roots.sort_by_key(|root| (Some(root) != default_root, root.clone()));
        roots
    }

    fn opened(&self, root: &Path) -> Option<Arc<dyn AgentBackend>> {
        self.open
            .lock()
            .get(root)
            .map(|opened| opened.backend.clone())
    }

    fn all_open(&self) -> Vec<(PathBuf, Arc<dyn AgentBackend>)> {
        self.roots()
            .into_iter()
            .filter_map(|root| self.opened(&root).map(|backend| (root, backend)))
            .collect()
    }

    /// The root of the workspace `dir` (checked, canonical) belongs to: the nearer of its
    /// marked project root and the open workspace around it (so a folder inside the workspace
    /// lode started in, `--root` without a marker included, stays in it, and a repository nested
    /// in an open workspace is its own), else `dir` itself. Never a root too wide to be one.
    fn root_of(&self, dir: &Path) -> PathBuf {
        let home = self.home.as_deref();
        let marked = self
            .opener
            .root_for(dir)
            .map(|root| canonical(&root))
            .filter(|root| dir.starts_with(root) && too_wide(root, home).is_none());
        let open = self
            .roots()
            .into_iter()
            .filter(|root| dir.starts_with(root) && too_wide(root, home).is_none());
        marked
            .into_iter()
            .chain(open)
            .max_by_key(|root| root.components().count())
            .unwrap_or_else(|| dir.to_path_buf())
    }

    /// The workspace of a session's `cwd`, opened now if it is not open yet.
    fn workspace_of(&self, cwd: &Path) -> Result<(PathBuf, Arc<dyn AgentBackend>), BackendError> {
        let dir = check_cwd(cwd, self.home.as_deref())?;
        let root = self.root_of(&dir);
        if let Some(backend) = self.opened(&root) {
            return Ok((root, backend));
        }
        let _one_at_a_time = self.opening.lock();
        if let Some(backend) = self.opened(&root) {
            return Ok((root, backend));
        }
        if self.open.lock().len() >= MAX_OPEN_WORKSPACES {
            return Err(BackendError::InvalidInput(format!(
                "this lode already has {MAX_OPEN_WORKSPACES} workspaces open, the most one \
                 process keeps; start another `lode acp` for {}",
                root.display()
            )));
        }
        let opened = self.opener.open(&root)?;
        let backend = opened.backend.clone();
        self.open.lock().insert(
            root.clone(),
            Opened {
                backend: opened.backend,
                _keep_alive: opened.keep_alive,
            },
        );
        Ok((root, backend))
    }

    fn remember(&self, id: &str, root: &Path) {
        self.sessions
            .lock()
            .insert(id.to_owned(), root.to_path_buf());
    }

    /// The root of the open workspace that holds session `id`: the one it was seen in, else the
    /// one whose store has it (a session this process has not met yet, listed by an earlier run).
    fn holder_root(&self, id: &str) -> Option<PathBuf> {
        let known = self.sessions.lock().get(id).cloned();
        if let Some(root) = known
            && self.opened(&root).is_some()
        {
            return Some(root);
        }
        self.all_open().into_iter().find_map(|(root, backend)| {
            let sessions = backend.list_sessions(None).ok()?;
            sessions.iter().any(|session| session.id == id).then(|| {
                self.remember(id, &root);
                root
            })
        })
    }

    fn holder(&self, id: &str) -> Result<Arc<dyn AgentBackend>, BackendError> {
        self.holder_root(id)
            .and_then(|root| self.opened(&root))
            .ok_or_else(|| BackendError::SessionNotFound(id.to_owned()))
    }

    /// Why session `id` is not in the workspace `root` of the client's `cwd`: it belongs to
    /// another open workspace (the agent would work in a tree the client does not show, so it
    /// is refused), or to none.
    fn not_in(&self, id: &str, root: &Path, cwd: &Path) -> BackendError {
        match self.holder_root(id) {
            Some(other) if other != root => BackendError::InvalidInput(format!(
                "session {id} belongs to the workspace {}, not to {} where cwd {} is; open it \
                 with a cwd inside {}",
                other.display(),
                root.display(),
                cwd.display(),
                other.display()
            )),
            _ => BackendError::SessionNotFound(id.to_owned()),
        }
    }

    /// `load_session` and `resume_session`: the session, looked up in the workspace of `cwd`.
    fn reopen<T>(
        &self,
        id: &str,
        cwd: &Path,
        how: impl FnOnce(&dyn AgentBackend) -> Result<T, BackendError>,
    ) -> Result<T, BackendError> {
        let (root, backend) = self.workspace_of(cwd)?;
        match how(backend.as_ref()) {
            Ok(answer) => {
                self.remember(id, &root);
                Ok(answer)
            }
            Err(BackendError::SessionNotFound(_)) => Err(self.not_in(id, &root, cwd)),
            Err(error) => Err(error),
        }
    }
}

#[async_trait::async_trait]
impl AgentBackend for Workspaces {
    fn models(&self, session_id: Option<&str>) -> Vec<ModelInfo> {
        match session_id.and_then(|id| self.holder(id).ok()) {
            Some(backend) => backend.models(session_id),
            None => match &self.default {
                Some((_, default)) => default.models(None),
                None => self.opener.models(),
            },
        }
    }

    /// lode's own commands, the same in every workspace: the default's, else those of the first
    /// open workspace (they are announced once a session has opened one).
    fn slash_commands(&self) -> Vec<SlashCommandInfo> {
        let first = || {
            self.all_open()
                .into_iter()
                .next()
                .map(|(_, backend)| backend)
        };
        self.default
            .as_ref()
            .map(|(_, default)| default.clone())
            .or_else(first)
            .map_or_else(Vec::new, |backend| backend.slash_commands())
    }

    fn new_session(
        &self,
        cwd: PathBuf,
        mcp_servers: Vec<McpServerSpec>,
    ) -> Result<SessionSummary, BackendError> {
        let (root, backend) = self.workspace_of(&cwd)?;
        let session = backend.new_session(cwd, mcp_servers)?;
        self.remember(&session.id, &root);
        Ok(session)
    }

    fn list_sessions(&self, cwd: Option<&Path>) -> Result<Vec<SessionSummary>, BackendError> {
        if let Some(cwd) = cwd {
            // The client looks for sessions there: that workspace's are listed too. A `cwd`
            // that cannot be a workspace has none.
            let _ = self.workspace_of(cwd);
        }
        let mut all = Vec::new();
        for (root, backend) in self.all_open() {
            for session in backend.list_sessions(cwd)? {
                self.remember(&session.id, &root);
                all.push(session);
            }
        }
        // Most recently used first, across workspaces (RFC 3339 in UTC sorts as text).
        all.sort_by(|a, b| b.updated_at.cmp(&a.updated_at));
        Ok(all)
    }

    fn load_session(
        &self,
        id: &str,
        cwd: &Path,
    ) -> Result<(SessionSummary, Vec<AgentEvent>), BackendError> {
        self.reopen(id, cwd, |backend| backend.load_session(id, cwd))
    }

    fn resume_session(&self, id: &str, cwd: &Path) -> Result<SessionSummary, BackendError> {
        self.reopen(id, cwd, |backend| backend.resume_session(id, cwd))
    }

    fn workspace_trusted(&self, cwd: &Path) -> Result<bool, BackendError> {
        self.workspace_of(cwd)?.1.workspace_trusted(cwd)
    }

    fn attach_mcp_servers(
        &self,
        id: &str,
        servers: Vec<McpServerSpec>,
    ) -> Result<(), BackendError> {
        self.holder(id)?.attach_mcp_servers(id, servers)
    }

    fn release_session(&self, id: &str) -> bool {
        self.holder(id)
            .map_or(true, |backend| backend.release_session(id))
    }

    fn close_session(&self, id: &str) -> Result<(), BackendError> {
        self.holder(id)?.close_session(id)
    }

    fn delete_session(&self, id: &str) -> Result<(), BackendError> {
        self.holder(id)?.delete_session(id)?;
        self.sessions.lock().remove(id);
        Ok(())
    }

    fn set_mode(&self, id: &str, mode: &str) -> Result<(), BackendError> {
        self.holder(id)?.set_mode(id, mode)
    }

    fn set_model(&self, id: &str, provider: &str) -> Result<(), BackendError> {
        self.holder(id)?.set_model(id, provider)
    }

    /// Goes to the open workspace the file lies in (the innermost, when workspaces nest),
    /// whichever session pushed it: diagnostics are per workspace file.
    fn push_diagnostics(
        &self,
        session_id: Option<&str>,
        path: PathBuf,
        diagnostics: Vec<lode_tools::diagnostics::Diagnostic>,
    ) -> bool {
        let file = canonical(&path);
        let inside = self
            .all_open()
            .into_iter()
            .filter(|(root, _)| file.starts_with(root))
            .max_by_key(|(root, _)| root.components().count());
        match inside {
            Some((_, backend)) => backend.push_diagnostics(session_id, path, diagnostics),
            None => false,
        }
    }

    fn file_saved(&self, path: &Path) -> bool {
        let file = canonical(path);
        let inside = self
            .all_open()
            .into_iter()
            .filter(|(root, _)| file.starts_with(root))
            .max_by_key(|(root, _)| root.components().count());
        inside.is_some_and(|(_, backend)| backend.file_saved(&file))
    }

    async fn prompt(
        &self,
        id: &str,
        input: Vec<PromptInput>,
        host: Arc<dyn SessionHost>,
        cancel: CancellationToken,
    ) -> Result<StopReason, BackendError> {
        self.holder(id)?.prompt(id, input, host, cancel).await
    }
}

#[cfg(test)]
mod tests;
