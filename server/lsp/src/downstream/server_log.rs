//! Where a downstream language server's stderr goes: never to lode's own stderr (which is the
//! user's terminal in `lode run`, the editor's log pane in `lode lsp`), but to one log file in
//! the user's data directory, with the last lines kept for the one notice lode prints when the
//! server cannot start. A backtrace is logged but never kept for the notice, and a rustup proxy
//! whose toolchain lacks the server's component is said in one line with the fix
//! ([`missing_rustup_component`]).

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// Lines of a server's stderr kept for its notice.
const LAST_LINES: usize = 3;
/// Longest line kept or logged, in bytes.
const MAX_LINE_BYTES: usize = 500;
/// A log over this size is moved aside (`.old`) when a server starts.
const MAX_LOG_BYTES: u64 = 4 * 1024 * 1024;

/// `<data dir>/lode/logs/language-servers.log` (`~/.local/share/lode/...` on Linux), or `None`
/// when there is no data directory.
pub fn log_path() -> Option<PathBuf> {
    lode_agent::trust::user_state_dir().map(|dir| dir.join("logs").join("language-servers.log"))
}

/// The last lines a server wrote to stderr.
#[derive(Clone, Default)]
pub struct LastWords(Arc<Mutex<VecDeque<String>>>);

impl LastWords {
    /// The kept lines, oldest first, joined with ` | `.
    pub fn summary(&self) -> String {
        let lines = self.0.lock();
        lines.iter().cloned().collect::<Vec<_>>().join(" | ")
    }

    fn push(&self, line: String) {
        let mut lines = self.0.lock();
        if lines.len() == LAST_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }
}

/// Reads `stderr` to its end: each line is appended to the log (prefixed with `command`) and
/// the last ones kept in `last`.
pub async fn drain(stderr: impl AsyncRead + Unpin, command: String, last: LastWords) {
    let mut log = log_path().and_then(|path| open_log(&path));
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let line = clip(line.trim_end());
        if line.is_empty() {
            continue;
        }
        if let Some(file) = log.as_mut()
            && writeln!(file, "{command}: {line}").is_err()
        {
            log = None;
        }
        if !is_backtrace_line(&line) {
            last.push(line);
        }
    }
}

/// Whether a line of stderr belongs to a Rust backtrace (rustup's proxy prints one with its
/// errors): the header, a numbered frame (`14: __libc_start_main_impl`) or a frame's location
/// (`at ./csu/../csu/libc-start.c:360:3`).
fn is_backtrace_line(line: &str) -> bool {
    let trimmed = line.trim_start();
    if trimmed.eq_ignore_ascii_case("stack backtrace:") {
        return true;
    }
    if trimmed.starts_with("at ") && trimmed.len() < line.len() {
        return true;
    }
    trimmed
        .split_once(": ")
        .is_some_and(|(number, _)| !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()))
}

/// The one line to say when `program` is a rustup proxy whose toolchain lacks its component, as
/// rustup says in either wording (`error: Unknown binary 'rust-analyzer' in official toolchain
/// 'stable-…'.`, `error: 'rust-analyzer' is not installed for the toolchain 'stable-…'`):
/// what is missing and the command that installs it. `None` for any other output.
pub fn missing_rustup_component(stderr: &str, program: &str) -> Option<String> {
    let name = std::path::Path::new(program)
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| program.to_owned());
    let quoted = format!("'{name}'");
    let line = stderr.lines().find(|line| {
        line.contains(&quoted)
            && (line.contains("Unknown binary") || line.contains("is not installed for"))
    })?;
    let toolchain = line
        .split("toolchain '")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .unwrap_or("the active toolchain");
    Some(format!(
        "{name} is not installed for toolchain {toolchain}; install it with `rustup component add {name}`"
    ))
}

fn clip(line: &str) -> String {
    if line.len() <= MAX_LINE_BYTES {
        return line.to_owned();
    }
    let mut end = MAX_LINE_BYTES;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &line[..end])
}

fn open_log(path: &std::path::Path) -> Option<std::fs::File> {
    std::fs::create_dir_all(path.parent()?).ok()?;
    if std::fs::metadata(path).is_ok_and(|meta| meta.len() > MAX_LOG_BYTES) {
        let _ = std::fs::rename(path, path.with_extension("log.old"));
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What rustup 1.29's proxy prints for a missing rust-analyzer (RUST_BACKTRACE or not).
    const RUSTUP_PROXY: &str = "error: Unknown binary 'rust-analyzer' in official toolchain 'stable-x86_64-unknown-linux-gnu'.\n\nStack backtrace:\n   0: anyhow::kind::Adhoc::new\n   1: anyhow::__private::format_err.3718\n  12: main\n  13: __libc_start_call_main\n             at ./csu/../sysdeps/nptl/libc_start_call_main.h:58:16\n  14: __libc_start_main_impl\n             at ./csu/../csu/libc-start.c:360:3\n  15: <unknown>\n";

    #[tokio::test]
    async fn a_backtrace_is_never_kept_for_the_notice() {
        let last = LastWords::default();
        drain(
            RUSTUP_PROXY.as_bytes(),
            "rust-analyzer".into(),
            last.clone(),
        )
        .await;
        let summary = last.summary();
        assert_eq!(
            summary,
            "error: Unknown binary 'rust-analyzer' in official toolchain 'stable-x86_64-unknown-linux-gnu'."
        );
    }

    #[test]
    fn a_missing_rustup_component_is_one_line_with_the_fix() {
        let said =
            missing_rustup_component(RUSTUP_PROXY, "/root/.cargo/bin/rust-analyzer").unwrap();
        assert_eq!(
            said,
            "rust-analyzer is not installed for toolchain stable-x86_64-unknown-linux-gnu; install it with `rustup component add rust-analyzer`"
        );
        let newer = "error: 'rust-analyzer' is not installed for the toolchain '1.95.0-x86_64-unknown-linux-gnu'.\nhelp: run `rustup component add rust-analyzer` to install it\n";
        assert!(
            missing_rustup_component(newer, "rust-analyzer")
                .unwrap()
                .contains("toolchain 1.95.0-x86_64-unknown-linux-gnu")
        );
        assert!(missing_rustup_component("segfault", "rust-analyzer").is_none());
        assert!(missing_rustup_component(RUSTUP_PROXY, "gopls").is_none());
    }

    #[tokio::test]
    async fn keeps_the_last_lines_clipped() {
        let long = "x".repeat(2 * MAX_LINE_BYTES);
        let input = format!("one\n\ntwo\nthree\n{long}\n");
        let last = LastWords::default();
        drain(input.as_bytes(), "test-server".into(), last.clone()).await;
        let summary = last.summary();
        assert!(summary.starts_with("two | three | xxx"), "{summary}");
        assert!(summary.ends_with('…'), "{summary}");
        assert!(summary.len() < 2 * MAX_LINE_BYTES, "{summary}");
    }
}
