//! Name-based navigation: the identifier under the cursor, which files a buffer imports, and
//! the ranking of definitions and references (same file, then imported files, then the rest).
//!
//! Everything here works on names from tree-sitter tags; nothing resolves types.

use std::collections::HashSet;
use std::path::Path;

use lode_index::tags::{FileTags, RefKind};

use crate::outline::is_identifier_byte;

/// The identifier that contains (or ends at) a byte offset, with its byte range.
pub fn identifier_at(text: &str, offset: usize) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let offset = offset.min(bytes.len());
    let mut start = offset;
    while start > 0 && is_identifier_byte(bytes[start - 1]) {
        start -= 1;
    }
    let mut end = offset;
    while end < bytes.len() && is_identifier_byte(bytes[end]) {
        end += 1;
    }
    while start < end && !text.is_char_boundary(start) {
        start += 1;
    }
    while end > start && !text.is_char_boundary(end) {
        end -= 1;
    }
    let word = &text[start..end];
    // A number is not a name.
    if word.is_empty() || word.as_bytes()[0].is_ascii_digit() {
        return None;
    }
    Some((start, end))
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outline::buffer_tags;
    use lode_index::Language;

    #[test]
    fn the_identifier_around_the_cursor() {
        let text = "let total = compute_sum(items);";
        let at = text.find("sum").unwrap();
        let (start, end) = identifier_at(text, at).unwrap();
        assert_eq!(&text[start..end], "compute_sum");
        // Right after the identifier still names it.
        let (start, end) = identifier_at(text, text.find('(').unwrap()).unwrap();
        assert_eq!(&text[start..end], "compute_sum");
        assert_eq!(identifier_at(text, text.find(" = ").unwrap() + 1), None);
        assert_eq!(identifier_at("x = 42", 5), None);
    }

    #[test]
    fn imported_files_are_recognised_by_stem_or_package_directory() {
        let rust = "use crate::store::{\n    Item,\n};\nfn main() {}\n";
        let tags = buffer_tags(Language::from_name("rust"), rust).unwrap();
        let imports = Imports::of_buffer(rust, &tags);
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
        let tags = buffer_tags(Language::from_name("python"), python).unwrap();
        let imports = Imports::of_buffer(python, &tags);
        assert!(imports.names_file("pkg/models.py"));
        assert!(!imports.names_file("pkg/views.py"));

        let go = "package main\n\nimport (\n\t\"example.com/app/storage\"\n)\n";
        let tags = buffer_tags(Language::from_name("go"), go).unwrap();
        let imports = Imports::of_buffer(go, &tags);
        assert!(imports.names_file("storage/db.go"));
    }
}
