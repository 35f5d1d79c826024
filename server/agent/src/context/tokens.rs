//! Token counting for budgets: the cl100k tokenizer lode's index already ships, applied to text
//! and to whole messages (parts plus a small per-message framing overhead).

use lode_llm::{ContentPart, Message, ToolSpec};

/// What a message costs beyond its parts (role markers, separators), as providers frame them.
pub const MESSAGE_OVERHEAD_TOKENS: usize = 4;
/// A flat estimate for one image; providers price them by size, and budgets only need an order
/// of magnitude.
pub const IMAGE_TOKENS: usize = 1_000;

/// Counts remembered per generation of the memo; two generations are kept (see [`TokenMemo`]).
const MEMO_GENERATION_ENTRIES: usize = 32_768;

/// Token counts remembered by content (the 128-bit xxh3 hash of the text), so a text counted once
/// is never tokenized again: every request of a session re-counts the same history messages, tool
/// definitions, repo map and retrieved code, and only what is new costs a tokenizer pass. The
/// counts are those of the tokenizer itself, so nothing that depends on them (budgets, dropped
/// turns, compaction) changes. Bounded: when the current generation is full it becomes the
/// previous one and the one before is dropped; a hit in the previous generation is carried over.
#[derive(Default)]
struct TokenMemo {
    current: std::collections::HashMap<u128, usize>,
    previous: std::collections::HashMap<u128, usize>,
}

impl TokenMemo {
    fn get(&mut self, key: u128) -> Option<usize> {
        if let Some(count) = self.current.get(&key) {
            return Some(*count);
        }
        let count = self.previous.get(&key).copied()?;
        self.insert(key, count);
        Some(count)
    }

    fn insert(&mut self, key: u128, count: usize) {
        if self.current.len() >= MEMO_GENERATION_ENTRIES {
            self.previous = std::mem::take(&mut self.current);
        }
        self.current.insert(key, count);
    }
}

fn memo() -> parking_lot::MutexGuard<'static, TokenMemo> {
    static MEMO: std::sync::LazyLock<parking_lot::Mutex<TokenMemo>> =
        std::sync::LazyLock::new(Default::default);
    // The memo holds only counts; one left half-updated by a panic is still correct.
    MEMO.lock()
}

/// cl100k tokens in `text`. Remembered by content, so counting the same text again is a hash
/// lookup; the result is always [`count_tokens_uncached`]'s.
pub fn count_tokens(text: &str) -> usize {
    // Short texts too: a tokenizer pass costs microseconds however short the text (the split
    // pattern's setup), a lookup a fraction of that, and a session's history is full of short
    // texts (tool names and arguments, brief questions and answers) counted on every request.
    if text.is_empty() {
        return 0;
    }
    let key = xxhash_rust::xxh3::xxh3_128(text.as_bytes());
    if let Some(count) = memo().get(key) {
        return count;
    }
    // Counted outside the lock: other threads keep counting meanwhile.
    let count = count_tokens_uncached(text);
    memo().insert(key, count);
    count
}

/// cl100k tokens in `text`, always running the tokenizer.
pub fn count_tokens_uncached(text: &str) -> usize {
    match lode_index::count_tokens(text) {
        Ok(count) => count,
        // The tokenizer's data is compiled into the binary, so loading cannot fail in practice;
        // if it ever did, a conservative estimate (about three bytes a token for code) keeps the
        // budget safe instead of failing the turn.
        Err(_) => text.len().div_ceil(3),
    }
}

/// cl100k tokens of `pieces` joined into one text, from each piece's remembered count: only a
/// piece not counted before costs a tokenizer pass, not the whole text.
///
/// Exact, not an estimate. The tokenizer first splits text with cl100k's pattern and encodes
/// each split on its own, and where a piece ends with a line break and the next starts with a
/// character that is not white space, a split always ends at the seam: the pattern's matches
/// that take line breaks end at the last of a run of them (the run cannot reach into the next
/// piece), no match starts with a line break and runs on into a word, and the pattern looks at
/// nothing before a match's start. So the joined text splits into the splits of its pieces,
/// and its count is their sum. Where a seam is not like that, the joined text is counted.
pub fn count_tokens_joined<S: AsRef<str>>(pieces: &[S]) -> usize {
    let mut previous: Option<&str> = None;
    for piece in pieces
        .iter()
        .map(AsRef::as_ref)
        .filter(|piece| !piece.is_empty())
    {
        if let Some(before) = previous
            && !(before.ends_with('\n') && piece.chars().next().is_some_and(|c| !c.is_whitespace()))
        {
            let joined: String = pieces.iter().map(AsRef::as_ref).collect();
            return count_tokens(&joined);
        }
        previous = Some(piece);
    }
    pieces
        .iter()
        .map(|piece| count_tokens(piece.as_ref()))
        .sum()
}

/// Tokens of one message part.
pub fn part_tokens(part: &ContentPart) -> usize {
    match part {
        ContentPart::Text { text } | ContentPart::Context { text } => count_tokens(text),
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
        // Remembered too: the same text is cut the same way on every request of a turn (the
        // repo map, wrapped, is cut to its share each time).
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

/// [`lode_tools::untrusted::wrap`] within `max_tokens` (cl100k), cutting the content (never the
/// closing tag) with a marker when it does not fit; `None` when not even the empty block fits.
pub fn wrap_within(
    source: &str,
    attributes: &[(&str, &str)],
    text: &str,
    max_tokens: usize,
) -> Option<String> {
    use lode_tools::untrusted::wrap;
    let overhead = count_tokens(&wrap(source, attributes, ""));
    let mut room = max_tokens.checked_sub(overhead)?;
    loop {
        let wrapped = wrap(source, attributes, &truncate_to_tokens(text, room));
        let tokens = count_tokens(&wrapped);
        if tokens <= max_tokens {
            return Some(wrapped);
        }
        // Token counts are not quite additive across the seams; give back the difference.
        room = room.checked_sub((tokens - max_tokens).max(1))?;
    }
}
