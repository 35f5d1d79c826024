//! The environment block: where the agent runs (workspace root, OS, date) and the state of the
//! git checkout (branch, changed files). Git is asked with a short timeout; no git, no repository
//! or a slow git leave the git part out, never fail the turn.
//!
//! git reads the repository's configuration, and much of it is commands (`core.fsmonitor`,
//! filter drivers, hooks, a submodule's own config, an external diff). A repository is
//! untrusted, so lode's own git runs like nothing else of lode: through the sandbox's launcher in
//! `read-only` mode (no writes, no network, no secrets, no sockets), and with settings that keep
//! it from even trying: no fsmonitor, hooks at `/dev/null`, every filter driver the repository
//! defines switched off, submodules ignored, no lazy fetch, no transports. When the machine
//! cannot confine, git is not started and the block says so.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long one git command may take.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(2);
/// At most this many changed files are listed; the rest are counted.
pub const MAX_DIRTY_FILES_SHOWN: usize = 20;

/// The state of the git checkout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitState {
    /// The branch name, or `HEAD` when detached.
    pub branch: String,
    /// `git status --porcelain` lines (status code and path), at most [`MAX_DIRTY_FILES_SHOWN`].
    pub dirty: Vec<String>,
    /// How many changed files there are in all.
    pub dirty_total: usize,
}

/// The environment of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    pub cwd: PathBuf,
    pub os: String,
    /// The local date, `YYYY-MM-DD`.
    pub date: String,
    pub git: Option<GitState>,
}

impl Environment {
    /// Looks at `root`: the OS, today's date, and git (confined by `sandbox`, with
    /// [`GIT_TIMEOUT`] per command).
    pub fn detect(root: &Path, sandbox: &lode_sandbox::Sandbox) -> Environment {
        Environment {
            cwd: root.to_path_buf(),
            os: format!("{} ({})", std::env::consts::OS, std::env::consts::ARCH),
            date: chrono::Local::now().format("%Y-%m-%d").to_string(),
            git: detect_git(root, sandbox),
        }
    }

    /// The block as the model sees it.
    pub fn render(&self) -> String {
        let mut out = format!(
            "Workspace root: {}\nOS: {}\nDate: {}\n",
            self.cwd.display(),
            self.os,
            self.date
        );
        match &self.git {
            None => out.push_str("Git: not a git repository (or git is unavailable)\n"),
            Some(git) => {
                out.push_str(&format!("Git branch: {}\n", git.branch));
                if git.dirty_total == 0 {
                    out.push_str("Uncommitted changes: none\n");
                } else {
                    out.push_str(&format!(
                        "Uncommitted changes ({} files):\n",
                        git.dirty_total
                    ));
                    for line in &git.dirty {
                        out.push_str("  ");
                        out.push_str(line);
                        out.push('\n');
                    }
                    if git.dirty_total > git.dirty.len() {
                        out.push_str(&format!(
                            "  … and {} more\n",
                            git.dirty_total - git.dirty.len()
                        ));
                    }
                }
            }
        }
        out
    }
}

fn detect_git(root: &Path, sandbox: &lode_sandbox::Sandbox) -> Option<GitState> {
    let repository = find_repository(root)?;
    let git = ConfinedGit {
        root,
        sandbox,
        read: repository.read_paths(root),
    };
    let switched_off = git.repository_filters()?;
    let mut args: Vec<String> = PROTECTIVE_SETTINGS
        .iter()
        .flat_map(|setting| ["-c".to_owned(), (*setting).to_owned()])
        .collect();
    for driver in &switched_off {
        for key in ["clean", "smudge", "process"] {
            args.extend(["-c".to_owned(), format!("filter.{driver}.{key}=")]);
        }
        args.extend(["-c".to_owned(), format!("filter.{driver}.required=false")]);
    }
    // One command for the branch and the changes: `## branch...upstream [ahead 1]`, then one
    // line per changed file.
    args.extend(
        [
            "status",
            "--porcelain",
            "--branch",
            "--untracked-files=normal",
            "--ignore-submodules=all",
        ]
        .map(str::to_owned),
    );
    let status = git.run(&args)?;
    let mut lines = status.lines().filter(|line| !line.is_empty());
    let branch = branch_of(lines.next()?.strip_prefix("## ")?)?;
    let lines: Vec<&str> = lines.collect();
    Some(GitState {
        branch,
        dirty: lines
            .iter()
            .take(MAX_DIRTY_FILES_SHOWN)
            .map(|line| line.to_string())
            .collect(),
        dirty_total: lines.len(),
    })
}

/// `-c` settings on every git lode runs: nothing the repository configures as a command runs.
/// Command-line `-c` wins over every configuration file, and git passes it on to any git it
/// starts (a submodule's).
pub const PROTECTIVE_SETTINGS: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.untrackedCache=false",
    "core.pager=cat",
    "core.sshCommand=false",
    "core.askPass=false",
    "diff.external=",
    "status.submoduleSummary=false",
    "submodule.recurse=false",
    "protocol.allow=never",
    "credential.helper=",
];

/// Where the checkout holding `root` keeps its git data.
struct Repository {
    /// The work tree's top (the directory holding `.git`), `root` or an ancestor of it.
    top: PathBuf,
    /// The git directory when `.git` is a file (`gitdir: …`, a worktree or submodule), and its
    /// common directory.
    linked: Vec<PathBuf>,
}

impl Repository {
    /// What the confined git may read besides `root`: the top of the checkout (when `root` is
    /// a folder inside it) and a linked git directory, each only when it really is a git
    /// directory (HEAD and objects/), so a planted `.git` file cannot open `~/.ssh` to it.
    fn read_paths(&self, root: &Path) -> Vec<PathBuf> {
        let mut read = Vec::new();
        // Never the home directory or above it (a dotfiles repository in `~`).
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let too_wide = self.top == Path::new("/")
            || home
                .as_deref()
                .is_some_and(|home| home.starts_with(&self.top));
        if self.top != root && !too_wide {
            read.push(self.top.clone());
        }
        read.extend(self.linked.iter().filter(|dir| is_git_dir(dir)).cloned());
        read
    }
}

fn is_git_dir(dir: &Path) -> bool {
    dir.join("HEAD").is_file() && (dir.join("objects").is_dir() || dir.join("commondir").is_file())
}

/// The checkout `root` is in: the nearest `.git` in `root` or above it. Saves starting git where
/// there is no repository.
fn find_repository(root: &Path) -> Option<Repository> {
    let top = root
        .ancestors()
        .find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok())?;
    let dot_git = top.join(".git");
    let mut linked = Vec::new();
    if dot_git.is_file()
        && let Ok(text) = std::fs::read_to_string(&dot_git)
        && let Some(target) = text.lines().next().and_then(|l| l.strip_prefix("gitdir:"))
    {
        let gitdir = top.join(target.trim());
        let gitdir = std::fs::canonicalize(&gitdir).unwrap_or(gitdir);
        if let Ok(common) = std::fs::read_to_string(gitdir.join("commondir")) {
            let common = gitdir.join(common.trim());
            linked.push(std::fs::canonicalize(&common).unwrap_or(common));
        }
        linked.insert(0, gitdir);
    }
    Some(Repository {
        top: top.to_path_buf(),
        linked,
    })
}

/// git for one workspace, run through the sandbox's launcher.
struct ConfinedGit<'a> {
    root: &'a Path,
    sandbox: &'a lode_sandbox::Sandbox,
    read: Vec<PathBuf>,
}

impl ConfinedGit<'_> {
    /// The filter drivers the repository's own configuration defines (local and worktree
    /// scope, includes followed), to switch off; `None` when git cannot be run or a driver's
    /// name cannot be written on a command line (it holds `=`), so status is not run at all.
    /// Drivers of the user's own configuration (git-lfs) stay.
    fn repository_filters(&self) -> Option<Vec<String>> {
        let listing = self.run(
            &[
                "config",
                "--null",
                "--name-only",
                "--show-scope",
                "--get-regexp",
                r"^filter\..*\.(clean|smudge|process)$",
            ]
            .map(str::to_owned),
        );
        // `git config --get-regexp` exits 1 when nothing matches.
        let listing = listing.unwrap_or_default();
        let mut drivers: Vec<String> = Vec::new();
        let mut fields = listing.split('\0');
        while let (Some(scope), Some(name)) = (fields.next(), fields.next()) {
            if matches!(scope, "global" | "system") {
                continue;
            }
            let Some(driver) = name
                .strip_prefix("filter.")
                .and_then(|rest| rest.rsplit_once('.'))
                .map(|(driver, _)| driver)
            else {
                continue;
            };
            if driver.contains('=') || driver.contains('\n') {
                return None;
            }
            if !drivers.iter().any(|known| known == driver) {
                drivers.push(driver.to_owned());
            }
        }
        Some(drivers)
    }

    /// Runs `git --no-optional-locks -C root ARGS` confined and returns its stdout when it
    /// exits 0 within [`GIT_TIMEOUT`]; `None` when the sandbox cannot confine here.
    fn run(&self, args: &[String]) -> Option<String> {
        let mut git_args: Vec<std::ffi::OsString> = vec![
            "--no-optional-locks".into(),
            "-C".into(),
            self.root.as_os_str().to_owned(),
        ];
        git_args.extend(args.iter().map(Into::into));
        let wrapped = self.sandbox.wrap_own_program(
            &[self.root.to_path_buf()],
            &self.read,
            "git",
            git_args,
        )?;
        run_with_deadline(
            Command::new(&wrapped.program)
                .args(&wrapped.args)
                .current_dir(self.root),
        )
    }
}

/// The branch named by `git status --branch`'s header: `HEAD` when detached (as
/// `git rev-parse --abbrev-ref HEAD` says); `None` before the first commit, when HEAD names
/// no commit yet.
fn branch_of(header: &str) -> Option<String> {
    if header.starts_with("No commits yet on ") || header.starts_with("Initial commit on ") {
        return None;
    }
    if header.starts_with("HEAD (no branch)") {
        return Some("HEAD".to_owned());
    }
    // A branch name cannot contain `..` or a space.
    let branch = header.split("...").next()?.split(' ').next()?.trim();
    (!branch.is_empty()).then(|| branch.to_owned())
}

/// Runs `command` and returns its stdout when it exits 0 within [`GIT_TIMEOUT`].
fn run_with_deadline(command: &mut Command) -> Option<String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + GIT_TIMEOUT;
    // Read stdout on a thread so a large status cannot fill the pipe and stall the child; its
    // end (git closing stdout as it exits) is when to look for the exit status.
    let mut stdout = child.stdout.take()?;
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buffer = Vec::new();
        let _ = stdout.read_to_end(&mut buffer);
        let _ = sender.send(buffer);
    });
    let output = receiver.recv_timeout(GIT_TIMEOUT).ok();
    let status = wait_until(&mut child, deadline);
    let (Some(output), Some(status)) = (output, status) else {
        let _ = child.kill();
        let _ = child.wait();
        return None;
    };
    if !status.success() {
        return None;
    }
    String::from_utf8(output).ok()
}

/// The child's exit status once it exits, `None` at `deadline`. Looks often at first (git
/// usually exits as it closes stdout), then less.
fn wait_until(child: &mut std::process::Child, deadline: Instant) -> Option<ExitStatus> {
    let mut pause = Duration::from_micros(100);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_branch_comes_from_the_status_header() {
        assert_eq!(branch_of("main").as_deref(), Some("main"));
        assert_eq!(
            branch_of("feature/x...origin/feature/x [ahead 1, behind 2]").as_deref(),
            Some("feature/x")
        );
        assert_eq!(branch_of("main [gone]").as_deref(), Some("main"));
        assert_eq!(branch_of("HEAD (no branch)").as_deref(), Some("HEAD"));
        assert_eq!(branch_of("No commits yet on main"), None);
        assert_eq!(branch_of("Initial commit on main"), None);
    }
}
