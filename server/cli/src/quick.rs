//! The fast path of the `lode` front end: a query command that the process holding the
//! workspace's lease (`lode daemon`, `watch`, `lsp`, `acp`) answers from memory, asked for by a
//! small binary that starts in a fraction of the time of `lode-full`.
//!
//! It answers only invocations whose meaning it knows exactly: `search`, `symbols`, `refs` and
//! `map` with their common options, no global option (those select another root, index or
//! settings), none of the environment variables that select settings
//! ([`crate::settings_env`]), and a lease holder that indexes with the default settings. Anything else —
//! and every way of not being served — is `None`, and the front end runs `lode-full` with the
//! same arguments, which decides as it always has. A wrong `None` costs speed, never meaning.

use std::ffi::OsString;
use std::path::PathBuf;

use lode_index::{Answer, DEFAULT_QUERY_TIMEOUT, Language, Query, query_lease};

/// A query command as the fast path understood it.
#[derive(Debug, PartialEq)]
pub struct QuickQuery {
    pub query: Query,
    pub json: bool,
    pub fresh: bool,
    /// `--root PATH`, as given.
    pub root: Option<String>,
}

/// The served answer to `args` (the process's arguments, program name first), or `None` when
/// `lode-full` must decide.
pub fn serve(args: &[OsString]) -> Option<(Answer, bool)> {
    let settings_in_environment = crate::settings_env::SETTINGS_VARIABLES
        .iter()
        .any(|name| std::env::var_os(name).is_some());
    if settings_in_environment {
        return None;
    }
    let quick = parse(args)?;
    let index_dir = index_dir(quick.root.as_deref())?;
    let settings = lode_index::default_settings();
    let served = query_lease(
        &index_dir,
        &settings,
        &quick.query,
        quick.fresh,
        DEFAULT_QUERY_TIMEOUT,
    )
    .ok()?;
    Some((served.answer, quick.json))
}

/// The default index directory of the workspace: `--root`'s, else the one the current
/// directory belongs to, found as `lode-full` finds it (no `--index-dir`).
fn index_dir(root: Option<&str>) -> Option<PathBuf> {
    let root = match root {
        Some(root) => PathBuf::from(root),
        None => crate::root::discover_root(&std::env::current_dir().ok()?),
    };
    let root = std::fs::canonicalize(root).ok()?;
    root.is_dir()
        .then(|| root.join(lode_index::DEFAULT_INDEX_DIR))
}

/// The query of a plain `lode search|symbols|refs|map …` invocation, or `None` for anything
/// the fast path does not know exactly (clap in `lode-full` then accepts or rejects it).
pub fn parse(args: &[OsString]) -> Option<QuickQuery> {
    let words: Vec<&str> = args
        .get(1..)?
        .iter()
        .map(|word| word.to_str())
        .collect::<Option<_>>()?;
    let mut options = Options::default();
    // `--root PATH` is the one global option understood, before the command or after it.
    let mut words = words.as_slice();
    loop {
        match words {
            ["--root", root, rest @ ..] if !root.is_empty() && !root.starts_with('-') => {
                set_once(&mut options.root, (*root).to_owned())?;
                words = rest;
            }
            [word, rest @ ..] if word.starts_with("--root=") => {
                let root = &word["--root=".len()..];
                if root.is_empty() {
                    return None;
                }
                set_once(&mut options.root, root.to_owned())?;
                words = rest;
            }
            _ => break,
        }
    }
    let (command, rest) = words.split_first()?;
    let mut positionals = Vec::new();
    let mut rest = rest.iter();
    let mut only_positionals = false;
    while let Some(&word) = rest.next() {
        if only_positionals || !word.starts_with('-') {
            positionals.push(word);
            continue;
        }
        if word == "--" {
            only_positionals = true;
            continue;
        }
        let (flag, inline) = match word.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value)),
            _ => (word, None),
        };
        let mut value = || -> Option<&str> {
            let value = match inline {
                Some(value) => value,
                None => *rest.next()?,
            };
            // clap takes no value that looks like an option here.
            (!value.is_empty() && !value.starts_with('-')).then_some(value)
        };
        match (*command, flag) {
            (_, "--root") => set_once(&mut options.root, value()?.to_owned())?,
            (_, "--json") if inline.is_none() => set_once(&mut options.json, true)?,
            (_, "--no-refresh") if inline.is_none() => set_once(&mut options.no_refresh, true)?,
            ("search" | "symbols" | "refs", "-n" | "--limit") => {
                set_once(&mut options.limit, value()?.parse::<usize>().ok()?)?
            }
            ("search", "--path") => set_once(&mut options.path, value()?.to_owned())?,
            ("search", "--lang") => {
                let name = value()?;
                Language::from_name(name)?;
                set_once(&mut options.lang, name.to_owned())?
            }
            ("search", "--mode") => {
                let mode = value()?.parse::<lode_index::SearchMode>().ok()?;
                set_once(&mut options.mode, mode.name().to_owned())?
            }
            ("map", "--tokens") => set_once(&mut options.tokens, value()?.parse::<usize>().ok()?)?,
            ("map", "--mention") => options.mentions.push(value()?.to_owned()),
            _ => return None,
        }
    }
    let query = match (*command, positionals.as_slice()) {
        ("search", [text]) => Query::Search {
            query: (*text).to_owned(),
            limit: options.limit.unwrap_or(10),
            path_glob: options.path,
            language: options.lang,
            mode: options.mode,
        },
        ("symbols", [name]) => Query::Symbols {
            name: (*name).to_owned(),
            limit: options.limit.unwrap_or(20),
        },
        ("refs", [name]) => Query::References {
            name: (*name).to_owned(),
            limit: options.limit.unwrap_or(100),
        },
        ("map", []) => Query::Map {
            max_tokens: options.tokens.unwrap_or(1024),
            focus_files: Vec::new(),
            mentions: options.mentions,
        },
        _ => return None,
    };
    Some(QuickQuery {
        query,
        json: options.json.unwrap_or(false),
        fresh: !options.no_refresh.unwrap_or(false),
        root: options.root,
    })
}

/// The options seen so far; each may be given once (clap refuses a repeat).
#[derive(Default)]
struct Options {
    root: Option<String>,
    json: Option<bool>,
    no_refresh: Option<bool>,
    limit: Option<usize>,
    path: Option<String>,
    lang: Option<String>,
    mode: Option<String>,
    tokens: Option<usize>,
    mentions: Vec<String>,
}

fn set_once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(value);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(words: &[&str]) -> Option<QuickQuery> {
        let args: Vec<OsString> = std::iter::once("lode")
            .chain(words.iter().copied())
            .map(OsString::from)
            .collect();
        parse(&args)
    }

    #[test]
    fn plain_query_commands_are_understood_with_clap_s_defaults() {
        assert_eq!(
            parsed(&["search", "how chunks split"]),
            Some(QuickQuery {
                query: Query::Search {
                    query: "how chunks split".into(),
                    limit: 10,
                    path_glob: None,
                    language: None,
                    mode: None,
                },
                json: false,
                fresh: true,
                root: None,
            })
        );
        assert_eq!(
            parsed(&[
                "search",
                "--mode=lexical",
                "-n",
                "3",
                "--lang",
                "python",
                "--path",
                "src/*.rs",
                "--json",
                "--no-refresh",
                "--",
                "-starts-with-a-dash"
            ]),
            Some(QuickQuery {
                query: Query::Search {
                    query: "-starts-with-a-dash".into(),
                    limit: 3,
                    path_glob: Some("src/*.rs".into()),
                    language: Some("python".into()),
                    mode: Some("lexical".into()),
                },
                json: true,
                fresh: false,
                root: None,
            })
        );
        // `--root` before the command or after it, in both spellings.
        for words in [
            &["--root", "/src/x", "symbols", "parse"][..],
            &["--root=/src/x", "symbols", "parse"],
            &["symbols", "parse", "--root", "/src/x"],
            &["symbols", "--root=/src/x", "parse"],
        ] {
            assert_eq!(
                parsed(words).and_then(|q| q.root),
                Some("/src/x".to_owned()),
                "{words:?}"
            );
        }
        assert_eq!(
            parsed(&["symbols", "parse"]).map(|q| q.query),
            Some(Query::Symbols {
                name: "parse".into(),
                limit: 20
            })
        );
        assert_eq!(
            parsed(&["refs", "--limit=7", "parse"]).map(|q| q.query),
            Some(Query::References {
                name: "parse".into(),
                limit: 7
            })
        );
        assert_eq!(
            parsed(&["map", "--tokens", "300", "--mention", "a", "--mention", "b"])
                .map(|q| q.query),
            Some(Query::Map {
                max_tokens: 300,
                focus_files: Vec::new(),
                mentions: vec!["a".into(), "b".into()],
            })
        );
    }

    #[test]
    fn anything_else_is_left_to_the_full_binary() {
        for words in [
            &[][..],
            &["index"],
            &["--root", "x", "--root", "y", "search", "q"],
            &["--root", "x", "search", "q", "--root", "y"],
            &["--root=", "search", "q"],
            &["--root", "--json", "search", "q"],
            &["--index-dir", "x", "search", "q"],
            &["search", "q", "-v"],
            &["search", "q", "--verbose"],
            &["search", "q", "--help"],
            &["search"],
            &["search", "a", "b"],
            &["search", "q", "-n5"],
            &["search", "q", "-n", "-5"],
            &["search", "q", "-n", "many"],
            &["search", "q", "--limit="],
            &["search", "q", "-n", "1", "-n", "2"],
            &["search", "q", "--json", "--json"],
            &["search", "q", "--json=true"],
            &["search", "q", "--mode", "fuzzy"],
            &["search", "q", "--lang", "cobol"],
            &["search", "q", "--fusion", "1,1,1,60"],
            &["search", "q", "--exclude", "x"],
            &["search", "-q"],
            &["symbols", "x", "--path", "a"],
            &["map", "--focus", "src/lib.rs"],
            &["map", "extra"],
            &["map", "--tokens"],
        ] {
            assert_eq!(parsed(words), None, "{words:?}");
        }
        let not_utf8 = vec![
            OsString::from("lode"),
            OsString::from("search"),
            std::os::unix::ffi::OsStringExt::from_vec(vec![0xff, 0xfe]),
        ];
        assert_eq!(parse(&not_utf8), None);
    }
}
