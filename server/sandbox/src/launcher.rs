//! `lode sandbox-exec`: the launcher lode re-executes itself as. It reads a [`Profile`] from its
//! arguments, works out the paths and environment ([`Plan`]), confines itself, and executes the
//! command, which inherits the confinement (so do the command's children, however they detach).

use std::convert::Infallible;
use std::ffi::OsString;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::sockets::{SocketHiding, SocketSources};
use crate::{Capabilities, Profile, SandboxError, SandboxMode, env};

/// The hidden subcommand of the `lode` binary that runs the launcher.
pub const SANDBOX_EXEC: &str = "sandbox-exec";
/// The launcher's exit code when it could not confine or start the command (like `env`'s 125).
pub const LAUNCHER_FAILURE: u8 = 125;

/// Read-only system locations every command needs (programs, libraries, configuration, devices,
/// process and system information).
const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/dev",
    "/proc",
    "/sys",
    "/nix/store",
    "/snap",
    "/run/systemd/resolve",
];
/// Devices a command may write (and use as terminals).
const DEVICE_WRITE: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];
/// Toolchain directories under `$HOME` that commands read: compilers, package caches, version
/// managers, git's own configuration. Nothing else of the home directory is readable.
const HOME_READ: &[&str] = &[
    ".cargo",
    ".rustup",
    ".npm",
    ".cache",
    ".pyenv",
    ".nvm",
    ".volta",
    ".asdf",
    ".bun",
    ".deno",
    "go",
    ".local/bin",
    ".local/lib",
    ".gitconfig",
    ".config/git",
];
/// Toolchain directories (under `$HOME`, or named by `CARGO_HOME`) whose top level may also hold
/// the user's credentials: `~/.cargo/credentials.toml` (a crates.io token) and git's credential
/// store `~/.config/git/credentials`. They are granted entry by entry, less [`CREDENTIAL_FILES`].
const HOLDS_CREDENTIALS: &[&str] = &[".cargo", ".config/git"];
/// Never readable inside a [`HOLDS_CREDENTIALS`] directory.
const CREDENTIAL_FILES: &[&str] = &["credentials", "credentials.toml"];
/// Variables naming toolchain directories outside the usual places.
const TOOLCHAIN_VARS: &[&str] = &[
    "CARGO_HOME",
    "RUSTUP_HOME",
    "GOROOT",
    "GOPATH",
    "GOMODCACHE",
    "PYENV_ROOT",
    "NVM_DIR",
    "VOLTA_HOME",
];
/// Under `$HOME`, written only by a command granted network (package downloads).
const HOME_WRITE_WITH_NETWORK: &[&str] = &[".cargo/registry", ".cargo/git", ".npm", ".cache"];
/// Directories of a workspace root kept read-only in `workspace-write`.
const PROTECTED_DIRS: &[&str] = &[".git", ".lode"];

/// Set in a confined command's environment: the profile's mode.
pub const SANDBOX_MARKER_VAR: &str = "LODE_SANDBOX";

/// Everything the launcher does, worked out before any of it is done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub read_paths: Vec<PathBuf>,
    pub write_paths: Vec<PathBuf>,
    /// Bind-mounted read-only inside a writable root.
    pub read_only_paths: Vec<PathBuf>,
    pub network: bool,
    pub env: Vec<(OsString, OsString)>,
    pub temp_dir: PathBuf,
    /// Unix sockets (and directories of them) covered in the mount namespace.
    pub hidden: SocketHiding,
}

impl Plan {
    /// The plan for `profile`, given the caller's home, environment and temporary directory
    /// (created here: the private one, and missing `.lode/` directories to protect).
    pub fn build(
        profile: &Profile,
        home: Option<&Path>,
        vars: Vec<(OsString, OsString)>,
        temp_base: &Path,
    ) -> Result<Plan, SandboxError> {
        let temp_dir = private_temp_dir(temp_base, &profile.roots)?;
        let lookup = |name: &str| {
            vars.iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| PathBuf::from(value))
        };
        let mut read_paths: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
        if let Some(home) = home {
            read_paths.extend(HOME_READ.iter().map(|dir| home.join(dir)));
        }
        read_paths.extend(
            TOOLCHAIN_VARS
                .iter()
                .filter_map(|name| lookup(name))
                .filter(|path| path.is_absolute()),
        );
        read_paths.extend(path_toolchains(lookup("PATH").as_deref(), home));
        // However a credential-holding directory got here (`~/.cargo` from HOME_READ, from
        // CARGO_HOME, or as the installation of `~/.cargo/bin` on PATH), it is granted entry by
        // entry, less its credential files.
        let credential_dirs: Vec<PathBuf> = home
            .map(|home| {
                HOLDS_CREDENTIALS
                    .iter()
                    .map(|dir| home.join(dir))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
            .into_iter()
            .chain(lookup("CARGO_HOME").filter(|path| path.is_absolute()))
            .map(|dir| std::fs::canonicalize(&dir).unwrap_or(dir))
            .collect();
        let mut read_paths: Vec<PathBuf> = read_paths
            .into_iter()
            .flat_map(|path| {
                let canonical = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
                if credential_dirs.contains(&canonical) {
                    entries_without_credentials(&path)
                } else {
                    vec![path]
                }
            })
            .collect();
        read_paths.extend(profile.read.iter().cloned());
        let mut write_paths: Vec<PathBuf> = DEVICE_WRITE.iter().map(PathBuf::from).collect();
        write_paths.push(temp_dir.clone());
        write_paths.extend(profile.write.iter().cloned());
        if profile.network
            && let Some(home) = home
        {
            write_paths.extend(HOME_WRITE_WITH_NETWORK.iter().map(|dir| home.join(dir)));
        }
        let mut read_only_paths = Vec::new();
        match profile.mode {
            SandboxMode::WorkspaceWrite => {
                write_paths.extend(profile.roots.iter().cloned());
                for root in &profile.roots {
                    read_only_paths.extend(protected_paths(root, &profile.write)?);
                }
            }
            SandboxMode::ReadOnly | SandboxMode::Off => {
                read_paths.extend(profile.roots.iter().cloned());
            }
        }
        let hidden = hidden_sockets(profile, &vars, &temp_dir);
        let mut env = env::scrub(vars, &profile.secret_env, &profile.env_passthrough);
        env.retain(|(name, _)| {
            !["TMPDIR", SANDBOX_MARKER_VAR]
                .iter()
                .any(|replaced| name == replaced)
        });
        env.push(("TMPDIR".into(), temp_dir.clone().into_os_string()));
        env.push((SANDBOX_MARKER_VAR.into(), profile.mode.as_str().into()));
        Ok(Plan {
            read_paths,
            write_paths,
            read_only_paths,
            network: profile.network,
            env,
            temp_dir,
            hidden,
        })
    }
}

/// What the launcher would hide for `profile` in this process's environment (for `lode
/// sandbox-check`; the launcher computes the same in [`Plan::build`]).
pub fn hidden_for(profile: &Profile) -> SocketHiding {
    // SAFETY: getuid cannot fail and has no side effects.
    let uid = unsafe { libc::getuid() };
    let temp = std::env::temp_dir().join(format!("lode-sandbox-{uid}"));
    hidden_sockets(profile, &std::env::vars_os().collect::<Vec<_>>(), &temp)
}

/// The sockets to hide for `profile` (see [`crate::sockets`]): everything outside the roots and
/// the private temporary directory that the user did not allow.
pub fn hidden_sockets(
    profile: &Profile,
    vars: &[(OsString, OsString)],
    temp_dir: &Path,
) -> SocketHiding {
    let lookup = |name: &str| {
        vars.iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.to_string_lossy().into_owned())
    };
    // SAFETY: getuid cannot fail and has no side effects.
    let uid = unsafe { libc::getuid() };
    let runtime_dirs = lookup("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .into_iter()
        .chain([PathBuf::from(format!("/run/user/{uid}"))])
        .collect();
    let listing = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
    let sources = SocketSources {
        proc_net_unix: &listing,
        runtime_dirs,
        socket_vars: SocketSources::socket_vars(lookup),
    };
    let mut kept: Vec<PathBuf> = profile.roots.clone();
    kept.push(temp_dir.to_path_buf());
    crate::sockets::plan(&sources, &kept, &profile.allow_sockets)
}

/// The directories on `PATH` and the installations they belong to (`…/node/bin` → `…/node`, so
/// a program finds its own libraries), but never the home directory itself or its `.local` and
/// `.config` (which hold keyrings and credentials).
fn path_toolchains(path: Option<&Path>, home: Option<&Path>) -> Vec<PathBuf> {
    let Some(path) = path else {
        return Vec::new();
    };
    let too_wide = |dir: &Path| {
        dir == Path::new("/")
            || home.is_some_and(|home| {
                dir == home || dir == home.join(".local") || dir == home.join(".config")
            })
    };
    let mut dirs = Vec::new();
    for dir in std::env::split_paths(path.as_os_str()).filter(|dir| dir.is_absolute()) {
        if too_wide(&dir) {
            continue;
        }
        if let Some(parent) = dir.parent().filter(|parent| !too_wide(parent)) {
            dirs.push(parent.to_path_buf());
        }
        dirs.push(dir);
    }
    dirs
}

/// The entries of `dir` less its credential files, to grant one by one instead of `dir`. A
/// missing `dir` is returned as it is (it grants nothing); an unreadable one yields nothing.
fn entries_without_credentials(dir: &Path) -> Vec<PathBuf> {
    match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .flatten()
            .filter(|entry| {
                !CREDENTIAL_FILES
                    .iter()
                    .any(|name| entry.file_name() == std::ffi::OsStr::new(name))
            })
            .map(|entry| entry.path())
            .collect(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => vec![dir.to_path_buf()],
        Err(_) => Vec::new(),
    }
}

/// `.git` (when present) and `.lode` (created when missing, so a command cannot create it) of
/// one root, unless `[sandbox] write` names them. A symlink in their place is refused: the
/// read-only mount would land on its target while the link itself stayed replaceable.
fn protected_paths(root: &Path, writable: &[PathBuf]) -> Result<Vec<PathBuf>, SandboxError> {
    let mut protected = Vec::new();
    for name in PROTECTED_DIRS {
        let path = root.join(name);
        if writable.contains(&path) {
            continue;
        }
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(SandboxError::SymlinkedProtectedPath { path });
            }
            Ok(_) => protected.push(path),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                if *name == ".lode" {
                    std::fs::create_dir(&path).map_err(|error| {
                        SandboxError::setup(format!("creating {}", path.display()), error)
                    })?;
                    protected.push(path);
                }
            }
            Err(error) => {
                return Err(SandboxError::setup(
                    format!("inspecting {}", path.display()),
                    error,
                ));
            }
        }
    }
    Ok(protected)
}

/// A stable 64-bit FNV-1a hash: names the private temporary directory of a set of roots.
fn fnv1a(bytes: impl IntoIterator<Item = u8>) -> u64 {
    bytes.into_iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `<base>/lode-sandbox-<uid>/<hash of the roots>`, created 0700; an existing one must be a
/// real directory owned by this user and closed to others (another user cannot plant it).
fn private_temp_dir(base: &Path, roots: &[PathBuf]) -> Result<PathBuf, SandboxError> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: getuid cannot fail and has no side effects.
    let uid = unsafe { libc::getuid() };
    let user_dir = base.join(format!("lode-sandbox-{uid}"));
    let hash = fnv1a(
        roots
            .iter()
            .flat_map(|root| root.as_os_str().as_bytes().iter().copied().chain([0])),
    );
    let dir = user_dir.join(format!("{hash:016x}"));
    for level in [&user_dir, &dir] {
        match std::fs::DirBuilder::new().mode(0o700).create(level) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(error) => {
                return Err(SandboxError::setup(
                    format!("creating {}", level.display()),
                    error,
                ));
            }
        }
        let meta = std::fs::symlink_metadata(level).map_err(|error| {
            SandboxError::setup(format!("inspecting {}", level.display()), error)
        })?;
        if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
            return Err(SandboxError::Unavailable(format!(
                "{} is not a private directory owned by you; remove it and try again",
                level.display()
            )));
        }
    }
    Ok(dir)
}

/// Runs the launcher on its arguments (what follows `sandbox-exec`). Returns only on failure:
/// on success the process has become the command.
pub fn launcher_main(args: &[OsString]) -> SandboxError {
    match confine_and_exec(args) {
        Ok(never) => match never {},
        Err(error) => error,
    }
}

fn confine_and_exec(args: &[OsString]) -> Result<Infallible, SandboxError> {
    let (profile, command) = Profile::parse_args(args)?;
    if let Some(reason) = Capabilities::probe_without_namespaces().missing_for(profile.mode) {
        return Err(SandboxError::Unavailable(reason));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let plan = Plan::build(
        &profile,
        home.as_deref(),
        std::env::vars_os().collect(),
        &std::env::temp_dir(),
    )?;
    #[cfg(target_os = "linux")]
    crate::linux::confine(&plan)?;
    exec(&command, plan.env)
}

fn exec(command: &[OsString], env: Vec<(OsString, OsString)>) -> Result<Infallible, SandboxError> {
    use std::os::unix::process::CommandExt;
    let (program, args) = command
        .split_first()
        .ok_or_else(|| SandboxError::Usage("no command".into()))?;
    let error = std::process::Command::new(program)
        .args(args)
        .env_clear()
        .envs(env)
        .exec();
    Err(SandboxError::Exec {
        program: program.to_string_lossy().into_owned(),
        source: error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(mode: SandboxMode, root: &Path) -> Profile {
        Profile {
            mode,
            roots: vec![root.to_path_buf()],
            ..Profile::default()
        }
    }

    #[test]
    fn workspace_write_protects_git_and_creates_lode() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().join("ws");
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        let plan = Plan::build(
            &profile(SandboxMode::WorkspaceWrite, &root),
            Some(Path::new("/home/someone")),
            vec![
                ("ANTHROPIC_API_KEY".into(), "sk".into()),
                ("PATH".into(), "/usr/bin".into()),
            ],
            temp.path(),
        )
        .unwrap();
        assert_eq!(
            plan.read_only_paths,
            vec![root.join(".git"), root.join(".lode")]
        );
        assert!(root.join(".lode").is_dir());
        assert!(plan.write_paths.contains(&root));
        assert!(plan.write_paths.contains(&plan.temp_dir));
        assert!(
            plan.read_paths
                .contains(&PathBuf::from("/home/someone/.cargo"))
        );
        assert!(!plan.read_paths.contains(&PathBuf::from("/home/someone")));
        let names: Vec<_> = plan.env.iter().map(|(name, _)| name.clone()).collect();
        assert_eq!(names, vec!["PATH", "TMPDIR", SANDBOX_MARKER_VAR]);
    }

    #[test]
    fn path_entries_bring_their_installations_but_not_home() {
        let home = Path::new("/home/u");
        let dirs = path_toolchains(
            Some(Path::new(
                "/opt/node/bin:/home/u/.local/bin:/home/u/bin:relative:/bin",
            )),
            Some(home),
        );
        assert_eq!(
            dirs,
            vec![
                PathBuf::from("/opt/node"),
                PathBuf::from("/opt/node/bin"),
                PathBuf::from("/home/u/.local/bin"),
                PathBuf::from("/home/u/bin"),
                PathBuf::from("/bin"),
            ]
        );
    }

    #[test]
    fn credential_files_in_toolchain_dirs_are_not_granted() {
        let temp = tempfile::tempdir().unwrap();
        let home = temp.path().join("home");
        let cargo_home = temp.path().join("cargo-home");
        for dir in [
            home.join(".cargo"),
            home.join(".config/git"),
            cargo_home.clone(),
        ] {
            std::fs::create_dir_all(dir.join("registry")).unwrap();
            std::fs::create_dir_all(dir.join("bin")).unwrap();
            std::fs::write(dir.join("config.toml"), "").unwrap();
            std::fs::write(dir.join("credentials.toml"), "token").unwrap();
            std::fs::write(dir.join("credentials"), "token").unwrap();
        }
        let plan = Plan::build(
            &profile(SandboxMode::ReadOnly, &temp.path().join("ws")),
            Some(&home),
            vec![
                ("CARGO_HOME".into(), cargo_home.clone().into()),
                (
                    "PATH".into(),
                    format!("{}/.cargo/bin:/usr/bin", home.display()).into(),
                ),
            ],
            temp.path(),
        )
        .unwrap();
        for dir in [home.join(".cargo"), home.join(".config/git"), cargo_home] {
            assert!(plan.read_paths.contains(&dir.join("registry")), "{dir:?}");
            assert!(
                plan.read_paths.contains(&dir.join("config.toml")),
                "{dir:?}"
            );
            assert!(!plan.read_paths.contains(&dir), "{dir:?} is granted whole");
            assert!(!plan.read_paths.contains(&dir.join("credentials.toml")));
            assert!(!plan.read_paths.contains(&dir.join("credentials")));
        }
    }

    #[test]
    fn naming_a_protected_dir_in_write_lifts_its_protection() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().join("ws");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        let mut wide = profile(SandboxMode::WorkspaceWrite, &root);
        wide.write.push(root.join(".git"));
        let plan = Plan::build(&wide, None, Vec::new(), temp.path()).unwrap();
        assert_eq!(plan.read_only_paths, vec![root.join(".lode")]);
    }

    #[test]
    fn read_only_mode_writes_only_temp_and_devices() {
        let temp = tempfile::tempdir().unwrap();
        let plan = Plan::build(
            &profile(SandboxMode::ReadOnly, temp.path()),
            None,
            Vec::new(),
            temp.path(),
        )
        .unwrap();
        assert!(plan.read_paths.contains(&temp.path().to_path_buf()));
        assert!(!plan.write_paths.contains(&temp.path().to_path_buf()));
        assert!(plan.read_only_paths.is_empty());
    }

    #[test]
    fn a_symlinked_lode_dir_is_refused() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().join("ws");
        std::fs::create_dir_all(&root).unwrap();
        std::os::unix::fs::symlink(temp.path(), root.join(".lode")).unwrap();
        let error = Plan::build(
            &profile(SandboxMode::WorkspaceWrite, &root),
            None,
            Vec::new(),
            temp.path(),
        )
        .unwrap_err();
        assert!(
            matches!(error, SandboxError::SymlinkedProtectedPath { .. }),
            "{error}"
        );
    }

    #[test]
    fn a_planted_shared_temp_dir_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let temp = tempfile::tempdir().unwrap();
        // SAFETY: getuid cannot fail.
        let uid = unsafe { libc::getuid() };
        let planted = temp.path().join(format!("lode-sandbox-{uid}"));
        std::fs::create_dir(&planted).unwrap();
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o777)).unwrap();
        let error = private_temp_dir(temp.path(), &[PathBuf::from("/w")]).unwrap_err();
        assert!(
            error.to_string().contains("not a private directory"),
            "{error}"
        );
    }
}
