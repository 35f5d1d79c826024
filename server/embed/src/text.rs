//! What a chunk is embedded as, and how identifiers become words.
//!
//! The word splitting here must match `split_words` of `scripts/embeddings/statictable.py`:
//! the static table's word frequencies and whole-word rows were computed with it.

use crate::words::identifier_parts;

/// How many import lines of a file go into each of its chunks' embedding texts.
pub const MAX_IMPORT_LINES: usize = 5;

/// Calls `visit` with each lower-case ASCII word of `text`: runs of ASCII letters and digits,
/// split at camelCase humps, acronym ends (`HTTPServer` -> `http`, `server`) and letter/digit
/// boundaries; digit pieces, punctuation, `_` and non-ASCII characters are separators.
pub fn for_each_word(text: &str, mut visit: impl FnMut(&str)) {
    let bytes = text.as_bytes();
    let mut word = String::with_capacity(32);
    let mut at = 0;
    while at < bytes.len() {
        if !bytes[at].is_ascii_alphanumeric() {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && bytes[at].is_ascii_alphanumeric() {
            at += 1;
        }
        split_run(&bytes[start..at], &mut word, &mut visit);
    }
}

/// Splits one run of ASCII alphanumerics into its words.
fn split_run(run: &[u8], word: &mut String, visit: &mut impl FnMut(&str)) {
    let mut emit = |piece: &[u8], word: &mut String| {
        word.clear();
        word.extend(piece.iter().map(|b| b.to_ascii_lowercase() as char));
        visit(word);
    };
    let mut at = 0;
    while at < run.len() {
        let byte = run[at];
        if byte.is_ascii_digit() {
            while at < run.len() && run[at].is_ascii_digit() {
                at += 1;
            }
        } else if byte.is_ascii_lowercase() {
            let start = at;
            while at < run.len() && run[at].is_ascii_lowercase() {
                at += 1;
            }
            emit(&run[start..at], word);
        } else {
            let start = at;
            while at < run.len() && run[at].is_ascii_uppercase() {
                at += 1;
            }
            let uppers = at - start;
            let lower_follows = at < run.len() && run[at].is_ascii_lowercase();
            if lower_follows && uppers > 1 {
                // `HTTPServer`: the last capital starts the next word.
                emit(&run[start..at - 1], word);
                at -= 1;
            } else if lower_follows {
                while at < run.len() && run[at].is_ascii_lowercase() {
                    at += 1;
                }
                emit(&run[start..at], word);
            } else {
                emit(&run[start..at], word);
            }
        }
    }
}

/// The words of `text` (see [`for_each_word`]).
#[cfg(test)]
fn split_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    for_each_word(text, |word| words.push(word.to_string()));
    words
}

/// What surrounds a chunk, for its embedding text.
#[derive(Clone, Copy, Debug)]
pub struct ChunkContext<'a> {
    pub path: &'a str,
    pub language: &'a str,
    /// Enclosing definitions, outermost first.
    pub scope: &'a [String],
    pub symbol: Option<&'a str>,
    /// The file's first import lines (as the index reads them: `import_lines`).
    pub imports: &'a [String],
    pub text: &'a str,
}

/// The text a chunk is embedded as: path, language, scope chain and symbol, the file's first
/// imports, then the code. With `append_split_identifiers` (for embedders that do not split
/// identifiers themselves) a last line lists the words of the code's compound identifiers
/// (`parse_config` -> `parse config`).
pub fn chunk_embedding_text(context: &ChunkContext<'_>, append_split_identifiers: bool) -> String {
    let mut out = String::with_capacity(context.text.len() + 128);
    out.push_str(context.path);
    out.push('\n');
    out.push_str(context.language);
    for label in context.scope {
        out.push(' ');
        out.push_str(label);
    }
    if let Some(symbol) = context.symbol {
        out.push(' ');
        out.push_str(symbol);
    }
    out.push('\n');
    for import in context.imports {
        out.push_str(import);
        out.push('\n');
    }
    out.push_str(context.text);
    if append_split_identifiers {
        let split = compound_identifier_words(context.text);
        if !split.is_empty() {
            out.push('\n');
            out.push_str(&split);
        }
    }
    out
}

/// A chunk's head: its symbol, its scope labels and its first non-blank line (a signature, a
/// doc comment's first line, or wherever a split body resumes), as one line. Hybrid search
/// embeds it at query time as a sharper view of what the chunk is than its whole text
/// (`crate::heads`). `append_split_identifiers` as in [`chunk_embedding_text`].
pub fn chunk_head_text(
    symbol: Option<&str>,
    scope: &[String],
    text: &str,
    append_split_identifiers: bool,
) -> String {
    let first_line = text
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("");
    let mut out = String::with_capacity(first_line.len() + 64);
    for part in symbol.into_iter().chain(scope.iter().map(String::as_str)) {
        out.push_str(part);
        out.push(' ');
    }
    out.push_str(first_line);
    if append_split_identifiers {
        let split = compound_identifier_words(&out);
        if !split.is_empty() {
            out.push('\n');
            out.push_str(&split);
        }
    }
    out
}

/// The distinct compound identifiers of `code` (`snake_case`, `camelCase`), each as its words.
fn compound_identifier_words(code: &str) -> String {
    let mut seen = std::collections::HashSet::new();
    let mut out = String::new();
    for identifier in code
        .split(|c: char| !(c == '_' || c.is_alphanumeric()))
        .filter(|word| !word.is_empty())
    {
        let parts = identifier_parts(identifier);
        if parts.len() < 2 || !seen.insert(identifier) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(", ");
        }
        let words: Vec<String> = parts
            .iter()
            .map(|&(start, end)| identifier[start..end].to_lowercase())
            .collect();
        out.push_str(&words.join(" "));
    }
    out
}

/// The first import lines of a file's opening text (`use`, `import`, `from ... import`,
/// `#include`, `require(...)`), at most [`MAX_IMPORT_LINES`].
pub fn import_lines(head: &str) -> Vec<String> {
    head.lines()
        .map(str::trim)
        .filter(|line| {
            line.starts_with("use ")
                || line.starts_with("pub use ")
                || line.starts_with("import ")
                || (line.starts_with("from ") && line.contains(" import "))
                || line.starts_with("#include")
                || (line.contains("require(")
                    && (line.starts_with("const ")
                        || line.starts_with("var ")
                        || line.starts_with("let ")))
        })
        .take(MAX_IMPORT_LINES)
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_like_the_distillation_script() {
        // Expected values computed with statictable.split_words.
        assert_eq!(
            split_words("parseHTTPRequest utf8_decode HTTPServer ABc 2d x86_64 Ünïcode"),
            [
                "parse", "http", "request", "utf", "decode", "http", "server", "a", "bc", "d", "x",
                "n", "code"
            ]
        );
        assert_eq!(
            split_words("fn new_in(alloc: A) -> Self"),
            ["fn", "new", "in", "alloc", "a", "self"]
        );
        assert!(split_words("1234 __ ::").is_empty());
    }

    #[test]
    fn embedding_text_carries_the_context() {
        let scope = vec!["impl Parser".to_string()];
        let imports =
            import_lines("//! doc\nuse std::io;\nuse crate::lexer::Token;\n\nfn main() {}");
        assert_eq!(imports, ["use std::io;", "use crate::lexer::Token;"]);
        let context = ChunkContext {
            path: "src/parser.rs",
            language: "rust",
            scope: &scope,
            symbol: Some("parse_expr"),
            imports: &imports,
            text: "fn parse_expr(&mut self) -> Expr { self.nextToken() }",
        };
        let plain = chunk_embedding_text(&context, false);
        assert!(plain.starts_with("src/parser.rs\nrust impl Parser parse_expr\nuse std::io;\n"));
        assert!(plain.ends_with("self.nextToken() }"));
        let with_words = chunk_embedding_text(&context, true);
        assert!(
            with_words.ends_with("\nparse expr, next token"),
            "{with_words}"
        );
    }
}
