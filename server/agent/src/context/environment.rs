//! The environment block: where the agent runs (workspace root, OS, date) and the state of the
//! git checkout (branch, changed files). Git is asked with a short timeout; no git, no repository
//! or a slow git leave the git part out, never fail the turn.

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
    /// Looks at `root`: the OS, today's date, and git (with [`GIT_TIMEOUT`] per command).
    pub fn detect(root: &Path) -> Environment {
        Environment {
            cwd: root.to_path_buf(),
            os: format!("{} ({})", std::env::consts::OS, std::env::consts::ARCH),
            date: chrono::Local::now().format("%Y-%m-%d").to_string(),
            git: detect_git(root),
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

fn detect_git(root: &Path) -> Option<GitState> {
    if !may_be_in_checkout(root) {
        return None;
    }
    // One command for the branch and the changes: `## branch...upstream [ahead 1]`, then one
    // line per changed file.
    let status = run_git(
        root,
        &[
            "status",
            "--porcelain",
            "--branch",
            "--untracked-files=normal",
        ],
    )?;
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

/// Whether git could find a work tree for `root`: not when no `.git` is in `root` or above it
/// and no variable points git elsewhere. Saves starting git where there is no repository.
fn may_be_in_checkout(root: &Path) -> bool {
    if std::env::var_os("GIT_DIR").is_some() || std::env::var_os("GIT_WORK_TREE").is_some() {
        return true;
    }
    root.ancestors()
        .any(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok())
}

/// Runs `git -C root ARGS` and returns its stdout when it exits 0 within [`GIT_TIMEOUT`].
fn run_git(root: &Path, args: &[&str]) -> Option<String> {
    let mut child = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
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
