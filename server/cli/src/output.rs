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
    bar.set_style(files_style());
    bar.set_message(label.to_string());
    bar
}

/// A spinner after `label` on stderr, or a hidden one when stderr is not a terminal; it can
/// turn into a bar with [`files_style`].
pub fn spinner(label: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    ProgressBar::new(0)
        .with_style(waiting_style())
        .with_message(label.to_string())
}

/// The style of [`progress_bar`]: files done of the total.
pub fn files_style() -> ProgressStyle {
    ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} files ({eta})")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

/// A spinner after the message, for a wait with nothing to count.
pub fn waiting_style() -> ProgressStyle {
    ProgressStyle::with_template("{msg} {spinner}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}
