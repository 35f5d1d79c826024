//! How a query command gets its answer: from the process holding the workspace's lease
//! (`lode daemon`, `lode watch`, `lode lsp`, `lode acp`), which answers from memory, or, when
//! none answers, by opening the index here. In the second case, in a large workspace, it starts
//! a background `lode daemon` for the next queries (see `daemon_command`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use lode_index::{
    Answer, DEFAULT_QUERY_TIMEOUT, Embedder, Freshness, NotWatched, Query, query_lease,
};

use crate::commands::{Needs, QueryArgs, WorkspaceArgs};
use crate::render::say;

/// The index directory of a canonical `root` under these arguments, as `Workspace::open`
/// derives it.
pub fn index_dir_of(args: &WorkspaceArgs, root: &Path) -> PathBuf {
    args.index_dir
        .clone()
        .unwrap_or_else(|| root.join(lode_index::DEFAULT_INDEX_DIR))
}

/// The settings a lease holder must index with to answer for these arguments, and the
/// embedder they name (reused if the command answers itself).
pub fn settings_of(args: &WorkspaceArgs) -> anyhow::Result<(String, Option<Arc<dyn Embedder>>)> {
    let embedder = crate::semantic_cli::embedder(&args.embedding)?;
    let settings = lode_index::watch_settings(
        &crate::commands::scan_options(args),
        embedder.as_deref(),
        &crate::qdrant_cli::store_location(&args.vector_store),
    );
    Ok((settings, embedder))
}

/// Answers `query`: served by the lease holder when one answers, else in this process.
pub fn answer(
    args: &WorkspaceArgs,
    common: &QueryArgs,
    query: Query,
    needs: Needs,
) -> anyhow::Result<Answer> {
    let started = Instant::now();
    let root = crate::commands::canonical_root(args)?;
    let index_dir = index_dir_of(args, &root);
    let (settings, embedder) = settings_of(args)?;
    let fresh = !common.no_refresh;
    let not_served = match query_lease(&index_dir, &settings, &query, fresh, DEFAULT_QUERY_TIMEOUT)
    {
        Ok(served) => {
            if common.verbose {
                let freshness = match served.applied {
                    Some(applied) => format!(
                        "flushed {applied} changed paths in {:.1} ms",
                        served.flush.as_secs_f64() * 1000.0
                    ),
                    None => "not checked (--no-refresh)".to_owned(),
                };
                say!(
                    "lode: freshness: served by lode {} (pid {}): {freshness}; query {:.1} ms; {:.1} ms in all; 0 files checked",
                    served.holder,
                    served.holder_pid,
                    served.query.as_secs_f64() * 1000.0,
                    started.elapsed().as_secs_f64() * 1000.0
                );
            }
            return Ok(served.answer);
        }
        Err(reason) => reason,
    };
    if common.verbose && !matches!(not_served, NotWatched::NoWatcher) {
        say!("lode: not served by a lease holder ({not_served}); answering here");
    }
    let (workspace, freshness) = crate::commands::open_fresh(args, common, needs, Some(embedder))?;
    let answer = workspace.answer(&query)?;
    crate::commands::report_repairs(&workspace);
    if let Some(Freshness::Checked { not_watched, stats }) = &freshness
        && matches!(not_watched, NotWatched::NoWatcher | NotWatched::Gone(_))
    {
        crate::daemon_command::maybe_start_for_queries(args, &root, &index_dir, stats.files);
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::commands::Cli;

    /// The `lode` front end sends `default_settings()` without parsing options or opening the
    /// embedder: they must be what this binary computes for an invocation with no option.
    #[test]
    fn the_front_end_s_settings_are_those_of_a_plain_invocation() {
        let cli = Cli::try_parse_from(["lode", "search", "anything"]).unwrap();
        let (settings, _) = super::settings_of(&cli.workspace).unwrap();
        assert_eq!(settings, lode_index::default_settings());
        // And an option that changes them makes them differ.
        let cli = Cli::try_parse_from(["lode", "--exclude", "vendor/", "search", "x"]).unwrap();
        let (other, _) = super::settings_of(&cli.workspace).unwrap();
        assert_ne!(other, settings);
    }

    /// The front end leaves an invocation to this binary when the environment selects other
    /// settings: every variable an option of this binary reads must be on its list.
    #[test]
    fn every_variable_an_option_reads_is_one_the_front_end_checks() {
        use clap::CommandFactory;
        fn variables(command: &clap::Command, found: &mut Vec<String>) {
            for argument in command.get_arguments() {
                if let Some(name) = argument.get_env() {
                    found.push(name.to_string_lossy().into_owned());
                }
            }
            for sub in command.get_subcommands() {
                variables(sub, found);
            }
        }
        let mut found = Vec::new();
        variables(&Cli::command(), &mut found);
        assert!(found.contains(&"LODE_INDEX_DIR".to_owned()), "{found:?}");
        // Options of commands the front end never answers may read what they like.
        let query_commands = ["search", "symbols", "refs", "map"];
        let mut relevant = Vec::new();
        let command = Cli::command();
        for argument in command.get_arguments() {
            if let Some(name) = argument.get_env() {
                relevant.push(name.to_string_lossy().into_owned());
            }
        }
        for sub in command
            .get_subcommands()
            .filter(|sub| query_commands.contains(&sub.get_name()))
        {
            variables(sub, &mut relevant);
        }
        for name in relevant {
            assert!(
                crate::settings_env::SETTINGS_VARIABLES.contains(&name.as_str()),
                "{name} is read by an option of a query command but the front end does not check it"
            );
        }
    }
}
