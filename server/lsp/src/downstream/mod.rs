//! Diagnostics for the agent from the tools that know the language: a downstream language
//! server lode runs itself as an LSP client ([`client`]), kept warm, with files opened and
//! changed as the agent edits them; or, when no server is available, a command
//! ([`commands`]: `cargo check`, `pyright --outputjson`, `tsc --noEmit`). [`provider`] picks.

pub mod client;
pub mod commands;
pub mod provider;
pub mod server_log;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use client::{ClientSettings, LanguageServerClient};

/// Where a checker or language server runs: confined to `root` by `sandbox` when it can
/// confine, else as it is.
#[derive(Clone, Copy)]
pub struct Confinement<'a> {
    pub sandbox: &'a lode_sandbox::Sandbox,
    pub root: &'a Path,
}

impl Confinement<'_> {
    /// `program args…`, wrapped to run through the sandbox's launcher when it confines.
    pub fn command(&self, program: &str, args: &[&str]) -> tokio::process::Command {
        let roots = [self.root.to_path_buf()];
        match self
            .sandbox
            .wrap(&roots, false, program, args.iter().copied())
        {
            Some(wrapped) => {
                let mut command = tokio::process::Command::new(wrapped.program);
                command.args(wrapped.args);
                command
            }
            None => {
                let mut command = tokio::process::Command::new(program);
                command.args(args);
                command
            }
        }
    }
}

/// Why a checker or language server is not started when the sandbox cannot confine it (the
/// kernel lacks it, or `[sandbox] mode = "off"`), or `None` when it may run: it is confined, or
/// it only parses and checks (`lode_sandbox::exempt::PARSE_ONLY_CHECKERS`, the named list).
/// Everything else can run the workspace's own code (build scripts, proc macros, the
/// workspace's own TypeScript, the build tool) and lode does not run that unasked.
pub fn refuse_unconfined(sandbox: &lode_sandbox::Sandbox, checker: &str) -> Option<String> {
    if sandbox.is_confined() || lode_sandbox::exempt::parse_only_checker(checker).is_some() {
        return None;
    }
    Some(format!(
        "{checker} can run the workspace's own code (build scripts, proc macros, the project's \
         tools and plugins), and lode does not run it unasked without its sandbox ({})",
        sandbox.status().describe()
    ))
}

pub use provider::{DiagnosticsConfig, DiagnosticsProvider};

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
    Information,
    Hint,
}

/// One finding of a compiler or checker, in plain data.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub severity: Severity,
    /// 1-based.
    pub line: u32,
    /// 1-based, in characters (UTF-16 code units when it came from a language server).
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    pub message: String,
    /// The checker's rule or error code (`E0308`, `reportAttributeAccessIssue`), if any.
    pub code: Option<String>,
    /// Who reported it (`rustc`, `Pyright`, `ts`).
    pub source: Option<String>,
}

/// Where a file's diagnostics came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum DiagnosticsSource {
    /// A language server (its command).
    Server(String),
    /// A command run for the purpose (its command line).
    Command(String),
    /// Nothing could check this file; `error` says why.
    None,
}

/// The diagnostics of one file, errors first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileDiagnostics {
    pub path: PathBuf,
    pub diagnostics: Vec<Diagnostic>,
    pub source: DiagnosticsSource,
    /// Why there are no diagnostics from a checker (no provider, the provider failed).
    pub error: Option<String>,
}

impl FileDiagnostics {
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics
            .iter()
            .filter(|diagnostic| diagnostic.severity == Severity::Error)
    }
}

/// What can go wrong talking to a checker.
#[derive(Debug, thiserror::Error)]
pub enum DiagnosticsError {
    #[error("cannot start {command}: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("{command}: {message}")]
    Protocol { command: String, message: String },
    #[error("{command} did not answer {method} within {seconds}s")]
    Timeout {
        command: String,
        method: String,
        seconds: u64,
    },
    #[error("{command} exited")]
    Exited { command: String },
    #[error("{command} failed: {message}")]
    Command { command: String, message: String },
    /// The program is a stand-in for a server that is not installed (rustup's proxy without
    /// its component): the message names what is missing and the fix, in one line.
    #[error("{0}")]
    NotInstalled(String),
}

/// The language a file is checked as, by its name (the LSP language id).
pub fn language_id(path: &Path) -> Option<&'static str> {
    use lode_syntax::Language;
    let jsx = |ext: &str| path.extension().is_some_and(|e| e == ext);
    Some(match Language::from_path(path)? {
        Language::Rust => "rust",
        Language::Python => "python",
        Language::TypeScript => "typescript",
        Language::Tsx => "typescriptreact",
        Language::JavaScript if jsx("jsx") => "javascriptreact",
        Language::JavaScript => "javascript",
        Language::Go => "go",
        Language::C => "c",
        Language::Cpp => "cpp",
        Language::Java => "java",
        Language::CSharp => "csharp",
        Language::Kotlin => "kotlin",
        Language::Swift => "swift",
        Language::Ruby => "ruby",
        Language::Php => "php",
        Language::Scala => "scala",
        Language::Lua => "lua",
        Language::Bash => "shellscript",
        Language::Zig => "zig",
        Language::Elixir => "elixir",
        Language::Haskell => "haskell",
        Language::OCaml => "ocaml",
        Language::Markdown | Language::Text => return None,
    })
}

/// The family a language id belongs to (one server serves the family).
pub fn language_family(language_id: &str) -> &'static str {
    match language_id {
        "rust" => "rust",
        "python" => "python",
        "typescript" | "typescriptreact" | "javascript" | "javascriptreact" => "typescript",
        "go" => "go",
        "c" | "cpp" => "c",
        "java" => "java",
        "csharp" => "csharp",
        "kotlin" => "kotlin",
        "swift" => "swift",
        "ruby" => "ruby",
        "php" => "php",
        "scala" => "scala",
        "lua" => "lua",
        "shellscript" => "bash",
        "zig" => "zig",
        "elixir" => "elixir",
        "haskell" => "haskell",
        "ocaml" => "ocaml",
        _ => "other",
    }
}

/// An executable on `PATH`, like `which`.
pub fn find_on_path(program: &str) -> Option<PathBuf> {
    let candidate = Path::new(program);
    if candidate.components().count() > 1 {
        return candidate.is_file().then(|| candidate.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|path| is_executable(path))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// Errors first, then warnings, then the rest; by position within a severity.
pub fn sort_diagnostics(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by_key(|d| (d.severity, d.line, d.column));
}
