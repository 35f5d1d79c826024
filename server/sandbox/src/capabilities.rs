//! What the sandbox can enforce on this machine, probed once per process.

use std::sync::OnceLock;

use serde::Serialize;

use crate::SandboxMode;

/// The kernel features the launcher relies on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Capabilities {
    /// `std::env::consts::OS`.
    pub os: &'static str,
    /// The Landlock ABI version the kernel offers (`None`: no Landlock).
    pub landlock_abi: Option<u32>,
    /// seccomp filters can be installed (they confine the network).
    pub seccomp: bool,
    /// An unprivileged user and mount namespace can be made (a read-only view of everything but
    /// the writable paths, and `.git/`, `.lode/` read-only inside a writable workspace).
    pub user_namespaces: bool,
}

/// Landlock's ABI 1 confines files; later versions add truncation, TCP and scoping.
const MIN_LANDLOCK_ABI: u32 = 1;

impl Capabilities {
    /// Probes the kernel once; later calls return the same answer.
    pub fn probe() -> &'static Capabilities {
        static PROBED: OnceLock<Capabilities> = OnceLock::new();
        PROBED.get_or_init(probe_now)
    }

    /// What the launcher checks before it confines itself: Landlock and seccomp (two system
    /// calls), but not user namespaces, which would cost a fork of the whole process: the
    /// launcher's own `unshare` answers that, and its failure is reported as unavailability.
    pub fn probe_without_namespaces() -> Capabilities {
        Capabilities {
            user_namespaces: true,
            ..probe_cheap()
        }
    }

    /// Why `mode` cannot be enforced here, if it cannot (`Off` always can).
    pub fn missing_for(&self, mode: SandboxMode) -> Option<String> {
        if mode == SandboxMode::Off {
            return None;
        }
        if self.os != "linux" {
            return Some(format!(
                "lode's sandbox needs Linux (Landlock and seccomp); this is {}",
                self.os
            ));
        }
        let mut missing = Vec::new();
        if self.landlock_abi.is_none_or(|abi| abi < MIN_LANDLOCK_ABI) {
            missing.push("Landlock (Linux 5.13 or later, with `landlock` in the boot's lsm= list)");
        }
        if !self.seccomp {
            missing.push("seccomp filters");
        }
        if !self.user_namespaces {
            missing.push(
                "unprivileged user namespaces (needed for a read-only view of the file system \
                 outside the writable paths and of .git/ and .lode/; \
                 `sysctl kernel.unprivileged_userns_clone=1`, or on Ubuntu \
                 `kernel.apparmor_restrict_unprivileged_userns=0`)",
            );
        }
        (!missing.is_empty()).then(|| format!("this kernel lacks {}", missing.join(", ")))
    }

    /// Whether Landlock here also confines TCP (ABI 4 and later).
    pub fn landlock_confines_tcp(&self) -> bool {
        self.landlock_abi.is_some_and(|abi| abi >= 4)
    }

    /// Whether Landlock here keeps signals and abstract Unix sockets inside (ABI 6 and later).
    pub fn landlock_scopes_signals(&self) -> bool {
        self.landlock_abi.is_some_and(|abi| abi >= 6)
    }
}

fn probe_now() -> Capabilities {
    let cheap = probe_cheap();
    Capabilities {
        user_namespaces: cheap.os == "linux" && user_namespaces(),
        ..cheap
    }
}

#[cfg(target_os = "linux")]
fn user_namespaces() -> bool {
    crate::linux::probe::user_namespaces()
}

#[cfg(not(target_os = "linux"))]
fn user_namespaces() -> bool {
    false
}

/// Everything but user namespaces.
#[cfg(target_os = "linux")]
fn probe_cheap() -> Capabilities {
    Capabilities {
        os: std::env::consts::OS,
        landlock_abi: crate::linux::probe::landlock_abi(),
        seccomp: crate::linux::probe::seccomp_filters(),
        user_namespaces: false,
    }
}

#[cfg(not(target_os = "linux"))]
fn probe_cheap() -> Capabilities {
    Capabilities {
        os: std::env::consts::OS,
        landlock_abi: None,
        seccomp: false,
        user_namespaces: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linux(landlock: Option<u32>, seccomp: bool, userns: bool) -> Capabilities {
        Capabilities {
            os: "linux",
            landlock_abi: landlock,
            seccomp,
            user_namespaces: userns,
        }
    }

    #[test]
    fn each_missing_feature_is_named() {
        assert_eq!(
            linux(Some(7), true, true).missing_for(SandboxMode::WorkspaceWrite),
            None
        );
        let no_landlock = linux(None, true, true)
            .missing_for(SandboxMode::ReadOnly)
            .unwrap();
        assert!(no_landlock.contains("Landlock"), "{no_landlock}");
        let no_seccomp = linux(Some(3), false, true)
            .missing_for(SandboxMode::ReadOnly)
            .unwrap();
        assert!(no_seccomp.contains("seccomp"), "{no_seccomp}");
        // Both modes need the namespace: its read-only mounts refuse metadata changes.
        for mode in [SandboxMode::ReadOnly, SandboxMode::WorkspaceWrite] {
            let no_userns = linux(Some(7), true, false).missing_for(mode).unwrap();
            assert!(no_userns.contains("user namespaces"), "{no_userns}");
        }
        let mac = Capabilities {
            os: "macos",
            ..linux(None, false, false)
        };
        assert!(
            mac.missing_for(SandboxMode::ReadOnly)
                .unwrap()
                .contains("macos")
        );
        assert_eq!(mac.missing_for(SandboxMode::Off), None);
    }
}
