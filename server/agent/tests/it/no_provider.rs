//! An agent opened without an LLM provider (`AgentOptions::allow_no_provider`, what `lode acp`
//! does): it opens, keeps sessions, and refuses each turn that needs a model with
//! `AgentError::NoProvider` naming the fix; without the option, opening fails as before.
//! Each test runs in its own process with `$LODE_CONFIG` cleared and `$XDG_CONFIG_HOME` pointing
//! nowhere, so no config on the machine running it can supply a provider.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;

use lode_agent::event::{AgentEvent, StopReason};
use lode_agent::host::SessionHost;
use lode_agent::{Agent, AgentError, AgentOptions, UserInput};
use tokio_util::sync::CancellationToken;

use crate::common;

struct Silent;

impl SessionHost for Silent {
    fn emit(&self, _event: AgentEvent) {}
}

fn options(root: &Path, allow_no_provider: bool) -> AgentOptions {
    AgentOptions {
        state_dir: Some(root.join("user-state")),
        allow_no_provider,
        // No key variable and no Ollama: the machine cannot lend a provider (zero-config).
        provider_env: Some(Arc::new(|name: &str| {
            (name == "OLLAMA_HOST").then(|| "127.0.0.1:9".to_owned())
        })),
        ..AgentOptions::default()
    }
}

/// A workspace with no provider anywhere but, optionally, its own (untrusted) config.
fn workspace(own_provider: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    if own_provider {
        std::fs::create_dir_all(dir.path().join(".lode")).unwrap();
        std::fs::write(
            dir.path().join(".lode/config.toml"),
            "[[llm.providers]]\nname = \"local\"\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n",
        )
        .unwrap();
    }
    dir
}

/// Runs the test `name` in its own process without the machine's configuration (see
/// [`common::in_own_process`]); `true` in the parent once it passed there.
fn in_own_process(name: &str) -> bool {
    common::in_own_process(
        &format!("no_provider::{name}"),
        &[
            ("LODE_CONFIG", OsStr::new("")),
            (
                "XDG_CONFIG_HOME",
                OsStr::new("/nonexistent/lode-test-user-config"),
            ),
        ],
    )
}

async fn prompt(agent: &Agent, session: &str, text: &str) -> Result<StopReason, AgentError> {
    agent
        .prompt(
            session,
            vec![UserInput::Text(text.into())],
            Arc::new(Silent),
            CancellationToken::new(),
        )
        .await
}

#[tokio::test]
async fn without_a_provider_the_agent_opens_and_each_turn_says_how_to_add_one() {
    if in_own_process("without_a_provider_the_agent_opens_and_each_turn_says_how_to_add_one") {
        return;
    }
    let dir = workspace(false);
    let refused = Agent::open(dir.path(), options(dir.path(), false))
        .err()
        .expect("opening without a provider fails unless allowed");
    assert!(
        refused
            .to_string()
            .contains("no LLM provider is configured"),
        "{refused}"
    );

    let agent = Agent::open(dir.path(), options(dir.path(), true)).unwrap();
    assert!(agent.models().is_empty());
    let session = agent.new_session(dir.path().to_path_buf(), vec![]).unwrap();
    assert_eq!(session.model, "");
    let Err(AgentError::NoProvider(message)) = prompt(&agent, &session.id, "hello").await else {
        panic!("a turn needs a provider");
    };
    for fix in [
        "no LLM provider is configured",
        "[[llm.providers]]",
        "api_key_env",
    ] {
        assert!(message.contains(fix), "names {fix:?}: {message}");
    }
    assert!(
        agent.visible_messages(&session.id).unwrap().is_empty(),
        "nothing is stored for a refused turn"
    );
    // lode's own commands need no model.
    assert_eq!(
        prompt(&agent, &session.id, "/help").await.unwrap(),
        StopReason::EndTurn
    );
}

#[tokio::test]
async fn providers_only_in_the_untrusted_workspace_apply_once_it_is_trusted() {
    if in_own_process("providers_only_in_the_untrusted_workspace_apply_once_it_is_trusted") {
        return;
    }
    let dir = workspace(true);
    let agent = Agent::open(dir.path(), options(dir.path(), true)).unwrap();
    assert!(agent.models().is_empty());
    let session = agent.new_session(dir.path().to_path_buf(), vec![]).unwrap();
    // Nobody answers the trust question (the host refuses), so the turn has no provider.
    let Err(AgentError::NoProvider(message)) = prompt(&agent, &session.id, "hello").await else {
        panic!("an untrusted workspace supplies no provider");
    };
    assert!(message.contains("lode trust"), "{message}");

    agent.trust_workspace(false).unwrap();
    assert_eq!(agent.models()[0].provider, "local");
    // The session made without a model follows the default one.
    assert_eq!(agent.session(&session.id).unwrap().model, "local");
}

/// Zero-config models in the library: with no provider configured, the agent takes the one its
/// environment offers (here a fixed lookup naming the scripted server), answers with it, says
/// which through `detected_provider`, and keeps its key variable out of sandboxed commands.
#[tokio::test]
async fn a_provider_from_the_environment_is_used_when_none_is_configured() {
    if in_own_process("a_provider_from_the_environment_is_used_when_none_is_configured") {
        return;
    }
    let script = lode_llm_script::Script::load(
        &std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/llm/hello.json"),
    )
    .unwrap();
    let server = lode_llm_script::ScriptedServer::start(script)
        .await
        .unwrap();
    let base = server.openai_base_url();
    let dir = workspace(false);
    let mut options = options(dir.path(), false);
    options.provider_env = Some(Arc::new(move |name: &str| match name {
        "OPENAI_API_KEY" => Some("sk-from-the-environment".to_owned()),
        "OPENAI_BASE_URL" => Some(base.clone()),
        _ => None,
    }));
    let agent = Agent::open(dir.path(), options).expect("a detected provider opens the agent");
    let detected = agent.detected_provider().expect("detected");
    assert_eq!(detected.provider.name, "openai");
    assert_eq!(detected.reason, "OPENAI_API_KEY is set, at OPENAI_BASE_URL");
    // The sandbox an agent on this configuration gets (through a launcher) scrubs the key.
    let secret_env = lode_agent::sandbox_for(Some("lode".into()), &agent.config())
        .profile(&[dir.path().to_path_buf()], false)
        .secret_env;
    assert!(
        secret_env.iter().any(|name| name == "OPENAI_API_KEY"),
        "{secret_env:?}"
    );
    let session = agent
        .new_session(dir.path().to_path_buf(), Vec::new())
        .unwrap();
    let stop = prompt(&agent, &session.id, "hello").await.unwrap();
    assert_eq!(stop, StopReason::EndTurn);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].body["model"], "gpt-4.1");
}
