//! `lode-policy`: the one permission decision — whether a tool call runs, is asked about, must
//! be asked about, or is refused — and what it rests on: the session [`Mode`], a POSIX-shell lexer
//! ([`shell`]), the built-in deny list and allowlist, configured rules ([`config`]), "always"
//! answers remembered in SQLite ([`store`]), and the resolution of model-given paths inside the
//! workspace ([`paths`]), so that rules and headless grants judge the file that would really be
//! touched.
//!
//! It knows nothing about agents, LLMs, editors or protocols: a caller describes a call as a
//! tool name and a [`PermissionTarget`] and gets a [`Decision`] back.
//!
//! Inputs are the tool's name, its [`PermissionTarget`] (what it reads, edits or runs) and the
//! session [`Mode`]. The order of judgement, first match wins:
//! 1. mode gating: in `ask` and `architect` only reads run;
//! 2. the built-in command deny list (`rm -rf /`, `sudo`, `mkfs`, piping a download into a
//!    shell, …), which nothing overrides;
//! 3. `deny` rules from the configuration and remembered "reject always" answers;
//! 4. **must-ask**: what only a person may approve, whatever the rules say — command
//!    substitution, backticks, `eval`, `exec`, nested shells, redirects into files, edits under
//!    `.git/` or `.lode/` (any depth, any root), paths the policy cannot place, explicit `ask`
//!    rules, and commands that run workspace code when commands run without the sandbox;
//! 5. `allow` rules, remembered "allow always" answers and the built-in allowlist — a command
//!    line is allowed only when every simple command in it is;
//! 6. the configured default for the kind of call (reads allow, edits and commands ask): a plain
//!    ask.
//!
//! Grants from outside the policy (a skill's `allowed-tools`, `--yes-to`) may only turn a plain
//! ask into allow ([`Decision::is_plain_ask`]); nothing lifts must-ask or deny.

pub mod config;
pub mod network;
pub mod outside;
pub mod paths;
pub mod shell;
pub mod store;
mod target;

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use globset::{GlobBuilder, GlobMatcher};
use serde::{Deserialize, Serialize};

pub use config::{Action, PermissionConfig, PermissionRule};
pub use shell::{CommandAnalysis, analyze};
pub use store::{PermissionStore, Remembered, RememberedRule};

pub use target::{PermissionAnswer, PermissionTarget};

use crate::paths::resolve_path;

/// The session mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Read-only: questions about the code, no changes.
    Ask,
    /// The default: reads, edits and commands, under the policy.
    #[default]
    Code,
    /// Read-only plus a plan: designs a change without making it.
    Architect,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Ask, Mode::Code, Mode::Architect];

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Ask => "ask",
            Mode::Code => "code",
            Mode::Architect => "architect",
        }
    }

    /// Whether tools with side effects (edits, commands) may run.
    pub fn allows_side_effects(self) -> bool {
        self == Mode::Code
    }

    /// A one-line description for mode pickers.
    pub fn description(self) -> &'static str {
        match self {
            Mode::Ask => "Answer questions about the code; read-only",
            Mode::Code => "Read, edit files and run commands, asking as the policy says",
            Mode::Architect => "Read and plan a change without making it",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = PermissionError;

    fn from_str(text: &str) -> Result<Mode, PermissionError> {
        match text.trim().to_ascii_lowercase().as_str() {
            "ask" => Ok(Mode::Ask),
            "code" => Ok(Mode::Code),
            "architect" => Ok(Mode::Architect),
            other => Err(PermissionError::UnknownMode(other.to_owned())),
        }
    }
}

/// The policy's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    Allow,
    /// Ask the user; an "always" answer is remembered under `always_pattern`.
    Ask {
        always_pattern: String,
        /// The command needs the network, which the sandbox refuses unless the user grants it
        /// for this call: the question offers "allow once with network".
        #[serde(default)]
        offer_network: bool,
        /// Only a person may answer: no skill grant, `--yes-to`, rule or remembered answer
        /// turns it into allow, and "allow always" is not offered (it would not be consulted).
        #[serde(default)]
        must_ask: bool,
        /// Why the call is asked about, in words.
        #[serde(default)]
        reason: String,
        /// What the policy judged: the resolved, workspace-relative paths of an edit, each simple
        /// command of a command line as the policy sees it (quotes removed, single spaces), or
        /// the tool's name. Headless grants match these, never a title.
        #[serde(default)]
        subjects: Vec<String>,
        #[serde(default)]
        subject_kind: SubjectKind,
    },
    Deny {
        reason: String,
    },
}

impl Decision {
    /// An ask that a grant from outside the policy (a skill's `allowed-tools`, `--yes-to`) may
    /// turn into allow: an ask, but not a must-ask.
    pub fn is_plain_ask(&self) -> bool {
        matches!(
            self,
            Decision::Ask {
                must_ask: false,
                ..
            }
        )
    }

    /// Only a person may approve this call.
    pub fn is_must_ask(&self) -> bool {
        matches!(self, Decision::Ask { must_ask: true, .. })
    }
}

/// What the subjects of a question are, and so how a pattern is matched against them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubjectKind {
    /// Workspace-relative paths, matched gitignore style (`src/**`, `*.lock`; `*` stops at `/`).
    Path,
    /// Simple commands, matched as plain globs (`cargo test*`; `*` matches anything).
    Command,
    /// The tool's name (MCP tools and other calls judged by name).
    #[default]
    Tool,
}

#[derive(Debug, thiserror::Error)]
pub enum PermissionError {
    #[error("unknown mode `{0}`; the modes are ask, code and architect")]
    UnknownMode(String),
    #[error("invalid permission pattern `{pattern}` for tool `{tool}`: {message}")]
    InvalidPattern {
        tool: String,
        pattern: String,
        message: String,
    },
    #[error("permission store {path}: {source}")]
    Store {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("cannot create {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Compiles a pattern: paths use gitignore-like anchoring (a pattern without `/` matches at any
/// depth, `*` stops at `/`); commands and tool names use plain globs (`*` matches anything).
fn compile(pattern: &str, kind: SubjectKind) -> Result<GlobMatcher, String> {
    let glob = match kind {
        SubjectKind::Path => {
            return lode_index::path_matcher(pattern).map_err(|error| error.to_string());
        }
        SubjectKind::Command | SubjectKind::Tool => GlobBuilder::new(pattern.trim())
            .literal_separator(false)
            .build(),
    };
    glob.map(|g| g.compile_matcher())
        .map_err(|error| error.to_string())
}

fn matches(pattern: &str, kind: SubjectKind, subject: &str) -> bool {
    // Patterns were validated at construction (config) or made by the policy (store); one that
    // does not compile matches nothing.
    compile(pattern, kind).is_ok_and(|matcher| matcher.is_match(subject))
}

/// Patterns that approve questions nobody is there to answer (`lode run --yes-to`, `lode ask
/// --yes-to`), matched against a question's subjects exactly as the policy matches its rules:
/// paths with the gitignore-style path matcher, commands and tool names as plain globs. Never
/// against a title.
#[derive(Debug, Clone, Default)]
pub struct HeadlessGrants {
    patterns: Vec<(String, GlobMatcher, GlobMatcher)>,
}

impl HeadlessGrants {
    /// Checks every pattern; a bad glob is an error naming it.
    pub fn new(patterns: &[String]) -> Result<HeadlessGrants, PermissionError> {
        let mut compiled = Vec::with_capacity(patterns.len());
        for pattern in patterns {
            let invalid = |message| PermissionError::InvalidPattern {
                tool: "--yes-to".to_owned(),
                pattern: pattern.clone(),
                message,
            };
            let path = compile(pattern, SubjectKind::Path).map_err(invalid)?;
            let command = compile(pattern, SubjectKind::Command).map_err(invalid)?;
            compiled.push((pattern.clone(), path, command));
        }
        Ok(HeadlessGrants { patterns: compiled })
    }

    /// Whether these patterns approve a question: it is not a must-ask, it has subjects, and
    /// every subject matches one of the patterns.
    pub fn approve(&self, must_ask: bool, kind: SubjectKind, subjects: &[String]) -> bool {
        !must_ask
            && !subjects.is_empty()
            && subjects.iter().all(|subject| {
                self.patterns.iter().any(|(_, path, command)| match kind {
                    SubjectKind::Path => path.is_match(subject),
                    SubjectKind::Command | SubjectKind::Tool => command.is_match(subject),
                })
            })
    }
}

/// Rule outcomes for one subject.
#[derive(Debug, Default)]
struct Verdict {
    deny: Option<String>,
    /// Why an `ask` rule asks, when one matched.
    ask: Option<String>,
    allow: bool,
}

/// The permission policy of one workspace.
#[derive(Clone)]
pub struct PermissionPolicy {
    config: PermissionConfig,
    roots: Vec<PathBuf>,
    store: Option<Arc<PermissionStore>>,
    /// Commands run confined by the sandbox. Without it, commands that run workspace code are
    /// always asked about, and read-only ones only run unasked on paths inside the workspace.
    sandboxed: bool,
}

impl PermissionPolicy {
    /// Builds the policy over remembered answers in `store`, checking every rule's pattern.
    pub fn new(
        config: PermissionConfig,
        store: Arc<PermissionStore>,
    ) -> Result<PermissionPolicy, PermissionError> {
        Ok(PermissionPolicy::without_store(config)?.with_store(store))
    }

    /// Builds the policy without remembered answers ("always" answers are then not kept).
    pub fn without_store(config: PermissionConfig) -> Result<PermissionPolicy, PermissionError> {
        for rule in &config.rules {
            if let Some(pattern) = &rule.pattern {
                // A pattern is matched against paths and command lines: it must compile as both.
                for kind in [SubjectKind::Path, SubjectKind::Command] {
                    compile(pattern, kind).map_err(|message| PermissionError::InvalidPattern {
                        tool: rule.tool.clone(),
                        pattern: pattern.clone(),
                        message,
                    })?;
                }
            }
        }
        Ok(PermissionPolicy {
            config,
            roots: Vec::new(),
            store: None,
            sandboxed: false,
        })
    }

    /// The workspace roots edited paths are resolved against (absolute paths, `..`, symlinks).
    pub fn with_roots(mut self, roots: Vec<PathBuf>) -> PermissionPolicy {
        self.roots = roots;
        self
    }

    /// Whether commands run inside the sandbox (see [`lode_sandbox::Sandbox::is_confined`]).
    pub fn with_sandbox(mut self, confined: bool) -> PermissionPolicy {
        self.sandboxed = confined;
        self
    }

    pub fn sandboxed(&self) -> bool {
        self.sandboxed
    }

    /// Remembered answers to consult and to record into.
    pub fn with_store(mut self, store: Arc<PermissionStore>) -> PermissionPolicy {
        self.store = Some(store);
        self
    }

    pub fn config(&self) -> &PermissionConfig {
        &self.config
    }

    pub fn store(&self) -> Option<&Arc<PermissionStore>> {
        self.store.as_ref()
    }

    /// Judges one tool call.
    pub fn decide(&self, tool: &str, target: &PermissionTarget, mode: Mode) -> Decision {
        if !mode.allows_side_effects() && *target != PermissionTarget::Read {
            return Decision::Deny {
                reason: format!(
                    "`{tool}` changes files or runs commands, and this session is in {mode} \
                     mode, which is read-only. Switch to code mode to let it run."
                ),
            };
        }
        match target {
            PermissionTarget::Read => self.decide_plain(tool, self.config.read),
            PermissionTarget::Other => self.decide_plain(tool, self.config.other),
            // A local, low-risk write of the agent's own store, in which memories are kept as
            // redacted, attributed notes and recalled only as untrusted context.
            PermissionTarget::Memory => self.decide_plain(tool, Action::Allow),
            PermissionTarget::Edit { paths } => self.decide_edit(tool, paths),
            PermissionTarget::Command { command } => self.decide_command(tool, command),
        }
    }

    /// Records the user's answer: "always" answers are remembered under `always_pattern`.
    pub fn record_answer(
        &self,
        tool: &str,
        always_pattern: &str,
        answer: PermissionAnswer,
    ) -> Result<(), PermissionError> {
        let decision = match answer {
            PermissionAnswer::AllowAlways => Remembered::Allow,
            PermissionAnswer::RejectAlways => Remembered::Deny,
            _ => return Ok(()),
        };
        match &self.store {
            Some(store) => store.remember(tool, always_pattern, decision),
            None => Ok(()),
        }
    }

    /// Remembers an "always" answer directly: `allow` true for allow, false for reject.
    pub fn remember(&self, tool: &str, pattern: &str, allow: bool) -> Result<(), PermissionError> {
        let answer = if allow {
            PermissionAnswer::AllowAlways
        } else {
            PermissionAnswer::RejectAlways
        };
        self.record_answer(tool, pattern, answer)
    }

    /// Config rules and remembered answers of `tool` matching `subject` (`None`: the call as a
    /// whole, matched only by rules without a pattern and remembered `*`).
    fn verdict(&self, tool: &str, kind: SubjectKind, subject: Option<&str>) -> Verdict {
        let mut verdict = Verdict::default();
        for rule in &self.config.rules {
            if rule.tool != "*" && rule.tool != tool {
                continue;
            }
            let hit = match (&rule.pattern, subject) {
                (None, _) => true,
                (Some(pattern), Some(subject)) => matches(pattern, kind, subject),
                (Some(pattern), None) => pattern.trim() == "*",
            };
            if !hit {
                continue;
            }
            match rule.action {
                Action::Deny => {
                    verdict.deny.get_or_insert_with(|| match &rule.pattern {
                        Some(pattern) => format!("denied by the permission rule `{pattern}`"),
                        None => format!("`{tool}` is denied by the permission rules"),
                    });
                }
                Action::Ask => {
                    verdict.ask.get_or_insert_with(|| match &rule.pattern {
                        Some(pattern) => format!("the permission rule `{pattern}` asks"),
                        None => format!("the permission rules ask about `{tool}`"),
                    });
                }
                Action::Allow => verdict.allow = true,
            }
        }
        // A store that cannot be read grants nothing; the question is asked instead.
        let remembered = self
            .store
            .as_ref()
            .and_then(|store| store.rules_for(tool).ok())
            .unwrap_or_default();
        for rule in remembered {
            let hit = match subject {
                Some(subject) => rule.pattern == subject || matches(&rule.pattern, kind, subject),
                None => rule.pattern == "*",
            };
            if !hit {
                continue;
            }
            match rule.decision {
                Remembered::Deny => {
                    verdict.deny.get_or_insert_with(|| {
                        format!("the user chose to always reject `{}`", rule.pattern)
                    });
                }
                Remembered::Allow => verdict.allow = true,
            }
        }
        verdict
    }

    /// The configured default for a call the rules did not settle: allow, a plain ask, or deny.
    fn by_default(action: Action, tool: &str, question: Question) -> Decision {
        match action {
            Action::Allow => Decision::Allow,
            Action::Ask => question.ask(None),
            Action::Deny => Decision::Deny {
                reason: format!("`{tool}` is denied by the permission defaults"),
            },
        }
    }

    fn decide_plain(&self, tool: &str, default: Action) -> Decision {
        let verdict = self.verdict(tool, SubjectKind::Command, None);
        if let Some(reason) = verdict.deny {
            return Decision::Deny { reason };
        }
        let question = Question {
            always_pattern: "*".to_owned(),
            offer_network: false,
            reason: format!("`{tool}` asks by default"),
            subjects: vec![tool.to_owned()],
            subject_kind: SubjectKind::Tool,
        };
        if verdict.ask.is_some() {
            return question.ask(verdict.ask);
        }
        if verdict.allow {
            return Decision::Allow;
        }
        Self::by_default(default, tool, question)
    }

    /// Workspace-relative form of an edited path, or why it is refused. A path the policy cannot
    /// place (no roots to resolve it against) comes back as `?path`.
    fn normalize_path(&self, path: &str) -> Result<String, String> {
        if self.roots.is_empty() {
            let cleaned = path.trim().trim_start_matches("./");
            if cleaned.starts_with('/') || cleaned.split('/').any(|part| part == "..") {
                // Without roots the path cannot be placed: no rule may judge it, so it is asked.
                return Ok(format!("?{cleaned}"));
            }
            return Ok(cleaned.to_owned());
        }
        resolve_path(&self.roots, path)
            .map(|resolved| resolved.display(&self.roots))
            .map_err(|error| error.message)
    }

    fn decide_edit(&self, tool: &str, paths: &[String]) -> Decision {
        let mut relative = Vec::with_capacity(paths.len());
        for path in paths {
            match self.normalize_path(path) {
                Ok(path) => relative.push(path),
                Err(reason) => return Decision::Deny { reason },
            }
        }
        let always_pattern = match relative.as_slice() {
            [single] => edit_always_pattern(single),
            _ => relative.first().cloned().unwrap_or_else(|| "*".to_owned()),
        };
        let question = Question {
            always_pattern,
            offer_network: false,
            reason: "edits ask by default".to_owned(),
            subjects: relative.clone(),
            subject_kind: SubjectKind::Path,
        };
        if relative.is_empty() {
            return question.ask(None);
        }
        let mut all_allowed = true;
        let mut must_ask = None;
        for path in &relative {
            let verdict = self.verdict(tool, SubjectKind::Path, Some(path));
            if let Some(reason) = verdict.deny {
                return Decision::Deny { reason };
            }
            if must_ask.is_none() {
                must_ask = if let Some(unplaced) = path.strip_prefix('?') {
                    Some(format!(
                        "`{unplaced}` cannot be placed inside the workspace, so no rule can judge it"
                    ))
                } else if is_protected_path(path) {
                    Some(format!(
                        "`{path}` is under .git/ or .lode/ (hooks and configuration run code or \
                         steer lode)"
                    ))
                } else {
                    verdict.ask
                };
            }
            all_allowed &= verdict.allow;
        }
        if must_ask.is_some() {
            return question.ask(must_ask);
        }
        if all_allowed {
            return Decision::Allow;
        }
        Self::by_default(self.config.edit, tool, question)
    }

    fn decide_command(&self, tool: &str, command: &str) -> Decision {
        let analysis = analyze(command);
        if let Some(reason) = &analysis.denied {
            return Decision::Deny {
                reason: format!("blocked by lode's built-in deny list: {reason}"),
            };
        }
        let subjects: Vec<String> = analysis.segments.iter().map(shell::Segment::text).collect();
        let whole = subjects.join(" ; ");
        if analysis.segments.is_empty() {
            // Nothing to run: the tool reports the empty command.
            return Decision::Allow;
        }
        // Deny rules see the whole line and each simple command.
        let whole_verdict = self.verdict(tool, SubjectKind::Command, Some(&whole));
        if let Some(reason) = whole_verdict.deny {
            return Decision::Deny { reason };
        }
        let mut verdicts = Vec::with_capacity(analysis.segments.len());
        for segment in &analysis.segments {
            let verdict = self.verdict(tool, SubjectKind::Command, Some(&segment.text()));
            if let Some(reason) = verdict.deny {
                return Decision::Deny { reason };
            }
            verdicts.push(verdict);
        }
        let builtin = |segment: &shell::Segment| {
            self.config.builtin_allowlist
                && match shell::allowlisted(segment, self.sandboxed) {
                    None => false,
                    Some(shell::Access::Harmless) => true,
                    // The sandbox refuses reads outside the workspace; without it, the
                    // arguments must all resolve inside.
                    Some(shell::Access::ReadsPaths) => {
                        self.sandboxed || !outside::reads_outside(segment, &self.roots)
                    }
                    Some(shell::Access::RunsCode) => self.sandboxed,
                }
        };
        let allowed = |index: usize| {
            let segment = &analysis.segments[index];
            let verdict = &verdicts[index];
            segment.writes_to.is_empty() && (verdict.allow || builtin(segment))
        };
        let first_unallowed = (0..analysis.segments.len()).find(|&index| !allowed(index));
        let always_pattern = match first_unallowed {
            Some(index) => command_always_pattern(&analysis.segments[index]),
            None => command_always_pattern(&analysis.segments[0]),
        };
        let question = Question {
            always_pattern,
            offer_network: self.sandboxed && analysis.segments.iter().any(network::needs_network),
            reason: analysis
                .hides_commands
                .clone()
                .unwrap_or_else(|| "commands ask by default".to_owned()),
            subjects,
            subject_kind: SubjectKind::Command,
        };
        // What only a person may approve, first reason first.
        let must_ask = analysis
            .needs_ask
            .clone()
            .or_else(|| {
                analysis.segments.iter().find_map(|segment| {
                    segment
                        .writes_to
                        .first()
                        .map(|file| format!("the command writes to the file `{file}`"))
                })
            })
            .or_else(|| whole_verdict.ask.clone())
            .or_else(|| verdicts.iter().find_map(|verdict| verdict.ask.clone()))
            .or_else(|| {
                (!self.sandboxed)
                    .then(|| {
                        analysis
                            .segments
                            .iter()
                            .find(|segment| shell::runs_workspace_code(segment))
                    })
                    .flatten()
                    .map(|segment| {
                        format!(
                            "`{}` runs the workspace's code, and commands run without the sandbox",
                            segment.text()
                        )
                    })
            });
        if must_ask.is_some() {
            return question.ask(must_ask);
        }
        if first_unallowed.is_none() {
            return Decision::Allow;
        }
        Self::by_default(self.config.command, tool, question)
    }

    /// Why a command line must be asked about even when rules allow it, if it must.
    pub fn forced_question(command: &str) -> Option<String> {
        analyze(command).needs_ask
    }
}

/// A question in the making: everything an ask carries but whether it is a must-ask.
struct Question {
    always_pattern: String,
    offer_network: bool,
    /// Why it is a plain ask (the default for the kind of call).
    reason: String,
    subjects: Vec<String>,
    subject_kind: SubjectKind,
}

impl Question {
    /// The ask: a must-ask when `must_ask` gives its reason, a plain ask otherwise.
    fn ask(self, must_ask: Option<String>) -> Decision {
        let (must_ask, reason) = match must_ask {
            Some(reason) => (true, reason),
            None => (false, self.reason),
        };
        Decision::Ask {
            always_pattern: self.always_pattern,
            offer_network: self.offer_network,
            must_ask,
            reason,
            subjects: self.subjects,
            subject_kind: self.subject_kind,
        }
    }
}

/// Edits under these directories are always asked about, at any depth and in every root: a
/// `.git/hooks` runs code (also in a nested repository or a vendored one), `.lode` holds the
/// agent's own state and configuration.
fn is_protected_path(path: &str) -> bool {
    path.split(['/', '\\'])
        .any(|part| part == ".git" || part == ".lode")
}

/// "Always" for an edit covers the file's directory (`src/**`), or the file itself at the root.
fn edit_always_pattern(path: &str) -> String {
    match path.rsplit_once('/') {
        Some((dir, _)) => format!("{}/**", globset::escape(dir)),
        None => format!("/{}", globset::escape(path)),
    }
}

/// Programs whose second word is a subcommand worth remembering (`cargo test*`).
const SUBCOMMAND_PROGRAMS: &[&str] = &[
    "cargo", "git", "npm", "pnpm", "yarn", "bun", "deno", "go", "make", "just", "docker",
    "kubectl", "uv", "pip", "pip3", "poetry", "mvn", "gradle", "dotnet", "bazel", "nix", "gh",
    "rustup", "pytest", "tox", "nox",
];
/// Subcommands that take a script name as the third word (`npm run test*`).
const RUN_SUBCOMMANDS: &[&str] = &["run", "exec", "x", "task"];

/// "Always" for a command covers the program and its subcommand, or the exact command.
fn command_always_pattern(segment: &shell::Segment) -> String {
    let words = &segment.words;
    if segment.env.is_empty()
        && let [program, sub, rest @ ..] = words.as_slice()
        && SUBCOMMAND_PROGRAMS.contains(&program.as_str())
        && !sub.starts_with('-')
    {
        let mut prefix = vec![program.as_str(), sub.as_str()];
        if RUN_SUBCOMMANDS.contains(&sub.as_str())
            && let Some(script) = rest.first()
            && !script.starts_with('-')
        {
            prefix.push(script);
        }
        let escaped: Vec<String> = prefix.iter().map(|w| globset::escape(w)).collect();
        return format!("{}*", escaped.join(" "));
    }
    globset::escape(&segment.text())
}
