//! The one log subscriber. The library crates never print: they emit `tracing` events, and
//! `lode-full` installs this subscriber before running a command (the `lode` front end installs
//! none; it logs nothing). Lines go to stderr, or with `--log-file PATH` are appended to that
//! file instead; never to stdout, which belongs to the protocol in `lode acp`, `lode lsp` and
//! `lode mcp`. `LODE_LOG` takes `tracing` filter directives (`debug`, `lode_lsp=trace,warn`).
//!
//! Without `LODE_LOG` lode logs its own events from `info` up and nothing from the libraries it
//! uses, each as one plain line (`lode lsp: cannot parse a buffer: …`), exactly what it printed
//! before it logged through `tracing`. With `LODE_LOG`, or in a log file, each line also names
//! the level and the module; a file's lines start with the time and the process id.

use std::fmt::{self, Write as _};
use std::fs::OpenOptions;
use std::path::PathBuf;
// std, not parking_lot: tracing-subscriber implements `MakeWriter` only for `std::sync::Mutex<W>`.
use std::sync::Mutex;

use anyhow::Context;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use crate::commands::Command;

/// The environment variable holding the filter directives.
pub const FILTER_VARIABLE: &str = "LODE_LOG";

/// Without `LODE_LOG`: every crate of lode (`lode_acp`, `lode_lsp`, …; directives match target
/// prefixes) from `info` up, which is what reached stderr before, and nothing from libraries.
const DEFAULT_FILTER: &str = "lode=info";

/// `--log-file`, global.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Logging (every command; LODE_LOG filters, e.g. LODE_LOG=debug)")]
pub struct LogArgs {
    /// Append log lines to this file instead of writing them on stderr.
    #[arg(long, global = true, value_name = "PATH")]
    pub log_file: Option<PathBuf>,
}

/// What a command's log lines start with: the command that runs.
pub fn prefix(command: &Command) -> &'static str {
    match command {
        Command::Acp(_) => "lode acp",
        Command::Lsp(_) => "lode lsp",
        Command::Mcp(_) => "lode mcp",
        Command::Watch { .. } => "lode watch",
        Command::Daemon(_) => "lode daemon",
        _ => "lode",
    }
}

/// Installs the subscriber for the rest of the process. Fails only when the log file cannot be
/// opened; a `LODE_LOG` that is not a filter is reported (as a warning) and logging goes on as
/// without it.
pub fn init(prefix: &'static str, args: &LogArgs) -> anyhow::Result<()> {
    let directives = std::env::var(FILTER_VARIABLE)
        .ok()
        .filter(|directives| !directives.trim().is_empty());
    let (filter, refused) = match &directives {
        Some(directives) => match EnvFilter::try_new(directives) {
            Ok(filter) => (filter, None),
            Err(error) => (EnvFilter::new(DEFAULT_FILTER), Some((directives, error))),
        },
        None => (EnvFilter::new(DEFAULT_FILTER), None),
    };
    let format = LineFormat {
        prefix,
        detailed: directives.is_some() || args.log_file.is_some(),
        file: args.log_file.is_some(),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .event_format(format);
    let installed = match &args.log_file {
        Some(path) => {
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open the log file {}", path.display()))?;
            builder.with_writer(Mutex::new(file)).try_init()
        }
        None => builder.with_writer(std::io::stderr).try_init(),
    };
    installed.map_err(|error| anyhow::anyhow!("cannot start logging: {error}"))?;
    if let Some((directives, error)) = refused {
        tracing::warn!(%error, "{FILTER_VARIABLE}={directives:?} is not a filter; logging as without it");
    }
    Ok(())
}

/// One line per event: `PREFIX: MESSAGE[: ERROR][ FIELD=VALUE…]`, with the level and target
/// after the prefix when detailed, and the time and process id in a file.
struct LineFormat {
    prefix: &'static str,
    detailed: bool,
    file: bool,
}

impl<S, N> FormatEvent<S, N> for LineFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _context: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        if self.file {
            SystemTime.format_time(&mut writer)?;
            write!(writer, " {}[{}]: ", self.prefix, std::process::id())?;
        } else {
            write!(writer, "{}: ", self.prefix)?;
        }
        let metadata = event.metadata();
        if self.detailed {
            write!(writer, "{} {}: ", metadata.level(), metadata.target())?;
        }
        let mut line = Line::default();
        event.record(&mut line);
        writer.write_str(&line.message)?;
        if let Some(error) = &line.error {
            write!(writer, ": {error}")?;
        }
        writer.write_str(&line.fields)?;
        writeln!(writer)
    }
}

/// An event's fields as a line: the message, the `error` field (written after it, as the
/// messages always said what went wrong), and the other fields as ` name=value`.
#[derive(Default)]
struct Line {
    message: String,
    error: Option<String>,
    fields: String,
}

impl Line {
    fn put(&mut self, field: &Field, value: fmt::Arguments<'_>) {
        // Writing into a String cannot fail.
        let _ = match field.name() {
            "message" => self.message.write_fmt(value),
            "error" => {
                self.error = Some(value.to_string());
                Ok(())
            }
            name => write!(self.fields, " {name}={value}"),
        };
    }
}

impl Visit for Line {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, format_args!("{value}"));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.put(field, format_args!("{value}"));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, format_args!("{value:?}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::io;
    use std::sync::{Arc, Mutex};

    /// A writer the tests read back.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn logged(detailed: bool, file: bool, emit: impl FnOnce()) -> String {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(EnvFilter::new(DEFAULT_FILTER))
            .event_format(LineFormat {
                prefix: "lode lsp",
                detailed,
                file,
            })
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, emit);
        let bytes = captured.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn plain_lines_read_as_before() {
        let text = logged(false, false, || {
            let error = io::Error::other("no such file");
            tracing::warn!(target: "lode_lsp::buffers", %error, "cannot parse a buffer");
            tracing::info!(target: "lode_lsp::server", uri = "file:///a.rs", "opened");
            tracing::debug!(target: "lode_lsp::server", "hidden by default");
            tracing::warn!(target: "hyper::proto", "not lode's");
        });
        assert_eq!(
            text,
            "lode lsp: cannot parse a buffer: no such file\nlode lsp: opened uri=file:///a.rs\n"
        );
    }

    #[test]
    fn detailed_and_file_lines_name_level_target_time_and_pid() {
        let text = logged(true, false, || {
            tracing::warn!(target: "lode_lsp::live", "stopped");
        });
        assert_eq!(text, "lode lsp: WARN lode_lsp::live: stopped\n");
        let text = logged(true, true, || {
            tracing::error!(target: "lode_lsp::live", "stopped");
        });
        let pid = format!(
            " lode lsp[{}]: ERROR lode_lsp::live: stopped\n",
            std::process::id()
        );
        assert!(text.ends_with(&pid), "{text}");
        assert!(text.starts_with("20"), "a timestamp first: {text}");
    }
}
