//! `lode-secrets`: what a secret looks like to lode.
//!
//! It owns two things every other crate asks about:
//! - [`is_secret_name`]: the one rule for secret-looking names of environment variables. The
//!   sandbox's launcher drops such variables from a command's environment (even inside an allowed
//!   prefix: `CARGO_REGISTRIES_X_TOKEN`), and redaction replaces the value of `NAME=value` for the
//!   same names, so the two never disagree.
//! - [`redact`]: secret formats found in text and replaced with [`REDACTED`]: gitleaks' default
//!   rule set (compiled in as data, `rules/gitleaks.toml`, MIT), lode's own rules
//!   (`rules/lode.toml`, each with its test cases), assignments of secret-looking names, and
//!   secrets wrapped in base64. Redaction is idempotent.
//!
//! It knows nothing about where text is written (the agent's store, audit log and memory call
//! it) or about processes.

mod names;
mod redact;
pub mod rules;

pub use names::{is_secret_name, value_carries_credentials};
pub use redact::{contains_secret, findings, redact};

/// What a secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

#[cfg(test)]
mod tests;
