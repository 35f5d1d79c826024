//! What a conversation is about: the workspace files and code identifiers its recent messages
//! mention. Paths come from tool-call arguments (`path`, `file_path`, `paths`, …) and from text
//! (kept only when the file exists in the workspace); identifiers are words that look like code
//! (`snake_case`, `camelCase`, `PascalCase` with two humps, `a::b`, or anything in backticks).
//! The repo map is personalised with them, and retrieval skips files the model already read.

use std::collections::HashSet;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use lode_llm::{ContentPart, Message};

/// How many of the most recent messages are looked at.
pub const RECENT_MESSAGES: usize = 12;
/// At most this many files and identifiers are kept (most recent first).
pub const MAX_MENTIONED_FILES: usize = 20;
pub const MAX_MENTIONED_IDENTIFIERS: usize = 30;

/// Argument names whose string values are workspace paths.
const PATH_ARGUMENTS: &[&str] = &["path", "file", "file_path", "filepath", "paths", "files"];
/// Tools whose `path` argument means the model has the file's content in the conversation.
const READ_TOOLS: &[&str] = &["read_file"];

/// The files and identifiers a conversation mentions, most recent first, without duplicates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mentions {
    /// Workspace-relative, `/`-separated paths of existing files.
    pub files: Vec<String>,
    pub identifiers: Vec<String>,
    /// Files whose content the model has already read (through `read_file`).
    pub read_files: Vec<String>,
}

static PATH_PATTERN: LazyLock<Regex> = LazyLock::new(|| {
    // A hard-coded pattern: compiling it cannot fail.
    Regex::new(
        r"(?:\.{0,2}/)?(?:[A-Za-z0-9_.\-]+/)*[A-Za-z0-9_\-][A-Za-z0-9_.\-]*\.[A-Za-z0-9]{1,10}",
    )
    .expect("valid path regex")
});
static BACKTICK_PATTERN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"`([^`\n]{1,120})`").expect("valid backtick regex"));
static IDENTIFIER_PATTERN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*").expect("valid ident regex")
});

/// Extracts the mentions of the last [`RECENT_MESSAGES`] of `messages`. `root` is used to keep
/// only paths of files that exist inside it.
pub fn extract_mentions(root: &Path, messages: &[Message]) -> Mentions {
    let mut mentions = Mentions::default();
    let mut seen_files = HashSet::new();
    let mut seen_identifiers = HashSet::new();
    let mut seen_read = HashSet::new();
    let start = messages.len().saturating_sub(RECENT_MESSAGES);
    for message in messages[start..].iter().rev() {
        for part in message.content.iter().rev() {
            match part {
                ContentPart::Text { text } => {
                    scan_text(
                        root,
                        text,
                        &mut mentions,
                        &mut seen_files,
                        &mut seen_identifiers,
                    );
                }
                ContentPart::ToolCall(call) => {
                    let mut paths = Vec::new();
                    collect_path_arguments(&call.arguments, &mut paths);
                    for path in paths {
                        if let Some(relative) = existing_relative(root, &path) {
                            if READ_TOOLS.contains(&call.name.as_str())
                                && seen_read.insert(relative.clone())
                            {
                                mentions.read_files.push(relative.clone());
                            }
                            push_file(&mut mentions, &mut seen_files, relative);
                        }
                    }
                    for value in string_values(&call.arguments) {
                        scan_identifiers(&value, &mut mentions, &mut seen_identifiers, false);
                    }
                }
                ContentPart::Thinking { .. }
                | ContentPart::Context { .. }
                | ContentPart::Image { .. }
                | ContentPart::ToolResult(_) => {}
            }
        }
    }
    mentions.files.truncate(MAX_MENTIONED_FILES);
    mentions.identifiers.truncate(MAX_MENTIONED_IDENTIFIERS);
    mentions
}

fn scan_text(
    root: &Path,
    text: &str,
    mentions: &mut Mentions,
    seen_files: &mut HashSet<String>,
    seen_identifiers: &mut HashSet<String>,
) {
    for found in PATH_PATTERN.find_iter(text) {
        if let Some(relative) = existing_relative(root, found.as_str()) {
            push_file(mentions, seen_files, relative);
        }
    }
    for captures in BACKTICK_PATTERN.captures_iter(text) {
        if let Some(inner) = captures.get(1) {
            scan_identifiers(inner.as_str(), mentions, seen_identifiers, true);
        }
    }
    scan_identifiers(text, mentions, seen_identifiers, false);
}

fn push_file(mentions: &mut Mentions, seen: &mut HashSet<String>, relative: String) {
    if seen.insert(relative.clone()) {
        mentions.files.push(relative);
    }
}

fn scan_identifiers(text: &str, mentions: &mut Mentions, seen: &mut HashSet<String>, quoted: bool) {
    for found in IDENTIFIER_PATTERN.find_iter(text) {
        let whole = found.as_str();
        // `a::b::c` mentions `c` (the defined name) as the identifier to look up.
        let name = whole.rsplit("::").next().unwrap_or(whole);
        let qualifies = if quoted {
            name.len() >= 2
        } else {
            whole.contains("::") || looks_like_code(name)
        };
        if qualifies && seen.insert(name.to_owned()) {
            mentions.identifiers.push(name.to_owned());
        }
    }
}

/// `snake_case` (with a letter on both sides of an underscore), `camelCase`, or `PascalCase`
/// with at least two humps; plain words never qualify.
fn looks_like_code(word: &str) -> bool {
    if word.len() < 3 {
        return false;
    }
    let bytes = word.as_bytes();
    let snake = word.trim_matches('_').contains('_') && bytes.iter().any(u8::is_ascii_alphabetic);
    let humps = bytes
        .windows(2)
        .filter(|pair| pair[0].is_ascii_lowercase() && pair[1].is_ascii_uppercase())
        .count();
    let camel = bytes[0].is_ascii_lowercase() && humps >= 1;
    let pascal = bytes[0].is_ascii_uppercase() && humps >= 1;
    snake || camel || pascal
}

fn collect_path_arguments(value: &serde_json::Value, out: &mut Vec<String>) {
    if let serde_json::Value::Object(map) = value {
        for (key, value) in map {
            if PATH_ARGUMENTS.contains(&key.as_str()) {
                match value {
                    serde_json::Value::String(path) => out.push(path.clone()),
                    serde_json::Value::Array(items) => out.extend(
                        items
                            .iter()
                            .filter_map(|item| item.as_str().map(str::to_owned)),
                    ),
                    _ => {}
                }
            } else {
                collect_path_arguments(value, out);
            }
        }
    }
}

fn string_values(value: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            serde_json::Value::String(text) => out.push(text.clone()),
            serde_json::Value::Array(items) => stack.extend(items),
            serde_json::Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    out
}

/// `path` as a workspace-relative `/`-separated path when it names an existing file inside
/// `root` (absolute paths must lie under `root`; `..` may not climb out).
fn existing_relative(root: &Path, path: &str) -> Option<String> {
    let path = path.trim();
    if path.is_empty() || path.len() > 1024 {
        return None;
    }
    let candidate = Path::new(path);
    let relative = if candidate.is_absolute() {
        candidate.strip_prefix(root).ok()?.to_path_buf()
    } else {
        candidate.to_path_buf()
    };
    let mut parts: Vec<String> = Vec::new();
    for component in relative.components() {
        match component {
            std::path::Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                parts.pop()?;
            }
            _ => return None,
        }
    }
    if parts.is_empty() {
        return None;
    }
    let joined = parts.join("/");
    root.join(&joined).is_file().then_some(joined)
}
