//! The per-language samples every suite reads: for each registry row with a grammar, the files
//! `grammars/<dir>/sample*` (not `*.json`) that are in that row's language. A new language's
//! folder is picked up by itself.

use std::path::PathBuf;

use lode_syntax::{Language, REGISTRY};

/// One sample file and the language it is parsed as.
pub struct Sample {
    /// The language's name (`tsx` for `grammars/typescript/sample.tsx`).
    pub name: &'static str,
    pub path: PathBuf,
    pub language: Language,
}

impl Sample {
    pub fn source(&self) -> String {
        std::fs::read_to_string(&self.path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", self.path.display()))
    }

    /// `sample.rs` → `sample.rs.json`.
    #[allow(dead_code)]
    pub fn expected_path(&self) -> PathBuf {
        let mut name = self.path.file_name().expect("a file").to_os_string();
        name.push(".json");
        self.path.with_file_name(name)
    }
}

pub fn grammars_root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../grammars"))
}

/// Every sample of every language, in registry order.
pub fn samples() -> Vec<Sample> {
    let mut samples = Vec::new();
    for spec in REGISTRY.iter().filter(|spec| spec.parsed) {
        let dir = grammars_root().join(spec.dir);
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .map(|entry| entry.expect("a directory entry").path())
            .filter(|path| {
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
                name.starts_with("sample") && !name.ends_with(".json")
            })
            .collect();
        paths.sort();
        for path in paths {
            let head = std::fs::read_to_string(&path).unwrap_or_default();
            if Language::detect(&path, &head) == Some(spec.language) {
                samples.push(Sample {
                    name: spec.name,
                    path,
                    language: spec.language,
                });
            }
        }
    }
    samples
}

/// The first sample of the language named `name`.
#[allow(dead_code)]
pub fn sample(name: &str) -> Sample {
    samples()
        .into_iter()
        .find(|sample| sample.name == name)
        .unwrap_or_else(|| panic!("no sample for {name}"))
}
