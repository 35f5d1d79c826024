//! The caller's side: what the sandbox can do here, and a command line wrapped to run through
//! the launcher.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::{Capabilities, Profile, SANDBOX_EXEC, SandboxMode, SandboxSettings};

/// Set to `1` to treat the sandbox as unavailable (every command that runs code then asks):
/// for testing the fallback, and for machines where the probe is wrong.
pub const FORCE_UNAVAILABLE_VAR: &str = "LODE_SANDBOX_FORCE_UNAVAILABLE";

/// Whether commands run confined, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxStatus {
    /// Commands run through the launcher in this mode.
    Confined(SandboxMode),
    /// `[sandbox] mode = "off"`: the user turned it off.
    Off,
    /// The mode asked for cannot be enforced here; the reason says what is missing.
    Unavailable(String),
}

impl SandboxStatus {
    pub fn is_confined(&self) -> bool {
        matches!(self, SandboxStatus::Confined(_))
    }

    /// One line for notices, `lode config` and the first session update.
    pub fn describe(&self) -> String {
        match self {
            SandboxStatus::Confined(mode) => format!(
                "sandbox: {mode} (commands run under Landlock and seccomp: no network, no \
                 secrets, {})",
                match mode {
                    SandboxMode::ReadOnly => "no writes outside the private temp directory",
                    _ => "writes only inside the workspace, not .git/ or .lode/",
                }
            ),
            SandboxStatus::Off => "sandbox: OFF ([sandbox] mode = \"off\"): commands run \
                                   unconfined, so every command that runs workspace code asks \
                                   first"
                .to_owned(),
            SandboxStatus::Unavailable(reason) => format!(
                "sandbox: unavailable ({reason}); every command that runs workspace code asks \
                 first"
            ),
        }
    }
}

/// A command line that runs `program` through the launcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrappedCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

impl WrappedCommand {
    /// The arguments as strings, for protocols that carry text (an editor's terminal).
    pub fn args_lossy(&self) -> Vec<String> {
        self.args
            .iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect()
    }
}

/// The sandbox as one process uses it: the launcher (normally the `lode` binary itself), the
/// user's `[sandbox]` settings and the variable names that hold secrets.
#[derive(Debug, Clone)]
pub struct Sandbox {
    launcher: Option<PathBuf>,
    settings: SandboxSettings,
    secret_env: Vec<String>,
    status: SandboxStatus,
    /// Why lode's own programs cannot run confined here (`None`: they can), whatever the mode.
    own_programs_unconfinable: Option<String>,
}

impl Sandbox {
    /// A sandbox that runs commands through `launcher` (`lode`), if this machine can enforce
    /// `settings.mode`.
    pub fn new(launcher: PathBuf, settings: SandboxSettings, secret_env: Vec<String>) -> Sandbox {
        let forced = std::env::var_os(FORCE_UNAVAILABLE_VAR).is_some_and(|v| v == "1");
        let status = match settings.mode {
            SandboxMode::Off => SandboxStatus::Off,
            _ if forced => SandboxStatus::Unavailable(format!("{FORCE_UNAVAILABLE_VAR}=1 is set")),
            mode => match Capabilities::probe().missing_for(mode) {
                None => SandboxStatus::Confined(mode),
                Some(reason) => SandboxStatus::Unavailable(reason),
            },
        };
        let own_programs_unconfinable = if forced {
            Some(format!("{FORCE_UNAVAILABLE_VAR}=1 is set"))
        } else {
            Capabilities::probe().missing_for(SandboxMode::ReadOnly)
        };
        Sandbox {
            launcher: Some(launcher),
            settings,
            secret_env,
            status,
            own_programs_unconfinable,
        }
    }

    /// No launcher at all (a library used without the `lode` binary): commands that run code
    /// ask, as when the kernel cannot confine.
    pub fn unavailable(reason: impl Into<String>) -> Sandbox {
        let reason = reason.into();
        Sandbox {
            launcher: None,
            settings: SandboxSettings::default(),
            secret_env: Vec::new(),
            status: SandboxStatus::Unavailable(reason.clone()),
            own_programs_unconfinable: Some(reason),
        }
    }

    pub fn status(&self) -> &SandboxStatus {
        &self.status
    }

    pub fn is_confined(&self) -> bool {
        self.status.is_confined()
    }

    pub fn settings(&self) -> &SandboxSettings {
        &self.settings
    }

    /// The profile a command in `roots` gets (`network`: granted for this command).
    pub fn profile(&self, roots: &[PathBuf], network: bool) -> Profile {
        let mode = match &self.status {
            SandboxStatus::Confined(mode) => *mode,
            _ => self.settings.mode,
        };
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let primary = roots.first().map(PathBuf::as_path);
        let place = |text: &String| place_path(text, home.as_deref(), primary);
        Profile {
            mode,
            roots: roots.to_vec(),
            read: self.settings.read.iter().filter_map(place).collect(),
            write: self.settings.write.iter().filter_map(place).collect(),
            network,
            secret_env: self.secret_env.clone(),
            env_passthrough: self.settings.env_passthrough.clone(),
            allow_sockets: self
                .settings
                .allow_unix_sockets
                .iter()
                .filter_map(place)
                .collect(),
        }
    }

    /// `program args…` wrapped to run confined in `roots`, or `None` when commands are not
    /// confined here (the caller then runs it as it is, after the policy has asked).
    pub fn wrap(
        &self,
        roots: &[PathBuf],
        network: bool,
        program: impl Into<OsString>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Option<WrappedCommand> {
        if !self.is_confined() {
            return None;
        }
        self.launch(&self.profile(roots, network), program, args)
    }
}

impl Sandbox {
    /// A program lode starts for itself over workspace content (its own `git`, doctor's version
    /// probes), wrapped to run confined in `read-only` mode with no network: it reads `roots`
    /// and `read`, writes only its private temporary directory, sees the allowlisted
    /// environment and no socket outside. This holds whatever `[sandbox] mode` says (also
    /// `off`, which is about the model's commands): `None` only when this machine cannot
    /// confine at all, and then the caller does not start the program
    /// ([`Sandbox::own_programs_unconfinable`] says why).
    pub fn wrap_own_program(
        &self,
        roots: &[PathBuf],
        read: &[PathBuf],
        program: impl Into<OsString>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Option<WrappedCommand> {
        if self.own_programs_unconfinable.is_some() {
            return None;
        }
        let mut profile = self.profile(roots, false);
        profile.mode = SandboxMode::ReadOnly;
        profile.read.extend(read.iter().cloned());
        // It writes nothing of the user's and reaches no socket, whatever `[sandbox]` widens
        // for the model's commands.
        profile.write.clear();
        profile.allow_sockets.clear();
        self.launch(&profile, program, args)
    }

    /// A server lode keeps running for a session (an MCP server over stdio), wrapped to run
    /// confined in `mode` (`read-only` or `workspace-write`; `off` is taken as
    /// `workspace-write`) in `roots`, with the network when `network`, and the variables named
    /// in `pass_env` kept although they are not on the allowlist (the server's own configured
    /// variables, which the caller sets on the launcher's process). The user's `[sandbox]`
    /// `read`, `write` and `allow_unix_sockets` apply as to commands. `None` when this machine
    /// cannot confine ([`Sandbox::own_programs_unconfinable`] says why) or there is no launcher;
    /// the caller then decides whether the server may run unconfined ([`crate::exempt`]).
    pub fn wrap_server(
        &self,
        roots: &[PathBuf],
        mode: SandboxMode,
        network: bool,
        pass_env: &[String],
        program: impl Into<OsString>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Option<WrappedCommand> {
        if self.own_programs_unconfinable.is_some() {
            return None;
        }
        let mut profile = self.profile(roots, network);
        profile.mode = match mode {
            SandboxMode::ReadOnly => SandboxMode::ReadOnly,
            SandboxMode::WorkspaceWrite | SandboxMode::Off => SandboxMode::WorkspaceWrite,
        };
        profile.env_passthrough.extend(pass_env.iter().cloned());
        self.launch(&profile, program, args)
    }

    /// `program args…` through the launcher with `profile`; `None` without a launcher.
    fn launch(
        &self,
        profile: &Profile,
        program: impl Into<OsString>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Option<WrappedCommand> {
        let launcher = self.launcher.clone()?;
        let mut wrapped = vec![OsString::from(SANDBOX_EXEC)];
        wrapped.extend(profile.to_args());
        wrapped.push("--".into());
        wrapped.push(program.into());
        wrapped.extend(args.into_iter().map(Into::into));
        Some(WrappedCommand {
            program: launcher,
            args: wrapped,
        })
    }

    /// Why lode's own programs cannot run confined here, when they cannot.
    pub fn own_programs_unconfinable(&self) -> Option<&str> {
        self.own_programs_unconfinable.as_deref()
    }
}

/// A configured path made absolute: `~/x` under the home directory, relative paths under the
/// primary root; canonical when it exists.
fn place_path(text: &String, home: Option<&Path>, root: Option<&Path>) -> Option<PathBuf> {
    let path = if let Some(rest) = text.strip_prefix("~/") {
        home?.join(rest)
    } else if text == "~" {
        home?.to_path_buf()
    } else {
        let path = PathBuf::from(text);
        if path.is_absolute() {
            path
        } else {
            root?.join(path)
        }
    };
    Some(std::fs::canonicalize(&path).unwrap_or(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_paths_are_placed_under_home_and_root() {
        let home = Path::new("/home/u");
        let root = Path::new("/w");
        assert_eq!(
            place_path(&"~/data".to_owned(), Some(home), Some(root)),
            Some(PathBuf::from("/home/u/data"))
        );
        assert_eq!(
            place_path(&"out".to_owned(), Some(home), Some(root)),
            Some(PathBuf::from("/w/out"))
        );
        assert_eq!(
            place_path(&"/abs".to_owned(), None, None),
            Some(PathBuf::from("/abs"))
        );
        assert_eq!(place_path(&"~/x".to_owned(), None, Some(root)), None);
    }

    #[test]
    fn nothing_is_wrapped_without_a_launcher_or_when_off() {
        let none = Sandbox::unavailable("test");
        assert!(
            none.wrap(&[PathBuf::from("/w")], false, "ls", ["-l"])
                .is_none()
        );
        let off = Sandbox::new(
            PathBuf::from("/usr/bin/lode"),
            SandboxSettings {
                mode: SandboxMode::Off,
                ..SandboxSettings::default()
            },
            Vec::new(),
        );
        assert_eq!(off.status(), &SandboxStatus::Off);
        assert!(
            off.wrap(&[PathBuf::from("/w")], false, "ls", ["-l"])
                .is_none()
        );
        assert!(off.status().describe().contains("OFF"));
    }
}
