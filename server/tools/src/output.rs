//! The shared output cap: tool output the model sees is bounded, keeping the head and the tail
//! (where errors and summaries usually are) with a marker in the middle saying what was left out.

/// The default cap on what one tool result shows the model, in characters.
pub const DEFAULT_OUTPUT_CAP: usize = 30_000;

/// Text after capping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CappedText {
    pub text: String,
    /// Whether anything was left out.
    pub truncated: bool,
    /// Characters left out of the middle.
    pub omitted_chars: usize,
}

/// Caps `text` at about `max_chars` characters, keeping the first and the last part whole lines
/// where possible, with a `[… N characters omitted …]` marker in between.
pub fn cap_output(text: &str, max_chars: usize) -> CappedText {
    let total = text.chars().count();
    if total <= max_chars {
        return CappedText {
            text: text.to_owned(),
            truncated: false,
            omitted_chars: 0,
        };
    }
    // Two fifths for the head, the rest for the tail: the end of a build log or a test run says
    // what failed.
    let head_chars = max_chars * 2 / 5;
    let tail_chars = max_chars.saturating_sub(head_chars);
    let head_end = byte_index_of_char(text, head_chars);
    let tail_start = byte_index_of_char(text, total - tail_chars);
    // Prefer cutting at line boundaries when a newline is near the cut.
    let head_end = match text[..head_end].rfind('\n') {
        Some(newline) if head_end - newline < 400 => newline + 1,
        _ => head_end,
    };
    let tail_start = match text[tail_start..].find('\n') {
        Some(offset) if offset < 400 && tail_start + offset + 1 < text.len() => {
            tail_start + offset + 1
        }
        _ => tail_start,
    };
    let head = &text[..head_end];
    let tail = &text[tail_start..];
    let omitted_chars = total - head.chars().count() - tail.chars().count();
    let separator = if head.ends_with('\n') || head.is_empty() {
        ""
    } else {
        "\n"
    };
    CappedText {
        text: format!("{head}{separator}[… {omitted_chars} characters omitted …]\n{tail}"),
        truncated: true,
        omitted_chars,
    }
}

/// The byte offset of the `n`th character (or the end).
fn byte_index_of_char(text: &str, n: usize) -> usize {
    text.char_indices()
        .nth(n)
        .map_or(text.len(), |(index, _)| index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_unchanged() {
        let capped = cap_output("hello\n", 100);
        assert_eq!(capped.text, "hello\n");
        assert!(!capped.truncated);
    }

    #[test]
    fn long_text_keeps_head_and_tail() {
        let text: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        let capped = cap_output(&text, 1000);
        assert!(capped.truncated);
        assert!(capped.text.starts_with("line 0\n"));
        assert!(capped.text.ends_with("line 1999\n"));
        assert!(capped.text.contains("characters omitted"));
        assert!(capped.text.chars().count() < 1100);
        assert_eq!(
            capped.omitted_chars + capped.text.chars().count()
                - capped
                    .text
                    .lines()
                    .find(|l| l.contains("omitted"))
                    .map_or(0, |l| l.chars().count() + 1),
            text.chars().count()
        );
    }

    #[test]
    fn multibyte_text_is_cut_on_char_boundaries() {
        let text = "é".repeat(5000);
        let capped = cap_output(&text, 100);
        assert!(capped.truncated);
        assert!(capped.text.starts_with('é'));
    }
}
