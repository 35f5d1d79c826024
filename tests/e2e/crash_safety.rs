//! SIGKILL `lode index` at many moments; every following run must open, check, repair and
//! end with an index identical to one built from scratch (catalog, lexical index and vectors).

use crate::support;

use std::process::Stdio;
use std::time::Duration;

use support::{generate_rust_tree, lode, run, stderr, write};

/// Parses "N chunks, N symbols, N references" out of the summary line.
fn totals(summary: &str) -> (u64, u64, u64) {
    let number_before = |word: &str| -> u64 {
        let at = summary
            .find(word)
            .unwrap_or_else(|| panic!("no {word} in {summary}"));
        summary[..at]
            .trim_end()
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    (
        number_before(" chunks"),
        number_before(" symbols"),
        number_before(" references"),
    )
}

#[test]
fn killing_lode_index_at_any_moment_leaves_a_repairable_index() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    generate_rust_tree(root, 1200);

    // Kill moments from "while scanning" to "late in the run"; checkpoints every 50 files make
    // kills land between the catalog commit and the lexical commit too.
    let mut repairs_seen = 0;
    let delays_ms = [
        15u64, 40, 90, 160, 250, 400, 600, 900, 1300, 1800, 2500, 3500,
    ];
    for (round, delay) in delays_ms.iter().enumerate() {
        for k in 0..3 {
            let n = (round * 97 + k * 31) % 1200;
            let path = root.join(format!("src/module_{n}.rs"));
            let mut text = std::fs::read_to_string(&path).unwrap();
            text.push_str(&format!("\npub fn crash_marker_{round}_{k}() {{}}\n"));
            std::fs::write(&path, text).unwrap();
        }
        let mut child = lode(root)
            .args(["index"])
            .env("LODE_CHECKPOINT_FILES", "50")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(*delay));
        // SIGKILL: no destructors, no flushing.
        let _ = child.kill();
        child.wait().unwrap();

        // The next process opens whatever was left, checks it and answers (0 or 1, never 3).
        let read = run(root, &["search", "compute", "--no-refresh", "--limit", "1"]);
        assert!(
            matches!(read.status.code(), Some(0 | 1)),
            "round {round}: {}",
            stderr(&read)
        );
        if stderr(&read).contains("repaired the index") {
            repairs_seen += 1;
        }
    }

    // How many kills landed between the two commits depends on timing; report it.
    eprintln!(
        "kills that needed a repair: {repairs_seen} of {}",
        delays_ms.len()
    );

    let finished = run(root, &["index"]);
    assert!(finished.status.success(), "{}", stderr(&finished));
    let repaired = totals(&stderr(&finished));

    // Every marker of every round is findable: no change was lost.
    for round in 0..delays_ms.len() {
        for k in 0..3 {
            let name = format!("crash_marker_{round}_{k}");
            let found = run(root, &["symbols", &name, "--no-refresh", "--json"]);
            assert!(
                support::stdout(&found).contains(&format!("\"name\":\"{name}\"")),
                "{name} lost"
            );
        }
    }

    // And the result equals an index built from scratch elsewhere.
    let fresh_dir = tempfile::tempdir().unwrap();
    let fresh = lode(root)
        .args(["index", "--index-dir"])
        .arg(fresh_dir.path())
        .output()
        .unwrap();
    assert!(fresh.status.success());
    assert_eq!(repaired, totals(&stderr(&fresh)));

    // A repaired lexical index must rank like a fresh one: the same hits down to the first tie
    // (BM25 scores themselves differ a little: a repaired index's segments still count the
    // documents its repair deleted). Generated chunks that differ only in numbers (which the
    // tokenizers drop) tie exactly, and ties are ordered by internal ids, which a repaired
    // index and a fresh one assign differently, so which of the tied chunks comes first is not
    // compared. (Fused scores are rank-based and hide ties; the vectors are compared below.)
    let top_hit = |query: &str, extra: &[&str]| {
        let mut command = lode(root);
        command.args(["search", query, "--json", "--no-refresh", "--limit", "10"]);
        command.args(["--mode", "lexical"]);
        command.args(extra);
        let output = command.output().unwrap();
        let hits: Vec<serde_json::Value> = support::stdout(&output)
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert!(!hits.is_empty(), "no hit for {query}");
        let scores: Vec<String> = hits
            .iter()
            .map(|v| format!("{:.4}", v["score"].as_f64().unwrap()))
            .collect();
        let untied = scores
            .windows(2)
            .position(|pair| pair[0] == pair[1])
            .unwrap_or(scores.len());
        let leaders: Vec<(String, u64, serde_json::Value)> = hits[..untied]
            .iter()
            .map(|v| {
                (
                    v["path"].as_str().unwrap().to_string(),
                    v["start_line"].as_u64().unwrap(),
                    v["symbol"].clone(),
                )
            })
            .collect();
        leaders
    };
    let fresh_dir_arg = fresh_dir.path().to_str().unwrap().to_string();
    for query in [
        "compute_3_for_777",
        "build_widget_42",
        "crash_marker_7_2",
        "Widget1100 label",
    ] {
        assert_eq!(
            top_hit(query, &[]),
            top_hit(query, &["--index-dir", &fresh_dir_arg]),
            "{query}"
        );
    }

    // The vectors were repaired too: one per chunk, and semantic rankings (restricted to one
    // file, where the generated code differs only in numbers) equal the fresh index's,
    // including the files every round changed.
    let verbose = run(root, &["index", "-v"]);
    let report = stderr(&verbose);
    let vectors: u64 = report
        .split("vectors: ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no vector count in {report}"));
    assert_eq!(vectors, repaired.0, "{report}");
    let ranking = |query: &str, extra: &[&str]| -> Vec<(String, u64)> {
        let mut command = lode(root);
        command.args(["search", query, "--json", "--no-refresh", "--limit", "5"]);
        command.args(extra);
        let output = command.output().unwrap();
        // 1: nothing related enough in that file (both indexes must agree on that too).
        assert!(
            matches!(output.status.code(), Some(0 | 1)),
            "{}",
            stderr(&output)
        );
        support::stdout(&output)
            .lines()
            .map(|line| {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                (
                    v["path"].as_str().unwrap().to_string(),
                    v["start_line"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let mut changed: Vec<usize> = (0..delays_ms.len())
        .flat_map(|round| (0..3).map(move |k| (round * 97 + k * 31) % 1200))
        .collect();
    changed.extend([5, 600, 1199]);
    for n in changed {
        let path = format!("src/module_{n}.rs");
        for query in ["crash marker", "computes a value of the widget"] {
            let args = ["--mode", "semantic", "--path", path.as_str()];
            let fresh_args = [&args[..], &["--index-dir", &fresh_dir_arg]].concat();
            assert_eq!(
                ranking(query, &args),
                ranking(query, &fresh_args),
                "{query} in {path}"
            );
        }
    }

    write(root, "src/extra.rs", "pub fn after_the_storm() {}\n");
    let after = run(root, &["symbols", "after_the_storm"]);
    assert!(after.status.success());
}
