//! The fifteen languages issue 43 added, through the real binary: one workspace holding every
//! language's sample (`grammars/<dir>/sample*`), `lode index`, then for each language
//! `lode symbols` finds the sample's definitions with the right language, kind and line,
//! `lode search --lang` answers only from that language, and a header that reads as C++, a
//! Latin-1 C file and an extension-less script are judged by their content.

use std::path::Path;

use serde_json::Value;

use crate::support::{run, stdout, write};

/// (language name as `--lang` takes it, the sample under `grammars/`).
const SAMPLES: &[(&str, &str)] = &[
    ("c", "c/sample.c"),
    ("cpp", "cpp/sample.cpp"),
    ("cpp", "cpp/sample.h"),
    ("java", "java/sample.java"),
    ("csharp", "csharp/sample.cs"),
    ("kotlin", "kotlin/sample.kt"),
    ("swift", "swift/sample.swift"),
    ("ruby", "ruby/sample.rb"),
    ("php", "php/sample.php"),
    ("scala", "scala/sample.scala"),
    ("lua", "lua/sample.lua"),
    ("bash", "bash/sample.sh"),
    ("zig", "zig/sample.zig"),
    ("elixir", "elixir/sample.ex"),
    ("haskell", "haskell/sample.hs"),
    ("ocaml", "ocaml/sample.ml"),
    ("markdown", "markdown/sample.md"),
];

fn grammars() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../grammars"))
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
        .collect()
}

#[test]
fn every_new_language_is_indexed_named_and_searched_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for (_, sample) in SAMPLES {
        let text = std::fs::read_to_string(grammars().join(sample)).unwrap();
        write(root, &format!("src/{sample}"), &text);
    }
    let indexed = run(root, &["index"]);
    assert!(indexed.status.success(), "{indexed:?}");

    for (language, sample) in SAMPLES {
        let expected: Value = serde_json::from_str(
            &std::fs::read_to_string(grammars().join(format!("{sample}.json"))).unwrap(),
        )
        .unwrap();
        let definitions = expected["definitions"].as_array().unwrap();
        assert!(!definitions.is_empty(), "{sample}: no definitions expected");
        // The first few definitions of every sample, by name, in the file they come from.
        for definition in definitions.iter().take(5) {
            let name = definition["name"].as_str().unwrap();
            let output = run(root, &["symbols", name, "--limit", "100", "--json"]);
            assert!(output.status.success(), "{output:?}");
            let hits = json_lines(&stdout(&output));
            let path = format!("src/{sample}");
            assert!(
                hits.iter().any(|hit| hit["path"] == path.as_str()
                    && hit["language"] == *language
                    && hit["kind"] == definition["kind"]
                    && hit["start_line"] == definition["start_line"]),
                "{language}: `lode symbols {name}` does not find {definition} in {path}: {hits:#?}"
            );
        }
        // A search restricted to the language answers from it alone.
        let word = definitions[0]["name"].as_str().unwrap();
        let output = run(root, &["search", word, "--lang", language, "--json"]);
        assert!(output.status.success(), "{output:?}");
        let hits = json_lines(&stdout(&output));
        assert!(!hits.is_empty(), "{language}: no hit for {word}");
        assert!(
            hits.iter().all(|hit| hit["language"] == *language),
            "{language}: {hits:#?}"
        );
    }
}

/// A `-dev` package's header is its API: `lode symbols` finds its prototypes as functions.
#[test]
fn a_c_headers_prototypes_are_found_by_lode_symbols() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let text = std::fs::read_to_string(grammars().join("c/sample.h")).unwrap();
    write(root, "include/ring.h", &text);
    let indexed = run(root, &["index"]);
    assert!(indexed.status.success(), "{indexed:?}");
    for (name, line) in [("ring_push", 52), ("ring_parse_options", 70)] {
        let output = run(root, &["symbols", name, "--json"]);
        assert!(output.status.success(), "{output:?}");
        let hits = json_lines(&stdout(&output));
        assert!(
            hits.iter().any(|hit| hit["path"] == "include/ring.h"
                && hit["language"] == "c"
                && hit["kind"] == "function"
                && hit["start_line"] == line),
            "`lode symbols {name}`: {hits:#?}"
        );
    }
}

#[test]
fn headers_latin1_sources_and_scripts_are_judged_by_their_content() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "include/shape.h",
        "#pragma once\nnamespace geo {\nclass Shape {\npublic:\n  virtual double area() const = 0;\n};\n}\n",
    );
    write(
        root,
        "include/ring.h",
        "#ifndef RING_H\n#define RING_H\nstruct ring { int head; int tail; };\n#endif\n",
    );
    // "café" in Latin-1: not UTF-8.
    let mut latin1 =
        b"/* Caf\xe9 au lait. */\nint brew_coffee(int cups) { return cups; }\n".to_vec();
    latin1.extend_from_slice(b"\n");
    std::fs::write(root.join("brew.c"), latin1).unwrap();
    write(
        root,
        "bin/deploy",
        "#!/usr/bin/env bash\nship_release() {\n  echo shipped\n}\n",
    );
    let indexed = run(root, &["index"]);
    assert!(indexed.status.success(), "{indexed:?}");

    let find = |name: &str| -> Value {
        let output = run(root, &["symbols", name, "--json"]);
        json_lines(&stdout(&output))
            .into_iter()
            .find(|hit| hit["name"] == name)
            .unwrap_or_else(|| panic!("no symbol {name}"))
    };
    assert_eq!(find("Shape")["language"], "cpp", "a .h that reads as C++");
    assert_eq!(find("Shape")["kind"], "class");
    assert_eq!(find("ring")["language"], "c", "a .h that reads as C");
    assert_eq!(
        find("ship_release")["language"],
        "bash",
        "an extension-less script"
    );
    assert_eq!(find("brew_coffee")["language"], "c", "a Latin-1 C file");
    let search = run(root, &["search", "café au lait", "--json"]);
    let hits = json_lines(&stdout(&search));
    assert!(
        hits.iter()
            .any(|hit| hit["path"] == "brew.c"
                && hit["snippet"].as_str().unwrap_or("").contains("Café")),
        "the Latin-1 comment reads as written: {hits:#?}"
    );
}
