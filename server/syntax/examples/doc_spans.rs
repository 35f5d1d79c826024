//! The definitions of source files with the doc comments lode-syntax attaches to them: what
//! `bench/multilang/build.py` reads to make its doc text -> function sets in the languages whose
//! docs it does not parse itself (Java, C, C++, C#, Ruby, PHP), so that a doc there means what
//! it means to lode (`SymbolSpan::full`: the comments, attributes and decorators right above a
//! definition).
//!
//!     cargo run --release -p lode-syntax --example doc_spans < paths
//!
//! Reads one path per line on standard input and prints one JSON object per line, in order:
//! `{"path", "language", "errors", "symbols": [{"path", "kind", "lines": [start, end],
//! "docs": [[start_byte, end_byte], ...]}]}`. `lines` are the definition's own (1-based,
//! inclusive, from its signature's first token: Java annotations and C# attributes are part of
//! it, a C++ `template <…>` line too); `docs` are the comments among the lines lode takes in
//! with it. `errors` counts the parse's error and missing nodes. A file lode does not parse as
//! code, or that is not UTF-8, prints `"language": null` and no symbols.

use std::io::{self, BufRead, Write};
use std::path::Path;

use lode_syntax::{Language, extract_tags_and_comments, file_symbols, parse_tree};
use serde_json::{Value, json};

/// Error and missing nodes in a tree (what a blanked doc must not add to).
fn error_nodes(tree: &tree_sitter::Tree) -> usize {
    let mut count = 0;
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        if node.is_error() || node.is_missing() {
            count += 1;
        }
        if node.has_error() {
            let mut cursor = node.walk();
            stack.extend(node.children(&mut cursor));
        }
    }
    count
}

fn describe(path: &str) -> Value {
    let unparsed = json!({"path": path, "language": null, "errors": 0, "symbols": []});
    let Ok(bytes) = std::fs::read(path) else {
        return unparsed;
    };
    let Ok(source) = String::from_utf8(bytes) else {
        return unparsed;
    };
    let head: String = source.chars().take(4096).collect();
    let Some(language) = Language::detect(Path::new(path), &head).filter(|l| l.is_code()) else {
        return unparsed;
    };
    let Ok(Some(tree)) = parse_tree(language, &source) else {
        return unparsed;
    };
    let Ok((_, comments)) = extract_tags_and_comments(language, &tree, &source) else {
        return unparsed;
    };
    let symbols = file_symbols(language, &source).unwrap_or_default();
    let symbols: Vec<Value> = symbols
        .iter()
        .map(|span| {
            let docs: Vec<[usize; 2]> = comments
                .iter()
                .filter(|&&(start, end)| span.full.start <= start && end <= span.definition.start)
                .map(|&(start, end)| [start, end])
                .collect();
            json!({
                "path": span.path,
                "kind": span.kind.name(),
                "lines": [span.definition_lines.start, span.definition_lines.end],
                "docs": docs,
            })
        })
        .collect();
    json!({
        "path": path,
        "language": language.name(),
        "errors": error_nodes(&tree),
        "symbols": symbols,
    })
}

fn main() -> io::Result<()> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    for line in io::stdin().lock().lines() {
        let line = line?;
        let path = line.trim_end_matches('\r');
        if path.is_empty() {
            continue;
        }
        serde_json::to_writer(&mut out, &describe(path))?;
        out.write_all(b"\n")?;
    }
    out.flush()
}
