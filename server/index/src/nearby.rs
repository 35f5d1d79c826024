//! Nearest first: how close an indexed definition or reference is to the buffer a question
//! comes from (the same file, then the files the buffer's imports name, then the rest), and the
//! order name-based navigation answers in. An editor's front end (`lode lsp`) asks these and
//! only turns the hits into locations.
//!
//! Everything here works on names from tree-sitter tags; nothing resolves types.

use std::collections::HashSet;
use std::path::Path;

use crate::search::{ReferenceHit, SymbolHit};
use lode_syntax::{FileTags, RefKind, Reference};

/// How close a location is to the buffer a request came from; lower ranks first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Proximity {
    SameFile,
    ImportedFile,
    Elsewhere,
}

/// The module-like words a buffer's imports mention (`use crate::store::Item` gives `crate`,
/// `store`, `Item`; `from pkg.models import User` gives `pkg`, `models`, `User`;
/// `import "net/http"` gives `net`, `http`). A file is "imported" when its stem, or for
/// `mod.rs`, `__init__.py`, `index.*` and Go packages its directory, is one of them.
#[derive(Clone, Debug, Default)]
pub struct Imports {
    words: HashSet<String>,
}

impl Imports {
    pub fn of_buffer(text: &str, tags: &FileTags) -> Imports {
        let lines: Vec<&str> = text.lines().collect();
        let mut import_lines: HashSet<usize> = tags
            .references
            .iter()
            .filter(|reference| reference.kind == RefKind::Import)
            .map(|reference| reference.line.saturating_sub(1) as usize)
            .collect();
        // Statements whose module path sits on a line of its own (`use a::b::{` + names below).
        for (index, line) in lines.iter().enumerate() {
            let trimmed = line.trim_start();
            if ["use ", "pub use ", "import ", "from ", "export "]
                .iter()
                .any(|keyword| trimmed.starts_with(keyword))
                || trimmed.contains("require(")
            {
                import_lines.insert(index);
            }
        }
        let mut words = HashSet::new();
        for index in import_lines {
            if let Some(line) = lines.get(index) {
                words.extend(
                    line.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
                        .filter(|word| !word.is_empty())
                        .map(str::to_string),
                );
            }
        }
        Imports { words }
    }

    /// Whether the buffer's imports name the file at this workspace-relative path.
    pub fn names_file(&self, rel_path: &str) -> bool {
        let path = Path::new(rel_path);
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let directory = path
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|s| s.to_str())
            .unwrap_or("");
        let by_directory = matches!(stem, "mod" | "__init__" | "index" | "lib")
            || path.extension().is_some_and(|ext| ext == "go");
        self.words.contains(stem) || (by_directory && self.words.contains(directory))
    }

    /// Where a workspace-relative path stands relative to the buffer at `current`.
    pub fn proximity(&self, current: &str, rel_path: &str) -> Proximity {
        if rel_path == current {
            Proximity::SameFile
        } else if self.names_file(rel_path) {
            Proximity::ImportedFile
        } else {
            Proximity::Elsewhere
        }
    }
}

/// The buffer a navigation question comes from: its workspace-relative path (`None` when it
/// lies outside the workspace) and the files its imports name.
#[derive(Clone, Debug, Default)]
pub struct Nearness {
    current: Option<String>,
    imports: Imports,
}

impl Nearness {
    /// The buffer at `current` (workspace-relative), with its text and tags.
    pub fn of_buffer(current: Option<String>, text: &str, tags: &FileTags) -> Nearness {
        Nearness {
            current,
            imports: Imports::of_buffer(text, tags),
        }
    }

    /// Where a workspace-relative path stands relative to the buffer.
    pub fn proximity(&self, rel_path: &str) -> Proximity {
        self.imports
            .proximity(self.current.as_deref().unwrap_or(""), rel_path)
    }

    fn is_current(&self, rel_path: &str) -> bool {
        self.current.as_deref() == Some(rel_path)
    }

    /// The index's definitions named exactly `name` in other files than the buffer's (its own
    /// come from its tags), nearest first; within a tier, in the index's order.
    pub fn definitions(&self, name: &str, hits: Vec<SymbolHit>) -> Vec<SymbolHit> {
        let mut ranked: Vec<(Proximity, SymbolHit)> = hits
            .into_iter()
            .filter(|hit| hit.name == name && !self.is_current(&hit.path))
            .map(|hit| (self.proximity(&hit.path), hit))
            .collect();
        ranked.sort_by_key(|(proximity, _)| *proximity);
        ranked.into_iter().map(|(_, hit)| hit).collect()
    }

    /// The index's references in other files than the buffer's (its own come from its tags,
    /// [`same_file_references`], and go first), nearest first, then by path, line and column.
    pub fn references(&self, hits: Vec<ReferenceHit>) -> Vec<ReferenceHit> {
        let mut ranked: Vec<(Proximity, ReferenceHit)> = hits
            .into_iter()
            .filter(|hit| !self.is_current(&hit.path))
            .map(|hit| (self.proximity(&hit.path), hit))
            .collect();
        ranked.sort_by(|(a, x), (b, y)| {
            (a, &x.path, x.line, x.column).cmp(&(b, &y.path, y.line, y.column))
        });
        ranked.into_iter().map(|(_, hit)| hit).collect()
    }
}

/// A buffer's own references to `name`, by line and column: the first part of a references
/// answer, before [`Nearness::references`].
pub fn same_file_references<'t>(tags: &'t FileTags, name: &str) -> Vec<&'t Reference> {
    let mut found: Vec<&Reference> = tags
        .references
        .iter()
        .filter(|reference| reference.name == name)
        .collect();
    found.sort_by_key(|reference| (reference.line, reference.column));
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Language;
    use crate::search::NameMatch;
    use lode_syntax::extract_tags;
    use lode_syntax::parse_tree;

    fn tags_of(language: &str, text: &str) -> FileTags {
        let language = Language::from_name(language).unwrap();
        let tree = parse_tree(language, text).unwrap().unwrap();
        extract_tags(language, &tree, text).unwrap()
    }

    #[test]
    fn imported_files_are_recognised_by_stem_or_package_directory() {
        let rust = "use crate::store::{\n    Item,\n};\nfn main() {}\n";
        let imports = Imports::of_buffer(rust, &tags_of("rust", rust));
        assert!(imports.names_file("src/store.rs"));
        assert!(imports.names_file("src/store/mod.rs"));
        assert!(!imports.names_file("src/other.rs"));
        assert_eq!(
            imports.proximity("src/main.rs", "src/main.rs"),
            Proximity::SameFile
        );
        assert_eq!(
            imports.proximity("src/main.rs", "src/store.rs"),
            Proximity::ImportedFile
        );
        assert_eq!(
            imports.proximity("src/main.rs", "src/zzz.rs"),
            Proximity::Elsewhere
        );

        let python = "from pkg.models import User\n\nprint(User)\n";
        let imports = Imports::of_buffer(python, &tags_of("python", python));
        assert!(imports.names_file("pkg/models.py"));
        assert!(!imports.names_file("pkg/views.py"));

        let go = "package main\n\nimport (\n\t\"example.com/app/storage\"\n)\n";
        let imports = Imports::of_buffer(go, &tags_of("go", go));
        assert!(imports.names_file("storage/db.go"));
    }

    fn symbol(name: &str, path: &str, line: u32) -> SymbolHit {
        SymbolHit {
            name: name.into(),
            kind: "function".into(),
            path: path.into(),
            start_line: line,
            end_line: line,
            scope: Vec::new(),
            signature: String::new(),
            language: "rust".into(),
            name_match: NameMatch::Exact,
        }
    }

    fn reference(path: &str, line: u32, column: u32) -> ReferenceHit {
        ReferenceHit {
            name: "open".into(),
            kind: "call".into(),
            path: path.into(),
            line,
            column,
            scope: Vec::new(),
            language: "rust".into(),
        }
    }

    #[test]
    fn definitions_rank_imported_files_before_the_rest_and_skip_the_buffer() {
        let text = "use crate::store::open;\nfn main() { open(); }\n";
        let near = Nearness::of_buffer(Some("src/main.rs".into()), text, &tags_of("rust", text));
        let hits = vec![
            symbol("open", "src/zzz.rs", 1),
            symbol("open", "src/main.rs", 2),
            symbol("opens", "src/store.rs", 3),
            symbol("open", "src/aaa.rs", 4),
            symbol("open", "src/store.rs", 5),
        ];
        let ranked: Vec<(String, u32)> = near
            .definitions("open", hits)
            .into_iter()
            .map(|hit| (hit.path, hit.start_line))
            .collect();
        // Within a tier, the index's order stays.
        assert_eq!(
            ranked,
            [
                ("src/store.rs".to_owned(), 5),
                ("src/zzz.rs".to_owned(), 1),
                ("src/aaa.rs".to_owned(), 4),
            ]
        );
    }

    #[test]
    fn references_go_nearest_first_then_by_place() {
        let text = "use crate::store::open;\nfn main() { open(); open(); }\n";
        let tags = tags_of("rust", text);
        let near = Nearness::of_buffer(Some("src/main.rs".into()), text, &tags);
        let hits = vec![
            reference("src/zzz.rs", 9, 1),
            reference("src/main.rs", 2, 13),
            reference("src/aaa.rs", 3, 5),
            reference("src/store.rs", 7, 2),
            reference("src/aaa.rs", 3, 1),
        ];
        let ranked: Vec<(String, u32, u32)> = near
            .references(hits)
            .into_iter()
            .map(|hit| (hit.path, hit.line, hit.column))
            .collect();
        assert_eq!(
            ranked,
            [
                ("src/store.rs".to_owned(), 7, 2),
                ("src/aaa.rs".to_owned(), 3, 1),
                ("src/aaa.rs".to_owned(), 3, 5),
                ("src/zzz.rs".to_owned(), 9, 1),
            ]
        );
        let local: Vec<(u32, u32)> = same_file_references(&tags, "open")
            .into_iter()
            .map(|reference| (reference.line, reference.column))
            .collect();
        assert!(local.windows(2).all(|pair| pair[0] <= pair[1]), "{local:?}");
        assert!(
            local.contains(&(2, 13)) && local.contains(&(2, 21)),
            "{local:?}"
        );
        // A buffer outside the workspace skips no file.
        let outside = Nearness::of_buffer(None, text, &tags);
        assert_eq!(
            outside
                .references(vec![reference("src/main.rs", 1, 1)])
                .len(),
            1
        );
    }
}
