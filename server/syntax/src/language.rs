//! Which language a file is written in: the registry of every language lode reads, each a row
//! naming its file names, its tree-sitter grammar, its tags query and its rules
//! (`grammars/<dir>/`), and the judgement of a file's language by its name, its first line and,
//! for the ambiguous `.h`, its content.
//!
//! Adding a language is a folder `grammars/<dir>/` (`tags.scm`, `language.toml`, a `sample.*`
//! and its `expected.json`) and one row in [`REGISTRY`] (with its variant of [`Language`] and its
//! grammar in [`Language::grammar`]); the
//! tests read every row.

use std::path::Path;
use std::sync::OnceLock;

use crate::rules::LanguageRules;

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
    C,
    Cpp,
    Java,
    CSharp,
    Kotlin,
    Swift,
    Ruby,
    Php,
    Scala,
    Lua,
    Bash,
    Zig,
    Elixir,
    Haskell,
    OCaml,
    Markdown,
    Text,
}

/// One row of the registry: everything lode knows about a language.
pub struct LanguageSpec {
    pub language: Language,
    /// The stable lower-case name used in the index, on the command line and in JSON output.
    pub name: &'static str,
    /// More names `--lang` accepts.
    pub aliases: &'static [&'static str],
    /// Lower-case file extensions, without the dot.
    pub extensions: &'static [&'static str],
    /// Whole file names (`Makefile`, `Gemfile`).
    pub file_names: &'static [&'static str],
    /// Interpreters named by a `#!` first line (`#!/usr/bin/env ruby`) of a file without a
    /// known extension.
    pub interpreters: &'static [&'static str],
    /// The directory under `grammars/` holding the query, rules and fixtures.
    pub dir: &'static str,
    /// Parsed with a tree-sitter grammar ([`Language::grammar`] names it; kept out of this
    /// table so that reading names and extensions does not link every parser in).
    pub parsed: bool,
    /// `grammars/<dir>/tags.scm`.
    pub tags: Option<&'static str>,
    /// `grammars/<dir>/language.toml`.
    pub rules: &'static str,
}

macro_rules! grammar_files {
    ($dir:literal) => {
        (
            Some(include_str!(concat!(
                "../../../grammars/",
                $dir,
                "/tags.scm"
            ))),
            include_str!(concat!("../../../grammars/", $dir, "/language.toml")),
        )
    };
}

// Positional so that each language reads as one row of a table.
#[allow(clippy::too_many_arguments)]
const fn row(
    language: Language,
    name: &'static str,
    aliases: &'static [&'static str],
    extensions: &'static [&'static str],
    file_names: &'static [&'static str],
    interpreters: &'static [&'static str],
    dir: &'static str,
    parsed: bool,
    files: (Option<&'static str>, &'static str),
) -> LanguageSpec {
    LanguageSpec {
        language,
        name,
        aliases,
        extensions,
        file_names,
        interpreters,
        dir,
        parsed,
        tags: files.0,
        rules: files.1,
    }
}

/// Every language, in the order of [`Language`]'s variants (a test checks it).
pub static REGISTRY: [LanguageSpec; 23] = [
    row(
        Language::Rust,
        "rust",
        &["rs"],
        &["rs"],
        &[],
        &[],
        "rust",
        true,
        grammar_files!("rust"),
    ),
    row(
        Language::Python,
        "python",
        &["py", "python3"],
        &["py", "pyi", "pyw"],
        &["SConstruct", "SConscript"],
        &["python", "python3", "python2"],
        "python",
        true,
        grammar_files!("python"),
    ),
    row(
        Language::JavaScript,
        "javascript",
        &["js", "jsx", "node"],
        &["js", "jsx", "mjs", "cjs"],
        &[],
        &["node", "nodejs"],
        "javascript",
        true,
        grammar_files!("javascript"),
    ),
    // TSX is TypeScript plus JSX; the TypeScript query uses only nodes both grammars share.
    row(
        Language::TypeScript,
        "typescript",
        &["ts"],
        &["ts", "mts", "cts"],
        &[],
        &["ts-node", "deno", "bun"],
        "typescript",
        true,
        grammar_files!("typescript"),
    ),
    row(
        Language::Tsx,
        "tsx",
        &[],
        &["tsx"],
        &[],
        &[],
        "typescript",
        true,
        grammar_files!("typescript"),
    ),
    row(
        Language::Go,
        "go",
        &["golang"],
        &["go"],
        &[],
        &[],
        "go",
        true,
        grammar_files!("go"),
    ),
    // `.h` is judged by its content (see `Language::detect`): C unless it reads as C++.
    row(
        Language::C,
        "c",
        &[],
        &["c", "h"],
        &[],
        &["tcc"],
        "c",
        true,
        grammar_files!("c"),
    ),
    row(
        Language::Cpp,
        "cpp",
        &["c++", "cxx", "cc"],
        &[
            "cc", "cpp", "cxx", "c++", "hh", "hpp", "hxx", "h++", "ipp", "tpp", "inl", "cu", "cuh",
        ],
        &[],
        &[],
        "cpp",
        true,
        grammar_files!("cpp"),
    ),
    row(
        Language::Java,
        "java",
        &[],
        &["java"],
        &[],
        &["java"],
        "java",
        true,
        grammar_files!("java"),
    ),
    row(
        Language::CSharp,
        "csharp",
        &["c#", "cs"],
        &["cs", "csx"],
        &[],
        &["dotnet-script"],
        "csharp",
        true,
        grammar_files!("csharp"),
    ),
    row(
        Language::Kotlin,
        "kotlin",
        &["kt"],
        &["kt", "kts"],
        &[],
        &["kotlin", "kotlinc"],
        "kotlin",
        true,
        grammar_files!("kotlin"),
    ),
    row(
        Language::Swift,
        "swift",
        &[],
        &["swift"],
        &[],
        &["swift"],
        "swift",
        true,
        grammar_files!("swift"),
    ),
    row(
        Language::Ruby,
        "ruby",
        &["rb"],
        &["rb", "rake", "gemspec", "ru", "rbi", "jbuilder"],
        &[
            "Gemfile",
            "Rakefile",
            "Guardfile",
            "Podfile",
            "Fastfile",
            "Vagrantfile",
            "Brewfile",
        ],
        &["ruby", "jruby", "rake"],
        "ruby",
        true,
        grammar_files!("ruby"),
    ),
    row(
        Language::Php,
        "php",
        &[],
        &[
            "php", "phtml", "php3", "php4", "php5", "php7", "php8", "phps", "inc",
        ],
        &[],
        &["php"],
        "php",
        true,
        grammar_files!("php"),
    ),
    row(
        Language::Scala,
        "scala",
        &[],
        &["scala", "sc", "sbt"],
        &[],
        &["scala"],
        "scala",
        true,
        grammar_files!("scala"),
    ),
    row(
        Language::Lua,
        "lua",
        &[],
        &["lua", "rockspec"],
        &[],
        &["lua", "luajit"],
        "lua",
        true,
        grammar_files!("lua"),
    ),
    row(
        Language::Bash,
        "bash",
        &["sh", "shell", "zsh"],
        &["sh", "bash", "zsh", "ksh", "bats"],
        &[
            ".bashrc",
            ".bash_profile",
            ".profile",
            ".zshrc",
            "PKGBUILD",
            "APKBUILD",
        ],
        &["sh", "bash", "zsh", "ksh", "dash", "ash"],
        "bash",
        true,
        grammar_files!("bash"),
    ),
    row(
        Language::Zig,
        "zig",
        &[],
        &["zig", "zon"],
        &[],
        &[],
        "zig",
        true,
        grammar_files!("zig"),
    ),
    row(
        Language::Elixir,
        "elixir",
        &["ex"],
        &["ex", "exs"],
        &["mix.lock"],
        &["elixir"],
        "elixir",
        true,
        grammar_files!("elixir"),
    ),
    row(
        Language::Haskell,
        "haskell",
        &["hs"],
        &["hs", "hs-boot"],
        &[],
        &["runhaskell", "runghc", "stack"],
        "haskell",
        true,
        grammar_files!("haskell"),
    ),
    row(
        Language::OCaml,
        "ocaml",
        &["ml"],
        &["ml"],
        &[],
        &["ocaml"],
        "ocaml",
        true,
        grammar_files!("ocaml"),
    ),
    row(
        Language::Markdown,
        "markdown",
        &["md"],
        &["md", "markdown", "mdx", "mkd", "mdown"],
        &["README", "CHANGELOG", "CONTRIBUTING"],
        &[],
        "markdown",
        true,
        grammar_files!("markdown"),
    ),
    row(
        Language::Text,
        "text",
        &["txt", "plain"],
        TEXT_EXTENSIONS,
        TEXT_FILE_NAMES,
        &[],
        "text",
        false,
        (None, ""),
    ),
];

impl Language {
    /// Every language, in registry order.
    pub const ALL: [Language; 23] = [
        Language::Rust,
        Language::Python,
        Language::JavaScript,
        Language::TypeScript,
        Language::Tsx,
        Language::Go,
        Language::C,
        Language::Cpp,
        Language::Java,
        Language::CSharp,
        Language::Kotlin,
        Language::Swift,
        Language::Ruby,
        Language::Php,
        Language::Scala,
        Language::Lua,
        Language::Bash,
        Language::Zig,
        Language::Elixir,
        Language::Haskell,
        Language::OCaml,
        Language::Markdown,
        Language::Text,
    ];

    /// The language's registry row.
    pub fn spec(self) -> &'static LanguageSpec {
        // The registry lists the variants in declaration order (`registry_follows_the_enum`).
        &REGISTRY[self as usize]
    }

    /// The stable lower-case name used in the index, on the command line and in JSON output.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// Parses a language name as printed by [`Language::name`], plus its aliases.
    pub fn from_name(name: &str) -> Option<Language> {
        let lower = name.to_ascii_lowercase();
        REGISTRY
            .iter()
            .find(|spec| spec.name == lower || spec.aliases.contains(&lower.as_str()))
            .map(|spec| spec.language)
    }

    /// The language of a file, judged by its name. `None` means lode does not index the file
    /// by its name alone (it may still by its first line: [`Language::detect`]).
    pub fn from_path(path: &Path) -> Option<Language> {
        let file_name = path.file_name()?.to_str()?;
        if let Some(spec) = REGISTRY
            .iter()
            .find(|spec| spec.file_names.contains(&file_name))
        {
            return Some(spec.language);
        }
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        REGISTRY
            .iter()
            .find(|spec| spec.extensions.contains(&extension.as_str()))
            .map(|spec| spec.language)
    }

    /// The language of a file judged by its name and the start of its content: a `.h` header
    /// that reads as C++ is C++, and a file without a known name whose first line is a `#!`
    /// naming a known interpreter is in that interpreter's language.
    pub fn detect(path: &Path, head: &str) -> Option<Language> {
        match Language::from_path(path) {
            Some(Language::C)
                if path
                    .extension()
                    .is_some_and(|ext| ext.eq_ignore_ascii_case("h"))
                    && reads_as_cpp(head) =>
            {
                Some(Language::Cpp)
            }
            Some(language) => Some(language),
            None => Language::from_shebang(head),
        }
    }

    /// The language named by a `#!` first line: `#!/bin/sh`, `#!/usr/bin/env -S ruby -w`.
    pub fn from_shebang(head: &str) -> Option<Language> {
        let line = head.strip_prefix("#!")?.lines().next()?;
        let mut words = line.split_whitespace();
        let mut program = words.next()?.rsplit('/').next()?;
        if program == "env" {
            program = words.find(|word| !word.starts_with('-'))?;
        }
        // `python3.12` is `python3`.
        let program = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
        REGISTRY
            .iter()
            .find(|spec| {
                spec.interpreters
                    .iter()
                    .any(|name| name.trim_end_matches(|c: char| c.is_ascii_digit()) == program)
            })
            .map(|spec| spec.language)
    }

    /// True for languages parsed with tree-sitter (code, and Markdown's headings).
    pub fn is_parsed(self) -> bool {
        self.spec().parsed
    }

    /// True for source code: parsed, and not a document (Markdown's headings are an outline
    /// and chunk boundaries, not definitions to edit or navigate by symbol).
    pub fn is_code(self) -> bool {
        self.is_parsed() && self != Language::Markdown
    }

    /// The tree-sitter grammar, or `None` for plain text. (A match, not a registry column: a
    /// program that only reads names, such as the `lode` front end, links no parser.)
    pub fn grammar(self) -> Option<tree_sitter::Language> {
        let grammar: tree_sitter_language::LanguageFn = match self {
            Language::Rust => tree_sitter_rust::LANGUAGE,
            Language::Python => tree_sitter_python::LANGUAGE,
            Language::JavaScript => tree_sitter_javascript::LANGUAGE,
            Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT,
            Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX,
            Language::Go => tree_sitter_go::LANGUAGE,
            Language::C => tree_sitter_c::LANGUAGE,
            Language::Cpp => tree_sitter_cpp::LANGUAGE,
            Language::Java => tree_sitter_java::LANGUAGE,
            Language::CSharp => tree_sitter_c_sharp::LANGUAGE,
            Language::Kotlin => tree_sitter_kotlin_ng::LANGUAGE,
            Language::Swift => tree_sitter_swift::LANGUAGE,
            Language::Ruby => tree_sitter_ruby::LANGUAGE,
            Language::Php => tree_sitter_php::LANGUAGE_PHP,
            Language::Scala => tree_sitter_scala::LANGUAGE,
            Language::Lua => tree_sitter_lua::LANGUAGE,
            Language::Bash => tree_sitter_bash::LANGUAGE,
            Language::Zig => tree_sitter_zig::LANGUAGE,
            Language::Elixir => tree_sitter_elixir::LANGUAGE,
            Language::Haskell => tree_sitter_haskell::LANGUAGE,
            Language::OCaml => tree_sitter_ocaml::LANGUAGE_OCAML,
            Language::Markdown => tree_sitter_md::LANGUAGE,
            Language::Text => return None,
        };
        Some(tree_sitter::Language::new(grammar))
    }

    /// The tags query (definitions and references) from `grammars/<dir>/tags.scm`.
    pub fn tags_query_source(self) -> Option<&'static str> {
        self.spec().tags
    }

    /// The language's rules from `grammars/<dir>/language.toml`, read once.
    pub fn rules(self) -> &'static LanguageRules {
        static RULES: [OnceLock<LanguageRules>; Language::ALL.len()] =
            [const { OnceLock::new() }; Language::ALL.len()];
        RULES[self as usize].get_or_init(|| {
            // The rules are compiled in and every row's are read by `every_row_reads`, so
            // a failure here is a build that never passed its tests; fall back to no rules.
            LanguageRules::parse(self.spec().rules).unwrap_or_default()
        })
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether the start of a `.h` header reads as C++: classes, namespaces, templates, access
/// specifiers, `std::` or references to C++ headers.
fn reads_as_cpp(head: &str) -> bool {
    const MARKERS: &[&str] = &[
        "namespace ",
        "template<",
        "template <",
        "public:",
        "private:",
        "protected:",
        "std::",
        "#include <iostream>",
        "#include <string>",
        "#include <vector>",
        "#include <memory>",
        "constexpr ",
        "virtual ",
        "nullptr",
        "extern \"C\" {",
    ];
    head.lines().any(|line| {
        let line = line.trim_start();
        if line.starts_with("//") || line.starts_with('*') || line.starts_with("/*") {
            return false;
        }
        // C has no `class` keyword.
        MARKERS.iter().any(|marker| line.contains(marker)) || line.starts_with("class ")
    })
}

/// Extensions of text files indexed as plain-text chunks.
const TEXT_EXTENSIONS: &[&str] = &[
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
    "scm",
    "el",
    "vim",
    "erl",
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
    "GNUmakefile",
    "Justfile",
    "justfile",
    "LICENSE",
    "COPYING",
    "Procfile",
    ".gitignore",
    ".editorconfig",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_follows_the_enum() {
        for (index, language) in Language::ALL.iter().enumerate() {
            assert_eq!(REGISTRY[index].language, *language);
            assert_eq!(*language as usize, index);
        }
    }

    #[test]
    fn names_and_extensions_are_unique() {
        let mut names = std::collections::HashSet::new();
        for spec in &REGISTRY {
            for name in std::iter::once(&spec.name).chain(spec.aliases) {
                assert!(names.insert(*name), "{name} names two languages");
            }
        }
        let mut extensions = std::collections::HashSet::new();
        for spec in &REGISTRY {
            for extension in spec.extensions {
                // TSX shares no extension; `.h` is C's (C++ by content).
                assert!(
                    extensions.insert(*extension),
                    ".{extension} is claimed twice"
                );
            }
        }
    }

    #[test]
    fn files_are_judged_by_name_first_line_and_header_content() {
        let cases: &[(&str, &str, Option<Language>)] = &[
            ("src/main.rs", "", Some(Language::Rust)),
            ("lib/Foo.java", "", Some(Language::Java)),
            (
                "include/zlib.h",
                "#ifndef ZLIB_H\nint deflate(z_streamp strm);\n",
                Some(Language::C),
            ),
            (
                "include/vec.h",
                "#pragma once\nnamespace geo {\nclass Vec {\npublic:\n",
                Some(Language::Cpp),
            ),
            (
                "include/tmpl.h",
                "template <typename T>\nT max(T a, T b);\n",
                Some(Language::Cpp),
            ),
            ("Gemfile", "", Some(Language::Ruby)),
            ("Makefile", "", Some(Language::Text)),
            (
                "bin/deploy",
                "#!/usr/bin/env bash\nset -e\n",
                Some(Language::Bash),
            ),
            (
                "bin/tool",
                "#!/usr/bin/env -S ruby -w\n",
                Some(Language::Ruby),
            ),
            ("bin/run", "#!/usr/bin/python3.12\n", Some(Language::Python)),
            ("bin/data", "no shebang\n", None),
            ("README.md", "# Title\n", Some(Language::Markdown)),
            ("README", "", Some(Language::Markdown)),
            ("notes.txt", "", Some(Language::Text)),
            ("photo.png", "", None),
        ];
        for (path, head, expected) in cases {
            assert_eq!(Language::detect(Path::new(path), head), *expected, "{path}");
        }
    }

    #[test]
    fn every_row_reads() {
        for spec in &REGISTRY {
            LanguageRules::parse(spec.rules)
                .unwrap_or_else(|error| panic!("grammars/{}/language.toml: {error}", spec.dir));
            if let Some(grammar) = spec.language.grammar() {
                assert!(grammar.abi_version() > 0, "{}", spec.name);
            }
        }
    }
}
