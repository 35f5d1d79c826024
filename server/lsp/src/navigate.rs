//! Name-based navigation: the identifier under the cursor, the name an LSP position stands
//! for. Which definitions and references answer it, nearest first, is the index's
//! (`lode_index::Nearness`).

use crate::outline::is_identifier_byte;

/// The identifier that contains (or ends at) a byte offset, with its byte range.
pub fn identifier_at(text: &str, offset: usize) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let offset = offset.min(bytes.len());
    let mut start = offset;
    while start > 0 && is_identifier_byte(bytes[start - 1]) {
        start -= 1;
    }
    let mut end = offset;
    while end < bytes.len() && is_identifier_byte(bytes[end]) {
        end += 1;
    }
    while start < end && !text.is_char_boundary(start) {
        start += 1;
    }
    while end > start && !text.is_char_boundary(end) {
        end -= 1;
    }
    let word = &text[start..end];
    // A number is not a name.
    if word.is_empty() || word.as_bytes()[0].is_ascii_digit() {
        return None;
    }
    Some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_identifier_around_the_cursor() {
        let text = "let total = compute_sum(items);";
        let at = text.find("sum").unwrap();
        let (start, end) = identifier_at(text, at).unwrap();
        assert_eq!(&text[start..end], "compute_sum");
        // Right after the identifier still names it.
        let (start, end) = identifier_at(text, text.find('(').unwrap()).unwrap();
        assert_eq!(&text[start..end], "compute_sum");
        assert_eq!(identifier_at(text, text.find(" = ").unwrap() + 1), None);
        assert_eq!(identifier_at("x = 42", 5), None);
    }
}
