//! The Landlock ruleset: what may be read, what may be written, TCP and scoping.

use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};

use crate::SandboxError;
use crate::launcher::Plan;

/// The newest ABI this ruleset is written for; older kernels get the subset they know.
const TARGET_ABI: ABI = ABI::V7;

fn landlock_error(error: impl std::fmt::Display) -> SandboxError {
    SandboxError::Landlock(error.to_string())
}

pub fn restrict(plan: &Plan) -> Result<(), SandboxError> {
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(TARGET_ABI))
        .map_err(landlock_error)?
        .scope(Scope::from_all(TARGET_ABI))
        .map_err(landlock_error)?;
    if !plan.network {
        // No rule grants a port: every TCP bind and connect is refused (seccomp refuses the
        // sockets before that; this holds even if a socket was inherited).
        ruleset = ruleset
            .handle_access(AccessNet::from_all(TARGET_ABI))
            .map_err(landlock_error)?;
    }
    let mut created = ruleset.create().map_err(landlock_error)?;
    // Device nodes are made nowhere, not even where the command writes: a command holding
    // CAP_MKNOD (root without a user namespace, were capabilities not dropped too) could
    // otherwise make `$TMPDIR/disk` for the disk or `$TMPDIR/kmsg` and write through it what
    // Landlock refuses on the original.
    let devices = AccessFs::MakeChar | AccessFs::MakeBlock;
    let grants = [
        (&plan.read_paths, AccessFs::from_read(TARGET_ABI)),
        (&plan.write_paths, AccessFs::from_all(TARGET_ABI) & !devices),
    ];
    for (paths, access) in grants {
        for path in paths {
            // A path that does not exist (no ~/.rustup on this machine) grants nothing.
            let Ok(fd) = PathFd::new(Path::new(path)) else {
                continue;
            };
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(landlock_error)?;
        }
    }
    let status = created.restrict_self().map_err(landlock_error)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(SandboxError::Landlock(
            "the kernel did not enforce the ruleset (Landlock is off)".into(),
        ));
    }
    Ok(())
}
