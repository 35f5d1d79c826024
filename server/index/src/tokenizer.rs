//! The code-aware tokenizer used for every text field of the lexical index and for queries.
//!
//! It splits identifiers at `snake_case` underscores and `camelCase`/`PascalCase` humps, treats
//! `::`, `.`, `/` and `-` as separators, keeps the whole identifier (and whole `kebab-case`
//! words) as an extra token at the position of their first part, and lowercases everything.

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// The name the tokenizer is registered under in the tantivy index.
pub const CODE_TOKENIZER: &str = "lode_code";

/// Longest token kept, in bytes; longer runs (hashes, base64 blobs) are noise for search.
const MAX_TOKEN_BYTES: usize = 64;

/// A token produced by [`code_tokens`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeToken {
    pub text: String,
    pub start: usize,
    pub end: usize,
    pub position: usize,
}

/// Splits `text` into lowercase search tokens.
pub fn code_tokens(text: &str) -> Vec<CodeToken> {
    let mut tokens = Vec::new();
    let mut position = 0usize;
    let bytes = text.as_bytes();
    let mut at = 0usize;
    // Start of a run of words joined by single hyphens (kebab-case), and how many words it has.
    let mut kebab: Option<(usize, usize, usize)> = None; // (start, word count, position)
    while at < text.len() {
        let Some(ch) = text[at..].chars().next() else {
            break;
        };
        if !is_word_char(ch) {
            at += ch.len_utf8();
            continue;
        }
        let start = at;
        while at < text.len() {
            match text[at..].chars().next() {
                Some(c) if is_word_char(c) => at += c.len_utf8(),
                _ => break,
            }
        }
        let word = &text[start..at];
        let word_position = position;
        position = push_word(word, start, position, &mut tokens);

        kebab = match kebab {
            Some((kebab_start, count, kebab_position))
                if bytes.get(start.wrapping_sub(1)) == Some(&b'-') =>
            {
                Some((kebab_start, count + 1, kebab_position))
            }
            previous => {
                flush_kebab(text, previous, start, &mut tokens);
                Some((start, 1, word_position))
            }
        };
        let continues_kebab =
            bytes.get(at) == Some(&b'-') && text[at + 1..].chars().next().is_some_and(is_word_char);
        if !continues_kebab {
            flush_kebab(text, kebab.take(), at, &mut tokens);
        }
    }
    flush_kebab(text, kebab, text.len(), &mut tokens);
    tokens
}

fn flush_kebab(
    text: &str,
    kebab: Option<(usize, usize, usize)>,
    end: usize,
    tokens: &mut Vec<CodeToken>,
) {
    if let Some((start, count, position)) = kebab
        && count > 1
        && end - start <= MAX_TOKEN_BYTES
    {
        let whole = text[start..end].trim_end_matches('-');
        tokens.push(CodeToken {
            text: whole.to_lowercase(),
            start,
            end: start + whole.len(),
            position,
        });
    }
}

fn is_word_char(ch: char) -> bool {
    ch == '_' || ch.is_alphanumeric()
}

/// Emits the parts of one identifier, then the identifier itself when it has several parts.
/// Returns the next free position.
fn push_word(
    word: &str,
    offset: usize,
    first_position: usize,
    tokens: &mut Vec<CodeToken>,
) -> usize {
    let parts = identifier_parts(word);
    let mut position = first_position;
    for &(start, end) in &parts {
        if end - start <= MAX_TOKEN_BYTES {
            tokens.push(CodeToken {
                text: word[start..end].to_lowercase(),
                start: offset + start,
                end: offset + end,
                position,
            });
        }
        position += 1;
    }
    let trimmed = word.trim_matches('_');
    if (parts.len() > 1 || trimmed.len() != word.len())
        && !trimmed.is_empty()
        && word.len() <= MAX_TOKEN_BYTES
    {
        tokens.push(CodeToken {
            text: word.to_lowercase(),
            start: offset,
            end: offset + word.len(),
            position: first_position,
        });
    }
    position.max(first_position + 1)
}

/// Byte ranges of the parts of an identifier: split at `_` and at case humps
/// (`parseHTTPRequest` -> `parse`, `HTTP`, `Request`). Digits stay with what precedes them.
pub fn identifier_parts(word: &str) -> Vec<(usize, usize)> {
    let mut parts = Vec::new();
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut part_start: Option<usize> = None;
    for (i, &(at, ch)) in chars.iter().enumerate() {
        if ch == '_' {
            if let Some(start) = part_start.take() {
                parts.push((start, at));
            }
            continue;
        }
        let Some(start) = part_start else {
            part_start = Some(at);
            continue;
        };
        let previous = chars[i - 1].1;
        let next = chars.get(i + 1).map(|&(_, c)| c);
        let hump = ch.is_uppercase()
            && (previous.is_lowercase()
                || previous.is_ascii_digit()
                || (previous.is_uppercase() && next.is_some_and(|n| n.is_lowercase())));
        if hump {
            parts.push((start, at));
            part_start = Some(at);
        }
    }
    if let Some(start) = part_start {
        parts.push((start, word.len()));
    }
    parts
}

/// The tantivy face of [`code_tokens`].
#[derive(Clone, Default)]
pub struct CodeTokenizer;

/// Token stream over pre-computed tokens.
pub struct CodeTokenStream {
    tokens: Vec<Token>,
    next: usize,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream {
        let tokens = code_tokens(text)
            .into_iter()
            .map(|t| Token {
                offset_from: t.start,
                offset_to: t.end,
                position: t.position,
                text: t.text,
                position_length: 1,
            })
            .collect();
        CodeTokenStream { tokens, next: 0 }
    }
}

impl TokenStream for CodeTokenStream {
    fn advance(&mut self) -> bool {
        if self.next < self.tokens.len() {
            self.next += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &Token {
        // `advance` returned true before any call, so `next >= 1` and in range.
        &self.tokens[self.next - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.next - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<String> {
        code_tokens(text).into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn splits_camel_pascal_and_snake_case_and_keeps_the_whole() {
        assert_eq!(texts("getUserName"), ["get", "user", "name", "getusername"]);
        assert_eq!(texts("HTTPServer"), ["http", "server", "httpserver"]);
        assert_eq!(
            texts("parse_config_file"),
            ["parse", "config", "file", "parse_config_file"]
        );
        assert_eq!(texts("Index"), ["index"]);
        assert_eq!(texts("utf8Decode"), ["utf8", "decode", "utf8decode"]);
    }

    #[test]
    fn separators_split_paths_and_kebab_words_are_kept_whole() {
        assert_eq!(texts("std::io::Read"), ["std", "io", "read"]);
        assert_eq!(texts("src/main.rs"), ["src", "main", "rs"]);
        assert_eq!(
            texts("max-line-length"),
            ["max", "line", "length", "max-line-length"]
        );
    }

    #[test]
    fn whole_identifier_shares_the_position_of_its_first_part() {
        let tokens = code_tokens("fooBar baz");
        let positions: Vec<_> = tokens
            .iter()
            .map(|t| (t.text.as_str(), t.position))
            .collect();
        assert_eq!(
            positions,
            [("foo", 0), ("bar", 1), ("foobar", 0), ("baz", 2)]
        );
    }

    #[test]
    fn drops_overlong_runs_and_survives_unicode() {
        let blob = "a".repeat(200);
        assert!(texts(&blob).is_empty());
        assert_eq!(
            texts("größeÄnderung"),
            ["größe", "änderung", "größeänderung"]
        );
    }
}
