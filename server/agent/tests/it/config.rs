//! Configuration loading on real files in temporary directories: precedence and layering, the
//! environment variable, and the errors a user sees (no provider, bad TOML, typos, bad values).

use std::path::{Path, PathBuf};

use lode_agent::config::{Config, ConfigError, ConfigOrigin, ConfigSources};
use lode_policy::Mode;

use crate::common;

fn write(path: &Path, text: &str) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    path.to_path_buf()
}

const USER: &str = r#"
[llm]
default = "cloud"

[[llm.providers]]
name = "cloud"
kind = "anthropic"
model = "claude-user"
api_key_env = "ANTHROPIC_API_KEY"

[[llm.providers]]
name = "local"
kind = "openai"
base_url = "http://127.0.0.1:11434/v1"
model = "qwen-user"

[agent]
max_tool_iterations = 40
compaction_threshold = 0.7

[agent.context]
repo_map_max_tokens = 1500

[[permissions.rules]]
tool = "run_command"
pattern = "make *"
action = "allow"
"#;

const WORKSPACE: &str = r#"
[[llm.providers]]
name = "local"
kind = "openai"
base_url = "http://127.0.0.1:8080/v1"
model = "qwen-workspace"

[agent]
max_tool_iterations = 10

[[permissions.rules]]
tool = "run_command"
pattern = "rm *"
action = "deny"
"#;

#[test]
fn earlier_files_win_and_later_files_fill_the_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let user = write(&dir.path().join("home/lode/config.toml"), USER);
    let workspace = write(&dir.path().join("repo/.lode/config.toml"), WORKSPACE);
    let loaded = Config::load_from(&ConfigSources {
        flag: None,
        env: None,
        workspace: Some(workspace.clone()),
        user: Some(user.clone()),
        workspace_trusted: true,
    })
    .unwrap();
    assert_eq!(loaded.files, vec![workspace, user]);
    let config = &loaded.config;
    // Scalars: the workspace wins where it sets them, the user file fills the rest.
    assert_eq!(config.agent.max_tool_iterations, 10);
    assert_eq!(config.agent.compaction_threshold, 0.7);
    assert_eq!(config.agent.context.repo_map_max_tokens, 1500);
    // Untouched keys keep their defaults.
    assert_eq!(config.agent.default_mode, Mode::Code);
    assert_eq!(config.agent.context.retrieval_max_tokens, 3000);
    assert_eq!(config.llm.default.as_deref(), Some("cloud"));
    // Providers merge by name: the workspace's `local` replaces the user's whole entry.
    let providers: Vec<(&str, &str)> = config
        .llm
        .providers
        .iter()
        .map(|p| (p.name.as_str(), p.model.as_str()))
        .collect();
    assert_eq!(
        providers,
        vec![("local", "qwen-workspace"), ("cloud", "claude-user")]
    );
    assert_eq!(
        config.llm.providers[0].base_url.as_deref(),
        Some("http://127.0.0.1:8080/v1")
    );
    // Permission rules from every file apply, the earlier file's first.
    assert_eq!(config.permissions.rules.len(), 2);
    assert_eq!(loaded.provider(None).unwrap().name, "cloud");
    assert_eq!(
        loaded.provider(Some("local")).unwrap().model,
        "qwen-workspace"
    );
    let unknown = loaded.provider(Some("gpt")).unwrap_err();
    assert!(
        matches!(&unknown, ConfigError::UnknownProvider { name, available } if name == "gpt" && available.len() == 2)
    );
    assert!(unknown.to_string().contains("local, cloud"), "{unknown}");
}

#[test]
fn the_flag_beats_everything_and_must_exist() {
    let dir = tempfile::tempdir().unwrap();
    let flag = write(
        &dir.path().join("flag.toml"),
        "[agent]\nmax_tool_iterations = 3\ndefault_mode = \"ask\"\n",
    );
    let env = write(
        &dir.path().join("env.toml"),
        "[agent]\nmax_tool_iterations = 5\ninstruction_file_max_bytes = 100\n",
    );
    let workspace = write(&dir.path().join("repo/.lode/config.toml"), WORKSPACE);
    let loaded = Config::load_from(&ConfigSources {
        flag: Some(flag.clone()),
        env: Some(env.clone()),
        workspace: Some(workspace.clone()),
        user: Some(dir.path().join("no/such/config.toml")),
        workspace_trusted: true,
    })
    .unwrap();
    assert_eq!(loaded.files, vec![flag, env, workspace]);
    assert_eq!(loaded.config.agent.max_tool_iterations, 3);
    assert_eq!(loaded.config.agent.default_mode, Mode::Ask);
    assert_eq!(loaded.config.agent.instruction_file_max_bytes, 100);
    let origins: Vec<(ConfigOrigin, bool)> = loaded
        .searched
        .iter()
        .map(|candidate| (candidate.origin, candidate.found))
        .collect();
    assert_eq!(
        origins,
        vec![
            (ConfigOrigin::Flag, true),
            (ConfigOrigin::Env, true),
            (ConfigOrigin::Workspace, true),
            (ConfigOrigin::User, false)
        ]
    );

    let missing = dir.path().join("typo.toml");
    let error = Config::load_from(&ConfigSources {
        flag: Some(missing.clone()),
        workspace_trusted: true,
        ..ConfigSources::default()
    })
    .unwrap_err();
    assert!(matches!(
        &error,
        ConfigError::Read {
            origin: ConfigOrigin::Flag,
            ..
        }
    ));
    assert!(error.to_string().contains("typo.toml"), "{error}");
    assert!(error.to_string().contains("--config"), "{error}");
}

/// The only test that touches the process environment (the others pass paths explicitly).
#[test]
fn discovery_reads_lode_config_and_the_user_config_dir() {
    // `$LODE_CONFIG` and `$XDG_CONFIG_HOME` are the process's: the test runs in its own process
    // with them set (every suite shares this test binary), in a folder made here.
    const NAME: &str = "config::discovery_reads_lode_config_and_the_user_config_dir";
    let dir = match std::env::var_os("LODE_TEST_CONFIG_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let dir = tempfile::tempdir().unwrap();
            let (xdg, env_file) = (dir.path().join("xdg"), dir.path().join("from-env.toml"));
            write(&xdg.join("lode/config.toml"), USER);
            write(&env_file, "[agent]\nmax_tool_iterations = 7\n");
            write(&dir.path().join("repo/.lode/config.toml"), WORKSPACE);
            let ran = common::in_own_process(
                NAME,
                &[
                    ("LODE_TEST_CONFIG_DIR", dir.path().as_os_str()),
                    ("XDG_CONFIG_HOME", xdg.as_os_str()),
                    ("LODE_CONFIG", env_file.as_os_str()),
                ],
            );
            assert!(ran);
            return;
        }
    };
    let user = dir.join("xdg/lode/config.toml");
    let env_file = dir.join("from-env.toml");
    let root = dir.join("repo");
    let workspace = root.join(".lode/config.toml");
    let loaded = Config::load(None, &root).unwrap();
    assert_eq!(
        loaded.files,
        vec![env_file.clone(), workspace.clone(), user.clone()]
    );
    assert_eq!(loaded.config.agent.max_tool_iterations, 7);
    assert_eq!(loaded.config.agent.compaction_threshold, 0.7);

    // An unset or empty variable is skipped; the explicit flag comes first.
    // SAFETY: this test runs alone in its own process.
    unsafe {
        std::env::set_var("LODE_CONFIG", "");
    }
    let flag = write(&dir.join("flag.toml"), "[agent]\nmax_tool_iterations = 2\n");
    let loaded = Config::load(Some(&flag), &root).unwrap();
    assert_eq!(loaded.files, vec![flag, workspace, user]);
    assert_eq!(loaded.config.agent.max_tool_iterations, 2);
}

#[test]
fn no_provider_names_the_places_and_what_to_set() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = write(
        &dir.path().join("repo/.lode/config.toml"),
        "[agent]\nmax_tool_iterations = 9\n",
    );
    let user = dir.path().join("home/lode/config.toml");
    let loaded = Config::load_from(&ConfigSources {
        flag: None,
        env: None,
        workspace: Some(workspace.clone()),
        user: Some(user.clone()),
        workspace_trusted: true,
    })
    .unwrap();
    let error = loaded.provider(None).unwrap_err();
    assert!(matches!(error, ConfigError::NoProvider { .. }));
    let message = error.to_string();
    assert!(
        message.contains("no LLM provider is configured"),
        "{message}"
    );
    assert!(
        message.contains(&workspace.display().to_string()),
        "{message}"
    );
    assert!(message.contains("(read, no providers)"), "{message}");
    assert!(message.contains(&user.display().to_string()), "{message}");
    assert!(message.contains("(not found)"), "{message}");
    assert!(message.contains("$LODE_CONFIG (not set)"), "{message}");
    assert!(message.contains("[[llm.providers]]"), "{message}");
    assert!(message.contains("OPENAI_API_KEY"), "{message}");
    assert!(message.contains("ANTHROPIC_API_KEY"), "{message}");
}

#[test]
fn bad_toml_names_the_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = write(
        &dir.path().join("repo/.lode/config.toml"),
        "[agent]\nmax_tool_iterations = 4\ncompaction_threshold = = 0.5\n",
    );
    let error = Config::load_from(&ConfigSources {
        workspace: Some(workspace.clone()),
        workspace_trusted: true,
        ..ConfigSources::default()
    })
    .unwrap_err();
    let ConfigError::Parse { path, line, .. } = &error else {
        panic!("expected a parse error, got {error:?}");
    };
    assert_eq!(path, &workspace);
    assert_eq!(*line, 3);
    let message = error.to_string();
    assert!(
        message.starts_with(&format!("{}:3:", workspace.display())),
        "{message}"
    );
}

#[test]
fn a_typo_in_a_known_section_is_an_error_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        &dir.path().join("config.toml"),
        "[llm]\ndefault = \"x\"\n\n[agent]\nmax_tool_iteratons = 4\n",
    );
    let error = Config::load_from(&ConfigSources {
        flag: Some(file.clone()),
        workspace_trusted: true,
        ..ConfigSources::default()
    })
    .unwrap_err();
    let ConfigError::Parse { line, key, .. } = &error else {
        panic!("expected a parse error, got {error:?}");
    };
    assert_eq!(*line, 5);
    assert_eq!(key.as_deref(), Some("agent.max_tool_iteratons"));
    let message = error.to_string();
    assert!(message.contains("max_tool_iteratons"), "{message}");
    assert!(message.contains(&file.display().to_string()), "{message}");

    // A wrong type inside a provider entry points at its line and key too.
    let file = write(
        &dir.path().join("types.toml"),
        "[[llm.providers]]\nname = \"a\"\nkind = \"openai\"\nmodel = \"m\"\nmax_tokens = \"lots\"\n",
    );
    let error = Config::from_toml_str(&std::fs::read_to_string(&file).unwrap(), &file).unwrap_err();
    let ConfigError::Parse { line, key, .. } = &error else {
        panic!("expected a parse error, got {error:?}");
    };
    assert_eq!(*line, 5);
    assert_eq!(key.as_deref(), Some("llm.providers.max_tokens"));
}

#[test]
fn unknown_sections_load_and_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        &dir.path().join("config.toml"),
        "[embeddings]\nprovider = \"static\"\n\n[agnet]\nmax_tool_iterations = 4\n",
    );
    let loaded = Config::load_from(&ConfigSources {
        flag: Some(file.clone()),
        workspace_trusted: true,
        ..ConfigSources::default()
    })
    .unwrap();
    assert_eq!(
        loaded.config.other["embeddings"]["provider"].as_str(),
        Some("static")
    );
    assert!(loaded.config.other.contains_key("agnet"));
    // Nothing reads `[embeddings]`: it is one of the unknown sections, each named.
    assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
    for section in ["`agnet`", "`embeddings`"] {
        assert!(
            loaded
                .warnings
                .iter()
                .any(|warning| warning.contains(section)),
            "{:?}",
            loaded.warnings
        );
    }
    assert!(loaded.describe().contains("[embeddings]"));
}

/// Every section is typed: in each, an unknown key and a bad value stop the loader with the
/// file, the line and the dotted key, read from a real file.
#[test]
fn every_section_refuses_unknown_keys_and_bad_values_with_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    // (the file, the line, the key, a piece of the message)
    let cases: &[(&str, usize, &str, &str)] = &[
        (
            "[skills]\nenabeld = false\n",
            2,
            "skills.enabeld",
            "unknown field",
        ),
        (
            "[skills]\ntop_k = \"five\"\n",
            2,
            "skills.top_k",
            "invalid type",
        ),
        (
            "\n[memory]\nauto_recal = true\n",
            3,
            "memory.auto_recal",
            "unknown field",
        ),
        (
            "[memory]\nenabled = \"no\"\n",
            2,
            "memory.enabled",
            "invalid type",
        ),
        (
            "[[mcp.servers]]\nname = \"x\"\ncomand = \"typo\"\n",
            3,
            "mcp.servers.comand",
            "unknown field",
        ),
        (
            "[[mcp.servers]]\nname = \"x\"\ncommand = \"a\"\nargs = \"--flag\"\n",
            4,
            "mcp.servers.args",
            "invalid type",
        ),
        (
            "[[mcp.servers]]\nname = \"x\"\ncommand = \"a\"\nurl = \"http://127.0.0.1/mcp\"\n",
            4,
            "mcp.servers.url",
            "set only one of `command` and `url`",
        ),
        (
            "[[mcp.servers]]\nname = \"x\"\nurl = \"file:///etc/passwd\"\n",
            3,
            "mcp.servers.url",
            "http:// or https://",
        ),
        ("[mcp]\nserver = []\n", 2, "mcp.server", "unknown field"),
        (
            "[lsp]\nformatting = true\n",
            2,
            "lsp.formatting",
            "unknown field",
        ),
        (
            "[lsp.diagnostics]\nenable = true\n",
            2,
            "lsp.diagnostics.enable",
            "unknown field",
        ),
        (
            "[lsp.diagnostics]\nservers = { rust = \"ra\" }\n",
            2,
            "lsp.diagnostics.servers",
            "invalid type",
        ),
        (
            "[lsp.diagnostics]\ncommands = \"no\"\n",
            2,
            "lsp.diagnostics.commands",
            "invalid type",
        ),
        (
            "[acp]\nidle_timeout = 5\n",
            2,
            "acp.idle_timeout",
            "unknown field",
        ),
        (
            "[acp]\nidle_session_timeout_secs = \"1h\"\n",
            2,
            "acp.idle_session_timeout_secs",
            "must be a whole number",
        ),
        (
            "[acp]\nidle_session_timeout_secs = -1\n",
            2,
            "acp.idle_session_timeout_secs",
            "must be a whole number",
        ),
        ("[acp]\nlsp = true\n", 2, "acp.lsp", "invalid type"),
        (
            "[acp.lsp]\ntimeout = 5\n",
            2,
            "acp.lsp.timeout",
            "unknown field",
        ),
        (
            "[acp.lsp]\ntimeout_ms = \"soon\"\n",
            2,
            "acp.lsp.timeout_ms",
            "invalid type",
        ),
        (
            "[acp.lsp]\nmax_files = 0\n",
            2,
            "acp.lsp.max_files",
            "at least 1",
        ),
        (
            "[index]\ndaemon_idle = 5\n",
            2,
            "index.daemon_idle",
            "unknown field",
        ),
        (
            "[index]\ndaemon = \"sometimes\"\n",
            2,
            "index.daemon",
            "expected \"auto\" or \"never\"",
        ),
        (
            "[index]\ndaemon_idle_minutes = 0\n",
            2,
            "index.daemon_idle_minutes",
            "at least 1",
        ),
        (
            "[index]\ndaemon_min_files = -3\n",
            2,
            "index.daemon_min_files",
            "invalid value",
        ),
        (
            "[sandbox]\nmod = \"off\"\n",
            2,
            "sandbox.mod",
            "unknown field",
        ),
        (
            "[permissions]\nedits = \"allow\"\n",
            2,
            "permissions.edits",
            "unknown field",
        ),
    ];
    for (index, (text, line, key, message)) in cases.iter().enumerate() {
        let file = write(&dir.path().join(format!("case{index}.toml")), text);
        let error = Config::load_from(&ConfigSources {
            flag: Some(file.clone()),
            workspace_trusted: true,
            ..ConfigSources::default()
        })
        .unwrap_err();
        let ConfigError::Parse {
            path,
            line: at,
            key: named,
            ..
        } = &error
        else {
            panic!("{text:?}: expected a parse error, got {error:?}");
        };
        assert_eq!(path, &file, "{text:?}");
        assert_eq!(
            (*at, named.as_deref()),
            (*line, Some(*key)),
            "{text:?}: {error}"
        );
        let shown = error.to_string();
        assert!(
            shown.starts_with(&format!("{}:{line}:", file.display())),
            "{text:?}: {shown}"
        );
        assert!(
            shown.contains(&format!("(key `{key}`)")),
            "{text:?}: {shown}"
        );
        assert!(shown.contains(message), "{text:?}: {shown}");
    }
}

/// The sections the front ends read reach them typed, defaults filled in.
#[test]
fn the_front_ends_sections_are_read_typed() {
    let config = Config::from_toml_str(
        "[lsp.diagnostics]\nenabled = false\nservers = { python = [\"pylsp\"], go = [] }\n\n\
         [acp]\nidle_session_timeout_secs = 0\n\n[acp.lsp]\ntimeout_ms = 250\n\n\
         [index]\ndaemon = \"never\"\ndaemon_min_files = 10\n\n\
         [skills]\nenabled = false\n\n[memory]\nauto_recall = false\n\n\
         [[mcp.servers]]\nname = \"files\"\ncommand = \"mcp-files\"\n",
        Path::new("config.toml"),
    )
    .unwrap();
    let diagnostics = &config.lsp.diagnostics;
    assert!(!diagnostics.enabled && diagnostics.default_servers && diagnostics.commands);
    assert_eq!(diagnostics.servers["python"], vec!["pylsp".to_owned()]);
    assert!(diagnostics.servers["go"].is_empty());
    assert_eq!(config.acp.idle_session_timeout(), None);
    assert_eq!(config.acp.lsp.timeout_ms, 250);
    assert!(config.acp.lsp.enabled);
    assert_eq!(config.index.daemon, lode_agent::config::DaemonMode::Never);
    assert_eq!(config.index.daemon_min_files, 10);
    assert_eq!(config.index.daemon_idle_minutes, 30);
    assert!(!config.skills.enabled && config.skills.bundled);
    assert!(config.memory.enabled && !config.memory.auto_recall);
    assert_eq!(config.mcp.servers[0].name, "files");
    assert!(config.other.is_empty(), "{:?}", config.other);
    let defaults = Config::from_toml_str("", Path::new("empty.toml")).unwrap();
    assert_eq!(
        defaults.acp.idle_session_timeout(),
        Some(std::time::Duration::from_secs(1800))
    );
}

/// The untrusted workspace file is checked in what applies of it. A bad value in a setting
/// that is ignored until the user trusts the file is listed as ignored, not an error (a cloned
/// repository cannot stop lode with what lode would not use); one in a setting that applies is
/// an error with its line, so a typo cannot silently leave a switch on; once trusted, the
/// whole file is checked.
#[test]
fn an_untrusted_workspace_is_checked_in_what_applies() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = write(
        &dir.path().join("repo/.lode/config.toml"),
        "[mcp]\nservers = 5\n\n[lsp.diagnostics]\nservers = true\n\n[index]\ndaemon = \"sometimes\"\n\n\
         [skills]\nuser_dir = 7\n\n[[permissions.rules]]\ntool = \"run_command\"\naction = \"allow\"\npaterns = \"x\"\n\n\
         [[permissions.rules]]\ntool = \"run_command\"\npattern = \"rm *\"\naction = \"deny\"\n",
    );
    let sources = |trusted| ConfigSources {
        workspace: Some(workspace.clone()),
        workspace_trusted: trusted,
        ..ConfigSources::default()
    };
    let loaded = Config::load_from(&sources(false)).unwrap();
    let ignored = loaded.untrusted_ignored.join("\n");
    for listed in [
        "[mcp]",
        "[lsp.diagnostics] servers = true",
        "[index]",
        "[skills] user_dir = 7",
        "[[permissions.rules]] allow run_command",
    ] {
        assert!(ignored.contains(listed), "{listed}: {ignored}");
    }
    let patterns: Vec<&str> = loaded
        .config
        .permissions
        .rules
        .iter()
        .filter_map(|rule| rule.pattern.as_deref())
        .collect();
    assert_eq!(patterns, ["rm *"]);
    // Trusted, the same file is refused at one of its problems, named with its line.
    let error = Config::load_from(&sources(true)).unwrap_err();
    let problems = [
        (2, "mcp.servers"),
        (5, "lsp.diagnostics.servers"),
        (8, "index.daemon"),
        (11, "skills.user_dir"),
        (16, "permissions.rules.paterns"),
    ];
    assert!(
        matches!(&error, ConfigError::Parse { path, line, key: Some(key), .. }
            if path == &workspace && problems.contains(&(*line, key.as_str()))),
        "{error:?}"
    );

    // A bad value in what applies is an error, untrusted or not.
    for (text, line, key) in [
        ("[skills]\nenabled = \"false\"\n", 2, "skills.enabled"),
        ("[memory]\nenabled = 0\n", 2, "memory.enabled"),
        (
            "[agent]\nmax_tool_iterations = \"4\"\n",
            2,
            "agent.max_tool_iterations",
        ),
        (
            "[lsp.diagnostics]\ncommands = \"false\"\n",
            2,
            "lsp.diagnostics.commands",
        ),
        (
            "[[permissions.rules]]\ntool = \"run_command\"\naction = \"deny\"\npaterns = \"rm *\"\n",
            4,
            "permissions.rules.paterns",
        ),
        (
            "[acp]\nidle_session_timeout_secs = \"1h\"\n",
            2,
            "acp.idle_session_timeout_secs",
        ),
        (
            "[[permissions.rules]]\ntool = \"run_command\"\npattern = \"rm *\"\naction = \"dney\"\n",
            4,
            "permissions.rules.action",
        ),
        (
            "[permissions]\nbuiltin_allowlist = \"false\"\n",
            2,
            "permissions.builtin_allowlist",
        ),
    ] {
        write(&workspace, text);
        let error = Config::load_from(&sources(false)).unwrap_err();
        assert!(
            matches!(&error, ConfigError::Parse { path, line: at, key: Some(named), .. }
                if path == &workspace && *at == line && named == key),
            "{text:?}: {error:?}"
        );
    }
}

#[test]
fn invalid_values_are_refused_naming_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "[agent]\ncompaction_threshold = 1.5\n",
            "agent.compaction_threshold",
        ),
        (
            "[agent]\nmax_tool_iterations = 0\n",
            "agent.max_tool_iterations",
        ),
        ("[agent.context]\nrepo_map_share = 0.6\n", "agent.context"),
        ("[llm]\ndefault = \"nobody\"\n", "llm.default"),
    ];
    for (text, key) in cases {
        let file = write(&dir.path().join("bad.toml"), text);
        let error = Config::load_from(&ConfigSources {
            flag: Some(file.clone()),
            workspace_trusted: true,
            ..ConfigSources::default()
        })
        .unwrap_err();
        let message = error.to_string();
        assert!(
            matches!(&error, ConfigError::Invalid { path: Some(path), key: k, .. } if path == &file && k == key),
            "{text}: {error:?}"
        );
        assert!(message.contains(key), "{message}");
    }
    let duplicate = write(
        &dir.path().join("dup.toml"),
        "[[llm.providers]]\nname = \"a\"\nkind = \"openai\"\nmodel = \"m\"\n[[llm.providers]]\nname = \"a\"\nkind = \"openai\"\nmodel = \"n\"\n",
    );
    let error = Config::load_from(&ConfigSources {
        flag: Some(duplicate),
        workspace_trusted: true,
        ..ConfigSources::default()
    })
    .unwrap_err();
    assert!(
        error.to_string().contains("two providers are named \"a\""),
        "{error}"
    );
}

#[test]
fn the_effective_config_prints_redacted_and_parses_back() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        &dir.path().join("config.toml"),
        r#"
[[llm.providers]]
name = "router"
kind = "openai"
base_url = "https://user:hunter2@openrouter.example/api/v1"
model = "m"
api_key_env = "OPENROUTER_API_KEY"
headers = { "Authorization" = "Bearer sk-abcdefghijklmnopqrstuvwx", "X-Title" = "lode" }

[[mcp.servers]]
name = "api"
url = "https://example.com"
headers = { "X-Api-Token" = "plain-secret-value" }

[plugin]
password = "another-secret-value"
"#,
    );
    let loaded = Config::load_from(&ConfigSources {
        flag: Some(file.clone()),
        workspace_trusted: true,
        ..ConfigSources::default()
    })
    .unwrap();
    let text = loaded.describe();
    assert!(!text.contains("hunter2"), "{text}");
    assert!(!text.contains("sk-abcdefghijklmnopqrstuvwx"), "{text}");
    assert!(!text.contains("plain-secret-value"), "{text}");
    assert!(!text.contains("another-secret-value"), "{text}");
    assert!(text.contains("OPENROUTER_API_KEY"), "{text}");
    assert!(text.contains("X-Title"), "{text}");
    assert!(text.contains("https://example.com"), "{text}");
    assert!(text.contains(&file.display().to_string()), "{text}");
    assert!(text.contains("max_tool_iterations = 25"), "{text}");
    // The printed config is itself a valid config with the same settings.
    let reparsed = Config::from_toml_str(&text, Path::new("printed.toml")).unwrap();
    assert_eq!(reparsed.agent, loaded.config.agent);
    assert_eq!(reparsed.lsp, loaded.config.lsp);
    assert_eq!(reparsed.acp, loaded.config.acp);
    assert_eq!(reparsed.index, loaded.config.index);
    assert_eq!(reparsed.skills, loaded.config.skills);
    assert_eq!(reparsed.llm.providers[0].model, "m");
}

#[test]
fn an_untrusted_workspace_can_only_tighten() {
    let dir = tempfile::tempdir().unwrap();
    let user = write(&dir.path().join("home/lode/config.toml"), USER);
    let workspace = write(
        &dir.path().join("repo/.lode/config.toml"),
        &format!(
            "{WORKSPACE}\n[[permissions.rules]]\ntool = \"run_command\"\npattern = \"curl *\"\naction = \"allow\"\n\n[[mcp.servers]]\nname = \"x\"\ncommand = \"sh\"\n"
        ),
    );
    let loaded = Config::load_from(&ConfigSources {
        flag: None,
        env: None,
        workspace: Some(workspace.clone()),
        user: Some(user),
        workspace_trusted: false,
    })
    .unwrap();
    let config = &loaded.config;
    // The user's providers stand; the workspace's `local` does not replace the user's.
    let local = loaded.provider(Some("local")).unwrap();
    assert_eq!(local.model, "qwen-user");
    assert_eq!(local.base_url.as_deref(), Some("http://127.0.0.1:11434/v1"));
    // What tightens applies: the limit and the deny rule; the allow rule does not.
    assert_eq!(config.agent.max_tool_iterations, 10);
    let patterns: Vec<&str> = config
        .permissions
        .rules
        .iter()
        .filter_map(|rule| rule.pattern.as_deref())
        .collect();
    assert!(patterns.contains(&"rm *"), "{patterns:?}");
    assert!(!patterns.contains(&"curl *"), "{patterns:?}");
    assert!(!config.other.contains_key("mcp"));
    let ignored = loaded.untrusted_ignored.join("\n");
    assert!(ignored.contains("[[llm.providers]] local"), "{ignored}");
    assert!(ignored.contains("curl *"), "{ignored}");
    assert!(ignored.contains("[[mcp.servers]] x"), "{ignored}");
    assert!(
        loaded
            .warnings
            .iter()
            .any(|warning| warning.contains("lode trust")),
        "{:?}",
        loaded.warnings
    );
}

#[test]
fn providers_only_in_an_untrusted_workspace_are_named_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = write(&dir.path().join("repo/.lode/config.toml"), WORKSPACE);
    let loaded = Config::load_from(&ConfigSources {
        flag: None,
        env: None,
        workspace: Some(workspace.clone()),
        user: Some(dir.path().join("no/user.toml")),
        workspace_trusted: false,
    })
    .unwrap();
    let error = loaded.provider(None).unwrap_err();
    assert!(
        matches!(&error, ConfigError::UntrustedProviders { file, .. } if *file == workspace),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("lode trust"), "{message}");
    assert!(message.contains("http://127.0.0.1:8080/v1"), "{message}");
}

#[test]
fn a_workspace_file_named_by_the_flag_is_read_once_as_the_users() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = write(&dir.path().join("repo/.lode/config.toml"), WORKSPACE);
    let loaded = Config::load_from(&ConfigSources {
        flag: Some(workspace.clone()),
        env: None,
        workspace: Some(workspace.clone()),
        user: None,
        workspace_trusted: false,
    })
    .unwrap();
    assert_eq!(loaded.files, vec![workspace]);
    assert!(loaded.untrusted_ignored.is_empty());
    assert_eq!(loaded.provider(None).unwrap().model, "qwen-workspace");
}
