//! Which language a file is written in, and the tree-sitter grammar and queries that go with it.

use std::path::Path;

/// A language lode knows how to read. Code languages have a tree-sitter grammar and a tags query;
/// everything else lode indexes is [`Language::Text`], chunked by paragraphs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Language {
    Rust,
    Python,
    JavaScript,
    TypeScript,
    Tsx,
    Go,
    Text,
}

impl Language {
    /// Every language, code languages first.
    pub const ALL: [Language; 7] = [
        Language::Rust,
        Language::Python,
        Language::JavaScript,
        Language::TypeScript,
        Language::Tsx,
        Language::Go,
        Language::Text,
    ];

    /// The stable lower-case name used in the index, on the command line and in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::JavaScript => "javascript",
            Language::TypeScript => "typescript",
            Language::Tsx => "tsx",
            Language::Go => "go",
            Language::Text => "text",
        }
    }

    /// Parses a language name as printed by [`Language::name`], plus common aliases.
    pub fn from_name(name: &str) -> Option<Language> {
        let lower = name.to_ascii_lowercase();
        Some(match lower.as_str() {
            "rust" | "rs" => Language::Rust,
            "python" | "py" => Language::Python,
            "javascript" | "js" | "jsx" => Language::JavaScript,
            "typescript" | "ts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "go" | "golang" => Language::Go,
            "text" | "txt" | "plain" => Language::Text,
            _ => return None,
        })
    }

    /// The language of a file, judged by its name. `None` means lode does not index the file.
    pub fn from_path(path: &Path) -> Option<Language> {
        let file_name = path.file_name()?.to_str()?;
        let extension = path
            .extension()
            .and_then(|e| e.to_str())
            .map(|e| e.to_ascii_lowercase());
        let by_extension = match extension.as_deref() {
            Some("rs") => Language::Rust,
            Some("py" | "pyi") => Language::Python,
            Some("js" | "jsx" | "mjs" | "cjs") => Language::JavaScript,
            Some("ts" | "mts" | "cts") => Language::TypeScript,
            Some("tsx") => Language::Tsx,
            Some("go") => Language::Go,
            Some(ext) if TEXT_EXTENSIONS.contains(&ext) => Language::Text,
            _ if TEXT_FILE_NAMES.contains(&file_name) => Language::Text,
            _ => return None,
        };
        Some(by_extension)
    }

    /// True for languages parsed with tree-sitter.
    pub fn is_code(self) -> bool {
        self != Language::Text
    }

    /// The tree-sitter grammar, or `None` for plain text.
    pub fn grammar(self) -> Option<tree_sitter::Language> {
        Some(match self {
            Language::Rust => tree_sitter_rust::LANGUAGE.into(),
            Language::Python => tree_sitter_python::LANGUAGE.into(),
            Language::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Language::Go => tree_sitter_go::LANGUAGE.into(),
            Language::Text => return None,
        })
    }

    /// The tags query (definitions and references) from `grammars/<language>/tags.scm`.
    pub fn tags_query_source(self) -> Option<&'static str> {
        Some(match self {
            Language::Rust => include_str!("../../../grammars/rust/tags.scm"),
            Language::Python => include_str!("../../../grammars/python/tags.scm"),
            Language::JavaScript => include_str!("../../../grammars/javascript/tags.scm"),
            // TSX is TypeScript plus JSX; the TypeScript query only uses nodes both grammars share.
            Language::TypeScript | Language::Tsx => {
                include_str!("../../../grammars/typescript/tags.scm")
            }
            Language::Go => include_str!("../../../grammars/go/tags.scm"),
            Language::Text => return None,
        })
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Extensions of text files indexed as plain-text chunks.
const TEXT_EXTENSIONS: &[&str] = &[
    "md",
    "markdown",
    "mdx",
    "rst",
    "txt",
    "adoc",
    "toml",
    "json",
    "jsonc",
    "yaml",
    "yml",
    "ini",
    "cfg",
    "conf",
    "sh",
    "bash",
    "zsh",
    "fish",
    "ps1",
    "html",
    "htm",
    "css",
    "scss",
    "xml",
    "svg",
    "sql",
    "graphql",
    "proto",
    "c",
    "h",
    "cc",
    "cpp",
    "hpp",
    "cxx",
    "java",
    "kt",
    "kts",
    "swift",
    "rb",
    "php",
    "lua",
    "scm",
    "el",
    "vim",
    "zig",
    "cs",
    "scala",
    "ex",
    "exs",
    "erl",
    "hs",
    "ml",
    "tf",
    "nix",
    "dockerfile",
    "mk",
    "cmake",
    "gradle",
    "properties",
    "env",
    "csv",
    "tsv",
    "lock",
];

/// Extension-less file names indexed as plain text.
const TEXT_FILE_NAMES: &[&str] = &[
    "Dockerfile",
    "Makefile",
    "makefile",
    "Justfile",
    "justfile",
    "README",
    "LICENSE",
    "COPYING",
    "CHANGELOG",
    "Gemfile",
    "Rakefile",
    "Procfile",
    ".gitignore",
    ".editorconfig",
];
