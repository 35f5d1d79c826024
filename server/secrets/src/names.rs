//! The one rule for secret-looking names of environment variables (and `NAME=value` lines): the
//! sandbox's launcher drops such variables even when their prefix is allowed, and redaction
//! replaces their values in anything lode writes. One function, so the two never disagree.

/// Whole names that hold or hand out credentials though no word of theirs says so.
const SECRET_NAMES: &[&str] = &[
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
    "DATABASE_URL",
    "KUBECONFIG",
    "NETRC",
    "PGPASSFILE",
    "SSHPASS",
];
/// Prefixes of whole credential namespaces (cloud providers, LLM providers).
const SECRET_PREFIXES: &[&str] = &["AWS_", "AZURE_", "GCP_", "GOOGLE_", "OPENAI_", "ANTHROPIC_"];
/// A word of the name (split at `_`) ending with one of these marks a secret: `GITHUB_TOKEN`,
/// `NPM_CONFIG_//host/:_authToken`, `SECRET_KEY_BASE`, `DB_PASS`, `PGPASS`, `CLIENT_APIKEY`.
/// `MAX_TOKENS` does not (its word is `TOKENS`), nor `PASSTHROUGH`.
const SECRET_WORD_ENDINGS: &[&str] = &[
    "TOKEN",
    "SECRET",
    "SECRETS",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "PASS",
    "CREDENTIAL",
    "CREDENTIALS",
    "APIKEY",
    "COOKIE",
    "COOKIES",
    "JWT",
];
/// Whole words that mark a secret wherever they stand in the name: `SENTRY_DSN`,
/// `SLACK_WEBHOOK_URL`, `NPM_CONFIG__AUTH`, `DOCKER_AUTH_CONFIG`, `SIGNING_SALT`.
const SECRET_WORDS: &[&str] = &["DSN", "WEBHOOK", "AUTH", "SALT"];
/// Whole words that mark a secret only beside another word (`API_KEY`, `BW_SESSION`, `DB_PWD`,
/// `GITLAB_PAT`), since alone they name something else (`PWD` is the working directory).
const SECRET_WORDS_WITH_OTHERS: &[&str] = &["KEY", "KEYS", "PWD", "PAT", "SESSION"];

/// Whether a variable's name marks it as a credential.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if SECRET_NAMES.contains(&upper.as_str())
        || SECRET_PREFIXES
            .iter()
            .any(|prefix| upper.starts_with(prefix))
    {
        return true;
    }
    let words: Vec<&str> = upper.split('_').filter(|word| !word.is_empty()).collect();
    words.iter().any(|word| {
        SECRET_WORD_ENDINGS
            .iter()
            .any(|ending| word.ends_with(ending))
            || SECRET_WORDS.contains(word)
            || (words.len() > 1 && SECRET_WORDS_WITH_OTHERS.contains(word))
    })
}

/// Whether a value carries credentials in a URL: a password (`scheme://user:password@host`) or
/// a token as the user name (`https://ghp_…@github.com`, any user name of 16 or more
/// characters).
pub fn value_carries_credentials(value: &str) -> bool {
    value.split("://").skip(1).any(|rest| {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        authority.rsplit_once('@').is_some_and(|(userinfo, _)| {
            userinfo.contains(':') || userinfo.len() >= TOKEN_USER_MIN_LEN
        })
    })
}

/// A URL user name at least this long is taken for a token.
pub(crate) const TOKEN_USER_MIN_LEN: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_secret_names() {
        for name in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "NPM_TOKEN",
            "MY_SERVICE_KEY",
            "DB_PASSWORD",
            "DB_PASS",
            "SSHPASS",
            "PGPASS",
            "BW_SESSION",
            "CI_JOB_JWT",
            "CI_JOB_JWT_V2",
            "SLACK_WEBHOOK_URL",
            "SLACK_BOT_TOKEN",
            "STRIPE_SECRET",
            "SSH_AUTH_SOCK",
            "CARGO_REGISTRIES_MINE_TOKEN",
            "NPM_CONFIG__AUTH",
            "NPM_CONFIG_//registry.npmjs.org/:_authToken",
            "SECRET_KEY_BASE",
            "SENTRY_DSN",
            "DATABASE_URL",
            "HF_TOKEN",
            "VAULT_TOKEN",
            "DB_PWD",
            "GITLAB_PAT",
            "CLIENT_APIKEY",
            "ENCRYPTION_KEY",
            "SIGNING_KEY",
            "DOCKER_AUTH_CONFIG",
            "github_token",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn ordinary_names_are_not_secret() {
        for name in [
            "PATH",
            "HOME",
            "PWD",
            "OLDPWD",
            "CARGO_TARGET_DIR",
            "RUST_LOG",
            "LANG",
            "GIT_AUTHOR_NAME",
            "MAX_TOKENS",
            "KEYBOARD",
            "MONKEY",
            "PAGE_SIZE",
            "NEXTAUTH_URL",
            "PASSTHROUGH",
            "KEY",
            "SESSION",
            "TERM",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn urls_with_credentials_are_found() {
        assert!(value_carries_credentials(
            "redis://user:hunter2@cache:6379/0"
        ));
        assert!(value_carries_credentials(
            "https://ghp_0123456789abcdefghij0123@github.com/o/r.git"
        ));
        assert!(!value_carries_credentials("http://proxy:3128"));
        assert!(!value_carries_credentials("https://user@example.invalid/x"));
        assert!(!value_carries_credentials("plain text @ no url"));
    }
}
