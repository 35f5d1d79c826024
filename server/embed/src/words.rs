//! The words of an identifier: `parse_http_request` and `parseHTTPRequest` both name `parse`,
//! `HTTP`/`http` and `Request`/`request`. Shared by the index's BM25 tokenizer (which emits each
//! part as a token) and by the embedding text (which embeds the parts as words).

/// Byte ranges of the parts of an identifier: split at `_` and at case humps
/// (`parseHTTPRequest` -> `parse`, `HTTP`, `Request`). Digits stay with what precedes them.
pub fn identifier_parts(word: &str) -> Vec<(usize, usize)> {
    let mut parts = Vec::new();
    for_each_identifier_part(word, |start, end| parts.push((start, end)));
    parts
}

/// Calls `emit` with the byte range of each part of `word`, as [`identifier_parts`] lists them.
/// Generic so that the BM25 tokenizer's hot loop inlines it.
pub fn for_each_identifier_part(word: &str, emit: impl FnMut(usize, usize)) {
    if word.is_ascii() {
        for_each_ascii_part(word.as_bytes(), emit);
    } else {
        for_each_unicode_part(word, emit);
    }
}

/// [`for_each_identifier_part`] of an ASCII word, byte by byte (most identifiers).
fn for_each_ascii_part(word: &[u8], mut emit: impl FnMut(usize, usize)) {
    let mut part_start: Option<usize> = None;
    let mut previous: Option<u8> = None;
    for (at, &byte) in word.iter().enumerate() {
        if byte == b'_' {
            if let Some(start) = part_start.take() {
                emit(start, at);
            }
            previous = Some(byte);
            continue;
        }
        match (part_start, previous) {
            (Some(start), Some(prev)) => {
                let hump = byte.is_ascii_uppercase()
                    && (prev.is_ascii_lowercase()
                        || prev.is_ascii_digit()
                        || (prev.is_ascii_uppercase()
                            && word.get(at + 1).is_some_and(u8::is_ascii_lowercase)));
                if hump {
                    emit(start, at);
                    part_start = Some(at);
                }
            }
            _ => part_start = Some(at),
        }
        previous = Some(byte);
    }
    if let Some(start) = part_start {
        emit(start, word.len());
    }
}

/// [`for_each_identifier_part`] of a word with non-ASCII letters, using Unicode case.
fn for_each_unicode_part(word: &str, mut emit: impl FnMut(usize, usize)) {
    let mut part_start: Option<usize> = None;
    let mut previous: Option<char> = None;
    let mut chars = word.char_indices().peekable();
    while let Some((at, ch)) = chars.next() {
        let next = chars.peek().map(|&(_, c)| c);
        if ch == '_' {
            if let Some(start) = part_start.take() {
                emit(start, at);
            }
            previous = Some(ch);
            continue;
        }
        match (part_start, previous) {
            (Some(start), Some(prev)) => {
                let hump = ch.is_uppercase()
                    && (prev.is_lowercase()
                        || prev.is_ascii_digit()
                        || (prev.is_uppercase() && next.is_some_and(|n| n.is_lowercase())));
                if hump {
                    emit(start, at);
                    part_start = Some(at);
                }
            }
            _ => part_start = Some(at),
        }
        previous = Some(ch);
    }
    if let Some(start) = part_start {
        emit(start, word.len());
    }
}

#[cfg(test)]
mod tests {
    use super::{for_each_ascii_part, for_each_unicode_part, identifier_parts};

    fn parts(word: &str) -> Vec<&str> {
        identifier_parts(word)
            .into_iter()
            .map(|(start, end)| &word[start..end])
            .collect()
    }

    #[test]
    fn splits_at_underscores_humps_and_acronym_ends() {
        assert_eq!(parts("parse_http_request"), ["parse", "http", "request"]);
        assert_eq!(parts("parseHTTPRequest"), ["parse", "HTTP", "Request"]);
        assert_eq!(parts("__init__"), ["init"]);
        assert_eq!(parts("utf8Decode"), ["utf8", "Decode"]);
    }

    #[test]
    fn splits_non_ascii_words_by_unicode_case() {
        assert_eq!(parts("größeÄndern"), ["größe", "Ändern"]);
    }

    /// Words over an alphabet that exercises every case boundary.
    fn boundary_words() -> Vec<String> {
        let alphabet = ['a', 'b', 'A', 'B', '1', '_'];
        let mut words = vec![String::new()];
        let mut all = Vec::new();
        for _ in 0..5 {
            words = words
                .iter()
                .flat_map(|w| alphabet.iter().map(move |c| format!("{w}{c}")))
                .collect();
            all.extend(words.iter().cloned());
        }
        all
    }

    #[test]
    fn ascii_parts_match_the_unicode_rules() {
        for word in boundary_words() {
            let mut ascii = Vec::new();
            for_each_ascii_part(word.as_bytes(), |a, b| ascii.push((a, b)));
            let mut unicode = Vec::new();
            for_each_unicode_part(&word, |a, b| unicode.push((a, b)));
            assert_eq!(ascii, unicode, "{word}");
        }
    }
}
