//! Token counting for budgets: the cl100k tokenizer lode's index already ships, applied to text
//! and to whole messages (parts plus a small per-message framing overhead).

use crate::llm::{ContentPart, Message, ToolSpec};

/// What a message costs beyond its parts (role markers, separators), as providers frame them.
pub const MESSAGE_OVERHEAD_TOKENS: usize = 4;
/// A flat estimate for one image; providers price them by size, and budgets only need an order
/// of magnitude.
pub const IMAGE_TOKENS: usize = 1_000;

/// cl100k tokens in `text`.
pub fn count_tokens(text: &str) -> usize {
    match lode_index::repomap::count_tokens(text) {
        Ok(count) => count,
        // The tokenizer's data is compiled into the binary, so loading cannot fail in practice;
        // if it ever did, a conservative estimate (about three bytes a token for code) keeps the
        // budget safe instead of failing the turn.
        Err(_) => text.len().div_ceil(3),
    }
}

/// Tokens of one message part.
pub fn part_tokens(part: &ContentPart) -> usize {
    match part {
        ContentPart::Text { text } => count_tokens(text),
        ContentPart::Thinking { text, .. } => count_tokens(text),
        ContentPart::Image { .. } => IMAGE_TOKENS,
        ContentPart::ToolCall(call) => {
            count_tokens(&call.name) + count_tokens(&call.arguments.to_string()) + 3
        }
        ContentPart::ToolResult(result) => count_tokens(&result.content) + 3,
    }
}

/// Tokens of one message, framing included.
pub fn message_tokens(message: &Message) -> usize {
    MESSAGE_OVERHEAD_TOKENS + message.content.iter().map(part_tokens).sum::<usize>()
}

/// Tokens of a list of messages.
pub fn messages_tokens(messages: &[Message]) -> usize {
    messages.iter().map(message_tokens).sum()
}

/// Tokens the tool definitions take in a request.
pub fn tools_tokens(tools: &[ToolSpec]) -> usize {
    tools
        .iter()
        .map(|tool| {
            count_tokens(&tool.name)
                + count_tokens(&tool.description)
                + count_tokens(&tool.parameters.to_string())
                + 8
        })
        .sum()
}

/// The longest prefix of `text` within `max_tokens`, cut at a line end when one is near, with a
/// marker saying what was left out. `text` itself when it fits.
pub fn truncate_to_tokens(text: &str, max_tokens: usize) -> String {
    if count_tokens(text) <= max_tokens {
        return text.to_owned();
    }
    let marker = |kept: usize| {
        format!(
            "\n[truncated: {kept} of {} bytes shown to fit the context budget]",
            text.len()
        )
    };
    let marker_tokens = count_tokens(&marker(text.len()));
    let Some(available) = max_tokens.checked_sub(marker_tokens) else {
        return String::new();
    };
    // Binary search over byte lengths (at char boundaries) for the longest prefix that fits.
    let (mut low, mut high) = (0usize, text.len());
    while low < high {
        let middle = floor_char_boundary(text, (low + high).div_ceil(2));
        if middle <= low {
            break;
        }
        if count_tokens(&text[..middle]) <= available {
            low = middle;
        } else {
            high = middle - 1;
        }
    }
    let mut end = floor_char_boundary(text, low);
    if let Some(newline) = text[..end].rfind('\n')
        && newline >= end / 2
    {
        end = newline;
    }
    let mut out = text[..end].to_owned();
    out.push_str(&marker(end));
    out
}

/// The largest char boundary at or below `index`.
pub(crate) fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}
