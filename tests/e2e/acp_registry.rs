//! ACP registry readiness: `editors/acp-registry/agent.json` checked against the registry's agent
//! manifest schema (`agent.schema.json` of github.com/agentclientprotocol/registry: its required
//! fields, patterns, platform targets and per-target fields, written out here), and the
//! `initialize` → `authenticate` handshake through the real `lode acp` on stdio: the advertised
//! API-key methods, a set variable, an unset or empty one, an unknown method id, malformed
//! params, and `authenticate` before `initialize`.

use crate::acp_support as support;

use serde_json::Value;
use support::{Wire, acp_command, repo_root};

/// The platform targets the registry's schema allows for a binary distribution.
const TARGETS: [&str; 6] = [
    "darwin-aarch64",
    "darwin-x86_64",
    "linux-aarch64",
    "linux-x86_64",
    "windows-aarch64",
    "windows-x86_64",
];

fn manifest() -> Value {
    let path = repo_root().join("editors/acp-registry/agent.json");
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn non_empty_string(value: &Value, what: &str) -> String {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("{what} must be a string: {value}"));
    assert!(!text.is_empty(), "{what} must not be empty");
    text.to_string()
}

/// The checks of the registry's schema, as a list of violations (empty: valid).
fn violations(manifest: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let Some(object) = manifest.as_object() else {
        return vec!["the manifest must be an object".into()];
    };
    for field in ["id", "name", "version", "description", "distribution"] {
        if !object.contains_key(field) {
            found.push(format!("missing required field {field}"));
        }
    }
    let string = |field: &str| object.get(field).and_then(Value::as_str);
    if let Some(id) = string("id") {
        let mut chars = id.chars();
        let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase());
        if !first_ok || !chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
            found.push(format!("id {id:?} must match ^[a-z][a-z0-9-]*$"));
        }
    }
    if let Some(version) = string("version") {
        let parts: Vec<&str> = version.splitn(3, '.').collect();
        let numeric = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
        let patch_ok = parts
            .get(2)
            .is_some_and(|p| p.chars().next().is_some_and(|c| c.is_ascii_digit()));
        if parts.len() != 3 || !numeric(parts[0]) || !numeric(parts[1]) || !patch_ok {
            found.push(format!(
                "version {version:?} must be semantic (^[0-9]+.[0-9]+.[0-9]+)"
            ));
        }
    }
    for field in ["name", "description"] {
        if string(field).is_some_and(str::is_empty) {
            found.push(format!("{field} must not be empty"));
        }
    }
    if let Some(repository) = string("repository")
        && !repository.starts_with("https://")
    {
        found.push(format!("repository {repository:?} must be a URI"));
    }
    let Some(distribution) = object.get("distribution").and_then(Value::as_object) else {
        return found;
    };
    if distribution.is_empty() {
        found.push("distribution needs at least one kind".into());
    }
    for (kind, value) in distribution {
        if !["binary", "npx", "uvx"].contains(&kind.as_str()) {
            found.push(format!(
                "distribution kind {kind} is not binary, npx or uvx"
            ));
            continue;
        }
        if kind != "binary" {
            continue;
        }
        let Some(targets) = value.as_object().filter(|t| !t.is_empty()) else {
            found.push("distribution.binary needs at least one target".into());
            continue;
        };
        for (target, spec) in targets {
            if !TARGETS.contains(&target.as_str()) {
                found.push(format!("binary target {target} is not one of {TARGETS:?}"));
            }
            let Some(spec) = spec.as_object() else {
                found.push(format!("{target} must be an object"));
                continue;
            };
            for field in ["archive", "cmd"] {
                if !spec.get(field).is_some_and(Value::is_string) {
                    found.push(format!("{target} needs {field} (a string)"));
                }
            }
            for field in spec.keys() {
                if !["archive", "cmd", "args", "env"].contains(&field.as_str()) {
                    found.push(format!(
                        "{target} has field {field} the schema does not allow"
                    ));
                }
            }
            if let Some(args) = spec.get("args")
                && !args
                    .as_array()
                    .is_some_and(|a| a.iter().all(Value::is_string))
            {
                found.push(format!("{target}.args must be an array of strings"));
            }
            if let Some(env) = spec.get("env")
                && !env
                    .as_object()
                    .is_some_and(|e| e.values().all(Value::is_string))
            {
                found.push(format!("{target}.env must map names to strings"));
            }
        }
    }
    found
}

#[test]
fn the_manifest_has_every_field_the_registry_schema_requires() {
    let manifest = manifest();
    assert_eq!(violations(&manifest), Vec::<String>::new());
}

#[test]
fn the_manifest_matches_the_crate_and_starts_lode_acp_on_every_target() {
    let manifest = manifest();
    assert_eq!(non_empty_string(&manifest["id"], "id"), "lode");
    let version = non_empty_string(&manifest["version"], "version");
    assert_eq!(
        version,
        env!("CARGO_PKG_VERSION"),
        "bump agent.json with the crate"
    );
    assert_eq!(manifest["license"], "Apache-2.0");
    let repository = non_empty_string(&manifest["repository"], "repository");
    let cargo = std::fs::read_to_string(repo_root().join("Cargo.toml")).unwrap();
    assert!(
        cargo.contains(&format!("repository = \"{repository}\"")),
        "the manifest's repository is the workspace's"
    );
    let targets = manifest["distribution"]["binary"].as_object().unwrap();
    assert!(targets.contains_key("linux-x86_64"), "{targets:?}");
    for (target, spec) in targets {
        assert_eq!(spec["cmd"], "./lode", "{target}");
        assert_eq!(spec["args"], serde_json::json!(["acp"]), "{target}");
        let archive = spec["archive"].as_str().unwrap();
        assert!(
            archive.starts_with(&format!(
                "{repository}/releases/download/v{version}/lode-{version}-"
            )),
            "{target}: {archive}"
        );
        let arch = target.split('-').nth(1).unwrap();
        assert!(archive.contains(arch), "{target}: {archive}");
    }
}

/// One way to break a manifest.
type Change = dyn Fn(&mut Value);

#[test]
fn the_schema_check_catches_what_the_registry_would_refuse() {
    let good = manifest();
    let broken = |change: &dyn Fn(&mut Value)| {
        let mut manifest = good.clone();
        change(&mut manifest);
        violations(&manifest)
    };
    let cases: [(&str, &Change); 7] = [
        ("missing required field version", &|m| {
            m.as_object_mut().unwrap().remove("version");
        }),
        ("must match ^[a-z]", &|m| m["id"] = "Lode".into()),
        ("must be semantic", &|m| m["version"] = "1.0".into()),
        ("is not one of", &|m| {
            m["distribution"]["binary"]["linux-riscv64"] =
                serde_json::json!({"archive": "https://x", "cmd": "./lode"});
        }),
        ("needs archive", &|m| {
            m["distribution"]["binary"]["linux-x86_64"]
                .as_object_mut()
                .unwrap()
                .remove("archive");
        }),
        ("does not allow", &|m| {
            m["distribution"]["binary"]["linux-x86_64"]["sha256"] = "00".into();
        }),
        ("at least one kind", &|m| {
            m["distribution"] = serde_json::json!({})
        }),
    ];
    for (expected, change) in cases {
        let found = broken(change);
        assert!(
            found.iter().any(|v| v.contains(expected)),
            "{expected}: {found:?}"
        );
    }
}

/// `lode acp` on stdio in a fresh project with no provider configured, `env` added to (and the
/// hosted API variables removed from) its environment.
fn acp_with_env(env: &[(&str, &str)]) -> (tempfile::TempDir, Wire) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let mut command = acp_command(&root, std::ffi::OsString::new());
    command.arg("--no-watch");
    for variable in ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY"] {
        command.env_remove(variable);
    }
    for (name, value) in env {
        command.env(name, value);
    }
    let wire = Wire::new(command.spawn().expect("lode acp starts"));
    (dir, wire)
}

async fn authenticate(wire: &mut Wire, id: u64, method: &str) -> Value {
    wire.request(id, "authenticate", serde_json::json!({"methodId": method}))
        .await
}

const SECRET: &str = "sk-ant-test-0123456789-never-printed";

#[tokio::test]
async fn initialize_advertises_the_api_key_methods_and_authenticate_checks_the_variable() {
    let (_dir, mut wire) = acp_with_env(&[("ANTHROPIC_API_KEY", SECRET), ("OPENAI_API_KEY", " ")]);
    let init = wire.initialize(1).await;
    let methods = init["result"]["authMethods"].as_array().unwrap();
    let ids: Vec<&str> = methods.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        ["anthropic-api-key", "openai-api-key", "openrouter-api-key"]
    );
    assert_eq!(methods[0]["_meta"]["type"], "env_var");
    assert_eq!(methods[0]["_meta"]["vars"][0]["name"], "ANTHROPIC_API_KEY");
    assert!(!init.to_string().contains(SECRET));

    let good = authenticate(&mut wire, 2, "anthropic-api-key").await;
    assert_eq!(good["result"], serde_json::json!({}), "{good}");
    assert!(!good.to_string().contains(SECRET));

    let unset = authenticate(&mut wire, 3, "openrouter-api-key").await;
    assert_eq!(unset["error"]["code"], -32000, "{unset}");
    let message = unset["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("OPENROUTER_API_KEY is not set"),
        "{message}"
    );

    let empty = authenticate(&mut wire, 4, "openai-api-key").await;
    assert_eq!(empty["error"]["code"], -32000, "{empty}");
    assert!(
        empty["error"]["message"]
            .as_str()
            .unwrap()
            .contains("OPENAI_API_KEY is set but empty"),
        "{empty}"
    );

    // A session works after authenticating, as before.
    let root = std::fs::canonicalize(_dir.path()).unwrap();
    let session = wire
        .request(
            5,
            "session/new",
            serde_json::json!({"cwd": root, "mcpServers": []}),
        )
        .await;
    assert!(session["result"]["sessionId"].is_string(), "{session}");
}

#[tokio::test]
async fn unknown_methods_malformed_params_and_authenticate_before_initialize_are_refused() {
    let (_dir, mut wire) = acp_with_env(&[("ANTHROPIC_API_KEY", SECRET)]);
    let early = authenticate(&mut wire, 1, "anthropic-api-key").await;
    assert_eq!(early["error"]["code"], -32600, "{early}");
    assert!(
        early["error"]["data"]
            .to_string()
            .contains("initialization"),
        "{early}"
    );

    wire.initialize(2).await;
    let unknown = authenticate(&mut wire, 3, "password").await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("lode offers anthropic-api-key, openai-api-key, openrouter-api-key"),
        "{unknown}"
    );

    // An oversized id is not echoed back whole.
    let long = "x".repeat(100_000);
    let oversized = authenticate(&mut wire, 4, &long).await;
    assert_eq!(oversized["error"]["code"], -32602);
    assert!(
        oversized.to_string().len() < 2_000,
        "{} bytes",
        oversized.to_string().len()
    );

    for (id, params) in [
        (5, serde_json::json!({})),
        (6, serde_json::json!({"methodId": 7})),
        (7, serde_json::json!({"methodId": null})),
    ] {
        let answer = wire.request(id, "authenticate", params.clone()).await;
        assert_eq!(answer["error"]["code"], -32602, "{params}: {answer}");
    }
    // Params that are not an object or array are no JSON-RPC request at all (id null).
    wire.send_raw(
        r#"{"jsonrpc":"2.0","id":9,"method":"authenticate","params":"anthropic-api-key"}"#,
    )
    .await;
    let refused = wire.next().await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");

    // The connection still works.
    let good = authenticate(&mut wire, 8, "anthropic-api-key").await;
    assert_eq!(good["result"], serde_json::json!({}), "{good}");
}
