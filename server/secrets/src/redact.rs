//! Finding secrets in text and replacing them: base64-wrapped secrets, then the rules in order
//! (lode's key formats, gitleaks' rules, then assignments: `NAME=value` of a secret-looking
//! variable name, and lode's assignment rules).

use std::borrow::Cow;
use std::sync::LazyLock;

use base64::Engine;
use regex::Regex;
use regex::bytes::Captures;

use crate::REDACTED;
use crate::names::is_secret_name;
use crate::rules::{Rule, RuleSet, Source, Stage, rule_set, shannon_entropy};

/// Runs of base64 long enough to hide a token (standard and URL-safe alphabets).
static BASE64_RUN: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"[A-Za-z0-9+/_\-]{24,}={0,2}").ok());
/// `NAME=value` with an upper-case, environment-style name; the name rule decides.
static ENV_ASSIGNMENT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r#"\b(?P<name>[A-Z0-9_]*[A-Z][A-Z0-9_]*)[ \t]*=[ \t]*["']?(?P<secret>[^\s"']{3,})"#)
        .ok()
});

/// Base64 runs longer than this are not decoded (images, archives): too big to be a token.
const BASE64_RUN_MAX: usize = 8 * 1024;
/// A whole text of this much base64 and nothing else is data (an image, a signature) and is
/// left alone: a chance match inside it would corrupt what must go back unchanged.
const BLOB_MIN_LEN: usize = 512;

/// `text` with every secret replaced by [`REDACTED`]; borrowed when nothing was found.
pub fn redact(text: &str) -> Cow<'_, str> {
    if is_base64_blob(text) {
        return Cow::Borrowed(text);
    }
    let mut out = Cow::Borrowed(text);
    if let Some(replaced) = redact_base64_wrapped(&out) {
        out = Cow::Owned(replaced);
    }
    let rules = rule_set();
    let candidates = rules.candidates(&out);
    let mut env_done = false;
    for index in candidates {
        let rule = &rules.rules[index];
        if rule.stage == Stage::Assignments && !env_done {
            env_done = true;
            if let Some(replaced) = redact_env_assignments(&out) {
                out = Cow::Owned(replaced);
            }
        }
        if let Some(replaced) = apply_rule(rules, rule, &out) {
            out = Cow::Owned(replaced);
        }
    }
    if !env_done && let Some(replaced) = redact_env_assignments(&out) {
        out = Cow::Owned(replaced);
    }
    out
}

/// Whether `text` holds anything [`redact`] would replace.
pub fn contains_secret(text: &str) -> bool {
    matches!(redact(text), Cow::Owned(ref owned) if owned != text)
}

/// Whether `text` is one long run of base64 and nothing else.
fn is_base64_blob(text: &str) -> bool {
    text.len() >= BLOB_MIN_LEN
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'/' | b'='))
}

/// The secret's span in a match: the first group named `secret…` that matched, else the
/// rule's `secretGroup`, else (gitleaks' way) the first non-empty group, else the whole match.
fn secret_span(rule: &Rule, captures: &Captures<'_>) -> Option<(usize, usize)> {
    let whole = captures.get(0)?;
    if let Some(regex) = rule.regex() {
        for name in regex.capture_names().flatten() {
            if name.starts_with("secret")
                && let Some(group) = captures.name(name)
            {
                return Some((group.start(), group.end()));
            }
        }
    }
    if let Some(index) = rule.secret_group {
        return captures
            .get(index)
            .map(|group| (group.start(), group.end()));
    }
    if rule.source == Source::Gitleaks {
        for group in captures.iter().skip(1).flatten() {
            if !group.is_empty() {
                return Some((group.start(), group.end()));
            }
        }
    }
    Some((whole.start(), whole.end()))
}

/// `start..end` widened to character boundaries (a byte regex may stop inside a character).
fn on_char_boundaries(text: &str, mut start: usize, mut end: usize) -> (usize, usize) {
    while start > 0 && !text.is_char_boundary(start) {
        start -= 1;
    }
    end = end.min(text.len());
    while end < text.len() && !text.is_char_boundary(end) {
        end += 1;
    }
    (start, end)
}

/// The line of `text` around `at`.
fn line_at(text: &str, start: usize, end: usize) -> &str {
    let from = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let to = text[end..].find('\n').map_or(text.len(), |i| end + i);
    &text[from..to]
}

/// Whether a gitleaks finding is a real secret: entropy high enough, no allowlist matching.
fn is_finding(
    rules: &RuleSet,
    rule: &Rule,
    text: &str,
    whole: (usize, usize),
    secret: &str,
) -> bool {
    if secret.contains(REDACTED) {
        return false;
    }
    if rule.source != Source::Gitleaks {
        return true;
    }
    if rule
        .entropy
        .is_some_and(|needed| shannon_entropy(secret) < needed)
    {
        return false;
    }
    let matched = &text[whole.0..whole.1];
    let line = line_at(text, whole.0, whole.1);
    !(rules.global.allows(secret, matched, line)
        || rule
            .allowlists
            .iter()
            .any(|allowlist| allowlist.allows(secret, matched, line)))
}

/// `text` with the rule's findings replaced, or `None` when it found nothing.
///
/// Not `Regex::replace_all`: an assignment whose "value" is the key of the next assignment
/// (`aws-secret:\naws_secret_access_key = …`) must not swallow that key, or the real value after
/// it would be skipped. Such a match is passed over and the search goes on from its value.
fn apply_rule(rules: &RuleSet, rule: &Rule, text: &str) -> Option<String> {
    let regex = rule.regex()?;
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    let mut from = 0;
    let mut changed = false;
    while from <= text.len() {
        let Some(captures) = regex.captures_at(bytes, from) else {
            break;
        };
        let Some(whole) = captures.get(0) else { break };
        if whole.is_empty() {
            from = whole.end() + 1;
            continue;
        }
        let Some((start, end)) = secret_span(rule, &captures) else {
            from = whole.end();
            continue;
        };
        if start > whole.start()
            && regex
                .find_at(bytes, start)
                .is_some_and(|next| next.start() == start)
        {
            from = start;
            continue;
        }
        let (start, end) = on_char_boundaries(text, start.max(copied), end);
        let (whole_start, whole_end) = on_char_boundaries(text, whole.start(), whole.end());
        let secret = &text[start..end];
        if secret.is_empty() || !is_finding(rules, rule, text, (whole_start, whole_end), secret) {
            from = whole.end().max(whole.start() + 1);
            continue;
        }
        out.push_str(&text[copied..start]);
        out.push_str(REDACTED);
        copied = end;
        changed = true;
        from = whole.end().max(end);
    }
    if !changed {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// `NAME=value` where the name is a secret's by [`is_secret_name`].
fn redact_env_assignments(text: &str) -> Option<String> {
    let regex = ENV_ASSIGNMENT.as_ref()?;
    if !text.contains('=') {
        return None;
    }
    let mut out = String::new();
    let mut copied = 0;
    let mut from = 0;
    let mut changed = false;
    while let Some(captures) = regex.captures_at(text, from) {
        let (Some(name), Some(secret)) = (captures.name("name"), captures.name("secret")) else {
            break;
        };
        // The value is itself the next assignment (`A_TOKEN=B_KEY=x`): judge that one.
        if regex
            .find_at(text, secret.start())
            .is_some_and(|next| next.start() == secret.start())
        {
            from = secret.start();
            continue;
        }
        if is_secret_name(name.as_str()) && !secret.as_str().contains(REDACTED) {
            out.push_str(&text[copied..secret.start()]);
            out.push_str(REDACTED);
            copied = secret.end();
            changed = true;
        }
        from = secret.end();
    }
    if !changed {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// Base64 runs that decode to text holding a secret, replaced whole.
fn redact_base64_wrapped(text: &str) -> Option<String> {
    let regex = BASE64_RUN.as_ref()?;
    let mut out = String::new();
    let mut copied = 0;
    let mut changed = false;
    for run in regex.find_iter(text) {
        if run.len() > BASE64_RUN_MAX {
            continue;
        }
        let Some(decoded) = decode_base64(run.as_str()) else {
            continue;
        };
        if redact_plain(&decoded) {
            out.push_str(&text[copied..run.start()]);
            out.push_str(REDACTED);
            copied = run.end();
            changed = true;
        }
    }
    if !changed {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// Whether decoded text holds a secret by the rules (not decoding base64 again).
fn redact_plain(text: &str) -> bool {
    let rules = rule_set();
    rules
        .candidates(text)
        .into_iter()
        .any(|index| apply_rule(rules, &rules.rules[index], text).is_some())
        || redact_env_assignments(text).is_some()
}

/// The text a base64 run decodes to, when it is mostly printable UTF-8.
fn decode_base64(run: &str) -> Option<String> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let bytes = [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
        .iter()
        .find_map(|engine| engine.decode(run).ok())?;
    let text = String::from_utf8(bytes).ok()?;
    let printable = text
        .chars()
        .filter(|ch| !ch.is_control() || ch.is_whitespace())
        .count();
    (text.chars().count() >= 8 && printable * 10 >= text.chars().count() * 9).then_some(text)
}

/// The ids of the rules that find a secret in `text`, each judged on the text as it is (for
/// tests and diagnostics; [`redact`] applies them one after another). `env-name` stands for the
/// `NAME=value` rule, `base64-wrapped` for a secret inside base64.
pub fn findings(text: &str) -> Vec<String> {
    let rules = rule_set();
    let mut found: Vec<String> = rules
        .candidates(text)
        .into_iter()
        .filter(|&index| apply_rule(rules, &rules.rules[index], text).is_some())
        .map(|index| rules.rules[index].id.clone())
        .collect();
    if redact_env_assignments(text).is_some() {
        found.push("env-name".to_owned());
    }
    if redact_base64_wrapped(text).is_some() {
        found.push("base64-wrapped".to_owned());
    }
    found
}
