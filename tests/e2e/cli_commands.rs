//! `lode index`, `search`, `symbols`, `refs` and `map` through the real binary; and what
//! packagers install beside it: `lode completions` and `lode man`.

use crate::support;

use serde_json::Value;
use support::{run, stderr, stdout, write};

fn sample() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "src/lib.rs",
        "pub mod store;\n\n/// Opens the key value store at a path.\npub fn open_store(path: &str) -> store::KeyValueStore {\n    store::KeyValueStore::open(path)\n}\n",
    );
    write(
        root,
        "src/store.rs",
        "pub struct KeyValueStore {\n    path: String,\n}\n\nimpl KeyValueStore {\n    pub fn open(path: &str) -> Self {\n        KeyValueStore { path: path.to_string() }\n    }\n\n    pub fn compact_segments(&mut self) {\n        println!(\"compacting {}\", self.path);\n    }\n}\n",
    );
    write(
        root,
        "scripts/load.py",
        "def bulk_load(store, rows):\n    for row in rows:\n        store.put(row)\n",
    );
    write(
        root,
        "docs/guide.md",
        "# Guide\n\nCompaction merges segments of the key value store.\n",
    );
    dir
}

#[test]
fn index_prints_a_summary_on_stderr_and_nothing_on_stdout() {
    let dir = sample();
    let first = run(dir.path(), &["index"]);
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(stdout(&first).is_empty());
    let summary = stderr(&first);
    assert!(
        summary.contains("indexed 4 files (4 parsed, 0 unchanged"),
        "{summary}"
    );
    assert!(dir.path().join(".lode/index/catalog.sqlite").exists());

    let second = run(dir.path(), &["index"]);
    assert!(
        stderr(&second).contains("(0 parsed, 4 unchanged, 0 removed"),
        "{}",
        stderr(&second)
    );
}

#[test]
fn search_json_lines_follow_the_documented_contract() {
    let dir = sample();
    // No explicit `lode index`: search builds the missing index itself.
    let output = run(
        dir.path(),
        &["search", "compact segments", "--json", "--limit", "3"],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let lines: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is one JSON object"))
        .collect();
    assert!(!lines.is_empty() && lines.len() <= 3);
    for hit in &lines {
        assert!(hit["path"].is_string());
        assert!(hit["start_line"].as_u64().unwrap() >= 1);
        assert!(hit["end_line"].as_u64().unwrap() >= hit["start_line"].as_u64().unwrap());
        assert!(hit["score"].is_f64());
        assert!(hit["symbol"].is_string() || hit["symbol"].is_null());
        assert!(hit["kind"].is_string() || hit["kind"].is_null());
        assert!(hit["language"].is_string());
        assert!(hit["snippet"].is_string());
    }
    assert_eq!(lines[0]["path"], "src/store.rs");
    assert_eq!(lines[0]["symbol"], "compact_segments");
    assert_eq!(lines[0]["kind"], "method");
    assert_eq!(lines[0]["language"], "rust");

    let scores: Vec<f64> = lines.iter().map(|h| h["score"].as_f64().unwrap()).collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "ranked best first: {scores:?}"
    );
}

#[test]
fn search_filters_by_language_and_path_and_prints_text() {
    let dir = sample();
    let markdown = run(
        dir.path(),
        &["search", "segments", "--lang", "markdown", "--json"],
    );
    let paths: Vec<String> = stdout(&markdown)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["path"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(paths, vec!["docs/guide.md".to_string()]);

    let scripts = run(
        dir.path(),
        &["search", "store", "--path", "scripts/**", "--json"],
    );
    assert!(
        stdout(&scripts)
            .lines()
            .all(|l| l.contains("\"path\":\"scripts/load.py\""))
    );

    let text = run(dir.path(), &["search", "open store"]);
    let first_line = stdout(&text).lines().next().unwrap_or_default().to_string();
    assert!(first_line.starts_with("src/lib.rs:"), "{first_line}");
    assert!(first_line.ends_with("open_store"), "{first_line}");
}

#[test]
fn exit_codes_distinguish_no_results_usage_errors_and_failures() {
    let dir = sample();
    let none = run(dir.path(), &["search", "xylophone"]);
    assert_eq!(none.status.code(), Some(1));
    assert!(stdout(&none).is_empty());

    let usage = run(dir.path(), &["search", "--limit", "many", "x"]);
    assert_eq!(usage.status.code(), Some(2));

    let bad_language = run(dir.path(), &["search", "x", "--lang", "cobol"]);
    assert_eq!(bad_language.status.code(), Some(3));
    let message = stderr(&bad_language);
    assert_eq!(message.trim().lines().count(), 1, "{message}");
    assert!(
        message.starts_with("lode: unknown language \"cobol\""),
        "{message}"
    );

    let missing_root = run(dir.path(), &["index", "/no/such/dir"]);
    assert_eq!(missing_root.status.code(), Some(3));
    assert!(stderr(&missing_root).contains("not a directory"));

    let bad_glob = run(dir.path(), &["search", "x", "--path", "a/[b"]);
    assert_eq!(bad_glob.status.code(), Some(3));
    assert!(
        stderr(&bad_glob).contains("invalid glob"),
        "{}",
        stderr(&bad_glob)
    );
}

#[test]
fn symbols_and_refs_print_json_lines() {
    let dir = sample();
    let symbols = run(dir.path(), &["symbols", "KeyValueStore", "--json"]);
    assert!(symbols.status.success(), "{}", stderr(&symbols));
    let first: Value = serde_json::from_str(stdout(&symbols).lines().next().unwrap()).unwrap();
    assert_eq!(first["name"], "KeyValueStore");
    assert_eq!(first["kind"], "struct");
    assert_eq!(first["path"], "src/store.rs");
    assert_eq!(first["match"], "exact");

    let fuzzy = run(dir.path(), &["symbols", "compactseg", "--json"]);
    let first: Value = serde_json::from_str(stdout(&fuzzy).lines().next().unwrap()).unwrap();
    assert_eq!(first["name"], "compact_segments");

    let refs = run(dir.path(), &["refs", "KeyValueStore", "--json"]);
    let refs: Vec<Value> = stdout(&refs)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        refs.iter()
            .any(|r| r["path"] == "src/lib.rs" && r["kind"] == "type"),
        "{refs:?}"
    );

    let no_refs = run(dir.path(), &["refs", "never_referenced_anywhere"]);
    assert_eq!(no_refs.status.code(), Some(1));
}

#[test]
fn map_fits_its_budget_and_no_refresh_answers_from_the_index_as_it_is() {
    let dir = sample();
    let map = run(dir.path(), &["map", "--tokens", "60", "--json"]);
    assert!(map.status.success(), "{}", stderr(&map));
    let map: Value = serde_json::from_str(&stdout(&map)).unwrap();
    assert!(map["tokens"].as_u64().unwrap() <= 60);
    assert!(map["text"].as_str().unwrap().contains("src/store.rs:"));

    let focused = run(dir.path(), &["map", "--focus", "src/lib.rs"]);
    let text = stdout(&focused);
    assert!(text.contains("KeyValueStore"), "{text}");
    assert!(!text.contains("src/lib.rs:"), "{text}");

    write(
        dir.path(),
        "src/lib.rs",
        "pub fn renamed_entry_point() {}\n",
    );
    let stale = run(
        dir.path(),
        &["symbols", "renamed_entry_point", "--no-refresh"],
    );
    assert_eq!(stale.status.code(), Some(1));
    let fresh = run(dir.path(), &["symbols", "renamed_entry_point"]);
    assert_eq!(fresh.status.code(), Some(0));
}

#[test]
fn a_lexical_search_leaves_the_vectors_alone_and_a_hybrid_one_repairs_them() {
    let dir = sample();
    let root = dir.path();
    assert!(run(root, &["index"]).status.success());
    let manifest = root.join(".lode/index/vectors/manifest.json");
    std::fs::write(&manifest, b"{ not json").unwrap();

    let lexical = run(
        root,
        &["search", "compact", "--mode", "lexical", "--no-refresh"],
    );
    assert!(lexical.status.success(), "{}", stderr(&lexical));
    assert!(stdout(&lexical).contains("src/store.rs"));
    assert!(
        !stderr(&lexical).contains("repaired"),
        "{}",
        stderr(&lexical)
    );
    assert_eq!(std::fs::read(&manifest).unwrap(), b"{ not json");

    // The default mode asks whether there are vectors: that opens the store, which is rebuilt
    // empty and reported; the search answers lexically until the next refresh re-embeds.
    let default = run(root, &["search", "compact", "--no-refresh"]);
    assert!(default.status.success(), "{}", stderr(&default));
    assert!(
        stderr(&default).contains("repaired the index: vector store unreadable"),
        "{}",
        stderr(&default)
    );
    assert!(stdout(&default).contains("src/store.rs"));
    let reindexed = run(root, &["index", "-v"]);
    assert!(
        stderr(&reindexed).contains("embedded"),
        "{}",
        stderr(&reindexed)
    );
    let hybrid = run(
        root,
        &["search", "compact", "--mode", "hybrid", "--no-refresh"],
    );
    assert!(hybrid.status.success(), "{}", stderr(&hybrid));
    assert!(!stderr(&hybrid).contains("repaired"), "{}", stderr(&hybrid));
}

#[test]
fn the_workspace_root_is_found_from_a_subdirectory() {
    let dir = sample();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    let output = run(&dir.path().join("src"), &["search", "bulk_load", "--json"]);
    let first: Value = serde_json::from_str(stdout(&output).lines().next().unwrap()).unwrap();
    assert_eq!(first["path"], "scripts/load.py");
}

#[test]
fn oversized_and_odd_input_gets_an_answer_not_a_crash() {
    let dir = sample();
    // A pasted 90 KB as a query (near the OS limit of one argument): searched by its first distinct terms.
    let huge_query =
        "segments ".repeat(5_000) + &(0..5000).map(|i| format!("word{i} ")).collect::<String>();
    let output = run(dir.path(), &["search", &huge_query, "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("\"path\""));

    let long_name = "x".repeat(10_000);
    let symbols = run(dir.path(), &["symbols", &long_name]);
    assert_eq!(symbols.status.code(), Some(3));
    assert!(
        stderr(&symbols).contains("at most 512 bytes"),
        "{}",
        stderr(&symbols)
    );

    // Punctuation only, empty, and non-ASCII queries.
    assert_eq!(
        run(dir.path(), &["search", "::->{}"]).status.code(),
        Some(1)
    );
    assert_eq!(run(dir.path(), &["search", ""]).status.code(), Some(1));
    assert_eq!(run(dir.path(), &["symbols", "   "]).status.code(), Some(3));
    assert!(matches!(
        run(dir.path(), &["search", "größe 数据 🦀"]).status.code(),
        Some(0 | 1)
    ));
    assert_eq!(
        run(dir.path(), &["search", "x", "--limit", "0"])
            .status
            .code(),
        Some(1)
    );
}

#[test]
fn an_empty_or_binary_only_workspace_answers_calmly() {
    let dir = tempfile::tempdir().unwrap();
    // Commands before any index exists, on nothing indexable.
    assert_eq!(
        run(dir.path(), &["search", "anything"]).status.code(),
        Some(1)
    );
    assert_eq!(
        run(dir.path(), &["symbols", "anything"]).status.code(),
        Some(1)
    );
    assert_eq!(
        run(dir.path(), &["refs", "anything"]).status.code(),
        Some(1)
    );
    let map = run(dir.path(), &["map", "--json"]);
    assert!(map.status.success(), "{}", stderr(&map));
    let map: Value = serde_json::from_str(&stdout(&map)).unwrap();
    assert_eq!(map["files"].as_array().unwrap().len(), 0);

    std::fs::write(
        dir.path().join("image.rs"),
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR",
    )
    .unwrap();
    let index = run(dir.path(), &["index"]);
    assert!(index.status.success());
    assert!(
        stderr(&index).contains("indexed 1 files (0 parsed, 0 unchanged, 0 removed, 1 skipped)"),
        "{}",
        stderr(&index)
    );
}

/// `--embedder minilm` end to end: clear errors without the model, then `lode index` and
/// `lode search --mode semantic` with the real all-MiniLM-L6-v2 weights
/// (`scripts/install-test-tools.sh`; skipped with a message without them, failing under CI).
#[cfg(feature = "minilm")]
#[test]
fn index_and_search_with_the_minilm_embedder() {
    let dir = sample();
    let root = dir.path();
    write(
        root,
        "src/net.rs",
        "use std::net::TcpStream;\n\npub fn dial(addr: &str) -> std::io::Result<TcpStream> {\n    let stream = TcpStream::connect(addr)?;\n    stream.set_nodelay(true)?;\n    Ok(stream)\n}\n",
    );
    let lode = |args: &[&str]| {
        support::lode(root)
            .env_remove("LODE_EMBEDDER")
            .env_remove("LODE_MINILM_DIR")
            .args(args)
            .output()
            .unwrap()
    };
    let missing = lode(&["--embedder", "minilm", "index"]);
    assert!(!missing.status.success());
    assert!(
        stderr(&missing).contains("--minilm-dir"),
        "{}",
        stderr(&missing)
    );
    let empty = tempfile::tempdir().unwrap();
    let wrong = lode(&["--embedder", "minilm", "--minilm-dir"])
        .status
        .success();
    assert!(!wrong, "--minilm-dir needs a value");
    let empty_dir = empty.path().to_str().unwrap();
    let wrong = lode(&["--embedder", "minilm", "--minilm-dir", empty_dir, "index"]);
    assert!(!wrong.status.success());
    assert!(
        stderr(&wrong).contains("model.safetensors") && stderr(&wrong).contains("tokenizer.json"),
        "{}",
        stderr(&wrong)
    );
    assert!(!root.join(".lode/vectors/manifest.json").exists());

    let model = std::env::var_os("LODE_MINILM_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| support::fixtures().join("../target/test-tools/minilm"));
    if !model.exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "the MiniLM weights are missing at {}; run scripts/install-test-tools.sh",
            model.display()
        );
        eprintln!("skipping: MiniLM weights not installed (run scripts/install-test-tools.sh)");
        return;
    }
    let model = model.to_str().unwrap();
    let indexed = lode(&["--embedder", "minilm", "--minilm-dir", model, "index"]);
    assert!(indexed.status.success(), "{}", stderr(&indexed));
    let search = |mode: &str, query: &str| {
        let output = lode(&[
            "--embedder",
            "minilm",
            "--minilm-dir",
            model,
            "search",
            "--mode",
            mode,
            "--json",
            "--",
            query,
        ]);
        assert!(output.status.success(), "{query}: {}", stderr(&output));
        stdout(&output)
            .lines()
            .map(|line| {
                serde_json::from_str::<Value>(line).unwrap()["path"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect::<Vec<String>>()
    };
    let dial = "open a network connection to a remote host";
    assert_eq!(search("semantic", dial)[0], "src/net.rs");
    assert_eq!(
        search("semantic", "insert many records into the database")[0],
        "scripts/load.py"
    );
    // BM25 prefers the chunks saying "open" (store.rs above net.rs); hybrid search lifts
    // net.rs, the one MiniLM relates to the query, above store.rs.
    let rank = |paths: &[String], path: &str| paths.iter().position(|p| p == path);
    let lexical = search("lexical", dial);
    assert!(
        rank(&lexical, "src/store.rs").is_some()
            && rank(&lexical, "src/store.rs") < rank(&lexical, "src/net.rs"),
        "{lexical:?}"
    );
    let hybrid = search("hybrid", dial);
    assert!(
        rank(&hybrid, "src/net.rs").is_some()
            && rank(&hybrid, "src/net.rs") < rank(&hybrid, "src/store.rs"),
        "{hybrid:?}"
    );
    // The static embedder's vectors are not MiniLM's: semantic search refuses until re-embedded.
    let other = lode(&[
        "search",
        "--mode",
        "semantic",
        "--no-refresh",
        "remote host",
    ]);
    assert!(!other.status.success());
    assert!(stderr(&other).contains("minilm"), "{}", stderr(&other));
}

/// The completion scripts name every visible command; an unknown shell is a usage error.
#[test]
fn completions_cover_the_commands_for_each_shell() {
    let dir = tempfile::tempdir().unwrap();
    let marks = [
        ("bash", "complete -F _lode"),
        ("zsh", "#compdef lode"),
        ("fish", "complete -c lode"),
        ("powershell", "Register-ArgumentCompleter"),
        ("elvish", "edit:completion:arg-completer[lode]"),
    ];
    for (shell, mark) in marks {
        let output = run(dir.path(), &["completions", shell]);
        assert!(output.status.success(), "{shell}: {}", stderr(&output));
        let script = stdout(&output);
        assert!(script.contains(mark), "{shell} script lacks {mark:?}");
        for command in ["search", "symbols", "daemon", "completions", "man"] {
            assert!(script.contains(command), "{shell} script lacks {command}");
        }
    }
    let output = run(dir.path(), &["completions", "tcsh"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("possible values"),
        "{}",
        stderr(&output)
    );
}

/// `lode man` prints roff; `--dir` writes a page per visible command, and a directory that
/// cannot be made is a clear error.
#[test]
fn man_prints_the_page_or_writes_one_per_command() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &["man"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let page = stdout(&output);
    assert!(page.contains(".TH lode 1"), "{page}");
    assert!(page.contains("editor\\-native coding agent"), "{page}");

    let pages = dir.path().join("man1");
    let output = run(dir.path(), &["man", "--dir", pages.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    for name in [
        "lode.1",
        "lode-search.1",
        "lode-daemon-start.1",
        "lode-completions.1",
    ] {
        let text = std::fs::read_to_string(pages.join(name)).unwrap();
        assert!(text.starts_with(".ie"), "{name}: {text}");
    }
    assert!(!pages.join("lode-llm-script.1").exists());
    assert!(stdout(&output).is_empty());

    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let output = run(
        dir.path(),
        &["man", "--dir", file.join("man1").to_str().unwrap()],
    );
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("cannot create"),
        "{}",
        stderr(&output)
    );
}

/// A command's `--help` lists its own options first; the global ones follow under headings.
#[test]
fn help_groups_the_global_options_under_their_own_headings() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &["search", "--help"]);
    let help = stdout(&output);
    let own = help.find("Options:").unwrap();
    let workspace = help.find("Workspace options (every command):").unwrap();
    let embedding = help.find("Embedding options (every command):").unwrap();
    let vectors = help.find("Vector store options (every command):").unwrap();
    assert!(
        own < workspace && workspace < embedding && embedding < vectors,
        "{help}"
    );
    // --json is search's own; --embedder is global.
    assert!(help.find("--json").unwrap() < workspace, "{help}");
    assert!(help.find("--embedder").unwrap() > embedding, "{help}");
}

/// Semantic mode on a small workspace: a query about something the code lacks still gets its
/// nearest chunks, with a note on stderr that they are weak matches; one that clears the
/// relevance floor gets no note.
#[test]
fn semantic_search_below_the_relevance_floor_shows_the_nearest_chunks_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    write(
        root,
        "src/lib.rs",
        "/// Builds the greeting shown to a user by name.\npub fn greet(name: &str) -> String {\n    format!(\"hello {name}\")\n}\n",
    );
    write(
        root,
        "src/math.rs",
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
    );
    let far = [
        "search",
        "quantum chromodynamics on a lattice",
        "--mode",
        "semantic",
        "--json",
    ];
    let output = run(root, &far);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("no chunk is similar enough"),
        "{}",
        stderr(&output)
    );
    let hits: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(hits.len(), 2, "{hits:?}");
    assert!(
        hits.iter().all(|hit| hit["score"].as_f64().unwrap() < 0.3),
        "{hits:?}"
    );

    let near = ["search", "greeting shown to a user", "--mode", "semantic"];
    let output = run(root, &near);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("greet"), "{}", stdout(&output));
    assert!(
        !stderr(&output).contains("similar enough"),
        "{}",
        stderr(&output)
    );
}
