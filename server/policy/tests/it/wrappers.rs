//! The deny list through wrappers: a denied command stays denied when `env`, `nice`, `timeout`,
//! `nohup`, `xargs`, `find -exec`, a git alias or `-c` setting, `sh -c` or `env -S` runs it;
//! commands whose real work lode cannot see (`make`, `npm run`, a git alias from the
//! repository's configuration) are questions that name them; every user's home by its absolute
//! path is protected like `~`.

use lode_policy::{Decision, Mode, PermissionConfig, PermissionPolicy, PermissionTarget};

fn decide(line: &str) -> Decision {
    let root = std::env::temp_dir();
    PermissionPolicy::without_store(PermissionConfig::default())
        .unwrap()
        .with_roots(vec![root])
        .with_sandbox(true)
        .decide(
            "run_command",
            &PermissionTarget::Command {
                command: line.to_owned(),
            },
            Mode::Code,
        )
}

#[test]
fn denied_commands_stay_denied_inside_wrappers() {
    for line in [
        "env FOO=1 sudo id",
        "env -u HOME sudo id",
        "env -S 'sudo id'",
        "nice -n 5 sudo id",
        "timeout -s KILL 5 sudo id",
        "timeout --kill-after=1 5 sudo id",
        "nohup sudo id",
        "echo x | xargs sudo rm",
        "echo x | xargs -n 1 -I {} sudo rm {}",
        "find . -exec sudo rm {} \\;",
        "find . -execdir sudo chmod 777 {} +",
        "find . -ok sudo true \\;",
        "git -c alias.x='!sudo id' x",
        "git -c 'alias.x=!sh -c \"sudo id\"' x",
        "git -c core.fsmonitor='sudo id' status",
        "sh -c 'sudo id'",
        "bash -lc 'rm -rf /'",
        "find . -exec sh -c 'sudo id' \\;",
        "rm -rf /home/alice",
        "rm -rf /home/alice/",
        "rm -rf /root",
        "rm -rf /Users/bob",
        "rm -rf ~alice",
        "chmod -R 777 /home/alice",
    ] {
        assert!(
            matches!(decide(line), Decision::Deny { .. }),
            "{line}: {:?}",
            decide(line)
        );
    }
}

#[test]
fn the_running_users_home_by_absolute_path_is_protected() {
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".to_owned());
    let line = format!("rm -rf {home}");
    assert!(matches!(decide(&line), Decision::Deny { .. }), "{line}");
    // A folder inside it is not the home itself.
    let inner = format!("rm -rf {home}/project/target");
    assert!(!matches!(decide(&inner), Decision::Deny { .. }), "{inner}");
}

#[test]
fn wrappers_that_run_other_commands_are_questions_naming_them() {
    for (line, must, named) in [
        ("find . -name '*.o' -exec rm {} \\;", true, "rm {}"),
        ("git -c alias.x='!touch y' x", true, "alias.x"),
        ("git -c core.sshCommand=ssh status", true, "core.sshCommand"),
        ("make deploy", false, "make"),
        ("npm run deploy", false, "npm run deploy"),
        ("git frobnicate", false, "git frobnicate"),
    ] {
        match decide(line) {
            Decision::Ask {
                must_ask, reason, ..
            } => {
                assert_eq!(must_ask, must, "{line}: {reason}");
                assert!(reason.contains(named), "{line}: {reason}");
            }
            other => panic!("{line}: expected a question, got {other:?}"),
        }
    }
}

#[test]
fn test_runners_still_run_unasked_in_the_sandbox() {
    for line in [
        "cargo test",
        "npm test",
        "pytest",
        "go test ./...",
        "git status",
    ] {
        assert!(matches!(decide(line), Decision::Allow), "{line}");
    }
}
