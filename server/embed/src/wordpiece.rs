//! WordPiece (BERT's subword tokenizer) over a plain vocabulary list, for words that are
//! already lower-case ASCII (see `text::for_each_word`), so no normalisation is needed.

use std::collections::HashMap;

use rustc_hash::FxBuildHasher;

use super::EmbedError;

/// Words longer than this many bytes become `[UNK]`, as in BERT.
const MAX_WORD_BYTES: usize = 100;

/// A WordPiece vocabulary: token text (continuations prefixed with `##`) -> id.
pub struct WordPiece {
    ids: HashMap<Box<str>, u32, FxBuildHasher>,
    unknown: u32,
}

impl WordPiece {
    /// Reads a vocabulary with one token per line; the line number is the id.
    pub fn from_lines(text: &str) -> Result<WordPiece, EmbedError> {
        let mut ids = HashMap::with_capacity_and_hasher(32_768, FxBuildHasher);
        for (id, token) in text.lines().enumerate() {
            ids.insert(token.into(), id as u32);
        }
        let unknown = *ids
            .get("[UNK]")
            .ok_or_else(|| EmbedError::BadTable("the vocabulary has no [UNK] token".into()))?;
        Ok(WordPiece { ids, unknown })
    }

    /// How many tokens the vocabulary has.
    pub fn token_count(&self) -> usize {
        self.ids.len()
    }

    /// Appends the ids of `word`'s pieces (greedy longest match first) to `out`; a word that
    /// cannot be covered becomes one `[UNK]`. `scratch` is reused between calls.
    pub fn tokenize(&self, word: &str, scratch: &mut String, out: &mut Vec<u32>) {
        if word.len() > MAX_WORD_BYTES {
            out.push(self.unknown);
            return;
        }
        if let Some(&id) = self.ids.get(word) {
            out.push(id);
            return;
        }
        let mark = out.len();
        let mut start = 0;
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while end > start {
                let piece = &word[start..end];
                let id = if start == 0 {
                    self.ids.get(piece)
                } else {
                    scratch.clear();
                    scratch.push_str("##");
                    scratch.push_str(piece);
                    self.ids.get(scratch.as_str())
                };
                if let Some(&id) = id {
                    found = Some(id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => {
                    out.push(id);
                    start = end;
                }
                None => {
                    out.truncate(mark);
                    out.push(self.unknown);
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_longest_match_with_continuations() {
        let vocab = WordPiece::from_lines("[PAD]\n[UNK]\npars\n##ing\n##e\nparse\n##r\nx").unwrap();
        let mut scratch = String::new();
        let mut ids = Vec::new();
        vocab.tokenize("parsing", &mut scratch, &mut ids);
        assert_eq!(ids, [2, 3]);
        ids.clear();
        vocab.tokenize("parser", &mut scratch, &mut ids);
        assert_eq!(ids, [5, 6]);
        ids.clear();
        vocab.tokenize("parsez", &mut scratch, &mut ids);
        assert_eq!(ids, [1], "an uncoverable word is one [UNK]");
        assert!(WordPiece::from_lines("a\nb").is_err());
    }
}
