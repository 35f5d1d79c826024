//! Printing a query's answer: each hit as text (its `Display`) or as JSON Lines, and the exit
//! code (1 when the answer holds nothing, like grep). Shared by both binaries, `lode` (the
//! query front end) and `lode-full`, so an answer prints the same whichever asked for it.
//!
//! Also the CLI's one door to stderr for the user: [`say!`] (a line) and [`ask!`] (a prompt,
//! no newline). Those are a command's own output (summaries, questions, notices about this
//! run); logs are `tracing` events, which `lode-full`'s subscriber writes (logging.rs).

use std::fmt::Display;
use std::io::{self, Write};
use std::process::ExitCode;

use lode_index::Answer;
use serde::Serialize;

/// Writes one line for the user on stderr (a closed stderr is not an error worth stopping for).
pub fn say_line(line: std::fmt::Arguments<'_>) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

/// Writes `text` on stderr without a newline and flushes it: a question, or streamed text.
#[allow(dead_code)] // the front end asks nothing
pub fn ask_text(text: std::fmt::Arguments<'_>) {
    let mut stderr = io::stderr().lock();
    let _ = stderr.write_fmt(text);
    let _ = stderr.flush();
}

/// `say!("…", args)`: one line for the user on stderr.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::render::say_line(format_args!($($arg)*))
    };
}
pub(crate) use say;

/// `ask!("…", args)`: text for the user on stderr, no newline, flushed.
#[allow(unused_macros)] // the front end asks nothing
macro_rules! ask {
    ($($arg:tt)*) => {
        $crate::render::ask_text(format_args!($($arg)*))
    };
}
#[allow(unused_imports)]
pub(crate) use ask;

/// Exit code when a query found nothing (like grep).
pub const EXIT_NO_RESULTS: u8 = 1;

/// Prints `answer` on stdout; the exit code says whether it held anything (a map always does).
pub fn print_answer(answer: &Answer, json: bool) -> io::Result<ExitCode> {
    if let Answer::Search {
        below_floor: Some(floor),
        ..
    } = answer
    {
        say!(
            "lode: no chunk is similar enough to the query (the embedder's relevance floor is \
             {floor:.2}); these are the nearest ones, weak matches at best"
        );
    }
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    write_answer(&mut out, answer, json)?;
    out.flush()?;
    Ok(if answer.is_empty() {
        ExitCode::from(EXIT_NO_RESULTS)
    } else {
        ExitCode::SUCCESS
    })
}

/// Writes `answer` as `lode search`, `symbols`, `refs` and `map` print it.
pub fn write_answer(out: &mut impl Write, answer: &Answer, json: bool) -> io::Result<()> {
    match answer {
        Answer::Search { hits, .. } => write_hits(out, hits, json),
        Answer::Symbols { hits } => write_hits(out, hits, json),
        Answer::References { hits } => write_hits(out, hits, json),
        Answer::Map { map } if json => {
            serde_json::to_writer(&mut *out, map)?;
            out.write_all(b"\n")
        }
        Answer::Map { map } => out.write_all(map.text.as_bytes()),
    }
}

fn write_hits<T: Display + Serialize>(
    out: &mut impl Write,
    hits: &[T],
    json: bool,
) -> io::Result<()> {
    for hit in hits {
        if json {
            serde_json::to_writer(&mut *out, hit)?;
            out.write_all(b"\n")?;
        } else {
            writeln!(out, "{hit}")?;
        }
    }
    Ok(())
}
