//! Printing results as text or JSON Lines, and progress on stderr.

use std::io::{IsTerminal, Write};

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

/// Writes one JSON object per line.
pub fn print_json_lines<T: Serialize>(items: &[T]) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for item in items {
        serde_json::to_writer(&mut out, item)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}

/// A progress bar on stderr, or a hidden one when stderr is not a terminal.
pub fn progress_bar(label: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    let style = ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} files ({eta})")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(label.to_string());
    bar
}
