//! Every language's sample (`grammars/<dir>/sample*`, the tags tests' spec) indexed as a
//! workspace of its own, through the real catalog, BM25 and vectors: each definition is found
//! by `symbols` with its kind and lines, each name the sample refers to is found by
//! `references`, the repo map lists the file, and a search with the words of a definition's doc
//! comment finds that definition in its first three hits. New languages are picked up from the
//! registry by themselves.

use std::path::{Path, PathBuf};

use lode_index::{MapRequest, SearchRequest, Workspace, WorkspaceOptions};
use lode_syntax::{Language, REGISTRY, file_symbols, parse_file};

fn samples() -> Vec<(Language, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../grammars");
    let mut found = Vec::new();
    for spec in REGISTRY.iter().filter(|spec| spec.parsed) {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(root.join(spec.dir))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| {
                let name = path.file_name().unwrap().to_string_lossy();
                name.starts_with("sample") && !name.ends_with(".json")
            })
            .collect();
        paths.sort();
        for path in paths {
            let text = std::fs::read_to_string(&path).unwrap();
            if Language::detect(&path, &text) == Some(spec.language) {
                found.push((spec.language, path));
            }
        }
    }
    found
}

/// The words of the comment lines above a definition, without comment markers.
fn doc_words(leading: &str) -> Vec<String> {
    leading
        .lines()
        .map(|line| {
            line.trim()
                .trim_start_matches(['/', '*', '#', '-', '!', '(', '%', ';', '"'])
                .trim_end_matches(['/', '*', ')', '"'])
        })
        .filter(|line| !line.starts_with('@') && !line.starts_with('['))
        .flat_map(|line| line.split_whitespace())
        .map(|word| {
            word.trim_matches(|c: char| !c.is_alphanumeric())
                .to_string()
        })
        .filter(|word| word.len() > 2 && word.chars().all(|c| c.is_alphabetic()))
        .take(12)
        .collect()
}

#[test]
fn every_language_sample_is_searchable_nameable_and_mapped() {
    let mut report = String::new();
    let mut failures = Vec::new();
    for (language, sample) in samples() {
        if language == Language::Markdown {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let name = sample.file_name().unwrap();
        let source = std::fs::read_to_string(&sample).unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src").join(name), &source).unwrap();
        let rel = format!("src/{}", name.to_string_lossy());
        let workspace = Workspace::open(WorkspaceOptions::new(dir.path())).unwrap();
        workspace.refresh(&|_| {}).unwrap();
        let tags = parse_file(language, &source).unwrap().tags;
        assert!(!tags.definitions.is_empty(), "{rel}: no definitions");

        for definition in &tags.definitions {
            let hits = workspace.symbols(&definition.name, 50).unwrap();
            if !hits.iter().any(|hit| {
                hit.path == rel
                    && hit.start_line == definition.start_line
                    && hit.kind == definition.kind.name()
                    && hit.language == language.name()
            }) {
                failures.push(format!(
                    "{rel}: symbols {} does not find its {} on line {}",
                    definition.name,
                    definition.kind.name(),
                    definition.start_line
                ));
            }
        }
        for name in tags
            .references
            .iter()
            .map(|reference| &reference.name)
            .filter(|name| tags.definitions.iter().any(|d| &d.name == *name))
        {
            if workspace.references(name, 50).unwrap().is_empty() {
                failures.push(format!("{rel}: references {name} finds nothing"));
            }
        }
        let map = workspace
            .repo_map(&MapRequest {
                max_tokens: 4096,
                ..MapRequest::default()
            })
            .unwrap();
        if !map.text.contains(&rel) {
            failures.push(format!(
                "{rel}: the repo map does not list it:\n{}",
                map.text
            ));
        }

        let (mut documented, mut found) = (0, 0);
        for span in file_symbols(language, &source).unwrap() {
            let words = doc_words(&source[span.full.start..span.definition.start]);
            if words.len() < 4 {
                continue;
            }
            documented += 1;
            let hits = workspace
                .search(&SearchRequest {
                    limit: 3,
                    ..SearchRequest::new(words.join(" "))
                })
                .unwrap();
            let lines = span.definition_lines;
            if hits.iter().any(|hit| {
                hit.path == rel && hit.start_line <= lines.end && lines.start <= hit.end_line
            }) {
                found += 1;
            } else {
                report.push_str(&format!(
                    "  {rel}: {} not in the top 3 for {:?}\n",
                    span.path,
                    words.join(" ")
                ));
            }
        }
        report.push_str(&format!(
            "{}: {found}/{documented} documented definitions found by their docs\n",
            language.name()
        ));
        // Most definitions of a sample are documented; a language whose comments are not
        // attached to what they document would find few.
        if documented > 0 && (found as f64) < 0.8 * documented as f64 {
            failures.push(format!(
                "{rel}: only {found} of {documented} documented definitions are in the top 3 of a \
                 search for their doc comment"
            ));
        }
    }
    println!("{report}");
    assert!(failures.is_empty(), "{}\n{report}", failures.join("\n"));
}
