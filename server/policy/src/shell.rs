//! Shell command-line analysis for the permission policy: a small POSIX-shell lexer that splits a
//! line into simple commands (segments) the way the shell would, removes quoting (so `"r"m` and
//! `\rm` are `rm`), notes redirects, and finds what cannot be judged statically (command and
//! process substitution, backticks, `eval`, `exec`, nested `sh -c`), which forces a question.
//!
//! On top of it sit the built-in deny list (commands nothing may allow) and the built-in
//! allowlist (harmless, common commands allowed without asking).

/// How a segment is joined to the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Joiner {
    /// First segment, `;`, `&&`, `||`, newline, or a grouping parenthesis.
    Sequence,
    /// `|` or `|&`: this segment reads the previous one's output.
    Pipe,
}

/// One lexed word.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Word {
    text: String,
    /// Some part was quoted or escaped.
    quoted: bool,
    /// Contains a `$` expansion (variable, substitution).
    expansion: bool,
}

/// One simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub joiner: Joiner,
    /// Leading `NAME=value` assignments.
    pub env: Vec<String>,
    /// The command and its arguments, quotes removed.
    pub words: Vec<String>,
    /// Files written by `>`, `>>`, `&>`… (not `/dev/null` or fd duplications).
    pub writes_to: Vec<String>,
    /// Files read by `<` (not here-documents).
    pub reads_from: Vec<String>,
    /// Whether any word of the command has a `$` expansion.
    pub has_expansion: bool,
    command_expansion: bool,
}

impl Segment {
    /// The segment as one normalised line (env, words, single spaces), what rules match.
    pub fn text(&self) -> String {
        self.env
            .iter()
            .chain(self.words.iter())
            .cloned()
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The command name with wrappers (`command`, `env`, `nohup`, `time`, …) skipped and any
    /// directory removed (`/bin/rm` is `rm`), and its arguments.
    pub fn effective(&self) -> (String, Vec<String>) {
        effective_command(&self.words)
    }
}

/// What the lexer found in one command line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CommandAnalysis {
    pub segments: Vec<Segment>,
    /// Why the built-in deny list refuses the line (nothing overrides this).
    pub denied: Option<String>,
    /// Why the line must be asked about even when a rule would allow it.
    pub needs_ask: Option<String>,
    /// Why the line is a (plain) question rather than allowed by the built-in list: it runs
    /// commands lode cannot see (a `Makefile` recipe, a package script, a git alias).
    pub hides_commands: Option<String>,
}

impl CommandAnalysis {
    fn ask(&mut self, reason: impl Into<String>) {
        if self.needs_ask.is_none() {
            self.needs_ask = Some(reason.into());
        }
    }

    fn note_hidden(&mut self, reason: impl Into<String>) {
        if self.hides_commands.is_none() {
            self.hides_commands = Some(reason.into());
        }
    }

    fn deny(&mut self, reason: impl Into<String>) {
        if self.denied.is_none() {
            self.denied = Some(reason.into());
        }
    }

    /// Whether the line is more than one simple command.
    pub fn is_compound(&self) -> bool {
        self.segments.len() > 1
    }
}

/// Most nesting of `sh -c` / substitutions analysed; deeper lines are denied.
const MAX_DEPTH: usize = 6;

/// Analyses a command line.
pub fn analyze(line: &str) -> CommandAnalysis {
    analyze_at(line, 0)
}

fn analyze_at(line: &str, depth: usize) -> CommandAnalysis {
    let mut analysis = CommandAnalysis::default();
    if depth > MAX_DEPTH {
        analysis.deny("the command nests shells and substitutions too deeply to check");
        return analysis;
    }
    // `${IFS}` is a space to the shell; say so before lexing, so `rm${IFS}-rf${IFS}/` is seen.
    let normalized = line
        .replace("${IFS}", " ")
        .replace("$IFS", " ")
        .replace('\t', " ");
    if is_fork_bomb(&normalized) {
        analysis.deny("a fork bomb");
        return analysis;
    }
    let lexed = Lexer::new(&normalized).run();
    analysis.segments = lexed.segments;
    for reason in lexed.ask_reasons {
        analysis.ask(reason);
    }
    // What runs inside substitutions is judged like the line itself.
    for inner in &lexed.substitutions {
        let nested = analyze_at(inner, depth + 1);
        if let Some(reason) = nested.denied {
            analysis.deny(reason);
        }
    }
    check_segments(&mut analysis, &lexed.substitutions, depth);
    analysis
}

/// The built-in deny list and the per-command reasons to ask.
fn check_segments(analysis: &mut CommandAnalysis, substitutions: &[String], depth: usize) {
    let segments = analysis.segments.clone();
    let mut pipeline_has_download = false;
    for segment in &segments {
        if segment.joiner == Joiner::Sequence {
            pipeline_has_download = false;
        }
        for target in &segment.writes_to {
            if is_block_device(target) {
                analysis.deny(format!("writes to the disk device {target}"));
            }
        }
        if segment.command_expansion {
            analysis.ask("the command name comes from a variable or substitution");
        }
        // `env -S 'LINE'` splits LINE into a command of its own.
        for pair in segment.words.windows(2) {
            if matches!(pair[0].as_str(), "-S" | "--split-string") {
                analysis.ask("runs a command line from `env -S`");
                let nested = analyze_at(&pair[1], depth + 1);
                if let Some(reason) = nested.denied {
                    analysis.deny(reason);
                }
            }
        }
        let (command, args) = segment.effective();
        if command.is_empty() {
            continue;
        }
        if let Some(reason) = deny_reason(&command, &args) {
            analysis.deny(reason);
        }
        if is_shell(&command) {
            if pipeline_has_download && segment.joiner == Joiner::Pipe {
                analysis.deny("pipes a download into a shell");
            }
            if substitutions.iter().any(|inner| mentions_download(inner)) {
                analysis.deny("runs a downloaded script in a shell");
            }
            if let Some(script) = inline_script(&args) {
                analysis.ask("runs a nested shell");
                let nested = analyze_at(&script, depth + 1);
                if let Some(reason) = nested.denied {
                    analysis.deny(reason);
                }
            } else if args.iter().all(|arg| arg.starts_with('-')) {
                // No script operand: the shell runs whatever reaches its input (`… | sh`,
                // `sh < file`, a here-document), which cannot be judged here.
                analysis.ask("runs shell commands from its input");
            }
        }
        if is_download(&command) {
            pipeline_has_download = true;
        }
        match command.as_str() {
            "eval" => analysis.ask("uses `eval`"),
            "exec" => analysis.ask("uses `exec`"),
            "source" | "." => analysis.ask("sources a script"),
            "xargs" | "parallel" => {
                analysis.ask("runs commands built from input");
                if let Some(inner) = xargs_command(&args) {
                    judge_inner(analysis, &inner, depth);
                }
            }
            "find" => {
                for inner in find_exec_commands(&args) {
                    analysis.ask(format!(
                        "runs `{}` for every file `find` finds",
                        inner.join(" ")
                    ));
                    judge_inner(analysis, &inner, depth);
                }
            }
            "git" => judge_git(analysis, &args, depth),
            "make" | "gmake" | "just" => analysis.note_hidden(format!(
                "`{command}` runs recipes from the project's build file, which lode's deny list \
                 cannot see"
            )),
            "npm" | "pnpm" | "yarn" | "bun"
                if args.first().is_some_and(|sub| {
                    matches!(sub.as_str(), "run" | "run-script" | "exec" | "x")
                }) =>
            {
                analysis.note_hidden(format!(
                    "`{command} {}` runs a script from package.json, which lode's deny list \
                     cannot see",
                    args.iter().take(2).cloned().collect::<Vec<_>>().join(" ")
                ));
            }
            _ => {}
        }
        // `.git/` runs code (hooks, config) and `.lode/` is lode's own state: a command naming a
        // path there, at any depth, is a person's decision, as an edit there is (the sandbox
        // mounts only each root's `.git/` and `.lode/` read-only).
        if args.iter().any(|arg| names_protected_dir(arg)) {
            analysis.ask("names a path under .git/ or .lode/");
        }
        // `rm -r $DIR/` with an empty DIR is `rm -r /`.
        if command == "rm" && segment.has_expansion && rm_is_recursive(&args) {
            analysis.ask("`rm -r` with a variable in its arguments");
        }
    }
}

/// Judges a command a wrapper runs (`find -exec`, `xargs`): the deny list applies to it as to
/// a command of its own, and a shell it runs has its script judged too.
fn judge_inner(analysis: &mut CommandAnalysis, words: &[String], depth: usize) {
    let (command, args) = effective_command(words);
    if command.is_empty() {
        return;
    }
    if let Some(reason) = deny_reason(&command, &args) {
        analysis.deny(reason);
    }
    if is_shell(&command)
        && let Some(script) = inline_script(&args)
    {
        let nested = analyze_at(&script, depth + 1);
        if let Some(reason) = nested.denied {
            analysis.deny(reason);
        }
    }
    if command == "git" {
        judge_git(analysis, &args, depth);
    }
}

/// The command `xargs` runs: the words after its options (`-n 1`, `-I {}`, `-0`, …).
fn xargs_command(args: &[String]) -> Option<Vec<String>> {
    const WITH_VALUE: &[&str] = &["-n", "-I", "-L", "-P", "-s", "-d", "-E", "-a", "-i", "-l"];
    let mut index = 0;
    while index < args.len() {
        let arg = &args[index];
        if arg == "--" {
            index += 1;
            break;
        }
        if !arg.starts_with('-') {
            break;
        }
        index += if WITH_VALUE.contains(&arg.as_str()) {
            2
        } else {
            1
        };
    }
    (index < args.len()).then(|| args[index..].to_vec())
}

/// The commands of `find … -exec CMD … ;` (also `-execdir`, `-ok`, `-okdir`, ended by `;` or
/// `+`).
fn find_exec_commands(args: &[String]) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if matches!(arg.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let inner: Vec<String> = iter
                .by_ref()
                .take_while(|word| *word != ";" && *word != "+")
                .cloned()
                .collect();
            if !inner.is_empty() {
                commands.push(inner);
            }
        }
    }
    commands
}

/// git configuration keys whose values are commands git runs.
fn git_key_runs_command(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key.starts_with("alias.")
        || key.starts_with("filter.")
        || key.starts_with("diff.") && (key.ends_with(".command") || key.ends_with(".textconv"))
        || key.starts_with("merge.") && key.ends_with(".driver")
        || key.starts_with("credential")
        || key.starts_with("gpg.")
        || key.starts_with("uploadpack.")
        || key.starts_with("receivepack.")
        || key.starts_with("remote.")
            && (key.ends_with(".uploadpack")
                || key.ends_with(".receivepack")
                || key.ends_with(".vcs"))
        || matches!(
            key.as_str(),
            "core.fsmonitor"
                | "core.sshcommand"
                | "core.pager"
                | "core.editor"
                | "core.askpass"
                | "core.hookspath"
                | "core.gitproxy"
                | "core.alternaterefscommand"
                | "diff.external"
                | "sequence.editor"
                | "pager.log"
                | "pager.diff"
                | "pager.show"
                | "pager.status"
                | "include.path"
        )
}

/// git's own subcommands (what an alias cannot shadow); any other is an alias or a
/// `git-<name>` program on PATH.
const GIT_COMMANDS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archive",
    "bisect",
    "blame",
    "branch",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "checkout",
    "cherry",
    "cherry-pick",
    "clean",
    "clone",
    "commit",
    "config",
    "count-objects",
    "describe",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "fetch",
    "for-each-ref",
    "format-patch",
    "fsck",
    "gc",
    "grep",
    "hash-object",
    "help",
    "init",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "merge",
    "merge-base",
    "mv",
    "notes",
    "pull",
    "push",
    "range-diff",
    "rebase",
    "reflog",
    "remote",
    "repack",
    "replace",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "shortlog",
    "show",
    "show-branch",
    "show-ref",
    "sparse-checkout",
    "stash",
    "status",
    "submodule",
    "switch",
    "symbolic-ref",
    "tag",
    "update-index",
    "update-ref",
    "var",
    "verify-commit",
    "verify-tag",
    "version",
    "whatchanged",
    "worktree",
    "write-tree",
];

/// `git -c KEY=VALUE …` that sets a command (a shell alias `alias.x=!…`, `core.fsmonitor`,
/// `core.sshCommand`, a filter…): a person's decision, and its shell command is judged by the
/// deny list. A subcommand that is not git's own may be an alias from the repository's
/// configuration, which lode cannot see.
fn judge_git(analysis: &mut CommandAnalysis, args: &[String], depth: usize) {
    let mut index = 0;
    while index < args.len() {
        let arg = &args[index];
        let setting = if arg == "-c" || arg == "--config-env" {
            index += 1;
            args.get(index).cloned()
        } else {
            arg.strip_prefix("-c")
                .filter(|rest| rest.contains('='))
                .map(str::to_owned)
        };
        if let Some(setting) = setting {
            let (key, value) = setting.split_once('=').unwrap_or((setting.as_str(), ""));
            if git_key_runs_command(key) {
                analysis.ask(format!(
                    "sets the git configuration `{key}`, which runs a command"
                ));
                let script = value.strip_prefix('!').unwrap_or(value);
                if !script.is_empty() {
                    let nested = analyze_at(script, depth + 1);
                    if let Some(reason) = nested.denied {
                        analysis.deny(reason);
                    }
                }
            }
            index += 1;
            continue;
        }
        if arg.starts_with('-') {
            // Global options with a separate value.
            if matches!(
                arg.as_str(),
                "-C" | "--git-dir" | "--work-tree" | "--namespace"
            ) {
                index += 1;
            }
            index += 1;
            continue;
        }
        if !GIT_COMMANDS.contains(&arg.as_str()) {
            analysis.note_hidden(format!(
                "`git {arg}` is not one of git's own commands: it may be an alias from the \
                 repository's configuration, which lode's deny list cannot see"
            ));
        }
        break;
    }
}

/// Whether a word names `.git` or `.lode` as a path component (`vendor/x/.git/hooks/y`,
/// `--git-dir=sub/.git`, `.lode`); `.gitignore` and `.github/` do not.
fn names_protected_dir(word: &str) -> bool {
    let path = match word.split_once('=') {
        Some((option, value)) if option.starts_with('-') => value,
        _ => word,
    };
    path.split(['/', '\\'])
        .any(|part| part == ".git" || part == ".lode")
}

/// Commands nothing may allow, with the reason.
fn deny_reason(command: &str, args: &[String]) -> Option<String> {
    match command {
        "sudo" | "doas" | "su" | "pkexec" | "run0" => {
            return Some(format!("`{command}` runs commands as another user"));
        }
        "shutdown" | "reboot" | "halt" | "poweroff" => {
            return Some(format!("`{command}` stops the machine"));
        }
        "init" | "telinit" if args.iter().any(|a| a == "0" || a == "6") => {
            return Some("changes the machine's run level".into());
        }
        "systemctl"
            if args.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "poweroff" | "reboot" | "halt" | "kexec" | "suspend" | "hibernate"
                )
            }) =>
        {
            return Some("`systemctl` stops the machine".into());
        }
        "mke2fs" | "mkswap" | "wipefs" | "fdisk" | "sfdisk" | "parted" | "mkdosfs" => {
            return Some(format!("`{command}` formats or repartitions disks"));
        }
        "dd" if args.iter().any(|a| {
            a.strip_prefix("of=")
                .is_some_and(|target| target.starts_with("/dev/") && !is_harmless_device(target))
        }) =>
        {
            return Some("`dd` writes to a device".into());
        }
        "rm" => {
            if args.iter().any(|a| a == "--no-preserve-root") {
                return Some("`rm --no-preserve-root`".into());
            }
            if rm_is_recursive(args)
                && let Some(target) = operands(args).find(|t| is_precious_path(t))
            {
                return Some(format!("`rm -r` of {target}"));
            }
        }
        "chmod" | "chown" | "chgrp" => {
            let recursive = args
                .iter()
                .any(|a| a == "--recursive" || (is_short_flags(a) && a.contains('R')));
            if let Some(target) = operands(args).find(|t| is_precious_path(t))
                && (recursive || is_root(t_trim(target)))
            {
                return Some(format!("`{command}` of {target}"));
            }
        }
        "shred" | "tee" | "cp" | "mv" | "install" => {
            if let Some(target) = args.iter().find(|a| is_block_device(a)) {
                return Some(format!("`{command}` writes to the disk device {target}"));
            }
        }
        _ => {}
    }
    if command.starts_with("mkfs") {
        return Some(format!("`{command}` formats disks"));
    }
    None
}

fn t_trim(path: &str) -> &str {
    path.trim_end_matches(['/', '*', '.'])
}

fn is_root(trimmed: &str) -> bool {
    trimmed.is_empty()
}

fn is_short_flags(arg: &str) -> bool {
    arg.starts_with('-') && !arg.starts_with("--") && arg.len() > 1
}

fn rm_is_recursive(args: &[String]) -> bool {
    args.iter()
        .take_while(|a| *a != "--")
        .any(|a| a == "--recursive" || (is_short_flags(a) && (a.contains('r') || a.contains('R'))))
}

/// Non-flag arguments (everything after `--` counts as an operand).
fn operands(args: &[String]) -> impl Iterator<Item = &String> {
    let mut after_dashes = false;
    args.iter().filter(move |a| {
        if after_dashes {
            return true;
        }
        if *a == "--" {
            after_dashes = true;
            return false;
        }
        !a.starts_with('-')
    })
}

/// `/`, the home directory, top-level system directories, the parent directory.
fn is_precious_path(path: &str) -> bool {
    let path = path.trim();
    let home_forms = ["~", "$HOME", "${HOME}"];
    for home in home_forms {
        if let Some(rest) = path.strip_prefix(home)
            && t_trim(rest).is_empty()
        {
            return true;
        }
    }
    if matches!(path, ".." | "../" | "../*" | "../." | "/..") {
        return true;
    }
    if is_a_home(t_trim(path)) {
        return true;
    }
    let trimmed = t_trim(path);
    if path.starts_with('/') && is_root(trimmed) {
        return true;
    }
    const SYSTEM: &[&str] = &[
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/home",
        "/lib",
        "/lib32",
        "/lib64",
        "/opt",
        "/proc",
        "/root",
        "/sbin",
        "/srv",
        "/sys",
        "/usr",
        "/var",
        "/Users",
        "/System",
        "/Library",
        "/Applications",
        "/mnt",
        "/media",
        "/snap",
    ];
    SYSTEM.contains(&trimmed)
}

/// Every user's home by its absolute path (`/home/alice`, `/root`, `/Users/bob`, the running
/// user's `$HOME` wherever it is) and `~alice`: protected like `~`.
fn is_a_home(trimmed: &str) -> bool {
    if trimmed.is_empty() {
        return false;
    }
    let parts: Vec<&str> = trimmed.trim_start_matches('/').split('/').collect();
    let by_layout = trimmed.starts_with('/')
        && match parts.as_slice() {
            ["root"] => true,
            ["home" | "Users" | "var/home", name] => !name.is_empty(),
            ["var", "home", name] => !name.is_empty(),
            _ => false,
        };
    let tilde_user = trimmed.starts_with('~') && !trimmed.contains('/');
    let own_home = std::env::var("HOME")
        .ok()
        .map(|home| home.trim_end_matches('/').to_owned())
        .is_some_and(|home| !home.is_empty() && home == trimmed);
    by_layout || tilde_user || own_home
}

fn is_harmless_device(path: &str) -> bool {
    matches!(
        path,
        "/dev/null"
            | "/dev/stdout"
            | "/dev/stderr"
            | "/dev/tty"
            | "/dev/zero"
            | "/dev/fd/1"
            | "/dev/fd/2"
    )
}

/// Disk devices (`/dev/sda`, `/dev/nvme0n1`, …).
pub fn is_block_device(path: &str) -> bool {
    let Some(name) = path.strip_prefix("/dev/") else {
        return false;
    };
    [
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "mapper/", "md", "dm-", "loop", "rdisk",
    ]
    .iter()
    .any(|prefix| name.starts_with(prefix))
}

fn is_shell(command: &str) -> bool {
    matches!(
        command,
        "sh" | "bash"
            | "zsh"
            | "dash"
            | "ksh"
            | "fish"
            | "csh"
            | "tcsh"
            | "ash"
            | "busybox"
            | "python"
            | "python3"
            | "perl"
            | "ruby"
            | "node"
            | "php"
            | "pwsh"
    )
}

fn is_download(command: &str) -> bool {
    matches!(
        command,
        "curl" | "wget" | "fetch" | "aria2c" | "http" | "https" | "xh"
    )
}

fn mentions_download(text: &str) -> bool {
    let analysis = Lexer::new(text).run();
    analysis
        .segments
        .iter()
        .any(|segment| is_download(&segment.effective().0))
}

/// The script of `sh -c SCRIPT` (also `bash -lc`, `-ec` …).
fn inline_script(args: &[String]) -> Option<String> {
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if is_short_flags(arg) && arg.contains('c') {
            return iter.next().cloned();
        }
        if !arg.starts_with('-') {
            return None;
        }
    }
    None
}

/// Skips wrappers that run their arguments as a command.
fn effective_command(words: &[String]) -> (String, Vec<String>) {
    let mut index = 0;
    while index < words.len() {
        let name = basename(&words[index]);
        let rest = &words[index + 1..];
        let skip = match name.as_str() {
            "command" | "builtin" | "nohup" | "time" | "stdbuf" | "setsid" | "unbuffer" => {
                1 + rest.iter().take_while(|a| a.starts_with('-')).count()
            }
            "env" => {
                let mut skip = 1;
                let mut it = rest.iter();
                while let Some(a) = it.next() {
                    if matches!(a.as_str(), "-u" | "--unset" | "-C" | "--chdir") {
                        skip += 2;
                        it.next();
                    } else if a.starts_with('-') || is_assignment(a) {
                        skip += 1;
                    } else {
                        break;
                    }
                }
                skip
            }
            "nice" | "ionice" => {
                let mut skip = 1;
                let mut it = rest.iter();
                while let Some(a) = it.next() {
                    if a == "-n" || a == "-c" {
                        skip += 2;
                        it.next();
                    } else if a.starts_with('-') {
                        skip += 1;
                    } else {
                        break;
                    }
                }
                skip
            }
            "timeout" => {
                let mut skip = 1;
                let mut it = rest.iter();
                while let Some(a) = it.next() {
                    if matches!(a.as_str(), "-s" | "--signal" | "-k" | "--kill-after") {
                        skip += 2;
                        it.next();
                    } else if a.starts_with('-') {
                        skip += 1;
                    } else {
                        break;
                    }
                }
                // The duration follows the options.
                skip + usize::from(rest.len() >= skip)
            }
            _ => 0,
        };
        if skip == 0 {
            return (name, words[index + 1..].to_vec());
        }
        index += skip;
    }
    (String::new(), Vec::new())
}

fn basename(word: &str) -> String {
    word.rsplit('/').next().unwrap_or(word).to_owned()
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// `:(){ :|:& };:` and renamed variants: a function that pipes itself into itself in the
/// background.
fn is_fork_bomb(line: &str) -> bool {
    let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    let mut search = 0;
    while let Some(found) = compact[search..].find("(){") {
        let start = search + found;
        let name: String = compact[..start]
            .chars()
            .rev()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':' || *c == '.')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        if !name.is_empty() {
            let body = &compact[start..];
            if body.contains(&format!("{name}|{name}&"))
                || body.contains(&format!("{name}&{name}&"))
            {
                return true;
            }
        }
        search = start + 3;
    }
    false
}

/// What the lexer produced.
struct Lexed {
    segments: Vec<Segment>,
    substitutions: Vec<String>,
    ask_reasons: Vec<String>,
}

struct Lexer {
    chars: Vec<char>,
    position: usize,
    segments: Vec<Segment>,
    substitutions: Vec<String>,
    ask_reasons: Vec<String>,
    words: Vec<Word>,
    writes_to: Vec<String>,
    reads_from: Vec<String>,
    joiner: Joiner,
    word: Option<Word>,
    /// The next word is the target of a redirect: `Some(true)` for a write.
    pending_redirect: Option<bool>,
    /// The next word is a here-document delimiter (`true`: `<<-`, leading tabs stripped).
    pending_heredoc: Option<bool>,
    /// Here-documents whose bodies start after the current line: (delimiter, strip tabs).
    heredocs: Vec<(String, bool)>,
}

impl Lexer {
    fn new(source: &str) -> Self {
        Lexer {
            chars: source.chars().collect(),
            position: 0,
            segments: Vec::new(),
            substitutions: Vec::new(),
            ask_reasons: Vec::new(),
            words: Vec::new(),
            writes_to: Vec::new(),
            reads_from: Vec::new(),
            joiner: Joiner::Sequence,
            word: None,
            pending_redirect: None,
            pending_heredoc: None,
            heredocs: Vec::new(),
        }
    }

    fn peek(&self, offset: usize) -> Option<char> {
        self.chars.get(self.position + offset).copied()
    }

    fn word(&mut self) -> &mut Word {
        self.word.get_or_insert_with(|| Word {
            text: String::new(),
            quoted: false,
            expansion: false,
        })
    }

    fn ask(&mut self, reason: &str) {
        self.ask_reasons.push(reason.to_owned());
    }

    fn finish_word(&mut self) {
        let Some(word) = self.word.take() else {
            return;
        };
        match self.pending_redirect.take() {
            Some(true) => {
                if word.expansion {
                    self.ask("redirects output to a file named by a variable");
                }
                if !is_harmless_device(&word.text) {
                    self.writes_to.push(word.text);
                }
            }
            Some(false) => {
                if let Some(strip_tabs) = self.pending_heredoc.take() {
                    self.heredocs.push((word.text, strip_tabs));
                } else {
                    self.reads_from.push(word.text);
                }
            }
            None => {
                // Brace groups are just grouping.
                if !word.quoted && (word.text == "{" || word.text == "}" || word.text == "!") {
                    return;
                }
                self.words.push(word);
            }
        }
    }

    fn finish_segment(&mut self, next: Joiner) {
        self.finish_word();
        if self.pending_redirect.take().is_some() {
            self.ask("a redirect without a target");
        }
        let words = std::mem::take(&mut self.words);
        let writes_to = std::mem::take(&mut self.writes_to);
        let reads_from = std::mem::take(&mut self.reads_from);
        if !words.is_empty() || !writes_to.is_empty() {
            let assignments = words.iter().take_while(|w| is_assignment(&w.text)).count();
            let command_expansion = words.get(assignments).is_some_and(|w| w.expansion);
            self.segments.push(Segment {
                joiner: self.joiner,
                env: words[..assignments]
                    .iter()
                    .map(|w| w.text.clone())
                    .collect(),
                has_expansion: words[assignments..].iter().any(|w| w.expansion),
                command_expansion,
                words: words[assignments..]
                    .iter()
                    .map(|w| w.text.clone())
                    .collect(),
                writes_to,
                reads_from,
            });
        }
        self.joiner = next;
    }

    /// Skips the bodies of the here-documents opened on the line just ended: they are the
    /// commands' input, not commands (the line already forces a question).
    fn skip_heredoc_bodies(&mut self) {
        for (delimiter, strip_tabs) in std::mem::take(&mut self.heredocs) {
            loop {
                if self.position >= self.chars.len() {
                    return;
                }
                let mut line = String::new();
                while let Some(c) = self.peek(0) {
                    self.position += 1;
                    if c == '\n' {
                        break;
                    }
                    line.push(c);
                }
                let line = if strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line.as_str()
                };
                if line.trim_end_matches('\r') == delimiter {
                    break;
                }
            }
        }
    }

    /// Reads a balanced `(...)` body starting after the opening parenthesis; returns the inner
    /// text.
    fn read_balanced(&mut self) -> String {
        let mut depth = 1usize;
        let mut inner = String::new();
        let mut quote: Option<char> = None;
        while let Some(c) = self.peek(0) {
            self.position += 1;
            match (quote, c) {
                (None, '\\') | (Some('"'), '\\') => {
                    inner.push(c);
                    if let Some(next) = self.peek(0) {
                        inner.push(next);
                        self.position += 1;
                    }
                    continue;
                }
                (None, '\'') | (None, '"') => quote = Some(c),
                (Some(q), c) if c == q => quote = None,
                (None, '(') => depth += 1,
                (None, ')') => {
                    depth -= 1;
                    if depth == 0 {
                        return inner;
                    }
                }
                _ => {}
            }
            inner.push(c);
        }
        self.ask("an unclosed parenthesis");
        inner
    }

    fn read_backticks(&mut self) -> String {
        let mut inner = String::new();
        while let Some(c) = self.peek(0) {
            self.position += 1;
            match c {
                '\\' => {
                    if let Some(next) = self.peek(0) {
                        inner.push(next);
                        self.position += 1;
                    }
                }
                '`' => return inner,
                _ => inner.push(c),
            }
        }
        self.ask("an unclosed backtick");
        inner
    }

    /// Handles `$` at the current position (already consumed).
    fn dollar(&mut self) {
        match self.peek(0) {
            Some('(') => {
                self.position += 1;
                let inner = self.read_balanced();
                self.ask("uses command substitution `$(…)`");
                self.substitutions
                    .push(inner.trim_start_matches('(').to_owned());
                let word = self.word();
                word.text.push_str("$(…)");
                word.expansion = true;
            }
            Some('\'') => {
                // ANSI-C quoting can spell any byte: `$'\x72m'` is `rm`.
                self.position += 1;
                self.ask("uses `$'…'` quoting");
                let word = self.word();
                word.quoted = true;
                word.expansion = true;
                while let Some(c) = self.peek(0) {
                    self.position += 1;
                    if c == '\\' {
                        self.position += 1;
                        continue;
                    }
                    if c == '\'' {
                        break;
                    }
                    self.word().text.push(c);
                }
            }
            Some('{') => {
                self.position += 1;
                let mut name = String::from("${");
                while let Some(c) = self.peek(0) {
                    self.position += 1;
                    name.push(c);
                    if c == '}' {
                        break;
                    }
                }
                let word = self.word();
                word.text.push_str(&name);
                word.expansion = true;
            }
            Some(c) if c.is_ascii_alphanumeric() || "_@*#?$!-".contains(c) => {
                let mut name = String::from("$");
                if c.is_ascii_alphabetic() || c == '_' {
                    while let Some(c) = self.peek(0) {
                        if c.is_ascii_alphanumeric() || c == '_' {
                            name.push(c);
                            self.position += 1;
                        } else {
                            break;
                        }
                    }
                } else {
                    name.push(c);
                    self.position += 1;
                }
                let word = self.word();
                word.text.push_str(&name);
                word.expansion = true;
            }
            _ => self.word().text.push('$'),
        }
    }

    fn run(mut self) -> Lexed {
        while let Some(c) = self.peek(0) {
            self.position += 1;
            match c {
                ' ' | '\r' => self.finish_word(),
                '\n' => {
                    self.finish_segment(Joiner::Sequence);
                    self.skip_heredoc_bodies();
                }
                '\\' => self.escaped(),
                '\'' => self.single_quoted(),
                '"' => self.double_quoted(),
                '$' => self.dollar(),
                '`' => self.backtick_substitution(),
                ';' => self.finish_segment(Joiner::Sequence),
                '&' => self.ampersand(),
                '|' => self.bar(),
                '(' => self.finish_segment(Joiner::Sequence),
                ')' => self.finish_segment(Joiner::Sequence),
                '<' | '>' if self.peek(0) == Some('(') => self.process_substitution(),
                '>' | '<' => self.redirect(c),
                _ => self.word().text.push(c),
            }
        }
        self.finish_segment(Joiner::Sequence);
        Lexed {
            segments: self.segments,
            substitutions: self.substitutions,
            ask_reasons: self.ask_reasons,
        }
    }

    /// `\` outside quotes (already consumed): the next character, quoted; a line continuation
    /// joins the lines.
    fn escaped(&mut self) {
        match self.peek(0) {
            Some('\n') => {}
            Some(next) => {
                let word = self.word();
                word.text.push(next);
                word.quoted = true;
            }
            None => {}
        }
        self.position += 1;
    }

    /// `'…'` (the opening quote already consumed): every character literal.
    fn single_quoted(&mut self) {
        self.word().quoted = true;
        let mut closed = false;
        while let Some(c) = self.peek(0) {
            self.position += 1;
            if c == '\'' {
                closed = true;
                break;
            }
            self.word().text.push(c);
        }
        if !closed {
            self.ask("an unclosed quote");
        }
    }

    /// `"…"` (the opening quote already consumed): escapes, `$` expansions and backticks
    /// still count.
    fn double_quoted(&mut self) {
        self.word().quoted = true;
        let mut closed = false;
        while let Some(c) = self.peek(0) {
            self.position += 1;
            match c {
                '"' => {
                    closed = true;
                    break;
                }
                '\\' => {
                    if let Some(next) = self.peek(0) {
                        self.position += 1;
                        if !"\"\\$`\n".contains(next) {
                            self.word().text.push('\\');
                        }
                        if next != '\n' {
                            self.word().text.push(next);
                        }
                    }
                }
                '$' => self.dollar(),
                '`' => self.backtick_substitution(),
                _ => self.word().text.push(c),
            }
        }
        if !closed {
            self.ask("an unclosed quote");
        }
    }

    /// `` `…` `` (the opening backtick already consumed), inside double quotes or not.
    fn backtick_substitution(&mut self) {
        let inner = self.read_backticks();
        self.ask("uses backtick command substitution");
        self.substitutions.push(inner);
        let word = self.word();
        word.text.push_str("`…`");
        word.expansion = true;
    }

    /// `&` (already consumed): `&&`, `&>` / `&>>` (both streams to a file), or a background job.
    fn ampersand(&mut self) {
        match self.peek(0) {
            Some('&') => {
                self.position += 1;
                self.finish_segment(Joiner::Sequence);
            }
            Some('>') => {
                self.finish_word();
                self.position += 1;
                if self.peek(0) == Some('>') {
                    self.position += 1;
                }
                self.pending_redirect = Some(true);
            }
            _ => {
                self.ask("runs a command in the background");
                self.finish_segment(Joiner::Sequence);
            }
        }
    }

    /// `|` (already consumed): `||`, `|&` (a pipe of both streams) or a pipe.
    fn bar(&mut self) {
        match self.peek(0) {
            Some('|') => {
                self.position += 1;
                self.finish_segment(Joiner::Sequence);
            }
            Some('&') => {
                self.position += 1;
                self.finish_segment(Joiner::Pipe);
            }
            _ => self.finish_segment(Joiner::Pipe),
        }
    }

    /// `<(…)` / `>(…)` (the `<` or `>` already consumed, at the `(`).
    fn process_substitution(&mut self) {
        self.position += 1;
        let inner = self.read_balanced();
        self.ask("uses process substitution");
        self.substitutions.push(inner);
        let word = self.word();
        word.text.push_str("<(…)");
        word.expansion = true;
    }

    /// `>` or `<` (already consumed, as `c`): a redirect, a descriptor duplication, or a
    /// here-document.
    fn redirect(&mut self, c: char) {
        // `2>` / `1>`: the digits were the fd, not a word.
        if let Some(word) = &self.word
            && !word.quoted
            && !word.text.is_empty()
            && word.text.chars().all(|c| c.is_ascii_digit())
        {
            self.word = None;
        }
        self.finish_word();
        if c == '>' {
            self.output_redirect();
        } else {
            self.input_redirect();
        }
    }

    /// After `>`: `>>`, `>|`, `>&2` (duplicates a descriptor, no file) or `>&file`.
    fn output_redirect(&mut self) {
        match self.peek(0) {
            Some('>') | Some('|') => self.position += 1,
            Some('&') => {
                // `>&2`: duplicate a descriptor; `>&file` writes a file.
                self.position += 1;
                let digits = self.peek(0).is_some_and(|d| d.is_ascii_digit() || d == '-');
                if digits {
                    while self.peek(0).is_some_and(|d| d.is_ascii_digit() || d == '-') {
                        self.position += 1;
                    }
                    return;
                }
            }
            _ => {}
        }
        self.pending_redirect = Some(true);
    }

    /// After `<`: `<<<` (a here-string), `<<` / `<<-` (a here-document), `<&N` (duplicates a
    /// descriptor, no file) or a plain input redirect.
    fn input_redirect(&mut self) {
        match self.peek(0) {
            Some('<') => {
                self.position += 1;
                if self.peek(0) == Some('<') {
                    self.position += 1;
                } else {
                    self.ask("uses a here-document");
                    let strip_tabs = self.peek(0) == Some('-');
                    if strip_tabs {
                        self.position += 1;
                    }
                    self.pending_heredoc = Some(strip_tabs);
                }
            }
            Some('&') => {
                self.position += 1;
                while self.peek(0).is_some_and(|d| d.is_ascii_digit() || d == '-') {
                    self.position += 1;
                }
                return;
            }
            _ => {}
        }
        self.pending_redirect = Some(false);
    }
}

/// What an allowlisted command touches, which decides when it may run without a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads nothing of note (`echo`, `pwd`, `which`).
    Harmless,
    /// Reads the files its arguments name: without the sandbox only when they all resolve
    /// inside the workspace.
    ReadsPaths,
    /// Runs the workspace's code or programs its configuration names (`cargo test` runs
    /// `build.rs` and tests; git runs hooks, filters and `core.fsmonitor`): without a prompt
    /// only inside the sandbox.
    RunsCode,
}

/// One entry of the built-in allowlist: a command prefix (words) and what disqualifies it.
struct AllowEntry {
    prefix: &'static [&'static str],
    /// Arguments (exact, or prefixes ending in `=`) that make the command unsafe.
    forbidden: &'static [&'static str],
    /// Arguments that must be present.
    required: &'static [&'static str],
    access: Access,
    /// Arguments that follow symbolic links out of the workspace: refused without the sandbox.
    unconfined_forbidden: &'static [&'static str],
}

const ALLOWLIST: &[AllowEntry] = &[
    AllowEntry {
        prefix: &["cargo", "check"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["cargo", "test"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["cargo", "build"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["cargo", "clippy"],
        forbidden: &["--fix"],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["cargo", "fmt"],
        forbidden: &[],
        required: &["--check"],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["cargo", "metadata"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["cargo", "tree"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["git", "status"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["git", "diff"],
        forbidden: &["--output", "--output=", "--ext-diff"],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["git", "log"],
        forbidden: &["--output", "--output=", "--ext-diff"],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["git", "show"],
        forbidden: &["--output", "--output=", "--ext-diff"],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["git", "blame"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["git", "ls-files"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["git", "rev-parse"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["ls"],
        forbidden: &[],
        required: &[],
        access: Access::ReadsPaths,
        unconfined_forbidden: &["-L", "--dereference"],
    },
    AllowEntry {
        prefix: &["pwd"],
        forbidden: &[],
        required: &[],
        access: Access::Harmless,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["rg"],
        forbidden: &["--pre", "--pre=", "--pre-glob", "--pre-glob="],
        required: &[],
        access: Access::ReadsPaths,
        unconfined_forbidden: &["-L", "--follow"],
    },
    AllowEntry {
        prefix: &["grep"],
        forbidden: &[],
        required: &[],
        access: Access::ReadsPaths,
        unconfined_forbidden: &["-R", "--dereference-recursive"],
    },
    AllowEntry {
        prefix: &["wc"],
        forbidden: &[],
        required: &[],
        access: Access::ReadsPaths,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["head"],
        forbidden: &[],
        required: &[],
        access: Access::ReadsPaths,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["tail"],
        forbidden: &[],
        required: &[],
        access: Access::ReadsPaths,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["cat"],
        forbidden: &[],
        required: &[],
        access: Access::ReadsPaths,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["echo"],
        forbidden: &[],
        required: &[],
        access: Access::Harmless,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["which"],
        forbidden: &[],
        required: &[],
        access: Access::Harmless,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["tree"],
        forbidden: &["-o"],
        required: &[],
        access: Access::ReadsPaths,
        unconfined_forbidden: &["-l"],
    },
    AllowEntry {
        prefix: &["find"],
        forbidden: &[
            "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
            "-fls",
        ],
        required: &[],
        access: Access::ReadsPaths,
        unconfined_forbidden: &["-L", "-follow", "-H"],
    },
    AllowEntry {
        prefix: &["cargo", "nextest", "run"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["cargo", "bench"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["cargo", "doc"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["npm", "test"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["npm", "run", "test"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["pnpm", "test"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["pnpm", "run", "test"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["yarn", "test"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["npx", "tsc"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["tsc"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["go", "test"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["go", "build"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["go", "vet"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["pytest"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["python", "-m", "pytest"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["python3", "-m", "pytest"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["python", "-m", "unittest"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["python3", "-m", "unittest"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["mypy"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["ruff", "check"],
        forbidden: &["--fix"],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
    AllowEntry {
        prefix: &["ctest"],
        forbidden: &[],
        required: &[],
        access: Access::RunsCode,
        unconfined_forbidden: &[],
    },
];

/// The built-in allowlist as text, for documentation and `lode config`.
pub fn allowlist_prefixes() -> Vec<String> {
    ALLOWLIST
        .iter()
        .map(|entry| entry.prefix.join(" "))
        .collect()
}

/// Whether one segment is on the built-in allowlist, and what it touches: its words start with
/// an allowed prefix, with no forbidden argument, no environment assignments, no expansions and
/// no writes. `confined`: commands run in the sandbox (else symlink-following flags refuse too).
pub fn allowlisted(segment: &Segment, confined: bool) -> Option<Access> {
    if !segment.env.is_empty() || segment.has_expansion || !segment.writes_to.is_empty() {
        return None;
    }
    let has = |bad: &&str, arg: &String| {
        if bad.ends_with('=') {
            arg.starts_with(bad)
        } else {
            arg == bad
        }
    };
    ALLOWLIST
        .iter()
        .find(|entry| {
            entry.prefix.len() <= segment.words.len()
                && entry
                    .prefix
                    .iter()
                    .zip(&segment.words)
                    .all(|(want, word)| want == word)
                && !segment.words[entry.prefix.len()..].iter().any(|arg| {
                    entry.forbidden.iter().any(|bad| has(bad, arg))
                        || (!confined && entry.unconfined_forbidden.iter().any(|bad| has(bad, arg)))
                })
                && entry
                    .required
                    .iter()
                    .all(|need| segment.words.iter().any(|arg| arg == need))
        })
        .map(|entry| entry.access)
}

/// Programs that run code from the workspace they are started in: build tools and test runners
/// (build scripts, proc macros, tests, `Makefile` recipes), git (hooks, filters,
/// `core.fsmonitor`), package managers (install and run scripts), and interpreters and shells
/// (which run whatever script they are given).
const WORKSPACE_CODE_RUNNERS: &[&str] = &[
    "cargo", "rustc", "git", "npm", "npx", "pnpm", "pnpx", "yarn", "bun", "bunx", "deno", "node",
    "tsc", "go", "make", "gmake", "just", "ctest", "cmake", "ninja", "meson", "pytest", "python",
    "python3", "mypy", "ruff", "tox", "nox", "uv", "uvx", "poetry", "pip", "pip3", "ruby",
    "bundle", "rake", "perl", "php", "composer", "mvn", "gradle", "dotnet", "bazel", "sh", "bash",
    "zsh", "dash", "fish", "ksh",
];

/// Whether a simple command runs code the workspace provides: a build tool, test runner,
/// package manager, interpreter or shell (see [`WORKSPACE_CODE_RUNNERS`]; also `python3.12`), or
/// a program named by a path (`./build.sh`, `scripts/deploy`, `target/debug/app`). Without the
/// sandbox such a command can do anything the user can, whatever it looks like.
pub fn runs_workspace_code(segment: &Segment) -> bool {
    let (name, args) = segment.effective();
    if name.is_empty() {
        return false;
    }
    let program = segment
        .words
        .len()
        .checked_sub(args.len() + 1)
        .and_then(|index| segment.words.get(index))
        .map_or(name.as_str(), String::as_str);
    if program.contains('/') {
        return true;
    }
    let versioned = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    WORKSPACE_CODE_RUNNERS.contains(&name.as_str()) || WORKSPACE_CODE_RUNNERS.contains(&versioned)
}
