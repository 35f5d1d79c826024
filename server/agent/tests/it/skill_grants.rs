//! A trusted skill's `allowed-tools` only turns a plain ask into allow: a real `Agent` on a copy
//! of the calculator fixture, a trusted (user) skill granting `run_command` and `write_file`, and
//! the scripted LLM server playing a model that tries to use the grant for `eval`, command
//! substitution and hooks in a nested repository. Each of those reaches the person as a
//! must-ask; nothing of them happens while the person says no; the plain edit the grant covers
//! runs unasked.

use crate::common;

use common::{copy_dir, repo_root};

use std::sync::{Arc, Mutex};

use lode_agent::event::AgentEvent;
use lode_agent::host::{PermissionAnswer, PermissionRequest, SessionHost};
use lode_agent::{Agent, UserInput};
use lode_llm_script::{Script, ScriptedServer};
use tokio_util::sync::CancellationToken;

/// Records questions and refuses them all, as a person saying no would.
#[derive(Default)]
struct RefusingHost {
    requests: Mutex<Vec<PermissionRequest>>,
}

#[async_trait::async_trait]
impl SessionHost for RefusingHost {
    fn emit(&self, _event: AgentEvent) {}

    async fn request_permission(&self, request: PermissionRequest) -> PermissionAnswer {
        self.requests.lock().unwrap().push(request);
        PermissionAnswer::RejectOnce
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_skill_grant_never_approves_a_must_ask() {
    let server = ScriptedServer::start(
        Script::load(&repo_root().join("fixtures/llm/agent_skill_grants.json")).unwrap(),
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    copy_dir(&repo_root().join("fixtures/agent/calculator"), root);
    std::fs::create_dir_all(root.join("vendor/lib/.git/hooks")).unwrap();
    std::fs::write(root.join("vendor/lib/.git/config"), "[core]\n").unwrap();
    let skills = root.join("user-skills");
    std::fs::create_dir_all(skills.join("release-notes")).unwrap();
    std::fs::write(
        skills.join("release-notes/SKILL.md"),
        "---\nname: release-notes\ndescription: Write the release notes for a release of this \
         repository.\nallowed-tools: run_command write_file\n---\nWrite release notes under \
         src/.\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join(".lode")).unwrap();
    std::fs::write(
        root.join(".lode/config.toml"),
        format!(
            r#"[[llm.providers]]
name = "scripted"
kind = "openai"
base_url = "{}"
model = "scripted-model"
context_window = 32000
max_tokens = 2000

[memory]
path = "{}"

[skills]
user_dir = "{}"
"#,
            server.openai_base_url(),
            root.join(".lode/test-memory.sqlite").display(),
            skills.display()
        ),
    )
    .unwrap();

    let agent = Agent::open(root, common::test_options(root)).unwrap();
    let session = agent.new_session(root.to_path_buf(), Vec::new()).unwrap();
    let host = Arc::new(RefusingHost::default());
    agent
        .prompt(
            &session.id,
            vec![UserInput::Text(
                "Write the release notes for this release.".to_owned(),
            )],
            host.clone(),
            CancellationToken::new(),
        )
        .await
        .unwrap();

    // The skill was selected and its grant was in force: the plain edit ran unasked.
    assert_eq!(
        std::fs::read_to_string(root.join("src/release_notes.md")).unwrap(),
        "# Release notes\n"
    );
    let requests = host.requests.lock().unwrap().clone();
    let asked: Vec<&str> = requests.iter().map(|r| r.tool_call_id.as_str()).collect();
    assert_eq!(
        asked,
        ["call_eval", "call_subst", "call_hook", "call_hook_dotdot"],
        "every must-ask reached the person, the plain edit did not: {requests:#?}"
    );
    for request in &requests {
        assert!(request.must_ask, "{request:?}");
        assert!(!request.reason.is_empty(), "{request:?}");
        assert!(!request.offers_always(), "{request:?}");
    }
    // What the policy judged, not what the model wrote.
    assert_eq!(requests[3].subjects, ["vendor/lib/.git/config"]);
    // Nothing of it happened.
    for canary in [
        "eval-canary.txt",
        "subst-canary.txt",
        "vendor/lib/.git/hooks/pre-commit",
    ] {
        assert!(!root.join(canary).exists(), "{canary}");
    }
    assert_eq!(
        std::fs::read_to_string(root.join("vendor/lib/.git/config")).unwrap(),
        "[core]\n"
    );
}
