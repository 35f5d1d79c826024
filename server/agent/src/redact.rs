//! Redaction of secrets in text and JSON before anything is written to disk: the session store
//! (`.lode/agent.sqlite`), long-term memory, the audit log, `lode config`.
//!
//! What a secret looks like is `lode_secrets`' business (gitleaks' rule set, lode's own rules, the
//! one secret-name rule the sandbox also uses, base64-wrapped secrets); this module applies it to
//! text, JSON documents and SQLite parameters. The rules are deliberately broad (a false positive
//! costs a few characters of a stored line, a false negative leaks a key); `docs/permissions.md`
//! describes them. Redaction is idempotent: redacting redacted text changes nothing.
//!
//! SQLite writes of the session store and of memory go through [`execute_redacted`], which
//! redacts every text value bound to the statement, so a column added later is covered without
//! anyone remembering to call the filter.

use std::borrow::Cow;

use rusqlite::types::{ToSql, ToSqlOutput, Value as SqlValue, ValueRef};

/// What a secret is replaced with.
pub const REDACTED: &str = lode_secrets::REDACTED;

/// The ids of the secret formats, in the order they are applied (gitleaks' rule set and lode's
/// own, see `lode_secrets`), plus the two rules in code: `env-name` and `base64-wrapped`.
pub fn pattern_names() -> Vec<String> {
    lode_secrets::rules::rule_set()
        .rules
        .iter()
        .map(|rule| rule.id.clone())
        .chain(["env-name".to_owned(), "base64-wrapped".to_owned()])
        .collect()
}

/// Replaces every secret in `text` with [`REDACTED`] (keeping the key of `key=value`
/// assignments and the scheme word of `Bearer …`).
pub fn redact_text(text: &str) -> String {
    lode_secrets::redact(text).into_owned()
}

/// Whether `text` contains anything [`redact_text`] would replace.
pub fn contains_secret(text: &str) -> bool {
    lode_secrets::contains_secret(text)
}

/// Object keys whose values are secrets whatever they look like.
fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase().replace('-', "_");
    [
        "password",
        "passwd",
        "passphrase",
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

/// Redacts a JSON value: every string (object keys included) is passed through [`redact_text`],
/// and the values of secret-looking keys (`password`, `token`, `api_key`, `authorization`, …) are
/// replaced whole.
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
                    (redact_text(key), redacted)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Redacts a value about to be stored as text. A JSON document (an object or an array, as the
/// session store keeps message parts, tool arguments and display content) is redacted as JSON
/// with [`redact_json`], so the stored text stays valid JSON; anything else with
/// [`redact_text`]. Text without a secret comes back unchanged, byte for byte.
pub fn redact_stored_text(text: &str) -> Cow<'_, str> {
    let trimmed = text.trim_start();
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && let Ok(value) = serde_json::from_str::<serde_json::Value>(text)
    {
        let redacted = redact_json(&value);
        if redacted == value {
            return Cow::Borrowed(text);
        }
        return match serde_json::to_string(&redacted) {
            Ok(json) => Cow::Owned(json),
            // Serialising a `Value` cannot fail (its keys are strings); should it, store the
            // text redacted as text rather than in clear.
            Err(_) => Cow::Owned(redact_text(text)),
        };
    }
    let redacted = redact_text(text);
    if redacted == text {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(redacted)
    }
}

/// A statement parameter whose text, if it is text, is redacted with [`redact_stored_text`] as it
/// is bound. Integers, reals, blobs and NULL pass through untouched.
struct RedactedParam<'a>(&'a dyn ToSql);

impl ToSql for RedactedParam<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        let output = self.0.to_sql()?;
        let text = match &output {
            ToSqlOutput::Borrowed(ValueRef::Text(bytes)) => String::from_utf8_lossy(bytes),
            ToSqlOutput::Owned(SqlValue::Text(text)) => Cow::Borrowed(text.as_str()),
            _ => return Ok(output),
        };
        let replacement = match redact_stored_text(&text) {
            Cow::Owned(redacted) => Some(redacted),
            Cow::Borrowed(_) => None,
        };
        Ok(match replacement {
            Some(redacted) => ToSqlOutput::Owned(SqlValue::Text(redacted)),
            None => output,
        })
    }
}

/// Runs one SQLite statement that writes stored content, with every text parameter redacted
/// first.
///
/// This is the one door through which the session store (`sessions`, `messages`, `tool_calls`)
/// and long-term memory (`memories`) write: secrets are never persisted, whatever the column.
/// Redacting every bound text value, rather than chosen fields at each call site, means a column
/// added later is covered without anyone remembering to call the filter. Keys bound in `WHERE`
/// clauses pass through the same filter; ids lode makes (UUIDs, seqs) and the model's call ids
/// never look like secrets, and a write and its later update redact the same id alike.
pub(crate) fn execute_redacted(
    connection: &rusqlite::Connection,
    sql: &str,
    params: &[&dyn ToSql],
) -> rusqlite::Result<usize> {
    let redacted: Vec<RedactedParam<'_>> =
        params.iter().map(|param| RedactedParam(*param)).collect();
    connection.execute(sql, rusqlite::params_from_iter(redacted.iter()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_is_named() {
        let names = pattern_names();
        assert!(names.len() > 200, "{}", names.len());
        assert!(names.iter().any(|name| name == "huggingface-access-token"));
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

    /// Secrets of the formats added for storage at rest. Token-shaped values are assembled with
    /// `concat!` so the source holds no string a secret scanner would flag.
    #[test]
    fn more_formats_are_redacted() {
        let cases: &[(&str, &str)] = &[
            (
                concat!("glpat-", "xYz12AbC34dEf56GhI78"),
                "xYz12AbC34dEf56GhI78",
            ),
            (
                concat!(
                    "//registry.npmjs.org/:_authToken=npm_",
                    "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"
                ),
                "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5",
            ),
            (
                concat!("sk_", "live_", "51HxYzAbCdEfGhIjKlMnOpQr"),
                "51HxYzAbCdEfGhIjKlMnOpQr",
            ),
            (
                concat!("rk_", "live_", "51HxYzAbCdEfGhIjKlMnOpQr"),
                "51HxYzAbCdEfGhIjKlMnOpQr",
            ),
            (
                concat!("pk_", "live_", "51HxYzAbCdEfGhIjKlMnOpQr"),
                "51HxYzAbCdEfGhIjKlMnOpQr",
            ),
            (
                concat!("whsec_", "AbCdEfGhIjKlMnOpQrStUvWx12"),
                "AbCdEfGhIjKlMnOpQrStUvWx12",
            ),
            (
                concat!("xapp-1-", "A012BCDEFGH-1234567890123-abcdef"),
                "1234567890123-abcdef",
            ),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYq8Zr3kLm2Vx",
                "wJalrXUtnFEMI/K7MDENG/bPxRfiCYq8Zr3kLm2Vx",
            ),
            (
                "ENCRYPTION_KEY=9f8e7d6c5b4a39281706f5e4d3c2b1a0",
                "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
            ),
            ("export DB_PASS='Xq7vR2pL9sKm'", "Xq7vR2pL9sKm"),
            (
                "SENTRY_DSN=https://abc123def456@o1.ingest.example.io/7",
                "abc123def456",
            ),
            (
                "@@ -0,0 +1 @@\n+SIGNING_KEY=c0ffee1234beef",
                "c0ffee1234beef",
            ),
            ("STRIPE_KEY=a1b2c3d4 node server.js", "a1b2c3d4"),
            // SECRET anywhere in the name (Rails' `SECRET_KEY_BASE`, `AWS_SECRET_ACCESS_KEY_ID`).
            (
                "SECRET_KEY_BASE=5f2b1c9d8e7a6b5c4d3e2f1a",
                "5f2b1c9d8e7a6b5c4d3e2f1a",
            ),
            (
                r#"{"Authorization": "token 0123456789abcdef0123"}"#,
                "0123456789abcdef0123",
            ),
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
                "b3BlbnNzaC1rZXktdjEAAAAA",
            ),
            (
                "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBmQ2fK\n-----END EC PRIVATE KEY-----",
                "MHcCAQEEIBmQ2fK",
            ),
            (
                "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGXabc\n-----END PGP PRIVATE KEY BLOCK-----",
                "lQOYBGXabc",
            ),
        ];
        for (case, secret) in cases {
            let redacted = redact_text(case);
            assert!(!redacted.contains(secret), "{case} -> {redacted}");
            assert!(redacted.contains(REDACTED), "{case} -> {redacted}");
            assert_eq!(redact_text(&redacted), redacted, "idempotent for {case}");
        }
        // An assignment whose value is the next assignment's key does not hide that one.
        for text in [
            "aws-secret:\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYq8Zr3kLm2Vx",
            "secret: aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYq8Zr3kLm2Vx",
        ] {
            let redacted = redact_text(text);
            assert!(
                redacted.ends_with(&format!("aws_secret_access_key = {REDACTED}")),
                "{text} -> {redacted}"
            );
            assert_eq!(redact_text(&redacted), redacted);
        }
        assert_eq!(
            redact_text("ENCRYPTION_KEY=9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
            format!("ENCRYPTION_KEY={REDACTED}")
        );
    }

    #[test]
    fn environment_lines_that_are_not_secrets_are_left_alone() {
        let text = "MAX_TOKENS=4096\nBYPASS=1\nMONKEY=banana\nPATH=/usr/bin:/bin\n\
                    NEXTAUTH_URL=http://localhost:3000\nPAGE_SIZE=10\nKEYBOARD=us\n\
                    max_tokens = 100\nlet key = compute(x);\nRUST_LOG=debug";
        assert_eq!(redact_text(text), text);
    }

    #[test]
    fn stored_json_stays_json_and_clean_text_is_borrowed() {
        let clean = r#"[{"type":"text","text":"let max_tokens = 100;"}]"#;
        assert!(matches!(redact_stored_text(clean), Cow::Borrowed(_)));
        // A PEM block without its END line must not swallow the rest of the document.
        let value = serde_json::json!([
            {"text": "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc"},
            {"text": "after", "api_key": "short"},
            {"password=hunter2hunter2": 1}
        ]);
        let stored = redact_stored_text(&value.to_string()).into_owned();
        let parsed: serde_json::Value = serde_json::from_str(&stored).unwrap();
        assert_eq!(parsed[0]["text"], REDACTED);
        assert_eq!(parsed[1]["text"], "after");
        assert_eq!(parsed[1]["api_key"], REDACTED);
        assert!(!stored.contains("hunter2"), "{stored}");
        assert_eq!(redact_stored_text(&stored), stored);
        // Not JSON after all: redacted as text.
        assert_eq!(
            redact_stored_text("[password=hunter2hunter2"),
            format!("[password={REDACTED}")
        );
    }

    #[test]
    fn long_base64_blobs_are_not_touched() {
        let blob = format!(
            "{}AIzaSyD3x4mPl3K3yF0rL0d3T3st1ngAbCdEfGh{}",
            "A/".repeat(300),
            "+B".repeat(10)
        );
        assert_eq!(redact_text(&blob), blob);
        assert!(redact_text("key AIzaSyD3x4mPl3K3yF0rL0d3T3st1ngAbCdEfGh").contains(REDACTED));
    }

    #[test]
    fn every_text_bound_to_a_write_is_redacted() {
        let connection = rusqlite::Connection::open_in_memory().unwrap();
        connection
            .execute_batch("CREATE TABLE t (a TEXT, b TEXT, c INTEGER, d BLOB, e TEXT)")
            .unwrap();
        let owned = String::from(r#"{"token":"abc","path":"x"}"#);
        let blob = b"password=hunter2hunter2".to_vec();
        execute_redacted(
            &connection,
            "INSERT INTO t (a, b, c, d, e) VALUES (?1, ?2, ?3, ?4, ?5)",
            rusqlite::params![
                "password=hunter2hunter2",
                owned,
                7,
                blob,
                Option::<String>::None
            ],
        )
        .unwrap();
        let (a, b, c, d, e): (String, String, i64, Vec<u8>, Option<String>) = connection
            .query_row("SELECT a, b, c, d, e FROM t", [], |row| {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                ))
            })
            .unwrap();
        assert_eq!(a, format!("password={REDACTED}"));
        let b: serde_json::Value = serde_json::from_str(&b).unwrap();
        assert_eq!(b, serde_json::json!({"token": REDACTED, "path": "x"}));
        assert_eq!((c, d, e), (7, blob, None));
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
