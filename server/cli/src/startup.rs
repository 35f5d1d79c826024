//! What happens before `main`: a query that a lease holder will answer spends most of its life
//! starting up, so a short-lived invocation turns transparent huge pages off for itself.
//!
//! mimalloc backs its first arena with a 2 MiB huge page when the kernel allows it, and the
//! kernel zeroes the whole page on first touch: about a quarter of `lode --version`'s 5.5 ms on
//! this VM (see bench/README.md, "Served queries"). The decision must be made before the first
//! allocation, which the Rust runtime makes before `main`, hence a constructor. Long-running
//! commands (indexing, servers, the agent) keep huge pages; the daemon a query starts turns
//! them back on ([`allow_huge_pages`]), since the setting is inherited.

use std::ffi::{CStr, c_char, c_int};

/// Words that mark a command worth keeping huge pages for.
const LONG_RUNNING: &[&[u8]] = &[
    b"index",
    b"watch",
    b"lsp",
    b"acp",
    b"mcp",
    b"chat",
    b"run",
    b"serve",
    b"ask",
    b"parse-only",
    b"llm-script",
    b"sandbox-exec",
    b"sandbox-check",
];

/// Words that mark a short-lived command.
const SHORT_LIVED: &[&[u8]] = &[
    b"search",
    b"symbols",
    b"refs",
    b"map",
    b"status",
    b"stop",
    b"start",
    b"--version",
    b"-V",
    b"--help",
    b"-h",
    b"help",
];

/// Whether these arguments name a short-lived command. A guess from words alone (a query may
/// contain "index"): a wrong guess costs a little speed, never correctness.
fn short_lived<'a>(args: impl Iterator<Item = &'a [u8]>) -> bool {
    let mut short = false;
    for word in args {
        if LONG_RUNNING.contains(&word) {
            return false;
        }
        short |= SHORT_LIVED.contains(&word);
    }
    short
}

/// Runs from `.init_array`, before the Rust runtime allocates: glibc passes the arguments.
extern "C" fn before_main(argc: c_int, argv: *const *const c_char, _envp: *const *const c_char) {
    if argv.is_null() || argc <= 1 {
        return;
    }
    let words = (1..argc as usize).filter_map(|index| {
        // SAFETY: glibc hands constructors the process's argv: `argc` valid pointers to
        // NUL-terminated strings that live for the whole process.
        let word = unsafe { *argv.add(index) };
        (!word.is_null()).then(|| unsafe { CStr::from_ptr(word) }.to_bytes())
    });
    if short_lived(words) {
        // SAFETY: prctl with PR_SET_THP_DISABLE takes plain integers and touches no memory.
        unsafe {
            libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
        }
    }
}

#[used]
#[unsafe(link_section = ".init_array")]
static BEFORE_MAIN: extern "C" fn(c_int, *const *const c_char, *const *const c_char) = before_main;

/// Turns huge pages back on for a long-running process started by a short-lived one.
pub fn allow_huge_pages() {
    // SAFETY: as above.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 0, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> bool {
        short_lived(line.split(' ').map(str::as_bytes))
    }

    #[test]
    fn queries_are_short_lived_and_servers_are_not() {
        assert!(words("search foo --json"));
        assert!(words("--root /x symbols Foo"));
        assert!(words("daemon status"));
        assert!(words("--version"));
        assert!(!words("daemon serve"));
        assert!(!words("index ."));
        assert!(!words("lsp"));
        assert!(!words("--root /x acp"));
        assert!(!words("search index"));
        assert!(!words(""));
    }

    #[test]
    fn this_test_process_keeps_huge_pages() {
        // The test binary's arguments name no command: the constructor left it alone.
        // SAFETY: PR_GET_THP_DISABLE takes no pointers.
        let disabled = unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) };
        assert_eq!(disabled, 0);
    }
}
