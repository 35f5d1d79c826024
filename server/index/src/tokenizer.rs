//! The code-aware tokenizer used for every text field of the lexical index and for queries.
//!
//! It splits identifiers at `snake_case` underscores and `camelCase`/`PascalCase` humps, treats
//! `::`, `.`, `/` and `-` as separators, keeps the whole identifier (and whole `kebab-case`
//! words) as an extra token at the position of their first part, and lowercases everything.

use lode_embed::for_each_identifier_part;
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

/// Where a token lies in the text; its text is that slice, lowercased.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenSpan {
    pub start: usize,
    pub end: usize,
    pub position: usize,
}

/// Splits `text` into lowercase search tokens.
pub fn code_tokens(text: &str) -> Vec<CodeToken> {
    let mut spans = Vec::new();
    token_spans(text, &mut spans);
    spans
        .into_iter()
        .map(|span| CodeToken {
            text: text[span.start..span.end].to_lowercase(),
            start: span.start,
            end: span.end,
            position: span.position,
        })
        .collect()
}

/// Appends the spans of `text`'s tokens to `spans` (allocation-free when `spans` has room).
pub fn token_spans(text: &str, spans: &mut Vec<TokenSpan>) {
    let bytes = text.as_bytes();
    let mut position = 0usize;
    let mut at = 0usize;
    // The current run of words joined by single hyphens: (start, word count, position).
    let mut kebab: Option<(usize, usize, usize)> = None;
    while at < bytes.len() {
        let byte = bytes[at];
        if byte.is_ascii() {
            if !is_ascii_word_byte(byte) {
                at += 1;
                continue;
            }
        } else {
            let Some(ch) = next_char(text, at) else {
                break;
            };
            if !is_word_char(ch) {
                at += ch.len_utf8();
                continue;
            }
        }
        let start = at;
        while at < bytes.len() {
            let byte = bytes[at];
            if byte.is_ascii() {
                if !is_ascii_word_byte(byte) {
                    break;
                }
                at += 1;
                continue;
            }
            match next_char(text, at) {
                Some(c) if is_word_char(c) => at += c.len_utf8(),
                _ => break,
            }
        }
        let word_position = position;
        position = push_word(text, start, at, position, spans);

        let continues_previous = kebab.is_some() && start > 0 && bytes[start - 1] == b'-';
        kebab = match kebab {
            Some((kebab_start, count, kebab_position)) if continues_previous => {
                Some((kebab_start, count + 1, kebab_position))
            }
            _ => Some((start, 1, word_position)),
        };
        let continues_next =
            bytes.get(at) == Some(&b'-') && next_char(text, at + 1).is_some_and(is_word_char);
        if !continues_next
            && let Some((kebab_start, count, kebab_position)) = kebab.take()
            && count > 1
            && at - kebab_start <= MAX_TOKEN_BYTES
        {
            spans.push(TokenSpan {
                start: kebab_start,
                end: at,
                position: kebab_position,
            });
        }
    }
}

fn next_char(text: &str, at: usize) -> Option<char> {
    let byte = *text.as_bytes().get(at)?;
    if byte.is_ascii() {
        return Some(byte as char);
    }
    text.get(at..)?.chars().next()
}

fn is_word_char(ch: char) -> bool {
    ch == '_' || ch.is_alphanumeric()
}

/// [`is_word_char`] for an ASCII byte.
fn is_ascii_word_byte(byte: u8) -> bool {
    byte == b'_' || byte.is_ascii_alphanumeric()
}

/// Emits the parts of the identifier `text[start..end]`, then the identifier itself when it has
/// several parts (or surrounding underscores). Returns the next free position.
fn push_word(
    text: &str,
    start: usize,
    end: usize,
    first_position: usize,
    spans: &mut Vec<TokenSpan>,
) -> usize {
    let word = &text[start..end];
    let mut position = first_position;
    let mut parts = 0usize;
    for_each_identifier_part(word, |part_start, part_end| {
        if part_end - part_start <= MAX_TOKEN_BYTES {
            spans.push(TokenSpan {
                start: start + part_start,
                end: start + part_end,
                position,
            });
        }
        position += 1;
        parts += 1;
    });
    let trimmed_len = word.trim_matches('_').len();
    if (parts > 1 || trimmed_len != word.len()) && trimmed_len > 0 && word.len() <= MAX_TOKEN_BYTES
    {
        spans.push(TokenSpan {
            start,
            end,
            position: first_position,
        });
    }
    position.max(first_position + 1)
}

/// Stems at most this many distinct words before the cache starts over.
const STEM_CACHE_ENTRIES: usize = 100_000;
/// Slots of the cache's open-addressing table: a power of two, well above the entry cap so
/// probe runs stay short.
const STEM_CACHE_SLOTS: usize = 1 << 18;
/// Words stemmed before the cache's table (4 MB) is made: a query's handful of words does not
/// pay for zeroing it (a tenth of a served hybrid query's CPU went there), a text being indexed
/// soon does.
const STEM_CACHE_AFTER: usize = 256;

/// One remembered word: where it and its stem lie in the arena (the stem right after it).
#[derive(Clone, Copy, Default)]
struct StemSlot {
    /// The word's hash with the low bit set; 0 marks an empty slot.
    tag: u64,
    offset: u32,
    word_len: u16,
    stem_len: u16,
}

/// Lowercase word -> stem, remembered per tokenizer (one per indexing thread). Words and
/// stems live side by side in one string, so a hit reads one slot and one short run of bytes.
#[derive(Clone)]
struct StemCache {
    stemmer: frostem::Stemmer,
    slots: Vec<StemSlot>,
    arena: String,
    entries: usize,
    /// Words stemmed while there was no table yet.
    stemmed_before_table: usize,
}

impl Default for StemCache {
    fn default() -> Self {
        StemCache {
            stemmer: frostem::Stemmer::new(frostem::Algorithm::English),
            slots: Vec::new(),
            arena: String::new(),
            entries: 0,
            stemmed_before_table: 0,
        }
    }
}

/// Whether `word` (lowercase) ends in a character that no rule of the English (Porter2)
/// stemmer can remove or rewrite, so that it is its own stem. Its rules all end in `s`, `d`,
/// `g`, `y`, `l`, `i`, `r`, `n`, `m`, `e`, `c`, `t` or an apostrophe (step 0: `'s'`; 1a: `s`,
/// `ied`; 1b: `ed`, `ing`, `edly`; 1c: `y`; 2 to 5: `-tional` ... `-ize`, `-ion`, `-e`, `-ll`,
/// and the exceptions `skis`, `dying`, `idly` ...), and a word a rule did not touch is not
/// touched by a later one. A third of code tokens end otherwise (`self`, `map`, `into`, `u8`:
/// 32% of those over two bytes in the 65 MB sample of rust-vendor) and skip the stem cache,
/// whose lookups miss the CPU caches. The tests check the rule against the stemmer for every
/// word of the embedding vocabulary.
fn ends_past_every_suffix(word: &str) -> bool {
    matches!(
        word.as_bytes().last(),
        Some(b'a' | b'b' | b'f' | b'h' | b'j' | b'k' | b'o' | b'p' | b'q' | b'u' | b'v' | b'w')
            | Some(b'x' | b'z' | b'0'..=b'9' | b'_' | b'-')
    )
}

impl StemCache {
    /// Replaces `word` (lowercase) with its stem.
    fn stem_in_place(&mut self, word: &mut String) {
        // The English stemmer leaves words of one or two letters as they are, and those whose
        // last letter ends none of its suffixes.
        if word.len() <= 2 || ends_past_every_suffix(word) {
            return;
        }
        if word.len() > usize::from(u16::MAX) {
            let stem = self.stemmer.stem(word).into_owned();
            *word = stem;
            return;
        }
        if self.slots.is_empty() {
            if self.stemmed_before_table < STEM_CACHE_AFTER {
                self.stemmed_before_table += 1;
                let stem = self.stemmer.stem(word).into_owned();
                *word = stem;
                return;
            }
            self.slots = vec![StemSlot::default(); STEM_CACHE_SLOTS];
        }
        let tag = {
            use std::hash::Hasher;
            let mut hasher = rustc_hash::FxHasher::default();
            hasher.write(word.as_bytes());
            hasher.finish() | 1
        };
        let mask = STEM_CACHE_SLOTS - 1;
        let mut index = (tag >> 7) as usize & mask;
        loop {
            let slot = self.slots[index];
            if slot.tag == 0 {
                break;
            }
            if slot.tag == tag {
                let word_start = slot.offset as usize;
                let stem_start = word_start + usize::from(slot.word_len);
                if &self.arena[word_start..stem_start] == word.as_str() {
                    word.clear();
                    word.push_str(&self.arena[stem_start..stem_start + usize::from(slot.stem_len)]);
                    return;
                }
            }
            index = (index + 1) & mask;
        }
        let stem = self.stemmer.stem(word).into_owned();
        if self.entries >= STEM_CACHE_ENTRIES || self.arena.len() > u32::MAX as usize / 2 {
            self.slots.fill(StemSlot::default());
            self.arena.clear();
            self.entries = 0;
            index = (tag >> 7) as usize & mask;
        }
        // Stems are never longer than their words here; a longer one is just not remembered.
        if let Ok(stem_len) = u16::try_from(stem.len()) {
            self.slots[index] = StemSlot {
                tag,
                // Below u32::MAX: the arena is cleared before it grows past half of that.
                offset: self.arena.len() as u32,
                word_len: word.len() as u16,
                stem_len,
            };
            self.arena.push_str(word);
            self.arena.push_str(&stem);
            self.entries += 1;
        }
        *word = stem;
    }
}

/// Stems one lowercase word (what the index does to every token).
pub fn stem(word: &str) -> String {
    frostem::Stemmer::new(frostem::Algorithm::English)
        .stem(word)
        .into_owned()
}

/// The tantivy face of [`token_spans`] plus stemming; reuses its buffers across texts.
#[derive(Clone, Default)]
pub struct CodeTokenizer {
    spans: Vec<TokenSpan>,
    stems: StemCache,
}

/// Token stream over the spans of one text; each token's text is written into one reused buffer.
pub struct CodeTokenStream<'a> {
    text: &'a str,
    spans: &'a [TokenSpan],
    stems: &'a mut StemCache,
    next: usize,
    token: Token,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        let CodeTokenizer { spans, stems } = self;
        spans.clear();
        token_spans(text, spans);
        CodeTokenStream {
            text,
            spans,
            stems,
            next: 0,
            token: Token::default(),
        }
    }
}

impl TokenStream for CodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        let Some(span) = self.spans.get(self.next) else {
            return false;
        };
        self.next += 1;
        let slice = &self.text[span.start..span.end];
        self.token.text.clear();
        if slice.is_ascii() {
            self.token.text.push_str(slice);
            self.token.text.make_ascii_lowercase();
        } else {
            self.token
                .text
                .extend(slice.chars().flat_map(char::to_lowercase));
        }
        self.stems.stem_in_place(&mut self.token.text);
        self.token.offset_from = span.start;
        self.token.offset_to = span.end;
        self.token.position = span.position;
        self.token.position_length = 1;
        true
    }

    fn token(&self) -> &Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every word of the embedding vocabulary (30k English and code words and pieces), as it
    /// is and with each of the characters [`ends_past_every_suffix`] trusts appended: where it
    /// skips the stemmer, the stemmer would have left the word alone.
    #[test]
    fn words_ending_past_every_suffix_are_their_own_stems() {
        let vocabulary = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../assets/embeddings/static-minilm.vocab.txt"
        ));
        let stemmer = frostem::Stemmer::new(frostem::Algorithm::English);
        let mut skipped = 0;
        let mut checked = 0;
        for entry in vocabulary.lines() {
            let base = entry.trim_start_matches("##").to_lowercase();
            if base.is_empty() {
                continue;
            }
            for ending in [
                "", "a", "b", "f", "h", "j", "k", "o", "p", "q", "u", "v", "w", "x", "z", "0", "7",
                "_", "-",
            ] {
                let word = format!("{base}{ending}");
                checked += 1;
                if ends_past_every_suffix(&word) {
                    skipped += 1;
                    assert_eq!(
                        stemmer.stem(&word),
                        word.as_str(),
                        "{word:?} is not its own stem"
                    );
                }
            }
        }
        assert!(
            checked > 500_000 && skipped > checked / 2,
            "{skipped} of {checked}"
        );
        for changed in [
            "running",
            "matches",
            "parsed",
            "quickly",
            "connection",
            "skies",
        ] {
            assert!(!ends_past_every_suffix(changed), "{changed}");
            assert_ne!(stemmer.stem(changed), changed);
        }
    }

    #[test]
    fn stemming_leaves_words_of_two_bytes_or_fewer_alone() {
        let letters = b'a'..=b'z';
        for first in letters.clone() {
            assert_eq!(
                stem(&(first as char).to_string()),
                (first as char).to_string()
            );
            for second in letters.clone() {
                let word = String::from_utf8(vec![first, second]).unwrap();
                assert_eq!(stem(&word), word);
            }
        }
        for word in ["é", "ü", "ß", "0", "42"] {
            assert_eq!(stem(word), word);
        }
    }

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
    fn the_tantivy_stream_yields_the_same_tokens_stemmed() {
        let text = "parseHTTPRequest max-line-length Größe matches matching matched";
        let mut tokenizer = CodeTokenizer::default();
        let mut stream = tokenizer.token_stream(text);
        let mut streamed = Vec::new();
        while stream.advance() {
            streamed.push((stream.token().text.clone(), stream.token().position));
        }
        let direct: Vec<_> = code_tokens(text)
            .into_iter()
            .map(|t| (stem(&t.text), t.position))
            .collect();
        assert_eq!(streamed, direct);
        let matching: Vec<_> = streamed
            .iter()
            .filter(|(text, _)| text == "match")
            .collect();
        assert_eq!(
            matching.len(),
            3,
            "matches, matching, matched share one stem"
        );
    }

    #[test]
    fn the_stem_cache_answers_like_the_stemmer_across_restarts() {
        let mut cache = StemCache::default();
        let words: Vec<String> = [
            "matches",
            "matching",
            "relational",
            "dying",
            "skies",
            "news",
        ]
        .iter()
        .map(|w| w.to_string())
        .chain((0..(STEM_CACHE_ENTRIES + 5_000)).map(|n| format!("word{n}ings")))
        .collect();
        // Twice over: the second pass hits the cache (and the cap forces a restart on the way).
        for _ in 0..2 {
            for word in &words {
                let mut cached = word.clone();
                cache.stem_in_place(&mut cached);
                assert_eq!(cached, stem(word), "{word}");
            }
        }
        assert!(cache.entries <= STEM_CACHE_ENTRIES);
    }

    #[test]
    fn a_few_words_are_stemmed_without_making_the_cache_table() {
        let mut cache = StemCache::default();
        let words: Vec<String> = (0..STEM_CACHE_AFTER + 10)
            .map(|n| format!("parsing{n}s"))
            .collect();
        for (index, word) in words.iter().enumerate() {
            let mut stemmed = word.clone();
            cache.stem_in_place(&mut stemmed);
            assert_eq!(stemmed, stem(word), "{word}");
            assert_eq!(
                cache.slots.is_empty(),
                index < STEM_CACHE_AFTER,
                "word {index}"
            );
        }
        assert_eq!(cache.entries, 10);
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
