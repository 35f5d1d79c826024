//! The one place that names the programs lode may start without the launcher, each with its
//! reason. Everything else lode starts runs through [`crate::Sandbox`]'s wrappers, or is not
//! started at all. `docs/security.md` lists every process lode starts; this is the code's half
//! of that list, and a test keeps the two in step.

/// A program lode may start unconfined, and why that is acceptable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exemption {
    /// The program's file name (or a description, for a class of programs).
    pub program: &'static str,
    /// When lode starts it unconfined.
    pub when: &'static str,
    pub reason: &'static str,
}

/// lode's own binaries, which are never wrapped: they read the workspace only as data and
/// start every workspace program through the launcher themselves.
pub const LODE_ITSELF: &[Exemption] = &[
    Exemption {
        program: "lode-full",
        when: "the `lode` front end `exec`s it for every command it does not answer itself",
        reason: "it is lode: the same process continues as the full binary",
    },
    Exemption {
        program: "lode daemon",
        when: "the first CLI query of a large workspace starts it",
        reason: "it is lode: it parses and indexes files and runs none of the workspace's code",
    },
    Exemption {
        program: "lode sandbox-exec",
        when: "every confined program starts as it",
        reason: "it is the launcher: it confines itself before it executes the program",
    },
];

/// Language servers and checkers that may run unconfined where the sandbox cannot confine (the
/// kernel lacks Landlock, seccomp or unprivileged user namespaces, or `[sandbox] mode = "off"`):
/// they parse and type-check the workspace's files but run none of its code. Every other
/// language server or checker (rust-analyzer and `cargo check` run build scripts and proc
/// macros, typescript-language-server loads the workspace's own TypeScript and its plugins,
/// gopls runs `go list`, jdtls, metals and kotlin-language-server run the build, ruby-lsp runs
/// bundler, …) is not started then, and says why.
pub const PARSE_ONLY_CHECKERS: &[Exemption] = &[
    Exemption {
        program: "pyright-langserver",
        when: "Python navigation and diagnostics where the sandbox cannot confine",
        reason: "it parses and type-checks Python; it imports and runs none of the workspace's \
                 code",
    },
    Exemption {
        program: "pyright",
        when: "Python diagnostics (`pyright --outputjson`) where the sandbox cannot confine",
        reason: "the same checker as pyright-langserver, run once",
    },
    Exemption {
        program: "tsc",
        when: "TypeScript diagnostics (`tsc --noEmit`, the one on PATH) where the sandbox cannot \
               confine",
        reason: "it type-checks without emitting; it loads no language-service plugins and runs \
                 none of the workspace's code",
    },
    Exemption {
        program: "clangd",
        when: "C and C++ navigation and diagnostics where the sandbox cannot confine",
        reason: "it parses with its own compiler front end; it runs none of the compilers \
                 compile_commands.json names (that takes `--query-driver`, which lode never \
                 passes)",
    },
    Exemption {
        program: "bash-language-server",
        when: "shell script navigation where the sandbox cannot confine",
        reason: "it parses scripts (and hands their text to shellcheck); it runs none of them",
    },
];

/// MCP servers of the user's own config or of the editor (an ACP client's `session/new`) where
/// the sandbox cannot confine: they are the user's own programs, named by the user. A server
/// named only by a workspace's config never runs unconfined.
pub const USERS_MCP_SERVERS: Exemption = Exemption {
    program: "stdio MCP servers of the user's config or editor",
    when: "sessions where the sandbox cannot confine (or `[sandbox] mode = \"off\"`)",
    reason: "the user named the program in their own config or editor, as they would run it \
             themselves; lode says so when it starts one unconfined",
};

/// The exemption that lets `program` (a path or a file name) run as a checker where the
/// sandbox cannot confine, if any.
pub fn parse_only_checker(program: &str) -> Option<&'static Exemption> {
    let name = std::path::Path::new(program)
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or(program);
    PARSE_ONLY_CHECKERS
        .iter()
        .find(|exemption| exemption.program == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkers_are_matched_by_file_name_only() {
        assert!(parse_only_checker("pyright-langserver").is_some());
        assert!(parse_only_checker("/usr/local/bin/tsc").is_some());
        assert!(parse_only_checker("rust-analyzer").is_none());
        assert!(parse_only_checker("typescript-language-server").is_none());
        assert!(parse_only_checker("gopls").is_none());
        assert!(parse_only_checker("cargo").is_none());
        assert!(parse_only_checker("/tmp/evil/pyright-langserver-x").is_none());
    }

    #[test]
    fn docs_security_names_every_exemption() {
        let doc = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/security.md"
        ))
        .unwrap();
        for exemption in LODE_ITSELF.iter().chain(PARSE_ONLY_CHECKERS) {
            assert!(
                doc.contains(exemption.program),
                "docs/security.md does not name {}",
                exemption.program
            );
        }
        assert!(doc.contains("server/sandbox/src/exempt.rs"));
    }
}
