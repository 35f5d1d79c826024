//! Context assembly and compaction with real parts: a `lode_index::Workspace` built on a
//! temporary repository, the cl100k tokenizer, git, SQLite, and summaries from a real provider
//! talking over HTTP to the scripted LLM server.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use lode_agent::compaction::{
    self, SUMMARY_HEADER, SummarySource, compact_session, metadata_summary, needs_compaction,
    prune_tool_outputs,
};
use lode_agent::context::{
    self, AssembledContext, ContextBudget, ContextInput, ContextShares, Environment, NoCode,
    PrecomputedCode, Profile, RetrievedChunk, WorkspaceCode, assemble, count_tokens,
    count_tokens_uncached, extract_mentions, find_instruction_files, fit_history, messages_tokens,
    starts_turn, truncate_to_tokens,
};
use lode_agent::store::{NewSession, SessionStore, Visibility};
use lode_index::{Workspace, WorkspaceOptions};
use lode_llm::{
    ContentPart, Message, Provider, ProviderConfig, ProviderKind, Role, ToolCall, ToolResult,
    ToolSpec, build_provider_with_env,
};
use lode_llm_script::{Script, ScriptedServer, ScriptedServerHandle};
use lode_policy::Mode;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn write(root: &Path, relative: &str, text: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A small Rust project: a few modules that use each other, so the repo map has a graph.
fn sample_repo(root: &Path) {
    write(
        root,
        "src/billing.rs",
        "/// An invoice for a customer.\npub struct Invoice { pub lines: Vec<u64> }\n\n\
         /// Adds up the invoice lines.\npub fn compute_total(invoice: &Invoice) -> u64 {\n    invoice.lines.iter().sum()\n}\n\n\
         pub fn apply_discount(total: u64, percent: u64) -> u64 {\n    total - total * percent / 100\n}\n",
    );
    write(
        root,
        "src/shipping.rs",
        "/// A parcel on its way.\npub struct Parcel { pub weight_grams: u32 }\n\n\
         /// Picks the carrier route for a parcel by weight.\npub fn route_parcel(parcel: &Parcel) -> &'static str {\n    if parcel.weight_grams > 1000 { \"freight\" } else { \"post\" }\n}\n\n\
         pub fn shipping_cost(parcel: &Parcel) -> u64 {\n    u64::from(parcel.weight_grams) / 10\n}\n",
    );
    write(
        root,
        "src/inventory.rs",
        "pub struct Warehouse { pub items: Vec<String> }\n\n\
         pub fn restock_warehouse(warehouse: &mut Warehouse, item: &str) {\n    warehouse.items.push(item.to_owned());\n}\n\n\
         pub fn count_items(warehouse: &Warehouse) -> usize {\n    warehouse.items.len()\n}\n",
    );
    write(
        root,
        "src/customers.rs",
        "pub struct Customer { pub name: String }\n\n\
         pub fn greet_customer(customer: &Customer) -> String {\n    format!(\"Hello {}\", customer.name)\n}\n",
    );
    write(
        root,
        "src/main.rs",
        "mod billing;\nmod customers;\nmod inventory;\nmod shipping;\n\n\
         fn main() {\n    let invoice = billing::Invoice { lines: vec![1, 2] };\n    let total = billing::compute_total(&invoice);\n    \
         let parcel = shipping::Parcel { weight_grams: 10 };\n    let route = shipping::route_parcel(&parcel);\n    \
         let cost = shipping::shipping_cost(&parcel);\n    let customer = customers::Customer { name: \"a\".into() };\n    \
         let mut warehouse = inventory::Warehouse { items: vec![] };\n    inventory::restock_warehouse(&mut warehouse, \"x\");\n    \
         println!(\"{total} {route} {cost} {} {}\", customers::greet_customer(&customer), inventory::count_items(&warehouse));\n    \
         println!(\"{}\", billing::apply_discount(total, 5));\n}\n",
    );
}

fn indexed(root: &Path) -> Arc<Workspace> {
    let workspace = Workspace::open(WorkspaceOptions::new(root)).unwrap();
    workspace.refresh(&|_| {}).unwrap();
    Arc::new(workspace)
}

fn read_call(id: &str, path: &str) -> Message {
    Message {
        role: Role::Assistant,
        content: vec![ContentPart::ToolCall(ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: json!({ "path": path }),
        })],
    }
}

fn result(id: &str, content: &str) -> Message {
    Message {
        role: Role::User,
        content: vec![ContentPart::ToolResult(ToolResult {
            call_id: id.into(),
            content: content.into(),
            is_error: false,
        })],
    }
}

fn run_assembly(
    root: &Path,
    history: &[Message],
    code: &dyn context::CodeContext,
    budget: ContextBudget,
    tools: &[ToolSpec],
) -> AssembledContext {
    let environment = Environment::detect(root, &lode_sandbox::Sandbox::unavailable("test"));
    let mentions = extract_mentions(root, history);
    let instructions = find_instruction_files(root, &mentions.files, 16 * 1024);
    let shares = ContextShares::default();
    let assembled = assemble(&ContextInput {
        mode: Mode::Code,
        profile: Profile::Full,
        root,
        history,
        tools,
        environment: &environment,
        instructions: &instructions,
        memory: &[],
        skills: &[],
        skill_catalogue: None,
        code,
        budget,
        shares: &shares,
    });
    // Counted from its pieces' remembered counts, and still exactly the tokenizer's.
    assert_eq!(
        assembled.breakdown.system,
        count_tokens_uncached(&assembled.system)
    );
    let retrieved: String = assembled
        .retrieved
        .iter()
        .map(RetrievedChunk::render)
        .collect();
    assert_eq!(
        assembled.breakdown.retrieved,
        count_tokens_uncached(&retrieved)
    );
    assembled
}

const LARGE: ContextBudget = ContextBudget {
    context_window: 128_000,
    reserved_output: 8_000,
};

#[test]
fn instruction_files_are_found_inside_the_root_only_and_capped() {
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("repo");
    write(outer.path(), "AGENTS.md", "OUTSIDE THE ROOT: never read me");
    write(outer.path(), "elsewhere/AGENTS.md", "ALSO OUTSIDE");
    write(outer.path(), "elsewhere/file.rs", "fn x() {}");
    write(&root, "AGENTS.md", "Root agents rules");
    write(&root, "CLAUDE.md", &"claude rule line\n".repeat(200));
    write(&root, ".lode/instructions.md", "lode-specific instructions");
    write(
        &root,
        "src/parser/AGENTS.md",
        "Parser rules: keep the lexer pure",
    );
    write(&root, "src/parser/lexer.rs", "pub fn lex() {}");
    write(
        &root,
        "src/other/AGENTS.md",
        "Other rules: not about the focus",
    );
    #[cfg(unix)]
    std::os::unix::fs::symlink(outer.path().join("elsewhere"), root.join("linked")).unwrap();

    let focus = vec![
        "src/parser/lexer.rs".to_owned(),
        "../elsewhere/file.rs".to_owned(),
        "linked/file.rs".to_owned(),
        outer.path().join("elsewhere/file.rs").display().to_string(),
    ];
    let files = find_instruction_files(&root, &focus, 1000);
    let paths: Vec<&str> = files.iter().map(|file| file.path.as_str()).collect();
    assert_eq!(
        paths,
        vec![
            "AGENTS.md",
            "CLAUDE.md",
            ".lode/instructions.md",
            "src/parser/AGENTS.md"
        ]
    );
    for file in &files {
        assert!(!file.content.contains("OUTSIDE"), "{}", file.path);
    }
    let claude = &files[1];
    assert!(claude.truncated);
    assert!(claude.content.len() < 1100, "{}", claude.content.len());
    assert!(
        claude
            .content
            .ends_with("[truncated: 1000 of 3400 bytes shown]")
    );
    assert!(!files[0].truncated);
    assert_eq!(files[3].content, "Parser rules: keep the lexer pure");

    // Through assembly: the conversation's mention of the lexer brings in the parser rules.
    let history = vec![Message::user_text("Please fix src/parser/lexer.rs")];
    let assembled = run_assembly(&root, &history, &NoCode, LARGE, &[]);
    // The root's files are the session's, in the system prompt; the parser's go with the turn.
    assert!(
        assembled
            .turn_context
            .contains("Parser rules: keep the lexer pure")
    );
    assert!(!assembled.system.contains("Parser rules"));
    assert!(assembled.system.contains("lode-specific instructions"));
    assert!(
        !assembled
            .turn_context
            .contains("lode-specific instructions")
    );
    for text in [&assembled.system, &assembled.turn_context] {
        assert!(!text.contains("Other rules"));
        assert!(!text.contains("OUTSIDE"));
    }
    assert!(assembled.breakdown.instructions > 0);
}

#[test]
fn mentions_come_from_text_and_tool_calls_and_only_name_real_files() {
    let dir = tempfile::tempdir().unwrap();
    sample_repo(dir.path());
    let history = vec![
        Message::user_text(
            "Why does `compute_total` ignore discounts? See src/billing.rs and src/nothere.rs, also ../etc/passwd",
        ),
        read_call("c1", "src/shipping.rs"),
        result("c1", "1\tpub struct Parcel"),
        Message::assistant_text("The RoutePlanner and route_parcel are in shipping."),
    ];
    let mentions = extract_mentions(dir.path(), &history);
    assert_eq!(mentions.files, vec!["src/shipping.rs", "src/billing.rs"]);
    assert_eq!(mentions.read_files, vec!["src/shipping.rs"]);
    for name in ["compute_total", "RoutePlanner", "route_parcel"] {
        assert!(
            mentions.identifiers.contains(&name.to_owned()),
            "{name}: {:?}",
            mentions.identifiers
        );
    }
    for word in ["Why", "does", "discounts", "See", "also"] {
        assert!(!mentions.identifiers.contains(&word.to_owned()), "{word}");
    }
}

#[test]
fn the_repo_map_follows_the_files_and_names_the_conversation_mentions() {
    let dir = tempfile::tempdir().unwrap();
    sample_repo(dir.path());
    let code = WorkspaceCode::new(indexed(dir.path()));
    // A window so small that the map's share only fits a few definitions.
    let small = ContextBudget {
        context_window: 1_200,
        reserved_output: 100,
    };
    let map_of = |assembled: &AssembledContext| {
        let start = assembled
            .turn_context
            .find("<untrusted_content source=\"repo_map\">")
            .expect("a repo map");
        let end = start
            + assembled.turn_context[start..]
                .find("</untrusted_content>")
                .unwrap();
        assembled.turn_context[start..end].to_owned()
    };

    let about_shipping = vec![Message::user_text(
        "How does `shipping_cost` relate to `route_parcel`?",
    )];
    let shipping = run_assembly(dir.path(), &about_shipping, &code, small, &[]);
    let about_billing = vec![Message::user_text(
        "How does `apply_discount` relate to `compute_total`?",
    )];
    let billing = run_assembly(dir.path(), &about_billing, &code, small, &[]);
    assert!(
        shipping.breakdown.repo_map <= 210,
        "{:?}",
        shipping.breakdown
    );
    assert!(
        map_of(&shipping).contains("route_parcel"),
        "{}",
        map_of(&shipping)
    );
    assert!(
        !map_of(&shipping).contains("apply_discount"),
        "{}",
        map_of(&shipping)
    );
    assert!(
        map_of(&billing).contains("apply_discount"),
        "{}",
        map_of(&billing)
    );
    assert!(
        !map_of(&billing).contains("route_parcel"),
        "{}",
        map_of(&billing)
    );

    // A focus file: its own definitions are left out (the model has the file), what it uses is in.
    let focus = vec![Message::user_text("Refactor src/main.rs")];
    let assembled = run_assembly(dir.path(), &focus, &code, LARGE, &[]);
    assert_eq!(assembled.mentions.files, vec!["src/main.rs"]);
    let map = map_of(&assembled);
    assert!(map.contains("src/billing.rs"), "{map}");
    assert!(!map.contains("src/main.rs"), "{map}");
}

#[test]
fn retrieval_answers_the_latest_message_and_skips_files_already_read() {
    let dir = tempfile::tempdir().unwrap();
    sample_repo(dir.path());
    let code = WorkspaceCode::new(indexed(dir.path()));
    let question = vec![Message::user_text(
        "which carrier route does a heavy parcel take",
    )];
    let assembled = run_assembly(dir.path(), &question, &code, LARGE, &[]);
    assert!(
        assembled
            .retrieved
            .iter()
            .any(|chunk| chunk.path == "src/shipping.rs" && chunk.text.contains("freight")),
        "{:?}",
        assembled.retrieved
    );
    assert!(
        assembled
            .turn_context
            .contains("<untrusted_content source=\"code\" path=\"src/shipping.rs\"")
    );
    assert_eq!(
        assembled.breakdown.retrieved,
        count_tokens(
            &assembled
                .retrieved
                .iter()
                .map(RetrievedChunk::render)
                .collect::<String>()
        )
    );

    // The same question after the model read shipping.rs: that file is not retrieved again.
    let mut after_read = vec![
        Message::user_text("look at shipping"),
        read_call("c1", "src/shipping.rs"),
        result("c1", "…"),
        Message::assistant_text("read it"),
    ];
    after_read.extend(question);
    let assembled = run_assembly(dir.path(), &after_read, &code, LARGE, &[]);
    assert!(
        assembled
            .retrieved
            .iter()
            .all(|chunk| chunk.path != "src/shipping.rs"),
        "{:?}",
        assembled.retrieved
    );
}

#[test]
fn the_budget_holds_with_the_real_tokenizer_and_newest_turns_stay_whole() {
    let dir = tempfile::tempdir().unwrap();
    sample_repo(dir.path());
    write(
        dir.path(),
        "AGENTS.md",
        &"Always write tests first.\n".repeat(400),
    );
    let code = WorkspaceCode::new(indexed(dir.path()));
    let mut history = Vec::new();
    for turn in 0..30 {
        history.push(Message::user_text(format!(
            "turn {turn}: please look at the billing code and explain compute_total again"
        )));
        history.push(read_call(&format!("c{turn}"), "src/billing.rs"));
        history.push(result(
            &format!("c{turn}"),
            &"1\tpub fn compute_total() {}\n".repeat(20),
        ));
        history.push(Message::assistant_text(format!(
            "answer {turn}: it sums the lines"
        )));
    }
    let tools = vec![ToolSpec {
        name: "read_file".into(),
        description: "Reads a file with numbered lines.".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }];
    let budget = ContextBudget {
        context_window: 6_000,
        reserved_output: 1_000,
    };
    let assembled = run_assembly(dir.path(), &history, &code, budget, &tools);
    let breakdown = assembled.breakdown;
    // The window less the output, less a margin for the server's template (1/32 of the window).
    let input = budget.input_tokens();
    assert_eq!(input, 5_000 - 6_000 / 32);
    assert_eq!(breakdown.budget, input - breakdown.tools);
    assert!(breakdown.total() <= input, "{breakdown:?}");
    assert_eq!(breakdown.system, count_tokens(&assembled.system));
    assert_eq!(breakdown.history, messages_tokens(&assembled.messages));
    // Each share held: instructions at most 10% of the input budget, and so on.
    assert!(
        breakdown.instructions <= breakdown.budget / 10,
        "{breakdown:?}"
    );
    assert!(breakdown.repo_map <= breakdown.budget / 10, "{breakdown:?}");
    assert!(
        breakdown.retrieved <= breakdown.budget / 10,
        "{breakdown:?}"
    );
    assert!(assembled.system.contains("[truncated:"));
    // Older turns went; the kept ones are whole turns ending with the newest.
    assert!(assembled.dropped_turns > 0);
    assert!(assembled.history_overflow());
    assert!(assembled.history_pressure() > 1.0);
    assert!(starts_turn(&assembled.messages[0]));
    assert_eq!(assembled.messages.len() % 4, 0);
    assert_eq!(assembled.messages.last(), history.last());
    assert_eq!(
        assembled.messages.len() / 4 + assembled.dropped_turns,
        30,
        "every turn is either kept or dropped"
    );

    // The request carries what was assembled.
    let request = assembled.clone().into_request(tools.clone(), Some(1_000));
    assert_eq!(request.system, assembled.system);
    assert_eq!(request.messages, assembled.messages);
}

#[test]
fn the_newest_turn_is_kept_even_over_budget() {
    let history = vec![
        Message::user_text("old question"),
        Message::assistant_text("old answer"),
        Message::user_text("a very long paste ".repeat(500)),
    ];
    let (kept, dropped) = fit_history(&history, 50);
    assert_eq!(kept, history[2..].to_vec());
    assert_eq!(dropped, 1);
    let (kept, dropped) = fit_history(&history, 100_000);
    assert_eq!((kept.len(), dropped), (3, 0));
}

#[test]
fn precomputed_code_is_still_fitted_and_filtered() {
    let dir = tempfile::tempdir().unwrap();
    let chunk = |path: &str, start: u32| RetrievedChunk {
        path: path.into(),
        start_line: start,
        end_line: start + 2,
        symbol: None,
        text: "fn body() {}\n".repeat(3),
    };
    let code = PrecomputedCode {
        repo_map: "src/a.rs:\n  fn a()\n".repeat(500),
        chunks: vec![
            chunk("src/a.rs", 1),
            chunk("src/a.rs", 2),
            chunk("src/b.rs", 1),
        ],
        missing: None,
    };
    let history = vec![
        read_call("c", "src/b.rs"),
        result("c", "x"),
        Message::user_text("what does body do"),
    ];
    write(dir.path(), "src/b.rs", "fn body() {}");
    let assembled = run_assembly(dir.path(), &history, &code, LARGE, &[]);
    // The overlapping chunk and the file already read are left out.
    assert_eq!(assembled.retrieved, vec![chunk("src/a.rs", 1)]);
    assert!(assembled.breakdown.repo_map <= ContextShares::default().repo_map_max_tokens);
    assert!(assembled.warnings.is_empty());
}

#[test]
fn truncation_fits_the_token_limit() {
    let text = "word ".repeat(5_000);
    for limit in [40, 200, 1_000] {
        let cut = truncate_to_tokens(&text, limit);
        assert!(count_tokens(&cut) <= limit, "{limit}");
        assert!(cut.contains("[truncated:"));
    }
    assert_eq!(truncate_to_tokens("short", 10), "short");
}

/// A stand-in for the sandbox's launcher: the real one is the `lode` binary, which this
/// crate's tests cannot build. It drops the profile and runs the command as it is, so these
/// tests see what lode passes to git; the confinement itself is tested end to end
/// (tests/e2e/redteam.rs, the hostile-git rows).
fn passthrough_sandbox(dir: &Path) -> lode_sandbox::Sandbox {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("launcher.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nwhile [ \"$1\" != \"--\" ]; do shift; done\nshift\nexec \"$@\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    lode_sandbox::Sandbox::new(script, lode_sandbox::SandboxSettings::default(), Vec::new())
}

fn git_in(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(status.status.success(), "{args:?}: {status:?}");
}

#[test]
fn the_environment_reports_git_branch_and_changes() {
    let launcher_dir = tempfile::tempdir().unwrap();
    let sandbox = passthrough_sandbox(launcher_dir.path());
    if sandbox.own_programs_unconfinable().is_some() {
        // This machine cannot confine: lode does not run git at all (checked below too).
        let dir = tempfile::tempdir().unwrap();
        git_in(dir.path(), &["init", "-q"]);
        assert_eq!(Environment::detect(dir.path(), &sandbox).git, None);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plain = Environment::detect(dir.path(), &sandbox);
    assert_eq!(plain.git, None);
    assert!(plain.render().contains("not a git repository"));

    let git = |args: &[&str]| git_in(dir.path(), args);
    git(&["init", "-q", "-b", "feature/context"]);
    write(dir.path(), "a.txt", "one");
    git(&["add", "a.txt"]);
    git(&["commit", "-q", "-m", "first"]);
    write(dir.path(), "a.txt", "two");
    write(dir.path(), "new.txt", "new");
    let environment = Environment::detect(dir.path(), &sandbox);
    let state = environment.git.clone().expect("a git repository");
    assert_eq!(state.branch, "feature/context");
    assert_eq!(state.dirty_total, 2);
    let rendered = environment.render();
    assert!(
        rendered.contains("Git branch: feature/context"),
        "{rendered}"
    );
    assert!(
        rendered.contains("a.txt") && rendered.contains("new.txt"),
        "{rendered}"
    );
    assert!(rendered.contains(&dir.path().display().to_string()));

    // Without a sandbox that can confine, lode does not start git.
    let unconfined = Environment::detect(dir.path(), &lode_sandbox::Sandbox::unavailable("test"));
    assert_eq!(unconfined.git, None);
}

/// What lode passes to git keeps the repository's commands from running even before the
/// sandbox: an fsmonitor, a clean filter (of the repository and of a submodule), hooks. Each
/// would write a marker; git still reports the state.
#[test]
fn lodes_git_runs_none_of_the_repositorys_commands() {
    let launcher_dir = tempfile::tempdir().unwrap();
    let sandbox = passthrough_sandbox(launcher_dir.path());
    if sandbox.own_programs_unconfinable().is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let markers = tempfile::tempdir().unwrap();
    let marker = |name: &str| markers.path().join(name);
    let git = |args: &[&str]| git_in(dir.path(), args);
    git(&["init", "-q", "-b", "main"]);
    write(dir.path(), ".gitattributes", "*.txt filter=evil\n");
    write(dir.path(), "a.txt", "one");
    git(&["add", "a.txt", ".gitattributes"]);
    git(&["commit", "-q", "-m", "first"]);
    let fsmonitor = format!("touch {}; false", marker("fsmonitor").display());
    let clean = format!("touch {}; cat", marker("clean").display());
    let process = format!("touch {}; false", marker("process").display());
    git(&["config", "core.fsmonitor", &fsmonitor]);
    git(&["config", "filter.evil.clean", &clean]);
    git(&["config", "filter.evil.process", &process]);
    git(&["config", "filter.evil.required", "true"]);
    std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
    write(
        dir.path(),
        ".git/hooks/post-index-change",
        &format!("#!/bin/sh\ntouch {}\n", marker("hook").display()),
    );
    // A change of the same size: git must hash the file (through the filter, were it on) to
    // know it changed.
    write(dir.path(), "a.txt", "owt");
    let environment = Environment::detect(dir.path(), &sandbox);
    let state = environment.git.expect("git still reports the state");
    assert_eq!(state.branch, "main");
    assert_eq!(state.dirty_total, 1, "{:?}", state.dirty);
    for name in ["fsmonitor", "clean", "process", "hook"] {
        assert!(!marker(name).exists(), "git ran the repository's {name}");
    }
    // The control: git itself runs the same filter when asked plainly.
    let plain = std::process::Command::new("git")
        .arg("-C")
        .arg(dir.path())
        .args(["-c", "core.fsmonitor=false", "add", "a.txt"])
        .output()
        .unwrap();
    assert!(
        marker("process").exists() || marker("clean").exists(),
        "{plain:?}"
    );
}

#[test]
fn base_instructions_differ_per_mode() {
    let ask = context::base_instructions(Mode::Ask, Profile::Full);
    let code = context::base_instructions(Mode::Code, Profile::Full);
    let architect = context::base_instructions(Mode::Architect, Profile::Full);
    assert!(ask.contains("ask mode") && ask.contains("cannot edit"));
    assert!(code.contains("edit_file") && code.contains("run_command"));
    assert!(architect.contains("architect mode") && architect.contains("update_plan"));
    assert!(count_tokens(&code) < 1_500);
    // The lean profile says the same rules in brief, untrusted content included.
    for mode in [Mode::Ask, Mode::Code, Mode::Architect] {
        let lean = context::base_instructions(mode, Profile::Lean);
        assert!(lean.contains("untrusted_content") && lean.contains("turn_context"));
        assert!(count_tokens(&lean) < 260, "{}", count_tokens(&lean));
    }
    assert!(context::base_instructions(Mode::Code, Profile::Lean).contains("edit_symbol"));
}

// ---- compaction ----

fn long_tool_history() -> Vec<Message> {
    let mut history = Vec::new();
    for turn in 0..5 {
        history.push(Message::user_text(format!("step {turn}")));
        history.push(Message {
            role: Role::Assistant,
            content: vec![ContentPart::ToolCall(ToolCall {
                id: format!("c{turn}"),
                name: if turn % 2 == 0 {
                    "read_file"
                } else {
                    "run_command"
                }
                .into(),
                arguments: json!({ "path": format!("src/file{turn}.rs") }),
            })],
        });
        history.push(result(
            &format!("c{turn}"),
            &format!("output line {turn}\n").repeat(50),
        ));
        history.push(Message::assistant_text(format!("done {turn}")));
    }
    history
}

#[test]
fn pruning_keeps_the_newest_outputs_and_names_the_rest() {
    let mut history = long_tool_history();
    let original = history.clone();
    let before = messages_tokens(&history);
    let report = prune_tool_outputs(&mut history, 2);
    assert_eq!(report.pruned, 3);
    assert_eq!(before - messages_tokens(&history), report.tokens_saved);
    let outputs: Vec<String> = history
        .iter()
        .flat_map(|message| &message.content)
        .filter_map(|part| match part {
            ContentPart::ToolResult(result) => Some(result.content.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(outputs[0], "[output pruned: 50 lines, tool read_file]");
    assert_eq!(outputs[1], "[output pruned: 50 lines, tool run_command]");
    assert_eq!(outputs[2], "[output pruned: 50 lines, tool read_file]");
    assert_eq!(outputs[3], "output line 3\n".repeat(50));
    assert_eq!(outputs[4], "output line 4\n".repeat(50));
    // Pruning again changes nothing more; the original messages are untouched.
    assert_eq!(prune_tool_outputs(&mut history, 2).pruned, 0);
    assert_eq!(original, long_tool_history());

    assert!(needs_compaction(800, 1_000, 0.8));
    assert!(!needs_compaction(799, 1_000, 0.8));
}

#[test]
fn the_metadata_summary_lists_what_is_certain() {
    let summary = metadata_summary(&long_tool_history());
    assert!(summary.starts_with(SUMMARY_HEADER));
    for section in compaction::SUMMARY_SECTIONS {
        assert!(summary.contains(&format!("## {section}")), "{section}");
    }
    assert!(summary.contains("- src/file0.rs") && summary.contains("- src/file4.rs"));
    assert!(summary.contains("read_file ×3") && summary.contains("run_command ×2"));
    assert!(
        summary.contains("5 user messages, 10 agent messages and 5 tool results"),
        "{summary}"
    );
    assert!(summary.contains("user asked: step 4"));
}

const SUMMARY_TEXT: &str = "## Intent\n- fix the parser\n## Files touched\n- src/file0.rs\n## Decisions\n- keep the lexer\n## Open questions\n- none\n## Next steps\n- run the tests";

fn scripted_provider(server: &ScriptedServerHandle, kind: ProviderKind) -> Arc<dyn Provider> {
    let mut config = ProviderConfig::new("scripted", kind, "test-model");
    config.base_url = Some(match kind {
        ProviderKind::OpenAi => server.openai_base_url(),
        ProviderKind::Anthropic | ProviderKind::Ollama => server.base_url(),
    });
    config.max_tokens = Some(1_000);
    config.context_window = Some(32_000);
    build_provider_with_env(&config, &|_| None).unwrap()
}

fn session_with_history(store: &SessionStore) -> String {
    let id = store
        .create_session(&NewSession {
            cwd: "/repo".into(),
            mode: "code".into(),
            model: Some("scripted".into()),
        })
        .unwrap()
        .id;
    for message in long_tool_history() {
        store
            .append_message(&id, &message, Visibility::Both)
            .unwrap();
    }
    id
}

#[tokio::test]
async fn a_model_summary_replaces_older_turns_for_the_model_only() {
    let script = Script::from_json(
        &json!({"turns": [{
            "match": {"system_contains": "You compact the history"},
            "respond": {"text": SUMMARY_TEXT}
        }]})
        .to_string(),
    )
    .unwrap();
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        let server = ScriptedServer::start(script.clone()).await.unwrap();
        let provider = scripted_provider(&server, kind);
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::open(&dir.path().join("agent.sqlite")).unwrap();
        let id = session_with_history(&store);

        let outcome = compact_session(&store, &id, provider.as_ref(), 2, CancellationToken::new())
            .await
            .unwrap()
            .expect("old turns to compact");
        assert_eq!(outcome.summary.source, SummarySource::Model);
        assert_eq!(
            outcome.summary.text,
            format!("{SUMMARY_HEADER}\n\n{SUMMARY_TEXT}")
        );
        assert_eq!(
            outcome.up_to_seq, 12,
            "three of five turns (4 messages each) replaced"
        );
        assert_eq!(outcome.replaced_messages, 12);
        assert!(outcome.tokens_after < outcome.tokens_before);

        // The request was a transcript of the replaced turns only.
        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        let body = requests[0].body.to_string();
        assert!(
            body.contains("step 2") && !body.contains("step 3"),
            "{body}"
        );

        let history = store.load_history(&id).unwrap();
        let model = history.model_messages();
        assert_eq!(model.len(), 1 + 8);
        assert!(model[0].text().contains("keep the lexer"));
        assert_eq!(model[1].text(), "step 3");
        assert_eq!(
            history.user_messages().count(),
            20,
            "the user's history stays whole"
        );
        assert!(
            history
                .user_messages()
                .all(|m| !m.to_message().text().starts_with(SUMMARY_HEADER))
        );

        // Nothing old enough left: compacting again with the same window is a no-op.
        let again = compact_session(&store, &id, provider.as_ref(), 2, CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(again, None);
    }
}

#[tokio::test]
async fn a_failing_summary_call_falls_back_to_metadata_and_loses_nothing() {
    let script = Script::from_json(
        &json!({"turns": [{
            "respond": {"text": "never sent"},
            "fault": {"status": 500, "message": "upstream exploded", "times": 10}
        }]})
        .to_string(),
    )
    .unwrap();
    let server = ScriptedServer::start(script).await.unwrap();
    let provider = scripted_provider(&server, ProviderKind::OpenAi);
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::open(&dir.path().join("agent.sqlite")).unwrap();
    let id = session_with_history(&store);

    let outcome = compact_session(&store, &id, provider.as_ref(), 1, CancellationToken::new())
        .await
        .unwrap()
        .unwrap();
    let SummarySource::Metadata { error } = &outcome.summary.source else {
        panic!("expected the metadata fallback, got {:?}", outcome.summary);
    };
    assert!(error.contains("500"), "{error}");
    assert!(
        outcome.summary.text.contains("metadata")
            || outcome.summary.text.contains("could not be written")
    );
    assert!(outcome.summary.text.contains("src/file3.rs"));
    assert!(
        !outcome.summary.text.contains("src/file4.rs"),
        "the kept turn is not summarised"
    );

    let history = store.load_history(&id).unwrap();
    assert_eq!(
        history.messages.len(),
        21,
        "every message kept, plus the summary"
    );
    assert_eq!(history.model_messages().len(), 1 + 4);
    assert_eq!(history.user_messages().count(), 20);
}

#[tokio::test]
async fn a_cancelled_summary_falls_back_too() {
    let script = Script::from_json(
        &json!({"turns": [{"respond": {"text": "late"}, "fault": {"slow_first_byte_ms": 10000}}]})
            .to_string(),
    )
    .unwrap();
    let server = ScriptedServer::start(script).await.unwrap();
    let provider = scripted_provider(&server, ProviderKind::Anthropic);
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        canceller.cancel();
    });
    // The server holds the answer for 10 s; cancellation ends the wait and the fallback is used.
    let summary = compaction::summarize(provider.as_ref(), &long_tool_history(), cancel).await;
    assert_eq!(
        summary.source,
        SummarySource::Metadata {
            error: "cancelled".into()
        }
    );
}

#[test]
fn turn_boundaries_never_split_a_call_from_its_result() {
    let history = long_tool_history();
    let starts = context::turn_starts(&history);
    assert_eq!(starts, vec![0, 4, 8, 12, 16]);
    let seen: HashSet<usize> = starts.into_iter().collect();
    for (index, message) in history.iter().enumerate() {
        let is_result = message
            .content
            .iter()
            .any(|part| matches!(part, ContentPart::ToolResult(_)));
        assert!(!(is_result && seen.contains(&index)));
    }
}

#[tokio::test]
async fn one_long_turn_is_split_after_a_tool_result() {
    let script = Script::from_json(
        &json!({"turns": [{"respond": {"text": SUMMARY_TEXT}, "repeat": true}]}).to_string(),
    )
    .unwrap();
    let server = ScriptedServer::start(script).await.unwrap();
    let provider = scripted_provider(&server, ProviderKind::OpenAi);
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::open(&dir.path().join("agent.sqlite")).unwrap();
    let id = store
        .create_session(&NewSession {
            cwd: "/repo".into(),
            mode: "code".into(),
            model: None,
        })
        .unwrap()
        .id;
    // One user request followed by eight tool round trips, all in the same turn.
    store
        .append_message(&id, &Message::user_text("fix every file"), Visibility::Both)
        .unwrap();
    for n in 0..8 {
        let call = Message {
            role: Role::Assistant,
            content: vec![ContentPart::ToolCall(ToolCall {
                id: format!("c{n}"),
                name: "read_file".into(),
                arguments: json!({ "path": format!("src/f{n}.rs") }),
            })],
        };
        store.append_message(&id, &call, Visibility::Both).unwrap();
        let output = format!("line of file {n}\n").repeat(40);
        store
            .append_message(&id, &result(&format!("c{n}"), &output), Visibility::Both)
            .unwrap();
    }
    let before = messages_tokens(&store.load_history(&id).unwrap().model_messages());

    let outcome = compact_session(&store, &id, provider.as_ref(), 1, CancellationToken::new())
        .await
        .unwrap()
        .expect("the long turn is split");
    let model = store.load_history(&id).unwrap().model_messages();
    assert!(model[0].text().starts_with(SUMMARY_HEADER));
    // The kept part starts with a tool call and every call keeps its result.
    assert_eq!(model[1].role, Role::Assistant);
    assert!(model[1].tool_calls().next().is_some());
    assert_eq!(model.len() % 2, 1);
    assert!(messages_tokens(&model[1..]) <= before / 2);
    assert!(outcome.replaced_messages > 1);
    assert_eq!(store.load_history(&id).unwrap().user_messages().count(), 17);

    // Again: the remaining part of the turn is split once more, still whole pairs.
    let again = compact_session(&store, &id, provider.as_ref(), 1, CancellationToken::new())
        .await
        .unwrap();
    assert!(again.is_some());
    let model = store.load_history(&id).unwrap().model_messages();
    assert_eq!(model[1].role, Role::Assistant);
    assert!(model[0].text().starts_with(SUMMARY_HEADER));
    assert_eq!(
        model
            .iter()
            .filter(|m| m.text().starts_with(SUMMARY_HEADER))
            .count(),
        1,
        "only the newest summary is sent"
    );
}
