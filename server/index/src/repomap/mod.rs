//! The repo map: the definitions that matter most for a task, fitted to a token budget.
//!
//! Files form a graph with an edge from each file to the files defining the names it refers
//! to, weighted by how specific the name is (long names and names defined in few files count
//! more; names the task mentions count much more). Personalised PageRank, biased toward the
//! focus files and the files defining mentioned names, ranks files; each file's rank flows along
//! its edges to the definitions it uses. The best definitions are rendered as signatures grouped
//! by file, and a binary search picks how many fit the budget, counted with the cl100k tokenizer.

mod graph;

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use tiktoken_rs::CoreBPE;

use crate::catalog::DefinitionRow;
use crate::error::IndexError;
use crate::workspace::Workspace;
use graph::FileGraph;
/// Weight multiplier for names the request mentions.
const MENTION_BOOST: f64 = 10.0;
/// Definition kinds never listed on their own: too fine-grained (fields, variables), or not
/// a definition of their name (an `impl` block names a type defined elsewhere; it appears as
/// the header of the methods it holds).
const HIDDEN_KINDS: &[&str] = &["field", "variable", "impl"];
/// Weight of definitions in test fixtures and vendored code when the request names no focus
/// and no mention: a map of the repository opens with its own code, not with the sample
/// projects its tests run on.
const PERIPHERAL_WEIGHT: f64 = 0.05;
/// Directory names that hold test fixtures or vendored code.
const PERIPHERAL_DIRS: &[&str] = &[
    "fixtures",
    "fixture",
    "__fixtures__",
    "testdata",
    "test_data",
    "test-data",
    "vendor",
    "vendored",
    "third_party",
    "third-party",
    "thirdparty",
    "__snapshots__",
];

/// Whether `path` (relative, `/`-separated) lies under a [`PERIPHERAL_DIRS`] directory.
fn is_peripheral(path: &str) -> bool {
    let mut directories = path.split('/');
    directories.next_back();
    directories.any(|directory| {
        PERIPHERAL_DIRS
            .iter()
            .any(|name| directory.eq_ignore_ascii_case(name))
    })
}

/// What to map.
#[derive(Clone, Debug)]
pub struct MapRequest {
    /// The token budget of the rendered map.
    pub max_tokens: usize,
    /// Workspace-relative paths the task is about; their definitions are left out (the caller
    /// already has those files) and the ranking is biased toward what they use.
    pub focus_files: Vec<String>,
    /// Identifiers the task mentions.
    pub mentions: Vec<String>,
}

impl Default for MapRequest {
    fn default() -> Self {
        MapRequest {
            max_tokens: 1024,
            focus_files: Vec::new(),
            mentions: Vec::new(),
        }
    }
}

/// One definition in the map.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MapDefinition {
    pub name: String,
    pub kind: String,
    pub start_line: u32,
    pub end_line: u32,
    pub scope: Vec<String>,
    pub signature: String,
    pub rank: f64,
}

/// One file in the map, with its selected definitions in line order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MapFile {
    pub path: String,
    pub rank: f64,
    pub definitions: Vec<MapDefinition>,
}

/// A rendered repo map.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RepoMap {
    pub files: Vec<MapFile>,
    /// The rendered text.
    pub text: String,
    /// cl100k tokens in `text`.
    pub tokens: usize,
    pub max_tokens: usize,
    /// Definitions that were candidates before the budget was applied.
    pub candidates: usize,
}

impl Workspace {
    /// Builds the repo map from the cached tags (nothing is parsed).
    pub fn repo_map(&self, request: &MapRequest) -> Result<RepoMap, IndexError> {
        let (definitions, references) = self.with_catalog(|catalog| {
            Ok((catalog.all_definitions()?, catalog.reference_counts()?))
        })?;
        build_map(definitions, &references, request)
    }
}

/// The ranking and fitting, separated from storage for testing.
pub fn build_map(
    definitions: Vec<DefinitionRow>,
    references: &[(String, String, u32)],
    request: &MapRequest,
) -> Result<RepoMap, IndexError> {
    let bpe = cl100k()?;
    // A map of code: a document's headings (Markdown sections) are its outline, not
    // definitions other code uses.
    let definitions: Vec<DefinitionRow> = definitions
        .into_iter()
        .filter(|def| def.kind != lode_syntax::DefKind::Section.name())
        .collect();
    let focus: HashSet<&str> = request.focus_files.iter().map(String::as_str).collect();
    let mentions: HashSet<&str> = request.mentions.iter().map(String::as_str).collect();

    // Files, numbered: those with definitions, then those referring to a defined name.
    let mut file_ids: HashMap<&str, usize> = HashMap::new();
    let mut definition_files = Vec::with_capacity(definitions.len());
    for def in &definitions {
        definition_files.push(number(&mut file_ids, def.path.as_str()));
    }

    // Defined names, numbered (`names[id]`), and the files defining each.
    let mut name_ids: HashMap<&str, usize> = HashMap::new();
    let mut names: Vec<&str> = Vec::new();
    let mut definers: Vec<Vec<usize>> = Vec::new();
    for (def, &file) in definitions.iter().zip(&definition_files) {
        if def.kind == "impl" {
            continue;
        }
        let id = *name_ids.entry(def.name.as_str()).or_insert_with(|| {
            names.push(def.name.as_str());
            definers.push(Vec::new());
            definers.len() - 1
        });
        if definers[id].last() != Some(&file) {
            definers[id].push(file);
        }
    }
    // Definitions arrive grouped by file, so this only matters for input that is not.
    for files in &mut definers {
        files.sort_unstable();
        files.dedup();
    }
    let mut linked: Vec<(usize, usize, u32)> = Vec::new();
    for (path, name, count) in references {
        if let Some(&name) = name_ids.get(name.as_str()) {
            linked.push((number(&mut file_ids, path.as_str()), name, *count));
        }
    }
    let file_count = file_ids.len();

    // Weighted links: referencing file -> each file defining the name.
    let mut graph = FileGraph::new(file_count, definers);
    for (from, id, count) in linked {
        let name = names[id];
        let defining = graph.definers(id).len();
        let specificity = name_weight(name, defining, file_count, mentions.contains(name));
        let weight = specificity * f64::from(count).sqrt() / defining as f64;
        graph.add_reference(from, id, weight);
    }

    // Personalisation: focus files and files defining mentioned names.
    let mut personal = vec![0.0; file_count];
    for (path, &id) in &file_ids {
        if focus.contains(path) {
            personal[id] += 1.0;
        }
    }
    for mention in &mentions {
        if let Some(&id) = name_ids.get(mention) {
            for &file in graph.definers(id) {
                personal[file] += 1.0;
            }
        }
    }
    let rank = graph.pagerank(&personal);
    let unguided = focus.is_empty() && mentions.is_empty();

    // Rank flows from each file along its links to the definitions it uses.
    let def_rank = graph.definition_rank(&rank);

    let mut candidates: Vec<(f64, &DefinitionRow)> = definitions
        .iter()
        .filter(|def| {
            !focus.contains(def.path.as_str()) && !HIDDEN_KINDS.contains(&def.kind.as_str())
        })
        .map(|def| {
            let file = file_ids[def.path.as_str()];
            let flowed = name_ids
                .get(def.name.as_str())
                .map_or(0.0, |&name| def_rank(file, name));
            // A small share of the file's own rank orders definitions nothing refers to yet.
            let mut score = flowed + rank[file] * 1e-3;
            if mentions.contains(def.name.as_str()) {
                score *= MENTION_BOOST;
            }
            if unguided && is_peripheral(&def.path) {
                score *= PERIPHERAL_WEIGHT;
            }
            (score, def)
        })
        .collect();
    candidates.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| a.1.path.cmp(&b.1.path))
            .then_with(|| a.1.start_line.cmp(&b.1.start_line))
    });

    let mut defs_by_path: HashMap<&str, Vec<&DefinitionRow>> = HashMap::new();
    for def in &definitions {
        defs_by_path.entry(def.path.as_str()).or_default().push(def);
    }

    // Largest prefix of the ranking whose rendering fits the budget. Every rendered definition
    // costs at least one token, so no more than `max_tokens` can fit.
    let count_tokens = |text: &str| bpe.encode_ordinary(text).len();
    let upper = candidates.len().min(request.max_tokens);
    let (mut low, mut high) = (0usize, upper);
    let mut best = render(&candidates[..0], &rank, &file_ids, &defs_by_path);
    let mut best_tokens = 0;
    while low < high {
        let mid = (low + high).div_ceil(2);
        let rendered = render(&candidates[..mid], &rank, &file_ids, &defs_by_path);
        let tokens = count_tokens(&rendered.1);
        if tokens <= request.max_tokens {
            low = mid;
            best = rendered;
            best_tokens = tokens;
        } else {
            high = mid - 1;
        }
    }
    let (files, text) = best;
    Ok(RepoMap {
        files,
        text,
        tokens: best_tokens,
        max_tokens: request.max_tokens,
        candidates: candidates.len(),
    })
}

/// The number of `key`, numbering it next if it is new.
fn number<'a>(numbers: &mut HashMap<&'a str, usize>, key: &'a str) -> usize {
    let next = numbers.len();
    *numbers.entry(key).or_insert(next)
}

/// How much a reference to `name` says about the relation between two files.
fn name_weight(name: &str, defining_files: usize, total_files: usize, mentioned: bool) -> f64 {
    let rarity = (1.0 + total_files as f64 / defining_files.max(1) as f64).ln();
    let length = (name.chars().count().min(24) as f64 / 8.0).max(0.25);
    let private = if name.starts_with('_') { 0.1 } else { 1.0 };
    let mention = if mentioned { MENTION_BOOST } else { 1.0 };
    rarity * length * private * mention
}

/// Renders the chosen definitions grouped by file, each with the headers of its enclosing
/// definitions, and `⋮` where lines are left out.
fn render(
    chosen: &[(f64, &DefinitionRow)],
    rank: &[f64],
    file_ids: &HashMap<&str, usize>,
    defs_by_path: &HashMap<&str, Vec<&DefinitionRow>>,
) -> (Vec<MapFile>, String) {
    let mut by_file: HashMap<&str, Vec<(f64, &DefinitionRow)>> = HashMap::new();
    for &(score, def) in chosen {
        by_file
            .entry(def.path.as_str())
            .or_default()
            .push((score, def));
    }
    let mut paths: Vec<&str> = by_file.keys().copied().collect();
    paths.sort();
    let mut files = Vec::with_capacity(paths.len());
    let mut text = String::new();
    for path in paths {
        let mut defs = by_file.remove(path).unwrap_or_default();
        defs.sort_by_key(|(_, def)| def.start_line);
        // Lines to show: each chosen definition plus the enclosing definitions in its file.
        let in_file: &[&DefinitionRow] = defs_by_path.get(path).map_or(&[], Vec::as_slice);
        let mut shown: Vec<(u32, usize, &str)> = Vec::new(); // line, depth, signature
        for (_, def) in &defs {
            shown.push((def.start_line, def.scope.len(), def.signature.as_str()));
            for depth in 0..def.scope.len() {
                if let Some(parent) = in_file
                    .iter()
                    .filter(|p| {
                        p.scope.len() == depth
                            && p.start_line <= def.start_line
                            && p.end_line >= def.end_line
                    })
                    .min_by_key(|p| p.end_line - p.start_line)
                {
                    shown.push((parent.start_line, depth, parent.signature.as_str()));
                }
            }
        }
        shown.sort();
        shown.dedup_by_key(|(line, _, _)| *line);
        text.push_str(path);
        text.push_str(":\n");
        let mut previous: Option<u32> = None;
        for (line, depth, signature) in &shown {
            if previous.is_none_or(|p| *line > p + 1) {
                text.push_str("⋮\n");
            }
            text.push('│');
            for _ in 0..*depth {
                text.push_str("    ");
            }
            text.push_str(signature);
            text.push('\n');
            previous = Some(*line);
        }
        text.push_str("⋮\n");
        files.push(MapFile {
            path: path.to_string(),
            rank: file_ids.get(path).map_or(0.0, |&id| rank[id]),
            definitions: defs
                .into_iter()
                .map(|(score, def)| MapDefinition {
                    name: def.name.clone(),
                    kind: def.kind.clone(),
                    start_line: def.start_line,
                    end_line: def.end_line,
                    scope: def.scope.clone(),
                    signature: def.signature.clone(),
                    rank: score,
                })
                .collect(),
        });
    }
    (files, text)
}

/// The cl100k BPE tokenizer (loaded once per process from data compiled into the binary).
pub fn cl100k() -> Result<&'static CoreBPE, IndexError> {
    static BPE: OnceLock<Result<CoreBPE, String>> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::cl100k_base().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|message| IndexError::Tokenizer(message.clone()))
}

/// Counts cl100k tokens in `text`.
pub fn count_tokens(text: &str) -> Result<usize, IndexError> {
    Ok(cl100k()?.encode_ordinary(text).len())
}
