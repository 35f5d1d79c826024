//! The environment a confined command gets: an allowlist, the way Codex's
//! `shell_environment_policy` and Claude Code do it. Only what builds and tests need passes
//! (the shell's basics, locale, terminal, and the toolchains' own variables), and even inside an
//! allowed prefix a name that looks like a credential ([`lode_secrets::is_secret_name`], the
//! rule redaction uses too) or a value carrying credentials in a URL is dropped. Names that
//! point at sockets outside the sandbox (`SSH_AUTH_SOCK`, `DBUS_SESSION_BUS_ADDRESS`, `DISPLAY`,
//! `WAYLAND_DISPLAY`, `XDG_RUNTIME_DIR`) are never on the list. `[sandbox] env_passthrough` in
//! the user's own config keeps a name whatever it looks like.

use std::ffi::OsString;

pub use lode_secrets::is_secret_name;

/// Exact names that pass.
const ALLOWED_NAMES: &[&str] = &[
    // The shell and the user.
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "PWD",
    "SHLVL",
    "HOSTNAME",
    "TMPDIR",
    "TZ",
    "EDITOR",
    "VISUAL",
    "PAGER",
    // Locale and terminal.
    "LANG",
    "LANGUAGE",
    "TERM",
    "COLORTERM",
    "COLUMNS",
    "LINES",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    // Where tools keep their configuration and caches (not the runtime dir: it holds sockets).
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CONFIG_DIRS",
    "XDG_DATA_DIRS",
    // CI detection changes how test runners report.
    "CI",
    // Certificates and proxies (a proxy URL with a password is dropped by its value).
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    // C and C++ builds (build scripts compile C).
    "CC",
    "CXX",
    "AR",
    "LD",
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "LDFLAGS",
    "CPATH",
    "LIBRARY_PATH",
    "LD_LIBRARY_PATH",
    "PKG_CONFIG_PATH",
    "MAKEFLAGS",
    "MAKELEVEL",
    // Git identity for tests that commit (nothing of git's own that runs commands).
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    // Toolchains without a prefix of their own.
    "JAVA_HOME",
    "JDK_HOME",
    "M2_HOME",
    "VIRTUAL_ENV",
    "PYENV_ROOT",
    "NVM_DIR",
    "NVM_BIN",
    "VOLTA_HOME",
    "PNPM_HOME",
    "BUN_INSTALL",
    "GEM_HOME",
    "GEM_PATH",
    "DOTNET_ROOT",
    "ANDROID_HOME",
    "ANDROID_SDK_ROOT",
];

/// Name prefixes that pass: locale categories and the toolchains' own variables.
const ALLOWED_PREFIXES: &[&str] = &[
    "LC_",
    "CARGO_",
    "RUSTUP_",
    "RUST",
    "GO",
    "CGO_",
    "MAVEN_",
    "GRADLE_",
    "CONDA_",
    "NODE_",
    "NPM_CONFIG_",
    "npm_config_",
    "YARN_",
    "PYTHON",
    "PIP_",
    "UV_",
    "POETRY_",
    "PYTEST_",
    "DENO_",
    "CMAKE_",
    "DOTNET_",
];

/// Whether `name` is on the allowlist (before the secret-name rule).
pub fn is_allowed_name(name: &str) -> bool {
    ALLOWED_NAMES.contains(&name)
        || ALLOWED_PREFIXES
            .iter()
            .any(|prefix| name.starts_with(prefix))
}

/// The confined environment: of `vars`, the allowed names that neither look like a secret nor
/// carry credentials in their value nor are among `extra_secret` (providers' key variables),
/// plus every name in `passthrough` (the user's `[sandbox] env_passthrough`), whatever it is.
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
            is_allowed_name(&name)
                && !is_secret_name(&name)
                && !extra_secret.iter().any(|secret| *secret == name)
                && !lode_secrets::value_carries_credentials(&value.to_string_lossy())
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
    fn only_what_builds_need_passes() {
        let input = vars(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/home/u"),
            ("CARGO_TARGET_DIR", "/t"),
            ("RUST_LOG", "debug"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C.UTF-8"),
            ("GIT_AUTHOR_NAME", "A"),
            ("GOPATH", "/home/u/go"),
            ("VIRTUAL_ENV", "/w/.venv"),
            ("NODE_OPTIONS", "--max-old-space-size=4096"),
            ("PYTHONPATH", "/w/src"),
            ("JAVA_HOME", "/usr/lib/jvm/x"),
            ("ANTHROPIC_API_KEY", "sk-ant-x"),
            ("OPENAI_API_KEY", "sk-x"),
            ("GITHUB_TOKEN", "ghp_x"),
            ("AWS_ACCESS_KEY_ID", "AKIA"),
            ("DB_PASS", "x"),
            ("SSHPASS", "x"),
            ("BW_SESSION", "x"),
            ("CI_JOB_JWT", "x"),
            ("SLACK_WEBHOOK_URL", "https://hooks.slack.com/services/x"),
            ("SSH_AUTH_SOCK", "/tmp/ssh/agent"),
            ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/1000/bus"),
            ("DISPLAY", ":0"),
            ("WAYLAND_DISPLAY", "wayland-0"),
            ("XDG_RUNTIME_DIR", "/run/user/1000"),
            ("CARGO_REGISTRIES_MINE_TOKEN", "x"),
            ("NPM_CONFIG__AUTH", "x"),
            ("NPM_CONFIG_//registry.npmjs.org/:_authToken", "x"),
            (
                "PIP_INDEX_URL",
                "https://__token__:pypi-x@example.invalid/simple",
            ),
            (
                "GOPROXY",
                "https://0123456789abcdef0123@proxy.example.invalid",
            ),
            ("MODEL_PROVIDER", "custom"),
            ("RUSTUP_TOOLCHAIN_KEY", "x"),
        ]);
        let kept = names(&scrub(input, &["RUST_LOG".into()], &[]));
        assert_eq!(
            kept,
            vec![
                "PATH",
                "HOME",
                "CARGO_TARGET_DIR",
                "LANG",
                "LC_ALL",
                "GIT_AUTHOR_NAME",
                "GOPATH",
                "VIRTUAL_ENV",
                "NODE_OPTIONS",
                "PYTHONPATH",
                "JAVA_HOME",
            ]
        );
    }

    #[test]
    fn passthrough_keeps_any_named_variable() {
        let input = vars(&[
            ("CI_JOB_TOKEN", "x"),
            ("OTHER_TOKEN", "y"),
            ("MY_TOOL_HOME", "/opt/t"),
            ("UNLISTED", "z"),
        ]);
        assert_eq!(
            names(&scrub(
                input,
                &[],
                &["CI_JOB_TOKEN".into(), "MY_TOOL_HOME".into()]
            )),
            vec!["CI_JOB_TOKEN", "MY_TOOL_HOME"]
        );
    }

    #[test]
    fn proxies_pass_unless_they_carry_a_password() {
        let input = vars(&[
            ("HTTP_PROXY", "http://proxy:3128"),
            ("HTTPS_PROXY", "http://user:pw@proxy:3128"),
        ]);
        assert_eq!(names(&scrub(input, &[], &[])), vec!["HTTP_PROXY"]);
    }
}
