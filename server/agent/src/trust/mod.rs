//! Workspace trust: whether the settings a workspace ships may loosen what lode does.
//!
//! A repository is untrusted input. Until the user trusts it, its `.lode/config.toml` can only
//! tighten lode (see [`restrict`]): no providers or `base_url`, no MCP servers, no loosening
//! permission rules, no downstream server commands, no skills folder. Trust is bound to the
//! SHA-256 of that file's bytes and kept per user, outside the workspace (where a repository
//! cannot pre-seed it): `<data dir>/lode/workspaces/<name>-<hash of the root>/trust.toml`. A
//! changed file is untrusted again until the user trusts the new content.
//!
//! The same per-workspace folder holds what else a repository must not be able to pre-seed:
//! remembered "always" permission answers and skill trust records ([`grants_database`]).

pub mod question;
pub mod restrict;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::WORKSPACE_CONFIG;

/// The file a workspace's trust record is kept in, inside its state folder.
const TRUST_FILE: &str = "trust.toml";
/// The database of remembered permission answers and skill trust, inside the state folder.
const GRANTS_FILE: &str = "grants.sqlite";
/// The fingerprint recorded for a workspace trusted while it had no config file.
const NO_CONFIG: &str = "none";

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("no per-user data directory on this system (set XDG_DATA_HOME)")]
    NoStateDir,
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a valid trust record: {message}")]
    Invalid { path: PathBuf, message: String },
}

/// Where per-user state lives: `<data dir>/lode` (`$XDG_DATA_HOME/lode`, else
/// `~/.local/share/lode` on Linux).
pub fn user_state_dir() -> Option<PathBuf> {
    dirs::data_dir().map(|dir| dir.join("lode"))
}

/// `root` as trust records key it: canonical (symlinks resolved) when it exists.
fn canonical(root: &Path) -> PathBuf {
    std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf())
}

/// The per-user folder of one workspace: `<state>/workspaces/<name>-<16 hex of SHA-256 of the
/// canonical root>`. The name only helps a human browsing the folder.
pub fn workspace_state_dir(state: &Path, root: &Path) -> PathBuf {
    let root = &canonical(root);
    let digest = Sha256::digest(root.as_os_str().as_encoded_bytes());
    let hash: String = digest[..8]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let name: String = root
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    state.join("workspaces").join(format!("{name}-{hash}"))
}

/// The per-user database of a workspace's remembered permission answers and skill trust.
pub fn grants_database(state: &Path, root: &Path) -> PathBuf {
    workspace_state_dir(state, root).join(GRANTS_FILE)
}

/// Whether a workspace's own settings apply in full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TrustStatus {
    /// The workspace has no `.lode/config.toml` (and was not trusted without one).
    NoWorkspaceConfig,
    /// The user trusted exactly this content.
    Trusted,
    /// Never trusted.
    Untrusted,
    /// Trusted once, but the file changed since.
    Changed,
}

impl TrustStatus {
    pub fn is_trusted(self) -> bool {
        self == TrustStatus::Trusted
    }

    pub fn describe(self) -> &'static str {
        match self {
            TrustStatus::NoWorkspaceConfig => "no workspace config",
            TrustStatus::Trusted => "trusted",
            TrustStatus::Untrusted => "not trusted",
            TrustStatus::Changed => "changed since you trusted it",
        }
    }
}

/// A trust record as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct TrustRecord {
    root: PathBuf,
    /// SHA-256 (hex) of `.lode/config.toml` when the user trusted it.
    config_sha256: String,
    /// RFC 3339.
    trusted_at: String,
}

/// The trust records of one user.
#[derive(Debug, Clone)]
pub struct TrustStore {
    state_dir: PathBuf,
}

impl TrustStore {
    /// The store under `state_dir` (normally [`user_state_dir`]).
    pub fn new(state_dir: impl Into<PathBuf>) -> TrustStore {
        TrustStore {
            state_dir: state_dir.into(),
        }
    }

    /// The current user's store.
    pub fn for_user() -> Result<TrustStore, TrustError> {
        user_state_dir()
            .map(TrustStore::new)
            .ok_or(TrustError::NoStateDir)
    }

    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    fn record_path(&self, root: &Path) -> PathBuf {
        workspace_state_dir(&self.state_dir, root).join(TRUST_FILE)
    }

    /// Whether the settings of the workspace at `root` (canonical) are trusted as they are now.
    /// A record that cannot be read trusts nothing.
    pub fn status(&self, root: &Path) -> TrustStatus {
        let root = canonical(root);
        let current = config_fingerprint(&root);
        let wanted = current.as_deref().unwrap_or(NO_CONFIG);
        match self.read_record(&root) {
            Ok(Some(record)) if record.root == root && record.config_sha256 == wanted => {
                TrustStatus::Trusted
            }
            _ if current.is_none() => TrustStatus::NoWorkspaceConfig,
            Ok(Some(record)) if record.root == root => TrustStatus::Changed,
            _ => TrustStatus::Untrusted,
        }
    }

    fn read_record(&self, root: &Path) -> Result<Option<TrustRecord>, TrustError> {
        let path = self.record_path(root);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(TrustError::Read { path, source }),
        };
        toml::from_str(&text)
            .map(Some)
            .map_err(|error| TrustError::Invalid {
                path,
                message: error.message().to_owned(),
            })
    }

    /// Trusts the workspace's settings as they are now (a workspace without a config file can
    /// be trusted too: that lets remote ACP clients start MCP server commands in it). Returns
    /// the fingerprint recorded.
    pub fn trust(&self, root: &Path) -> Result<String, TrustError> {
        let root = &canonical(root);
        let fingerprint = config_fingerprint(root).unwrap_or_else(|| NO_CONFIG.to_owned());
        let record = TrustRecord {
            root: root.to_path_buf(),
            config_sha256: fingerprint.clone(),
            trusted_at: chrono::Utc::now().to_rfc3339(),
        };
        // Serialising a struct of strings and a path cannot fail unless the path is not UTF-8.
        let text = toml::to_string(&record).map_err(|error| TrustError::Invalid {
            path: self.record_path(root),
            message: error.to_string(),
        })?;
        write_private(&self.record_path(root), text.as_bytes())?;
        Ok(fingerprint)
    }

    /// Forgets the trust given to the workspace. Returns whether there was any.
    pub fn revoke(&self, root: &Path) -> Result<bool, TrustError> {
        let path = self.record_path(root);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(TrustError::Write { path, source }),
        }
    }
}

/// What the workspace's own file sets that lode does not apply while it is untrusted, whatever
/// the user's store says (what `lode trust` and the editors' trust questions show). `explicit`
/// is `--config`, which may name the same file and so vouch for it.
pub fn ignored_until_trusted(
    explicit: Option<&Path>,
    root: &Path,
) -> Result<Vec<String>, crate::config::ConfigError> {
    let sources = crate::config::ConfigSources::discover_with_state(explicit, root, None);
    Ok(crate::config::Config::load_from(&sources)?.untrusted_ignored)
}

/// `ignored` in one line for a question: the first `at_most` spelled out, then how many more.
pub fn summary(ignored: &[String], at_most: usize) -> String {
    let mut listed: Vec<&str> = ignored.iter().take(at_most).map(String::as_str).collect();
    let more = format!("and {} more", ignored.len().saturating_sub(at_most));
    if ignored.len() > at_most {
        listed.push(&more);
    }
    listed.join("; ")
}

/// SHA-256 (hex) of the workspace's `.lode/config.toml`, or `None` when it does not exist or
/// cannot be read (then its settings are not applied either).
pub fn config_fingerprint(root: &Path) -> Option<String> {
    let bytes = std::fs::read(root.join(WORKSPACE_CONFIG)).ok()?;
    Some(
        Sha256::digest(&bytes)
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect(),
    )
}

/// Writes `bytes` to `path` atomically, readable by the user only.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), TrustError> {
    use std::io::Write as _;
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};

    let write_error = |source| TrustError::Write {
        path: path.to_path_buf(),
        source,
    };
    let parent = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(parent)
        .map_err(write_error)?;
    let temporary = parent.join(format!(".{}.tmp", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)
        .map_err(write_error)?;
    file.write_all(bytes).map_err(write_error)?;
    file.sync_all().map_err(write_error)?;
    std::fs::rename(&temporary, path).map_err(write_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace_with_config(text: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".lode")).unwrap();
        std::fs::write(dir.path().join(WORKSPACE_CONFIG), text).unwrap();
        dir
    }

    #[test]
    fn trust_is_bound_to_the_content_and_kept_outside_the_workspace() {
        let state = tempfile::tempdir().unwrap();
        let workspace = workspace_with_config("[agent]\nmax_tool_iterations = 3\n");
        let root = workspace.path().canonicalize().unwrap();
        let store = TrustStore::new(state.path());
        assert_eq!(store.status(&root), TrustStatus::Untrusted);
        store.trust(&root).unwrap();
        assert_eq!(store.status(&root), TrustStatus::Trusted);
        let record = store.record_path(&root);
        assert!(record.starts_with(state.path()), "{}", record.display());
        assert!(!record.starts_with(&root));
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&record).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);

        std::fs::write(root.join(WORKSPACE_CONFIG), "[llm]\ndefault = \"x\"\n").unwrap();
        assert_eq!(store.status(&root), TrustStatus::Changed);
        store.trust(&root).unwrap();
        assert_eq!(store.status(&root), TrustStatus::Trusted);
        assert!(store.revoke(&root).unwrap());
        assert!(!store.revoke(&root).unwrap());
        assert_eq!(store.status(&root), TrustStatus::Untrusted);
    }

    #[test]
    fn a_record_for_another_root_or_a_garbled_record_trusts_nothing() {
        let state = tempfile::tempdir().unwrap();
        let workspace = workspace_with_config("[agent]\n");
        let root = workspace.path().canonicalize().unwrap();
        let store = TrustStore::new(state.path());
        store.trust(&root).unwrap();
        let path = store.record_path(&root);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace(root.to_str().unwrap(), "/elsewhere")).unwrap();
        assert_eq!(store.status(&root), TrustStatus::Untrusted);
        std::fs::write(&path, "not toml [").unwrap();
        assert_eq!(store.status(&root), TrustStatus::Untrusted);
    }

    #[test]
    fn a_workspace_without_config_can_be_trusted_until_a_config_appears() {
        let state = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let root = workspace.path().canonicalize().unwrap();
        let store = TrustStore::new(state.path());
        assert_eq!(store.status(&root), TrustStatus::NoWorkspaceConfig);
        store.trust(&root).unwrap();
        assert_eq!(store.status(&root), TrustStatus::Trusted);
        std::fs::create_dir_all(root.join(".lode")).unwrap();
        std::fs::write(root.join(WORKSPACE_CONFIG), "[llm]\n").unwrap();
        assert_eq!(store.status(&root), TrustStatus::Changed);
    }

    #[test]
    fn a_summary_spells_out_the_first_settings_and_counts_the_rest() {
        let ignored: Vec<String> = ["a", "b", "c"].map(str::to_owned).to_vec();
        assert_eq!(summary(&ignored, 5), "a; b; c");
        assert_eq!(summary(&ignored, 2), "a; b; and 1 more");
    }

    #[test]
    fn a_symlinked_root_shares_the_canonical_roots_record() {
        let state = tempfile::tempdir().unwrap();
        let workspace = workspace_with_config("[agent]\n");
        let link = state.path().join("link");
        std::os::unix::fs::symlink(workspace.path(), &link).unwrap();
        let store = TrustStore::new(state.path().join("state"));
        store.trust(&link).unwrap();
        assert_eq!(store.status(workspace.path()), TrustStatus::Trusted);
        assert_eq!(
            grants_database(state.path(), &link),
            grants_database(state.path(), workspace.path())
        );
    }

    #[test]
    fn workspaces_get_distinct_state_folders() {
        let state = Path::new("/state");
        let a = workspace_state_dir(state, Path::new("/src/app"));
        let b = workspace_state_dir(state, Path::new("/other/app"));
        assert_ne!(a, b);
        assert!(a.starts_with("/state/workspaces"));
        assert!(a.file_name().unwrap().to_str().unwrap().starts_with("app-"));
    }
}
