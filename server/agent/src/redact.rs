//! Redaction of secrets in text and JSON before anything is written to a log, an audit line or
//! long-term memory.
//!
//! The patterns are deliberately broad (a false positive costs a few characters of a log line, a
//! false negative leaks a key). The list is documented in `docs/permissions.md`; keep the two in
//! step. Redaction is idempotent: redacting redacted text changes nothing.

use std::sync::LazyLock;

use regex::{Captures, Regex};

/// What a secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// One secret pattern: a name (for docs and tests) and the regex. When the regex has a group named
/// `keep`, that group is kept and only the rest of the match is replaced.
struct SecretPattern {
    name: &'static str,
    regex: Regex,
}

/// The patterns, most specific first (a PEM block before the generic assignment rule).
static PATTERNS: LazyLock<Vec<SecretPattern>> = LazyLock::new(|| {
    let sources: &[(&str, &str)] = &[
        (
            "pem_private_key",
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)",
        ),
        ("anthropic_key", r"\bsk-ant-[A-Za-z0-9_\-]{8,}"),
        (
            "openai_key",
            r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}",
        ),
        (
            "github_token",
            r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
        ),
        ("aws_access_key_id", r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),
        ("slack_token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
        ("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}"),
        (
            "jwt",
            r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
        ),
        (
            "bearer_token",
            r"(?i)(?P<keep>\bbearer\s+|\bauthorization:\s*(?:token|basic)\s+)[A-Za-z0-9_\-\.=+/~]{12,}",
        ),
        (
            "url_credentials",
            r"(?P<keep>\b[a-z][a-z0-9+\-.]*://[^\s:/@]+:)[^\s@/]+@",
        ),
        (
            "secret_assignment",
            r#"(?i)(?P<keep>\b[A-Za-z0-9_\-]*(?:password|passwd|pwd|secret|token|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key|client[_\-]?secret)["']?\s*[:=]\s*["']?)[^\s"',;&]{3,}"#,
        ),
    ];
    sources
        .iter()
        .map(|(name, source)| SecretPattern {
            name,
            // The sources are constants checked by the tests; a bad one is a programming error.
            regex: Regex::new(source).unwrap_or_else(|error| panic!("bad pattern {name}: {error}")),
        })
        .collect()
});

/// The names of the secret patterns, in the order they are applied.
pub fn pattern_names() -> Vec<&'static str> {
    PATTERNS.iter().map(|pattern| pattern.name).collect()
}

/// Replaces every secret in `text` with [`REDACTED`] (keeping the key of `key=value`
/// assignments and the scheme word of `Bearer …`).
pub fn redact_text(text: &str) -> String {
    let mut out = text.to_owned();
    for pattern in PATTERNS.iter() {
        if !pattern.regex.is_match(&out) {
            continue;
        }
        out = pattern
            .regex
            .replace_all(&out, |captures: &Captures<'_>| {
                let whole = captures.get(0).map_or("", |m| m.as_str());
                // Already redacted (idempotence): leave it alone.
                if whole.ends_with(REDACTED) || whole.contains(REDACTED) {
                    return whole.to_owned();
                }
                match captures.name("keep") {
                    Some(keep) => {
                        let suffix = if pattern.name == "url_credentials" {
                            "@"
                        } else {
                            ""
                        };
                        format!("{}{REDACTED}{suffix}", keep.as_str())
                    }
                    None => REDACTED.to_owned(),
                }
            })
            .into_owned();
    }
    out
}

/// Whether `text` contains anything [`redact_text`] would replace.
pub fn contains_secret(text: &str) -> bool {
    redact_text(text) != text
}

/// Object keys whose values are secrets whatever they look like.
fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase().replace('-', "_");
    [
        "password",
        "passwd",
        "secret",
        "token",
        "api_key",
        "apikey",
        "access_key",
        "private_key",
        "client_secret",
        "authorization",
        "cookie",
    ]
    .iter()
    .any(|needle| key.ends_with(needle))
}

/// Redacts a JSON value: every string is passed through [`redact_text`], and the values of
/// secret-looking keys (`password`, `token`, `api_key`, `authorization`, …) are replaced whole.
pub fn redact_json(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(text) => Value::String(redact_text(text)),
        Value::Array(items) => Value::Array(items.iter().map(redact_json).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, item)| {
                    let redacted = match item {
                        Value::String(_) | Value::Number(_) if is_secret_key(key) => {
                            Value::String(REDACTED.to_owned())
                        }
                        other => redact_json(other),
                    };
                    (key.clone(), redacted)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        assert_eq!(pattern_names().len(), PATTERNS.len());
    }

    #[test]
    fn keys_and_tokens_are_redacted() {
        let cases = [
            "key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv here",
            "OPENAI sk-proj-AbCdEfGhIjKlMnOpQrStUvWx",
            "ghp_0123456789abcdefghijABCDEFGHIJ0123",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
            "AKIAIOSFODNN7EXAMPLE",
            "xoxb-1234567890-abcdefghij",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36P",
            "Authorization: Bearer abcdefghijklmnopqrstuvwxyz",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----",
            "password=hunter2hunter2",
            "export API_KEY=\"abc123def456\"",
            "postgres://admin:s3cretpass@db.local/app",
        ];
        for case in cases {
            let redacted = redact_text(case);
            assert!(redacted.contains(REDACTED), "{case} -> {redacted}");
            assert_eq!(redact_text(&redacted), redacted, "idempotent for {case}");
        }
        assert_eq!(
            redact_text("password=hunter2hunter2"),
            format!("password={REDACTED}")
        );
    }

    #[test]
    fn ordinary_code_is_left_alone() {
        let code = "fn tokenize(text: &str) -> Vec<Token> { let skip = 3; }\nlet task = run();\nlet tokens = tokenize(text); let max_tokens: u32 = 100;\nauthor = \"Jane\"";
        assert_eq!(redact_text(code), code);
    }

    #[test]
    fn json_secret_keys_are_replaced_whole() {
        let value = serde_json::json!({
            "command": "curl -H 'Authorization: Bearer abcdefghijklmnop1234' x",
            "api_key": "short",
            "nested": [{"token": 12345}],
            "path": "src/lib.rs",
            "max_tokens": 100,
        });
        let redacted = redact_json(&value);
        assert_eq!(redacted["api_key"], REDACTED);
        assert_eq!(redacted["nested"][0]["token"], REDACTED);
        assert_eq!(redacted["path"], "src/lib.rs");
        assert_eq!(redacted["max_tokens"], 100);
        assert!(
            !redacted["command"]
                .as_str()
                .unwrap_or_default()
                .contains("abcdefghijklmnop1234")
        );
    }
}
