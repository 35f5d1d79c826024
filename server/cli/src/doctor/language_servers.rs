//! The language servers lode runs for the agent's diagnostics and navigation, for the languages
//! this workspace has (by its marker files): found on `PATH` and runnable (a version query). A
//! rustup proxy whose toolchain lacks the component answers with rustup's error: that is "not
//! installed", with the `rustup component add` fix.
//!
//! Safety: a version query runs a program a workspace can steer (a rustup proxy follows the
//! `rust-toolchain.toml` of its working directory, whose `path` can name a toolchain a confined
//! command planted), so it runs like lode's own git: through the sandbox's launcher in
//! `read-only` mode with no workspace root at all (the workspace is not even readable), from a
//! neutral working directory (`/`), with the allowlisted environment. Only a program found
//! through an absolute `PATH` entry and living outside the workspace is run; a relative entry
//! (`.`, `bin`) is skipped and a program inside the workspace is reported, never started. Where
//! the machine cannot confine, nothing is run and the check says so. (The configured
//! `[lsp.diagnostics] servers` of an untrusted workspace file never reach here: `lode trust`
//! gates them.)

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lode_lsp::downstream::provider::default_server;

use super::Check;

/// How long a version query may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// Families (as lode's downstream servers name them) and the files that mark them at the root.
const MARKERS: &[(&str, &[&str])] = &[
    ("rust", &["Cargo.toml"]),
    (
        "python",
        &[
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
            "requirements.txt",
        ],
    ),
    (
        "typescript",
        &["package.json", "tsconfig.json", "jsconfig.json"],
    ),
    ("go", &["go.mod"]),
    (
        "c",
        &[
            "CMakeLists.txt",
            "compile_commands.json",
            "meson.build",
            "configure.ac",
        ],
    ),
    ("java", &["pom.xml", "build.gradle", "settings.gradle"]),
    ("kotlin", &["build.gradle.kts", "settings.gradle.kts"]),
    ("csharp", &["*.csproj", "*.sln"]),
    ("swift", &["Package.swift"]),
    ("ruby", &["Gemfile", "*.gemspec"]),
    ("php", &["composer.json"]),
    ("scala", &["build.sbt"]),
    ("lua", &[".luarc.json", "*.rockspec"]),
    ("zig", &["build.zig"]),
    ("elixir", &["mix.exs"]),
    ("haskell", &["stack.yaml", "cabal.project", "*.cabal"]),
    ("ocaml", &["dune-project", "*.opam"]),
];

/// Whether `root` holds `marker`: a file name, or `*.ext` for any file with that extension.
fn has_marker(root: &Path, marker: &str) -> bool {
    match marker.strip_prefix("*.") {
        Some(extension) => std::fs::read_dir(root).is_ok_and(|entries| {
            entries.flatten().any(|entry| {
                entry.path().extension().is_some_and(|ext| ext == extension)
                    && entry.path().is_file()
            })
        }),
        None => root.join(marker).is_file(),
    }
}

/// How to install a family's default server, and what lode falls back to without it.
fn install_hint(family: &str) -> (&'static str, &'static str) {
    match family {
        "rust" => ("rustup component add rust-analyzer", "`cargo check`"),
        "python" => ("npm install -g pyright", "no checker"),
        "typescript" => (
            "npm install -g typescript-language-server typescript",
            "`tsc --noEmit` when installed",
        ),
        "go" => ("go install golang.org/x/tools/gopls@latest", "no checker"),
        "c" => (
            "apt install clangd (or your distribution's clangd)",
            "no checker",
        ),
        "java" => ("install Eclipse JDT LS as `jdtls`", "no checker"),
        "kotlin" => ("install kotlin-language-server", "no checker"),
        "csharp" => ("dotnet tool install -g csharp-ls", "no checker"),
        "swift" => (
            "install a Swift toolchain (it ships sourcekit-lsp)",
            "no checker",
        ),
        "ruby" => ("gem install ruby-lsp", "no checker"),
        "php" => ("install phpactor", "no checker"),
        "scala" => ("cs install metals", "no checker"),
        "lua" => ("install lua-language-server", "no checker"),
        "bash" => ("npm install -g bash-language-server", "no checker"),
        "zig" => ("install zls", "no checker"),
        "elixir" => ("install elixir-ls as `elixir-ls`", "no checker"),
        "haskell" => ("ghcup install hls", "no checker"),
        "ocaml" => ("opam install ocaml-lsp-server", "no checker"),
        _ => ("install it", "no checker"),
    }
}

/// Where `program` is: `Ok(None)` when not found, `Err(path)` when the first match lives inside
/// the workspace (not run). A name with a `/` must be an absolute path.
fn locate(program: &str, root: &Path) -> Result<Option<PathBuf>, PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |path: &Path| {
        path.metadata()
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    };
    let candidates: Vec<PathBuf> = if program.contains('/') {
        vec![PathBuf::from(program)]
    } else {
        std::env::var_os("PATH")
            .map(|path| {
                std::env::split_paths(&path)
                    .map(|dir| dir.join(program))
                    .collect()
            })
            .unwrap_or_default()
    };
    let Some(found) = candidates
        .into_iter()
        .filter(|path| path.is_absolute())
        .find(|path| executable(path))
    else {
        return Ok(None);
    };
    let resolved = std::fs::canonicalize(&found).unwrap_or_else(|_| found.clone());
    let inside = |path: &Path| path.starts_with(root);
    if inside(&found) || inside(&resolved) {
        return Err(found);
    }
    Ok(Some(found))
}

/// `lsp`: the `[lsp.diagnostics]` of the configuration (`None` when it cannot be used: the
/// config check says why, and the defaults are checked).
pub fn check(
    root: &Path,
    lsp: Option<&lode_agent::config::LspDiagnosticsSettings>,
    sandbox: &lode_sandbox::Sandbox,
) -> Vec<Check> {
    let defaults = lode_agent::config::LspDiagnosticsSettings::default();
    let settings = crate::diagnostics_adapter::settings_from(lsp.unwrap_or(&defaults));
    let families: Vec<&str> = MARKERS
        .iter()
        .filter(|(_, files)| files.iter().any(|file| has_marker(root, file)))
        .map(|(family, _)| *family)
        .collect();
    if families.is_empty() {
        return vec![Check::ok(
            "language-server",
            "no project file at the root (Cargo.toml, pyproject.toml, package.json, go.mod, \
             CMakeLists.txt, pom.xml, Gemfile, …): no language server needed",
        )];
    }
    let mut checks = Vec::new();
    for family in families {
        let configured = settings.config.servers.get(family).cloned();
        let command = match configured {
            Some(command) if command.is_empty() => {
                checks.push(Check::ok(
                    "language-server",
                    format!("{family}: turned off by [lsp.diagnostics] servers"),
                ));
                continue;
            }
            Some(command) => command,
            None if settings.config.default_servers => match default_server(family) {
                Some(command) => command,
                None => continue,
            },
            None => {
                checks.push(Check::ok(
                    "language-server",
                    format!("{family}: default servers turned off by [lsp.diagnostics]"),
                ));
                continue;
            }
        };
        checks.push(check_server(root, family, &command, sandbox));
    }
    checks
}

fn check_server(
    root: &Path,
    family: &str,
    command: &[String],
    sandbox: &lode_sandbox::Sandbox,
) -> Check {
    let (install, fallback) = install_hint(family);
    let Some(program) = command.first() else {
        return Check::ok("language-server", format!("{family}: no server"));
    };
    let path = match locate(program, root) {
        Ok(Some(path)) => path,
        Ok(None) => {
            return Check::warn(
                "language-server",
                format!(
                    "{family}: {program} not found on PATH; diagnostics fall back to {fallback}"
                ),
                install,
            );
        }
        Err(inside) => {
            return Check::warn(
                "language-server",
                format!(
                    "{family}: the {program} on PATH is {}, inside the workspace: not run",
                    inside.display()
                ),
                format!("install {program} outside the workspace ({install})"),
            );
        }
    };
    let Some((probe, args)) = version_probe(program, &path) else {
        return Check::ok(
            "language-server",
            format!("{family}: {program} found at {} (not run)", path.display()),
        );
    };
    let Some(wrapped) = sandbox.wrap_own_program(&[], &[], &probe, args.iter().copied()) else {
        return Check::ok(
            "language-server",
            format!(
                "{family}: {program} found at {} (not run: lode runs it only inside its \
                 sandbox, which cannot confine here: {})",
                path.display(),
                sandbox.own_programs_unconfinable().unwrap_or("no launcher")
            ),
        );
    };
    match run_with_timeout(&wrapped.program, &wrapped.args) {
        Ok((true, stdout, _)) => Check::ok(
            "language-server",
            format!(
                "{family}: {program} at {}: {}",
                path.display(),
                first_line(&stdout).unwrap_or("runs")
            ),
        ),
        Ok((false, stdout, stderr)) => {
            let text = format!("{stderr}\n{stdout}");
            if let Some(toolchain) = rustup_missing_component(&text, program) {
                Check::warn(
                    "language-server",
                    format!(
                        "{family}: {program} is not installed (rustup's proxy at {} has no \
                         {program} component for {toolchain}); diagnostics fall back to \
                         {fallback}",
                        path.display()
                    ),
                    format!("rustup component add {program}"),
                )
            } else {
                Check::warn(
                    "language-server",
                    format!(
                        "{family}: {program} at {} fails to run: {}",
                        path.display(),
                        first_line(&text).unwrap_or("no message")
                    ),
                    format!("reinstall it ({install})"),
                )
            }
        }
        Err(reason) => Check::warn(
            "language-server",
            format!("{family}: {program} at {} {reason}", path.display()),
            format!("reinstall it ({install})"),
        ),
    }
}

/// The command that tells a default server's version (pyright's language server has none, its
/// sibling `pyright` does); `None` for a server lode does not know.
fn version_probe(program: &str, path: &Path) -> Option<(PathBuf, &'static [&'static str])> {
    match program {
        "rust-analyzer" | "typescript-language-server" => {
            Some((path.to_path_buf(), &["--version"]))
        }
        "gopls" => Some((path.to_path_buf(), &["version"])),
        "pyright-langserver" => {
            let sibling = path.with_file_name("pyright");
            sibling.is_file().then_some((sibling, &["--version"][..]))
        }
        _ => None,
    }
}

/// Runs `program args` (the launcher and its arguments) from `/`, with no stdin; (succeeded,
/// stdout, stderr), or why it could not run.
fn run_with_timeout(
    program: &Path,
    args: &[std::ffi::OsString],
) -> Result<(bool, String, String), String> {
    let mut child = Command::new(program)
        .args(args)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("RUST_BACKTRACE")
        .spawn()
        .map_err(|error| format!("cannot be started: {error}"))?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() > VERSION_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "did not answer a version query within {VERSION_TIMEOUT:?}"
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(error) => return Err(format!("cannot be waited for: {error}")),
        }
    }
    let output = child
        .wait_with_output()
        .map_err(|error| format!("output cannot be read: {error}"))?;
    Ok((
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ))
}

/// The toolchain named by rustup's "component missing" error, in either of its wordings:
/// `error: Unknown binary 'rust-analyzer' in official toolchain 'stable-…'.` or
/// `error: 'rust-analyzer' is not installed for the toolchain 'stable-…'`.
fn rustup_missing_component(text: &str, program: &str) -> Option<String> {
    let quoted = format!("'{program}'");
    let line = text.lines().find(|line| {
        line.contains(&quoted)
            && (line.contains("Unknown binary") || line.contains("is not installed for"))
    })?;
    let toolchain = line
        .split("toolchain '")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .unwrap_or("the active toolchain");
    Some(format!("toolchain {toolchain}"))
}

fn first_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).find(|line| !line.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rustups_two_wordings_are_recognised() {
        let old = "error: Unknown binary 'rust-analyzer' in official toolchain 'stable-x86_64-unknown-linux-gnu'.\n";
        assert_eq!(
            rustup_missing_component(old, "rust-analyzer").as_deref(),
            Some("toolchain stable-x86_64-unknown-linux-gnu")
        );
        let new = "error: 'rust-analyzer' is not installed for the toolchain '1.95.0-x86_64-unknown-linux-gnu'.\nhelp: run `rustup component add rust-analyzer` to install it\n";
        assert_eq!(
            rustup_missing_component(new, "rust-analyzer").as_deref(),
            Some("toolchain 1.95.0-x86_64-unknown-linux-gnu")
        );
        assert!(rustup_missing_component("segfault", "rust-analyzer").is_none());
    }
}
