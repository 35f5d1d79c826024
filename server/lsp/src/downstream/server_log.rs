//! Where a downstream language server's stderr goes: never to lode's own stderr (which is the
//! user's terminal in `lode run`, the editor's log pane in `lode lsp`), but to one log file in
//! the user's data directory, with the last lines kept for the one notice lode prints when the
//! server cannot start.

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
        last.push(line);
    }
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
