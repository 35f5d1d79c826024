//! The environment block: where the agent runs (workspace root, OS, date) and the state of the
//! git checkout (branch, changed files). Git is asked with a short timeout; no git, no repository
//! or a slow git leave the git part out, never fail the turn.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
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
    let branch = run_git(root, &["rev-parse", "--abbrev-ref", "HEAD"])?;
    let branch = branch.trim().to_owned();
    if branch.is_empty() {
        return None;
    }
    let status = run_git(root, &["status", "--porcelain", "--untracked-files=normal"])?;
    let lines: Vec<&str> = status.lines().filter(|line| !line.is_empty()).collect();
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
    // Read stdout on a thread so a large status cannot fill the pipe and stall the child.
    let mut stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut buffer = Vec::new();
        let _ = stdout.read_to_end(&mut buffer);
        buffer
    });
    let deadline = Instant::now() + GIT_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let output = reader.join().ok()?;
    if !status.success() {
        return None;
    }
    String::from_utf8(output).ok()
}
