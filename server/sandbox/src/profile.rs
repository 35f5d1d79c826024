//! What a confined command may do, and how that travels on the launcher's command line.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::SandboxError;

/// How much a confined command may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Reads as in `workspace-write`; writes only to the private temporary directory.
    ReadOnly,
    /// Writes to the workspace roots (not `.git/` or `.lode/`), the private temporary
    /// directory and what `[sandbox] write` adds. The default.
    #[default]
    WorkspaceWrite,
    /// No confinement. Every command that runs workspace code is asked about.
    Off,
}

impl SandboxMode {
    pub const ALL: [SandboxMode; 3] = [
        SandboxMode::ReadOnly,
        SandboxMode::WorkspaceWrite,
        SandboxMode::Off,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::Off => "off",
        }
    }

    /// Higher is stricter.
    fn strictness(self) -> u8 {
        match self {
            SandboxMode::Off => 0,
            SandboxMode::WorkspaceWrite => 1,
            SandboxMode::ReadOnly => 2,
        }
    }

    /// The stricter of the two: what an untrusted layer of configuration may set.
    pub fn tighter(self, other: SandboxMode) -> SandboxMode {
        if other.strictness() > self.strictness() {
            other
        } else {
            self
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SandboxMode {
    type Err = SandboxError;

    fn from_str(text: &str) -> Result<SandboxMode, SandboxError> {
        SandboxMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == text.trim())
            .ok_or_else(|| {
                SandboxError::Usage(format!(
                    "unknown sandbox mode `{text}`; the modes are read-only, workspace-write and off"
                ))
            })
    }
}

/// `[sandbox]` in lode's configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxSettings {
    pub mode: SandboxMode,
    /// More paths commands may read (`~/` is the home directory; relative paths are relative to
    /// the primary workspace root).
    pub read: Vec<String>,
    /// More paths commands may write (and read). Naming `.git` or `.lode` lifts their protection.
    pub write: Vec<String>,
    /// Environment variables passed to commands although they are not on the allowlist or their
    /// names look like secrets.
    pub env_passthrough: Vec<String>,
    /// Unix socket paths outside the workspace a command may still reach (all others are
    /// hidden): a docker or podman socket for a project that needs one.
    pub allow_unix_sockets: Vec<String>,
    /// MCP servers named only by a (trusted) workspace's config that may still use the network
    /// (servers of the user's own config always may). Only the user's own config can set it.
    pub mcp_network: Vec<String>,
}

/// What one confined command may do.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Profile {
    /// `ReadOnly` or `WorkspaceWrite` (`Off` never reaches the launcher).
    pub mode: SandboxMode,
    /// Canonical workspace roots: readable, and writable in `workspace-write`.
    pub roots: Vec<PathBuf>,
    /// Extra readable paths (absolute).
    pub read: Vec<PathBuf>,
    /// Extra writable paths (absolute).
    pub write: Vec<PathBuf>,
    /// TCP/UDP allowed (granted per command by a permission answer).
    pub network: bool,
    /// More variable names to remove from the environment (providers' key variables).
    pub secret_env: Vec<String>,
    /// Variable names kept although they look like secrets.
    pub env_passthrough: Vec<String>,
    /// Unix sockets outside the roots left reachable (absolute).
    pub allow_sockets: Vec<PathBuf>,
}

const MODE: &str = "--mode";
const ROOT: &str = "--root";
const READ: &str = "--read";
const WRITE: &str = "--write";
const NETWORK: &str = "--network";
const SECRET_ENV: &str = "--secret-env";
const PASS_ENV: &str = "--pass-env";
const ALLOW_SOCKET: &str = "--allow-socket";

impl Profile {
    /// The launcher arguments that carry this profile (before `--` and the command).
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args = vec![OsString::from(MODE), OsString::from(self.mode.as_str())];
        let mut push_all = |flag: &str, values: &[PathBuf]| {
            for value in values {
                args.push(OsString::from(flag));
                args.push(value.clone().into_os_string());
            }
        };
        push_all(ROOT, &self.roots);
        push_all(READ, &self.read);
        push_all(WRITE, &self.write);
        push_all(ALLOW_SOCKET, &self.allow_sockets);
        if self.network {
            args.push(OsString::from(NETWORK));
        }
        for name in &self.secret_env {
            args.push(OsString::from(SECRET_ENV));
            args.push(OsString::from(name));
        }
        for name in &self.env_passthrough {
            args.push(OsString::from(PASS_ENV));
            args.push(OsString::from(name));
        }
        args
    }

    /// Reads a profile and the command after `--` from the launcher's arguments.
    pub fn parse_args(args: &[OsString]) -> Result<(Profile, Vec<OsString>), SandboxError> {
        let mut profile = Profile::default();
        let mut index = 0;
        let value = |index: usize, flag: &str| -> Result<&OsString, SandboxError> {
            args.get(index + 1)
                .ok_or_else(|| SandboxError::Usage(format!("{flag} needs a value")))
        };
        let absolute = |text: &OsStr, flag: &str| -> Result<PathBuf, SandboxError> {
            let path = PathBuf::from(text);
            if path.is_absolute() {
                Ok(path)
            } else {
                Err(SandboxError::Usage(format!(
                    "{flag} takes an absolute path, not {}",
                    path.display()
                )))
            }
        };
        while index < args.len() {
            let flag = args[index].to_string_lossy().into_owned();
            match flag.as_str() {
                "--" => {
                    let command = args[index + 1..].to_vec();
                    if command.is_empty() {
                        return Err(SandboxError::Usage("no command after `--`".into()));
                    }
                    if profile.mode == SandboxMode::Off {
                        return Err(SandboxError::Usage(
                            "mode `off` runs nothing through the launcher".into(),
                        ));
                    }
                    return Ok((profile, command));
                }
                MODE => {
                    profile.mode = value(index, MODE)?.to_string_lossy().parse()?;
                    index += 2;
                }
                ROOT | READ | WRITE | ALLOW_SOCKET => {
                    let path = absolute(value(index, &flag)?, &flag)?;
                    match flag.as_str() {
                        ROOT => profile.roots.push(path),
                        READ => profile.read.push(path),
                        ALLOW_SOCKET => profile.allow_sockets.push(path),
                        _ => profile.write.push(path),
                    }
                    index += 2;
                }
                NETWORK => {
                    profile.network = true;
                    index += 1;
                }
                SECRET_ENV | PASS_ENV => {
                    let name = value(index, &flag)?.to_string_lossy().into_owned();
                    if flag == SECRET_ENV {
                        profile.secret_env.push(name);
                    } else {
                        profile.env_passthrough.push(name);
                    }
                    index += 2;
                }
                other => {
                    return Err(SandboxError::Usage(format!(
                        "unknown option `{other}` (expected {MODE}, {ROOT}, {READ}, {WRITE}, \
                         {ALLOW_SOCKET}, {NETWORK}, {SECRET_ENV}, {PASS_ENV}, then `--` and the \
                         command)"
                    )));
                }
            }
        }
        Err(SandboxError::Usage(
            "missing `--` before the command".into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn a_profile_survives_the_command_line() {
        let profile = Profile {
            mode: SandboxMode::ReadOnly,
            roots: vec!["/w/a".into(), "/w/b c".into()],
            read: vec!["/opt/tool".into()],
            write: vec!["/data".into()],
            network: true,
            secret_env: vec!["MY_PROVIDER".into()],
            env_passthrough: vec!["CI_TOKEN".into()],
            allow_sockets: vec!["/run/docker.sock".into()],
        };
        let mut args = profile.to_args();
        args.extend(os(&["--", "sh", "-c", "echo --mode"]));
        let (parsed, command) = Profile::parse_args(&args).unwrap();
        assert_eq!(parsed, profile);
        assert_eq!(command, os(&["sh", "-c", "echo --mode"]));
    }

    #[test]
    fn bad_arguments_are_refused_with_the_reason() {
        let cases: &[(&[&str], &str)] = &[
            (&["--mode", "wide-open", "--", "ls"], "unknown sandbox mode"),
            (&["--mode", "off", "--", "ls"], "runs nothing"),
            (&["--root", "relative", "--", "ls"], "absolute path"),
            (&["--root"], "needs a value"),
            (&["--frobnicate", "--", "ls"], "unknown option"),
            (&["--"], "no command"),
            (&["ls"], "unknown option"),
            (&[], "missing `--`"),
        ];
        for (args, expected) in cases {
            let error = Profile::parse_args(&os(args)).unwrap_err().to_string();
            assert!(error.contains(expected), "{args:?}: {error}");
        }
    }

    #[test]
    fn untrusted_layers_can_only_tighten_the_mode() {
        use SandboxMode::*;
        assert_eq!(WorkspaceWrite.tighter(Off), WorkspaceWrite);
        assert_eq!(WorkspaceWrite.tighter(ReadOnly), ReadOnly);
        assert_eq!(Off.tighter(WorkspaceWrite), WorkspaceWrite);
        assert_eq!(ReadOnly.tighter(Off), ReadOnly);
    }
}
