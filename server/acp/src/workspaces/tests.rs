//! Routing tests: in-memory workspaces in real temporary directories, opened by a stand-in
//! opener that records what it opened.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

fn model(provider: &str) -> ModelInfo {
    ModelInfo {
        provider: provider.to_owned(),
        model: "m".into(),
        context_window: 1000,
        max_output_tokens: 100,
        supports_images: false,
    }
}

/// One workspace's sessions, their ids prefixed with the workspace's name.
struct Fake {
    name: String,
    sessions: Mutex<HashMap<String, SessionSummary>>,
    pushed: Mutex<Vec<PathBuf>>,
}

impl Fake {
    fn new(name: &str) -> Arc<Fake> {
        Arc::new(Fake {
            name: name.to_owned(),
            sessions: Mutex::default(),
            pushed: Mutex::default(),
        })
    }

    fn get(&self, id: &str) -> Result<SessionSummary, BackendError> {
        self.sessions
            .lock()
            .get(id)
            .cloned()
            .ok_or_else(|| BackendError::SessionNotFound(id.to_owned()))
    }
}

#[async_trait::async_trait]
impl AgentBackend for Fake {
    fn models(&self, _session_id: Option<&str>) -> Vec<ModelInfo> {
        vec![model(&self.name)]
    }
    fn slash_commands(&self) -> Vec<SlashCommandInfo> {
        vec![SlashCommandInfo {
            name: format!("{}-help", self.name),
            description: String::new(),
            input_hint: None,
        }]
    }
    fn new_session(
        &self,
        cwd: PathBuf,
        _mcp_servers: Vec<McpServerSpec>,
    ) -> Result<SessionSummary, BackendError> {
        let mut sessions = self.sessions.lock();
        let session = SessionSummary {
            id: format!("{}-{}", self.name, sessions.len() + 1),
            title: None,
            cwd,
            mode: "code".into(),
            model: self.name.clone(),
            updated_at: format!("2026-01-01T00:00:0{}+00:00", sessions.len()),
        };
        sessions.insert(session.id.clone(), session.clone());
        Ok(session)
    }
    fn list_sessions(&self, _cwd: Option<&Path>) -> Result<Vec<SessionSummary>, BackendError> {
        Ok(self.sessions.lock().values().cloned().collect())
    }
    fn load_session(
        &self,
        id: &str,
        _cwd: &Path,
    ) -> Result<(SessionSummary, Vec<AgentEvent>), BackendError> {
        Ok((self.get(id)?, Vec::new()))
    }
    fn resume_session(&self, id: &str, _cwd: &Path) -> Result<SessionSummary, BackendError> {
        self.get(id)
    }
    fn close_session(&self, id: &str) -> Result<(), BackendError> {
        self.get(id).map(drop)
    }
    fn delete_session(&self, id: &str) -> Result<(), BackendError> {
        self.sessions
            .lock()
            .remove(id)
            .map(drop)
            .ok_or_else(|| BackendError::SessionNotFound(id.to_owned()))
    }
    fn set_mode(&self, id: &str, _mode: &str) -> Result<(), BackendError> {
        self.get(id).map(drop)
    }
    fn set_model(&self, id: &str, _provider: &str) -> Result<(), BackendError> {
        self.get(id).map(drop)
    }
    fn push_diagnostics(
        &self,
        _session_id: Option<&str>,
        path: PathBuf,
        _diagnostics: Vec<lode_tools::diagnostics::Diagnostic>,
    ) -> bool {
        self.pushed.lock().push(path);
        true
    }
    async fn prompt(
        &self,
        id: &str,
        _input: Vec<PromptInput>,
        _host: Arc<dyn SessionHost>,
        _cancel: CancellationToken,
    ) -> Result<StopReason, BackendError> {
        self.get(id).map(|_| StopReason::EndTurn)
    }
}

/// Roots are marked by a `.git`; each opened workspace is a [`Fake`] named after its folder. A
/// root named `broken` fails to open.
#[derive(Clone, Default)]
struct Opener {
    opened: Arc<Mutex<HashMap<PathBuf, Arc<Fake>>>>,
    /// Counts the keep-alives dropped.
    dropped: Arc<AtomicUsize>,
}

struct KeepAlive(Arc<AtomicUsize>);

impl Drop for KeepAlive {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl Opener {
    fn fake(&self, root: &Path) -> Arc<Fake> {
        self.opened.lock().get(root).cloned().expect("opened")
    }

    fn count(&self) -> usize {
        self.opened.lock().len()
    }
}

impl WorkspaceOpener for Opener {
    fn root_for(&self, dir: &Path) -> Option<PathBuf> {
        dir.ancestors()
            .find(|candidate| candidate.join(".git").is_dir())
            .map(Path::to_path_buf)
    }
    fn open(&self, root: &Path) -> Result<OpenWorkspace, BackendError> {
        let name = root.file_name().unwrap().to_string_lossy().into_owned();
        if name == "broken" {
            return Err(BackendError::Internal(format!("cannot open {name}")));
        }
        let fake = Fake::new(&name);
        self.opened.lock().insert(root.to_path_buf(), fake.clone());
        Ok(OpenWorkspace {
            backend: fake,
            keep_alive: Box::new(KeepAlive(self.dropped.clone())),
        })
    }
    /// The user's own configuration names one model, `user`.
    fn models(&self) -> Vec<ModelInfo> {
        vec![model("user")]
    }
}

/// A home directory with projects `alpha` (the default), `beta` and `gamma`, each with `.git`.
struct Setup {
    _dir: tempfile::TempDir,
    home: PathBuf,
    opener: Opener,
    default: Arc<Fake>,
    workspaces: Workspaces,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let home = std::fs::canonicalize(dir.path()).unwrap().join("home");
    for project in ["alpha", "beta", "gamma", "broken"] {
        std::fs::create_dir_all(home.join(project).join(".git")).unwrap();
        std::fs::create_dir_all(home.join(project).join("src")).unwrap();
    }
    let opener = Opener::default();
    let default = Fake::new("alpha");
    let workspaces = Workspaces::new(
        opener.clone(),
        &home.join("alpha"),
        OpenWorkspace {
            backend: default.clone(),
            keep_alive: Box::new(()),
        },
        Some(&home),
    );
    Setup {
        _dir: dir,
        home,
        opener,
        default,
        workspaces,
    }
}

fn refusal(result: Result<PathBuf, BackendError>) -> String {
    match result {
        Err(BackendError::InvalidInput(message)) => message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_cwd_must_be_an_existing_directory_narrower_than_home() {
    let Setup { home, .. } = &setup();
    let check = |cwd: &Path| check_cwd(cwd, Some(home));
    assert_eq!(check(&home.join("beta")).unwrap(), home.join("beta"));
    assert!(refusal(check(Path::new("beta"))).contains("absolute"));
    let missing = refusal(check(&home.join("nowhere")));
    assert!(missing.contains("does not exist"), "{missing}");
    std::fs::write(home.join("beta/notes.txt"), "").unwrap();
    let file = refusal(check(&home.join("beta/notes.txt")));
    assert!(file.contains("is a file, not a directory"), "{file}");
    let root = refusal(check(Path::new("/")));
    assert!(root.contains("root of the file system"), "{root}");
    assert!(root.contains("open a project directory"), "{root}");
    let at_home = refusal(check(home));
    assert!(at_home.contains("your home directory itself"), "{at_home}");
    assert!(
        at_home.contains(&home.join("code/myproject").display().to_string()),
        "the example is inside the home: {at_home}"
    );
    // Through a symlink, the home is still the home; a project through one is the project.
    std::os::unix::fs::symlink(home, home.join("alpha/src/link-home")).unwrap();
    assert!(refusal(check(&home.join("alpha/src/link-home"))).contains("home directory"));
    std::os::unix::fs::symlink(home.join("beta"), home.join("alpha/src/link-beta")).unwrap();
    assert_eq!(
        check(&home.join("alpha/src/link-beta")).unwrap(),
        home.join("beta")
    );
}

#[test]
fn sessions_open_their_cwds_workspace_once_and_calls_follow_the_session() {
    let Setup {
        home,
        opener,
        default,
        workspaces,
        ..
    } = &setup();
    let in_alpha = workspaces.new_session(home.join("alpha"), vec![]).unwrap();
    assert_eq!(in_alpha.id, "alpha-1");
    assert_eq!(opener.count(), 0, "the default workspace is already open");

    let in_beta = workspaces.new_session(home.join("beta"), vec![]).unwrap();
    assert_eq!(in_beta.id, "beta-1");
    // A subdirectory and a symlink into beta reuse the same workspace.
    let sub = workspaces
        .new_session(home.join("beta/src"), vec![])
        .unwrap();
    std::os::unix::fs::symlink(home.join("beta"), home.join("beta-link")).unwrap();
    let linked = workspaces
        .new_session(home.join("beta-link"), vec![])
        .unwrap();
    assert_eq!((sub.id.as_str(), linked.id.as_str()), ("beta-2", "beta-3"));
    assert_eq!(opener.count(), 1, "beta opened once");
    assert_eq!(
        workspaces.roots(),
        vec![home.join("alpha"), home.join("beta")]
    );
    let beta = opener.fake(&home.join("beta"));
    assert_eq!(beta.sessions.lock().len(), 3);
    assert_eq!(default.sessions.lock().len(), 1);

    // Every call by id goes to the session's workspace.
    assert_eq!(workspaces.models(Some("beta-1"))[0].provider, "beta");
    assert_eq!(workspaces.models(Some("alpha-1"))[0].provider, "alpha");
    assert_eq!(workspaces.models(None)[0].provider, "alpha");
    workspaces.set_mode("beta-1", "ask").unwrap();
    workspaces.close_session("alpha-1").unwrap();
    assert_eq!(
        workspaces.set_model("nobody", "x"),
        Err(BackendError::SessionNotFound("nobody".into()))
    );
    let listed: Vec<String> = workspaces
        .list_sessions(None)
        .unwrap()
        .into_iter()
        .map(|session| session.id)
        .collect();
    assert_eq!(listed.len(), 4, "{listed:?}");
    workspaces.delete_session("beta-2").unwrap();
    assert_eq!(
        workspaces.resume_session("beta-2", &home.join("beta")),
        Err(BackendError::SessionNotFound("beta-2".into()))
    );
}

struct Silent;

impl SessionHost for Silent {
    fn emit(&self, _event: AgentEvent) {}
}

#[tokio::test]
async fn a_prompt_runs_in_the_workspace_that_holds_the_session() {
    let Setup {
        home, workspaces, ..
    } = &setup();
    let session = workspaces.new_session(home.join("gamma"), vec![]).unwrap();
    let host: Arc<dyn SessionHost> = Arc::new(Silent);
    let stop = workspaces
        .prompt(
            &session.id,
            vec![PromptInput::Text("hi".into())],
            host.clone(),
            CancellationToken::new(),
        )
        .await;
    assert_eq!(stop, Ok(StopReason::EndTurn));
    let unknown = workspaces
        .prompt("gone", vec![], host, CancellationToken::new())
        .await;
    assert_eq!(unknown, Err(BackendError::SessionNotFound("gone".into())));
}

#[test]
fn a_folder_stays_in_the_nearest_workspace_marked_or_open() {
    let Setup {
        home,
        opener,
        workspaces,
        ..
    } = &setup();
    // Unmarked folders: in the default workspace, or their own.
    workspaces
        .new_session(home.join("alpha/src"), vec![])
        .unwrap();
    let loose = home.join("loose/notes");
    std::fs::create_dir_all(&loose).unwrap();
    workspaces.new_session(loose.clone(), vec![]).unwrap();
    assert_eq!(workspaces.roots(), vec![home.join("alpha"), loose.clone()]);
    // A folder inside an open unmarked workspace stays in it; a repository nested in it is
    // its own.
    std::fs::create_dir_all(loose.join("deeper")).unwrap();
    workspaces
        .new_session(loose.join("deeper"), vec![])
        .unwrap();
    std::fs::create_dir_all(loose.join("repo/.git")).unwrap();
    workspaces.new_session(loose.join("repo"), vec![]).unwrap();
    assert_eq!(opener.count(), 2);
    assert_eq!((opener.fake(&loose).sessions).lock().len(), 2);

    // A workspace started in an unmarked folder below a repository (`--root` there) keeps the
    // folders inside it; the repository's other folders open the repository.
    let below = home.join("gamma/src");
    let started_below = Workspaces::new(
        opener.clone(),
        &below,
        OpenWorkspace {
            backend: Fake::new("src"),
            keep_alive: Box::new(()),
        },
        Some(home),
    );
    std::fs::create_dir_all(below.join("inner")).unwrap();
    started_below
        .new_session(below.join("inner"), vec![])
        .unwrap();
    assert_eq!(started_below.roots(), vec![below.clone()]);
    started_below
        .new_session(home.join("gamma"), vec![])
        .unwrap();
    assert_eq!(
        started_below.roots(),
        vec![below.clone(), home.join("gamma")]
    );
}

#[test]
fn load_and_resume_look_in_the_workspace_of_the_cwd() {
    let Setup {
        home,
        opener,
        workspaces,
        ..
    } = &setup();
    let in_beta = workspaces.new_session(home.join("beta"), vec![]).unwrap();
    let (loaded, _) = workspaces
        .load_session(&in_beta.id, &home.join("beta/src"))
        .unwrap();
    assert_eq!(loaded.id, in_beta.id);
    // From another workspace's cwd the session would run in a tree the client does not show.
    let elsewhere = workspaces
        .resume_session(&in_beta.id, &home.join("gamma"))
        .unwrap_err();
    let BackendError::InvalidInput(message) = elsewhere else {
        panic!("{elsewhere:?}")
    };
    assert!(
        message.contains(&format!(
            "belongs to the workspace {}",
            home.join("beta").display()
        )),
        "{message}"
    );
    assert_eq!(
        workspaces.load_session("nobody", &home.join("gamma")),
        Err(BackendError::SessionNotFound("nobody".into()))
    );
    assert!(matches!(
        workspaces.resume_session(&in_beta.id, Path::new("/")),
        Err(BackendError::InvalidInput(_))
    ));

    // A session stored in an open workspace that this process never saw is found by its id.
    let stored = opener
        .fake(&home.join("gamma"))
        .new_session(home.join("gamma"), vec![])
        .unwrap();
    workspaces.set_mode(&stored.id, "ask").unwrap();
}

#[test]
fn listing_a_cwd_opens_its_workspace_and_lists_every_open_one() {
    let Setup {
        home,
        opener,
        workspaces,
        ..
    } = &setup();
    workspaces.new_session(home.join("alpha"), vec![]).unwrap();
    assert!(workspaces.list_sessions(Some(&home.join("beta"))).is_ok());
    assert_eq!(opener.count(), 1, "beta was opened to list its sessions");
    opener
        .fake(&home.join("beta"))
        .new_session(home.join("beta"), vec![])
        .unwrap();
    let listed = workspaces.list_sessions(None).unwrap();
    let ids: Vec<&str> = listed.iter().map(|session| session.id.as_str()).collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    // A refused cwd lists what is open, and opens nothing.
    assert_eq!(workspaces.list_sessions(Some(home)).unwrap().len(), 2);
    assert_eq!(opener.count(), 1);
}

#[test]
fn a_workspace_that_cannot_open_is_an_error_and_stays_closed() {
    let Setup {
        home,
        opener,
        workspaces,
        ..
    } = &setup();
    assert_eq!(
        workspaces.new_session(home.join("broken"), vec![]),
        Err(BackendError::Internal("cannot open broken".into()))
    );
    assert_eq!(workspaces.roots(), vec![home.join("alpha")]);
    assert_eq!(opener.count(), 0);
}

#[test]
fn open_workspaces_are_capped() {
    let Setup {
        home,
        opener,
        workspaces,
        ..
    } = &setup();
    for n in 1..MAX_OPEN_WORKSPACES {
        let project = home.join(format!("p{n}"));
        std::fs::create_dir_all(&project).unwrap();
        workspaces.new_session(project, vec![]).unwrap();
    }
    assert_eq!(workspaces.roots().len(), MAX_OPEN_WORKSPACES);
    let one_more = home.join("one-more");
    std::fs::create_dir_all(&one_more).unwrap();
    let refused = workspaces.new_session(one_more, vec![]).unwrap_err();
    assert!(
        refused.to_string().contains("16 workspaces open"),
        "{refused}"
    );
    // Open ones still take sessions.
    workspaces.new_session(home.join("p1"), vec![]).unwrap();
    assert_eq!(opener.dropped.load(Ordering::SeqCst), 0);
}

#[test]
fn diagnostics_go_to_the_innermost_open_workspace_of_the_file() {
    let Setup {
        home,
        opener,
        default,
        workspaces,
        ..
    } = &setup();
    // beta nested inside alpha, as a submodule would be.
    let nested = home.join("alpha/vendor/beta");
    std::fs::create_dir_all(nested.join(".git")).unwrap();
    workspaces.new_session(nested.clone(), vec![]).unwrap();
    assert!(workspaces.push_diagnostics(None, nested.join("lib.rs"), vec![]));
    assert!(workspaces.push_diagnostics(Some("x"), home.join("alpha/src/main.rs"), vec![]));
    assert!(!workspaces.push_diagnostics(None, home.join("gamma/src/main.rs"), vec![]));
    assert_eq!(
        *(opener.fake(&nested).pushed).lock(),
        vec![nested.join("lib.rs")]
    );
    assert_eq!(*default.pushed.lock(), vec![home.join("alpha/src/main.rs")]);
}

#[test]
fn without_a_default_nothing_opens_until_a_session_names_a_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let home = std::fs::canonicalize(dir.path()).unwrap().join("home");
    for project in ["alpha", "beta"] {
        std::fs::create_dir_all(home.join(project).join(".git")).unwrap();
        std::fs::create_dir_all(home.join(project).join("src")).unwrap();
    }
    std::fs::create_dir_all(home.join("notes/2026")).unwrap();
    let opener = Opener::default();
    let workspaces = Workspaces::without_default(opener.clone(), Some(&home));
    let providers = |models: Vec<ModelInfo>| -> Vec<String> {
        models.into_iter().map(|model| model.provider).collect()
    };

    // What needs a workspace but names none gets an empty answer, and opens nothing.
    assert!(workspaces.roots().is_empty());
    assert_eq!(providers(workspaces.models(None)), ["user"]);
    assert_eq!(providers(workspaces.models(Some("nowhere-1"))), ["user"]);
    assert!(workspaces.slash_commands().is_empty());
    assert_eq!(workspaces.list_sessions(None).unwrap(), vec![]);
    assert_eq!(workspaces.list_sessions(Some(&home)).unwrap(), vec![]);
    assert_eq!(
        workspaces.list_sessions(Some(Path::new("/"))).unwrap(),
        vec![]
    );
    assert!(!workspaces.push_diagnostics(None, home.join("alpha/src/main.rs"), vec![]));
    assert_eq!(
        workspaces.set_mode("nowhere-1", "ask"),
        Err(BackendError::SessionNotFound("nowhere-1".into()))
    );
    assert!(matches!(
        workspaces.new_session(home.clone(), vec![]),
        Err(BackendError::InvalidInput(_))
    ));
    assert_eq!(opener.count(), 0);

    // A session opens its project, which then answers for itself.
    let in_alpha = workspaces
        .new_session(home.join("alpha/src"), vec![])
        .unwrap();
    assert_eq!(workspaces.roots(), vec![home.join("alpha")]);
    assert_eq!(providers(workspaces.models(Some(&in_alpha.id))), ["alpha"]);
    assert_eq!(providers(workspaces.models(None)), ["user"]);
    assert_eq!(workspaces.slash_commands()[0].name, "alpha-help");
    assert!(workspaces.push_diagnostics(None, home.join("alpha/src/main.rs"), vec![]));
    assert_eq!(workspaces.list_sessions(None).unwrap(), vec![in_alpha]);
    // With no project around it, a folder is its own workspace (nothing wider is open).
    workspaces
        .new_session(home.join("notes/2026"), vec![])
        .unwrap();
    assert_eq!(
        workspaces.roots(),
        vec![home.join("alpha"), home.join("notes/2026")]
    );
}
