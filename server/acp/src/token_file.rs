//! The bearer token of `lode acp --http` when none is given: 32 random bytes from the operating
//! system, hex-encoded, kept in a file only the user can read, so a later `lode acp --http` and
//! `lode ask` find the same one. The file lives in the user's runtime directory
//! (`$XDG_RUNTIME_DIR/lode/acp-token`) or else the user config directory
//! (`<config dir>/lode/acp-token`), never inside the workspace.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The file's name inside `<base>/lode/`.
pub const TOKEN_FILE_NAME: &str = "acp-token";

/// Random bytes in a generated token (64 hex characters).
const TOKEN_BYTES: usize = 32;

/// The longest token a file may hold, in bytes.
const MAX_TOKEN_LEN: usize = 1024;

#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error(
        "no place for the ACP token: neither $XDG_RUNTIME_DIR nor a user config directory is \
         known (pass --token or set LODE_ACP_TOKEN)"
    )]
    NoLocation,
    #[error(
        "refusing to keep the ACP token in {path}, inside the workspace {root} (set \
         $XDG_RUNTIME_DIR or $XDG_CONFIG_HOME to a directory outside it, or pass --token)"
    )]
    InsideWorkspace { path: PathBuf, root: PathBuf },
    #[error("cannot {action} the ACP token file {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the ACP token file {path} can be read by other users (mode {mode:04o}): run \
         `chmod 600 {path}` or delete it so lode makes a new one"
    )]
    TooOpen { path: PathBuf, mode: u32 },
    #[error("the ACP token file {path} is not a regular file")]
    NotAFile { path: PathBuf },
    #[error("the ACP token file {path} {reason}: delete it so lode makes a new one")]
    Invalid { path: PathBuf, reason: &'static str },
    #[error("cannot get random bytes from the operating system: {0}")]
    Random(getrandom::Error),
}

/// Where the token file lives: `$XDG_RUNTIME_DIR/lode/acp-token` when that directory exists,
/// else `<user config dir>/lode/acp-token`; `None` when neither is known.
pub fn default_token_path() -> Option<PathBuf> {
    let base = dirs::runtime_dir()
        .filter(|dir| dir.is_dir())
        .or_else(dirs::config_dir)?;
    Some(base.join("lode").join(TOKEN_FILE_NAME))
}

/// A fresh token: [`TOKEN_BYTES`] bytes from the OS's random number generator, as lowercase hex.
pub fn generate_token() -> Result<String, TokenFileError> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes).map_err(TokenFileError::Random)?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// The token kept at `path`, or `None` when there is no file. Refuses a file other users can
/// read, a symlink or other non-file, and contents that cannot be a token.
pub fn read_token(path: &Path) -> Result<Option<String>, TokenFileError> {
    let io = |action| {
        move |source| TokenFileError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    };
    let metadata = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(io("read")(error)),
    };
    if !metadata.is_file() {
        return Err(TokenFileError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = metadata.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(TokenFileError::TooOpen {
                path: path.to_path_buf(),
                mode,
            });
        }
    }
    let text = std::fs::read_to_string(path).map_err(io("read"))?;
    let token = text.trim();
    let invalid = |reason| TokenFileError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    if token.is_empty() {
        return Err(invalid("is empty"));
    }
    if token.len() > MAX_TOKEN_LEN {
        return Err(invalid("is longer than 1024 bytes"));
    }
    if !token.bytes().all(|byte| byte.is_ascii_graphic()) {
        return Err(invalid("holds characters a token cannot have"));
    }
    Ok(Some(token.to_owned()))
}

/// The token kept at `path`, made and stored first when there is none (mode 0600 in a directory
/// created 0700). Returns the token and whether it was made now. Refuses a `path` inside
/// `workspace`, the one lode started in (`None`: it started in none). Two processes starting at once end up with the same token: the file appears
/// whole, through a hard link that fails when another process got there first.
pub fn load_or_create_token(
    path: &Path,
    workspace: Option<&Path>,
) -> Result<(String, bool), TokenFileError> {
    if let Some(workspace) = workspace {
        refuse_inside(path, workspace)?;
    }
    if let Some(token) = read_token(path)? {
        return Ok((token, false));
    }
    let dir = path.parent().ok_or(TokenFileError::NoLocation)?;
    create_private_dir(dir).map_err(|source| TokenFileError::Io {
        action: "create the directory of",
        path: path.to_path_buf(),
        source,
    })?;
    let token = generate_token()?;
    let temporary = dir.join(format!(
        ".{TOKEN_FILE_NAME}.{}.{}.tmp",
        std::process::id(),
        &token[..8]
    ));
    let written = write_private(&temporary, &token).and_then(|()| {
        match std::fs::hard_link(&temporary, path) {
            Ok(()) => Ok(true),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            // A file system without hard links: a rename, which another process racing this
            // one could overwrite (then the two briefly hold different tokens).
            Err(_) => std::fs::rename(&temporary, path).map(|()| true),
        }
    });
    let _ = std::fs::remove_file(&temporary);
    let created = written.map_err(|source| TokenFileError::Io {
        action: "write",
        path: path.to_path_buf(),
        source,
    })?;
    if created {
        return Ok((token, true));
    }
    // Another process made the file meanwhile: use its token.
    let token = read_token(path)?.ok_or_else(|| TokenFileError::Invalid {
        path: path.to_path_buf(),
        reason: "vanished while being read",
    })?;
    Ok((token, false))
}

/// Refuses a token file inside the workspace, where an agent, a commit or a sync could pick it up.
fn refuse_inside(path: &Path, workspace: &Path) -> Result<(), TokenFileError> {
    let root = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    if resolved(path).starts_with(&root) || path.starts_with(workspace) {
        return Err(TokenFileError::InsideWorkspace {
            path: path.to_path_buf(),
            root,
        });
    }
    Ok(())
}

/// `path` with its longest existing ancestor resolved (symlinks, `..`), the rest appended as is.
fn resolved(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut current = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(current) {
            return rest.iter().rev().fold(real, |acc, part| acc.join(part));
        }
        match (current.parent(), current.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                current = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Writes `token` to a new file only the user can read or write.
fn write_private(path: &Path, token: &str) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(format!("{token}\n").as_bytes())?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_made_once_kept_private_and_reused() {
        let home = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let path = home.path().join("lode").join(TOKEN_FILE_NAME);
        let (token, created) = load_or_create_token(&path, Some(workspace.path())).unwrap();
        assert!(created);
        assert_eq!(token.len(), 2 * TOKEN_BYTES);
        assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "{token}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let dir = std::fs::metadata(path.parent().unwrap()).unwrap();
            assert_eq!(dir.permissions().mode() & 0o777, 0o700);
        }
        let (again, created) = load_or_create_token(&path, Some(workspace.path())).unwrap();
        assert!(!created);
        assert_eq!(again, token);
        assert_eq!(read_token(&path).unwrap().as_deref(), Some(token.as_str()));
        // Nothing but the token file is left behind.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, [TOKEN_FILE_NAME]);
    }

    #[test]
    fn two_generated_tokens_differ() {
        assert_ne!(generate_token().unwrap(), generate_token().unwrap());
    }

    #[test]
    fn a_token_file_inside_the_workspace_is_refused() {
        let workspace = tempfile::tempdir().unwrap();
        let path = workspace.path().join(".config/lode").join(TOKEN_FILE_NAME);
        let error = load_or_create_token(&path, Some(workspace.path())).unwrap_err();
        assert!(
            matches!(error, TokenFileError::InsideWorkspace { .. }),
            "{error}"
        );
        assert!(!path.exists());
    }

    #[cfg(unix)]
    #[test]
    fn bad_token_files_are_refused_with_the_fix() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TOKEN_FILE_NAME);
        assert!(read_token(&path).unwrap().is_none());
        std::fs::write(&path, "abc\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let open = read_token(&path).unwrap_err();
        assert!(matches!(open, TokenFileError::TooOpen { mode: 0o644, .. }));
        assert!(open.to_string().contains("chmod 600"), "{open}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_token(&path).unwrap().as_deref(), Some("abc"));
        std::fs::write(&path, "  \n").unwrap();
        assert!(matches!(
            read_token(&path).unwrap_err(),
            TokenFileError::Invalid { .. }
        ));
        std::fs::write(&path, "two words").unwrap();
        assert!(matches!(
            read_token(&path).unwrap_err(),
            TokenFileError::Invalid { .. }
        ));
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(matches!(
            read_token(&link).unwrap_err(),
            TokenFileError::NotAFile { .. }
        ));
    }
}
