//! `lode completions SHELL` and `lode man [--dir DIR]`: the shell completion script and the
//! manual pages, generated from the same command definitions as `--help`, for packagers and
//! for users who install with `cargo install`.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use clap::CommandFactory;

use crate::render::say;

/// Prints the completion script of `shell` for `lode`.
pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<()> {
    let mut command = crate::commands::Cli::command();
    // Rendered in memory first: the generator panics on a write error (a closed pipe).
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "lode", &mut script);
    print_all(&script).context("cannot write the completion script")
}

/// Writes `bytes` to stdout; a reader that closed the pipe early (`| head`) is not an error.
fn print_all(bytes: &[u8]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Prints lode's manual page, or with `dir` writes one page per visible command there
/// (`lode.1`, `lode-search.1`, `lode-daemon-start.1`, ...) and lists them on stderr.
pub fn man(dir: Option<&Path>) -> anyhow::Result<()> {
    let command = crate::commands::Cli::command();
    let Some(dir) = dir else {
        let mut page = Vec::new();
        clap_mangen::Man::new(command)
            .render(&mut page)
            .context("cannot render the manual page")?;
        return print_all(&page).context("cannot write the manual page");
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    clap_mangen::generate_to(command, dir)
        .with_context(|| format!("cannot write the manual pages into {}", dir.display()))?;
    let mut pages: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("lode") && name.ends_with(".1"))
        .collect();
    pages.sort();
    say!(
        "lode: wrote {} manual pages into {} ({})",
        pages.len(),
        dir.display(),
        pages.join(", ")
    );
    Ok(())
}
