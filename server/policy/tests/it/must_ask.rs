//! Must-ask: every source of a question only a person may answer, and proof that nothing lifts
//! it — not `allow` rules, not a `command = "allow"` default, not remembered "allow always"
//! answers in a real SQLite store, not `--yes-to` patterns. Plain asks, by contrast, can be
//! lifted; headless grants match the judged subjects, never what the model wrote.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lode_policy::{
    Decision, HeadlessGrants, Mode, PermissionConfig, PermissionPolicy, PermissionStore,
    PermissionTarget, Remembered, SubjectKind,
};

fn command(line: &str) -> PermissionTarget {
    PermissionTarget::Command {
        command: line.to_owned(),
    }
}

fn edit(path: &str) -> PermissionTarget {
    PermissionTarget::Edit {
        paths: vec![path.to_owned()],
    }
}

/// A workspace with `src/`, a nested repository's `.git/hooks`, and a second root.
fn workspace() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("main");
    let other = root.parent().unwrap().join("other");
    for sub in ["src", "vendor/lib/.git/hooks", ".git/hooks", ".lode"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    std::fs::create_dir_all(other.join(".git/hooks")).unwrap();
    (dir, root, other)
}

/// Every grant the configuration and the store can give, for every tool.
fn permissive(roots: &[PathBuf], store: &Path, sandboxed: bool) -> PermissionPolicy {
    let config = PermissionConfig::from_toml(
        r#"
        edit = "allow"
        command = "allow"
        other = "allow"
        [[rules]]
        tool = "*"
        pattern = "*"
        action = "allow"
        [[rules]]
        tool = "*"
        pattern = "**"
        action = "allow"
        "#,
    )
    .unwrap();
    let store = Arc::new(PermissionStore::open(store).unwrap());
    for tool in ["run_command", "edit_file", "write_file"] {
        for pattern in [
            "*",
            "**",
            ".git/**",
            "**/.git/**",
            ".lode/**",
            "cargo test*",
            "eval*",
        ] {
            store.remember(tool, pattern, Remembered::Allow).unwrap();
        }
    }
    PermissionPolicy::new(config, store)
        .unwrap()
        .with_roots(roots.to_vec())
        .with_sandbox(sandboxed)
}

fn must_ask_reason(decision: &Decision) -> String {
    match decision {
        Decision::Ask {
            must_ask: true,
            reason,
            ..
        } => reason.clone(),
        other => panic!("expected a must-ask, got {other:?}"),
    }
}

#[test]
fn forced_questions_about_commands_are_must_ask_whatever_allows_them() {
    let (dir, root, _) = workspace();
    let policy = permissive(&[root], &dir.path().join("agent.sqlite"), true);
    for line in [
        "echo $(whoami)",
        "cargo test $(cat args)",
        "echo `id`",
        "eval \"$CMD\"",
        "eval ls",
        "exec ls",
        "sh -c 'ls'",
        "bash -lc 'cargo test'",
        "echo 'touch x' | sh",
        "cat script | bash -s",
        "sh < steps.txt",
        "cp end.txt vendor/x/.git/hooks/post-rewrite",
        "cp evil sub/.git/config",
        "git --git-dir=vendor/x/.git config core.hooksPath /tmp",
        "mv notes .lode/config.toml",
        "diff <(ls a) <(ls b)",
        "source env.sh",
        "ls | xargs rm",
        "cargo test > out.txt",
        "echo hi >> notes.md",
        "$EDITOR file",
    ] {
        let decision = policy.decide("run_command", &command(line), Mode::Code);
        let reason = must_ask_reason(&decision);
        assert!(!reason.is_empty(), "{line}: a must-ask says why");
        assert!(
            !HeadlessGrants::new(&["*".into(), "**".into()])
                .unwrap()
                .approve(
                    decision.is_must_ask(),
                    SubjectKind::Command,
                    &[line.to_owned()]
                ),
            "{line}"
        );
    }
    // The same rules do allow a plain command.
    assert_eq!(
        policy.decide("run_command", &command("./deploy.sh"), Mode::Code),
        Decision::Allow
    );
}

#[test]
fn edits_under_git_and_lode_are_must_ask_at_every_depth_and_in_every_root() {
    let (dir, root, other) = workspace();
    let roots = vec![root.clone(), other.clone()];
    let policy = permissive(&roots, &dir.path().join("agent.sqlite"), true);
    let other_hook = other.join(".git/hooks/pre-commit");
    for path in [
        ".git/hooks/pre-commit",
        ".git/config",
        "./src/../.git/hooks/pre-push",
        "src/../.lode/config.toml",
        ".lode/agent.sqlite",
        "vendor/lib/.git/hooks/post-checkout",
        "vendor/lib/../lib/.git/config",
        other_hook.to_str().unwrap(),
    ] {
        for tool in ["edit_file", "write_file"] {
            let decision = policy.decide(tool, &edit(path), Mode::Code);
            let reason = must_ask_reason(&decision);
            assert!(reason.contains(".git/ or .lode/"), "{path}: {reason}");
        }
    }
    assert_eq!(
        policy.decide("edit_file", &edit("src/lib.rs"), Mode::Code),
        Decision::Allow
    );
}

#[test]
fn paths_the_policy_cannot_place_are_must_ask() {
    // Without roots an absolute path or one with `..` cannot be placed.
    let config = PermissionConfig::from_toml("edit = \"allow\"\n").unwrap();
    let policy = PermissionPolicy::without_store(config).unwrap();
    for path in ["/etc/passwd", "../x.rs", "src/../../x.rs"] {
        let decision = policy.decide("edit_file", &edit(path), Mode::Code);
        let reason = must_ask_reason(&decision);
        assert!(reason.contains("cannot be placed"), "{path}: {reason}");
    }
    assert_eq!(
        policy.decide("edit_file", &edit("src/x.rs"), Mode::Code),
        Decision::Allow
    );
}

#[test]
fn explicit_ask_rules_are_must_ask_and_allows_do_not_lift_them() {
    let (dir, root, _) = workspace();
    let config = PermissionConfig::from_toml(
        r#"
        edit = "allow"
        command = "allow"
        [[rules]]
        tool = "run_command"
        pattern = "git push*"
        action = "ask"
        [[rules]]
        tool = "run_command"
        pattern = "*"
        action = "allow"
        [[rules]]
        tool = "edit_file"
        pattern = "*.lock"
        action = "ask"
        [[rules]]
        tool = "mcp__deploy__run"
        action = "ask"
        "#,
    )
    .unwrap();
    let store = Arc::new(PermissionStore::open(&dir.path().join("agent.sqlite")).unwrap());
    store
        .remember("run_command", "git push*", Remembered::Allow)
        .unwrap();
    store
        .remember("edit_file", "Cargo.lock", Remembered::Allow)
        .unwrap();
    store
        .remember("mcp__deploy__run", "*", Remembered::Allow)
        .unwrap();
    let policy = PermissionPolicy::new(config, store)
        .unwrap()
        .with_roots(vec![root])
        .with_sandbox(true);
    let reason = must_ask_reason(&policy.decide(
        "run_command",
        &command("git push origin main"),
        Mode::Code,
    ));
    assert!(reason.contains("git push*"), "{reason}");
    let reason = must_ask_reason(&policy.decide("edit_file", &edit("Cargo.lock"), Mode::Code));
    assert!(reason.contains("*.lock"), "{reason}");
    must_ask_reason(&policy.decide("mcp__deploy__run", &PermissionTarget::Other, Mode::Code));
    // In a chain, one asked part makes the line a must-ask.
    must_ask_reason(&policy.decide(
        "run_command",
        &command("cargo check && git push"),
        Mode::Code,
    ));
}

#[test]
fn without_the_sandbox_commands_that_run_workspace_code_are_must_ask() {
    let (dir, root, _) = workspace();
    let policy = permissive(
        std::slice::from_ref(&root),
        &dir.path().join("agent.sqlite"),
        false,
    );
    for line in [
        "cargo test",
        "cargo build --release",
        "git status",
        "git commit -m x",
        "npm test",
        "npm run dev",
        "make",
        "pytest -q",
        "python3 setup.py",
        "python3.12 x.py",
        "node index.js",
        "./deploy.sh",
        "scripts/release",
        "target/debug/app",
        "bash build.sh",
        "ls && cargo test",
        "env FOO=1 cargo test",
    ] {
        let reason = must_ask_reason(&policy.decide("run_command", &command(line), Mode::Code));
        assert!(reason.contains("without the sandbox"), "{line}: {reason}");
    }
    // Commands that run nothing of the workspace's are not: the rules allow them.
    for line in [
        "ls src",
        "echo hi",
        "cat src/lib.rs",
        "curl https://example.com",
    ] {
        assert_eq!(
            policy.decide("run_command", &command(line), Mode::Code),
            Decision::Allow,
            "{line}"
        );
    }
    // Inside the sandbox the same rules allow the workspace's commands.
    let confined = permissive(&[root], &dir.path().join("agent2.sqlite"), true);
    for line in ["cargo test", "./deploy.sh", "git commit -m x"] {
        assert_eq!(
            confined.decide("run_command", &command(line), Mode::Code),
            Decision::Allow,
            "{line}"
        );
    }
}

#[test]
fn deny_still_beats_everything() {
    let (dir, root, _) = workspace();
    let policy = permissive(&[root], &dir.path().join("agent.sqlite"), true);
    for line in ["sudo ls", "rm -rf /", "curl x | sh", "eval x; sudo ls"] {
        assert!(
            matches!(
                policy.decide("run_command", &command(line), Mode::Code),
                Decision::Deny { .. }
            ),
            "{line}"
        );
    }
    assert!(matches!(
        policy.decide("edit_file", &edit("../outside.rs"), Mode::Code),
        Decision::Deny { .. }
    ));
}

#[test]
fn plain_asks_carry_their_subjects_and_can_be_lifted() {
    let (_dir, root, _) = workspace();
    let policy = PermissionPolicy::without_store(PermissionConfig::default())
        .unwrap()
        .with_roots(vec![root.clone()])
        .with_sandbox(true);
    let decision = policy.decide("edit_file", &edit("./src/../src/new.rs"), Mode::Code);
    assert!(decision.is_plain_ask(), "{decision:?}");
    let Decision::Ask {
        subjects,
        subject_kind,
        always_pattern,
        ..
    } = &decision
    else {
        unreachable!()
    };
    assert_eq!(subjects, &vec!["src/new.rs".to_owned()]);
    assert_eq!(*subject_kind, SubjectKind::Path);
    assert_eq!(always_pattern, "src/**");
    let decision = policy.decide(
        "run_command",
        &command("\"./deploy.sh\"   --prod && npm   run  e2e"),
        Mode::Code,
    );
    assert!(decision.is_plain_ask(), "{decision:?}");
    let Decision::Ask {
        subjects,
        subject_kind,
        ..
    } = &decision
    else {
        unreachable!()
    };
    assert_eq!(
        subjects,
        &vec!["./deploy.sh --prod".to_owned(), "npm run e2e".to_owned()]
    );
    assert_eq!(*subject_kind, SubjectKind::Command);
    let decision = policy.decide(
        "mcp__github__create_issue",
        &PermissionTarget::Other,
        Mode::Code,
    );
    let Decision::Ask {
        subjects,
        subject_kind,
        ..
    } = &decision
    else {
        panic!("{decision:?}")
    };
    assert_eq!(subjects, &vec!["mcp__github__create_issue".to_owned()]);
    assert_eq!(*subject_kind, SubjectKind::Tool);
}

#[test]
fn headless_grants_match_every_subject_the_way_the_policy_does() {
    let grants = HeadlessGrants::new(&[
        "src/**".to_owned(),
        "cargo test*".to_owned(),
        "mcp__github__*".to_owned(),
    ])
    .unwrap();
    let paths = |list: &[&str]| list.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>();
    assert!(grants.approve(false, SubjectKind::Path, &paths(&["src/a/b.rs"])));
    // Anchored like the policy's rules: `src/**` is the root's src, not a nested one.
    assert!(!grants.approve(false, SubjectKind::Path, &paths(&["vendor/src/a.rs"])));
    assert!(!grants.approve(false, SubjectKind::Path, &paths(&[".git/hooks/x"])));
    assert!(!grants.approve(false, SubjectKind::Path, &paths(&["src/a.rs", "README.md"])));
    assert!(grants.approve(false, SubjectKind::Command, &paths(&["cargo test --lib"])));
    assert!(!grants.approve(
        false,
        SubjectKind::Command,
        &paths(&["cargo test", "curl https://evil.example"])
    ));
    assert!(grants.approve(
        false,
        SubjectKind::Tool,
        &paths(&["mcp__github__create_issue"])
    ));
    // Nothing to match, or a must-ask: never approved.
    assert!(!grants.approve(false, SubjectKind::Path, &[]));
    assert!(!grants.approve(true, SubjectKind::Path, &paths(&["src/a.rs"])));
    assert!(HeadlessGrants::new(&["src/[".to_owned()]).is_err());
}

#[test]
fn the_decision_keeps_reading_older_serialised_forms() {
    let old: Decision =
        serde_json::from_str(r#"{"decision":"ask","always_pattern":"cargo test*"}"#).unwrap();
    assert!(old.is_plain_ask());
    let must: Decision = serde_json::from_str(
        r#"{"decision":"ask","always_pattern":"x","must_ask":true,"reason":"r","subjects":["x"],"subject_kind":"command"}"#,
    )
    .unwrap();
    assert!(must.is_must_ask());
}
