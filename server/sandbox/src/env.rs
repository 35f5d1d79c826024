//! The environment a confined command gets: the caller's, less every variable that looks like a
//! credential (by name, or by a value that carries a password in a URL), less the names the
//! caller adds (providers' `api_key_env`), plus the ones `[sandbox] env_passthrough` keeps.

use std::ffi::{OsStr, OsString};

/// Name fragments (upper case) that mark a variable as a secret wherever they appear.
const SECRET_FRAGMENTS: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "API_KEY",
    "APIKEY",
    "PRIVATE_KEY",
    "ACCESS_KEY",
    "AUTH_",
    "COOKIE",
];
/// Name prefixes (upper case) of cloud and service credentials.
const SECRET_PREFIXES: &[&str] = &["AWS_", "AZURE_", "GCP_", "GOOGLE_", "OPENAI_", "ANTHROPIC_"];
/// Name suffixes (upper case).
const SECRET_SUFFIXES: &[&str] = &["_KEY", "_KEYS", "_PAT", "_PWD", "_DSN", "_AUTH"];
/// Whole names: agent sockets that hand out the user's keys, and service credentials whose
/// names carry none of the fragments above.
const SECRET_NAMES: &[&str] = &[
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
    "DATABASE_URL",
    "KUBECONFIG",
    "DOCKER_AUTH_CONFIG",
    "NETRC",
    "PGPASS",
    "PGPASSFILE",
];

/// Whether a variable's name marks it as a credential.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAMES.contains(&upper.as_str())
        || SECRET_PREFIXES
            .iter()
            .any(|prefix| upper.starts_with(prefix))
        || SECRET_SUFFIXES.iter().any(|suffix| upper.ends_with(suffix))
        || SECRET_FRAGMENTS
            .iter()
            .any(|fragment| upper.contains(fragment))
}

/// Whether a value carries a password in a URL (`scheme://user:password@host`).
fn value_has_url_password(value: &OsStr) -> bool {
    let value = value.to_string_lossy();
    value.split("://").skip(1).any(|rest| {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        authority
            .rsplit_once('@')
            .is_some_and(|(userinfo, _)| userinfo.contains(':'))
    })
}

/// The scrubbed environment: `vars` less secrets, less `extra_secret` names, keeping the names
/// in `passthrough` whatever they look like.
pub fn scrub(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    extra_secret: &[String],
    passthrough: &[String],
) -> Vec<(OsString, OsString)> {
    vars.into_iter()
        .filter(|(name, value)| {
            let name = name.to_string_lossy();
            if passthrough.iter().any(|kept| *kept == name) {
                return true;
            }
            !(is_secret_name(&name)
                || extra_secret.iter().any(|secret| *secret == name)
                || value_has_url_password(value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(name, value)| (OsString::from(name), OsString::from(value)))
            .collect()
    }

    fn names(scrubbed: &[(OsString, OsString)]) -> Vec<String> {
        scrubbed
            .iter()
            .map(|(name, _)| name.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn credentials_go_and_ordinary_variables_stay() {
        let input = vars(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/home/u"),
            ("CARGO_TARGET_DIR", "/t"),
            ("RUST_LOG", "debug"),
            ("LANG", "C.UTF-8"),
            ("GIT_AUTHOR_NAME", "A"),
            ("ANTHROPIC_API_KEY", "sk-ant-x"),
            ("OPENAI_API_KEY", "sk-x"),
            ("GITHUB_TOKEN", "ghp_x"),
            ("GH_TOKEN", "ghp_x"),
            ("AWS_ACCESS_KEY_ID", "AKIA"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
            ("NPM_TOKEN", "x"),
            ("MY_SERVICE_KEY", "x"),
            ("DB_PASSWORD", "x"),
            ("SLACK_BOT_TOKEN", "xoxb"),
            ("STRIPE_SECRET", "sk_live"),
            ("SSH_AUTH_SOCK", "/tmp/ssh/agent"),
            ("CARGO_REGISTRIES_MINE_TOKEN", "x"),
            ("REDIS", "redis://user:hunter2@cache:6379/0"),
            ("MODEL_PROVIDER", "custom"),
            ("NPM_CONFIG__AUTH", "x"),
        ]);
        let kept = names(&scrub(input, &["MODEL_PROVIDER".into()], &[]));
        assert_eq!(
            kept,
            vec![
                "PATH",
                "HOME",
                "CARGO_TARGET_DIR",
                "RUST_LOG",
                "LANG",
                "GIT_AUTHOR_NAME"
            ]
        );
    }

    #[test]
    fn passthrough_keeps_a_named_secret() {
        let input = vars(&[("CI_JOB_TOKEN", "x"), ("OTHER_TOKEN", "y")]);
        assert_eq!(
            names(&scrub(input, &[], &["CI_JOB_TOKEN".into()])),
            vec!["CI_JOB_TOKEN"]
        );
    }

    #[test]
    fn urls_without_passwords_stay() {
        let input = vars(&[
            ("HTTP_PROXY", "http://proxy:3128"),
            ("UPSTREAM", "https://user@example.invalid/x"),
        ]);
        assert_eq!(
            names(&scrub(input, &[], &[])),
            vec!["HTTP_PROXY", "UPSTREAM"]
        );
    }
}
