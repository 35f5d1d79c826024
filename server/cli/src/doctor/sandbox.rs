//! The command sandbox: what the kernel offers (Landlock ABI, seccomp, user namespaces) and
//! whether the configured mode can be enforced. The live self-test is `lode sandbox-check`.

use lode_agent::config::Config;
use lode_sandbox::{Capabilities, SandboxStatus};

use super::Check;

pub fn check(config: Option<&Config>) -> Vec<Check> {
    let defaults = Config::default();
    let config = config.unwrap_or(&defaults);
    let capabilities = Capabilities::probe();
    let yes_no = |flag: bool| if flag { "yes" } else { "no" };
    let offered = format!(
        "Landlock {}, seccomp {}, user namespaces {}",
        capabilities
            .landlock_abi
            .map_or_else(|| "not available".to_owned(), |abi| format!("ABI {abi}")),
        yes_no(capabilities.seccomp),
        yes_no(capabilities.user_namespaces),
    );
    let sandbox = lode_agent::sandbox_for(crate::sandbox_command::launcher(), config);
    let check = match sandbox.status() {
        SandboxStatus::Confined(mode) => Check::ok(
            "sandbox",
            format!(
                "commands run confined ({mode}): {offered}{}",
                if capabilities.landlock_confines_tcp() {
                    "; Landlock also confines TCP"
                } else {
                    ""
                }
            ),
        ),
        SandboxStatus::Off => Check::warn(
            "sandbox",
            format!("[sandbox] mode = \"off\": commands run unconfined ({offered})"),
            "remove `mode = \"off\"` from [sandbox] so that commands run confined",
        ),
        SandboxStatus::Unavailable(reason) => Check::warn(
            "sandbox",
            format!("commands cannot be confined here, so lode asks before each: {reason}"),
            capabilities
                .missing_for(config.sandbox.mode)
                .unwrap_or_else(|| "see docs/security.md".to_owned()),
        ),
    };
    vec![check]
}
