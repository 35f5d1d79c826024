//! Queries over an indexed workspace: ranked chunks, definitions by name, references by name.

use std::collections::HashMap;

use globset::GlobMatcher;
use serde::{Deserialize, Serialize};

use crate::catalog::ChunkRow;
use crate::demotion::{DEFAULT_DEMOTIONS, DemotionWeights, FileFacts, QueryIntent, demote};
use crate::error::IndexError;
use crate::lexical::{DEFAULT_BOOSTS, FieldBoosts, LexicalFilter};
use crate::tokenizer::code_tokens;
use crate::workspace::Workspace;
use lode_syntax::Language;

/// A chunk search.
#[derive(Clone, Debug)]
pub struct SearchRequest {
    pub query: String,
    pub limit: usize,
    /// Gitignore-style glob over workspace-relative paths; a glob without `/` matches file names
    /// at any depth (`*.rs`), one with `/` matches from the root (`src/**/*.rs`).
    pub path_glob: Option<String>,
    pub language: Option<Language>,
    /// Field weights; `None` uses the tuned defaults (for benchmarks and experiments).
    pub boosts: Option<FieldBoosts>,
    /// Penalties of tests, fixtures, generated and data files and module headers; `None` uses
    /// the fitted defaults (for benchmarks and experiments).
    pub demotions: Option<DemotionWeights>,
}

impl SearchRequest {
    pub fn new(query: impl Into<String>) -> Self {
        SearchRequest {
            query: query.into(),
            limit: 10,
            path_glob: None,
            language: None,
            boosts: None,
            demotions: None,
        }
    }
}

/// One ranked chunk. Serialized as one line of `lode search --json` (a public contract:
/// fields are only ever added).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    /// Relative to the workspace root, `/`-separated.
    pub path: String,
    /// 1-based, inclusive.
    pub start_line: u32,
    pub end_line: u32,
    pub score: f32,
    pub symbol: Option<String>,
    pub kind: Option<String>,
    pub language: String,
    /// A few lines of the chunk around its best-matching line.
    pub snippet: String,
    /// Enclosing definitions of `symbol`, outermost first.
    pub scope: Vec<String>,
}

/// How a symbol's name matched the query, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NameMatch {
    Exact,
    ExactIgnoringCase,
    Prefix,
    Substring,
    Fuzzy,
}

/// A definition found by name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SymbolHit {
    pub name: String,
    pub kind: String,
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub scope: Vec<String>,
    pub signature: String,
    pub language: String,
    #[serde(rename = "match")]
    pub name_match: NameMatch,
}

/// A reference found by name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReferenceHit {
    pub name: String,
    pub kind: String,
    pub path: String,
    pub line: u32,
    pub column: u32,
    pub scope: Vec<String>,
    pub language: String,
}

/// Longest name `symbols` and `references` accept.
pub const MAX_NAME_BYTES: usize = 512;

/// Candidates ranked before demotions when `limit` are wanted: a demoted chunk's place goes to
/// one further down.
pub(crate) fn demotion_depth(limit: usize) -> usize {
    (limit * 5).max(50)
}

/// Lines of context in a snippet.
const SNIPPET_LINES: usize = 4;

impl Workspace {
    /// Ranked chunks for a free-text or identifier query (BM25 over the code-aware fields).
    pub fn search(&self, request: &SearchRequest) -> Result<Vec<SearchHit>, IndexError> {
        let demotions = request.demotions.unwrap_or(DEFAULT_DEMOTIONS);
        if demotions == DemotionWeights::NONE {
            let ranked = self.lexical_ranked(request, request.limit)?;
            return self.hits_for(&request.query, ranked);
        }
        // Deeper than asked: a demoted chunk's place goes to one further down.
        let mut ranked = self.lexical_ranked(request, demotion_depth(request.limit))?;
        let best = ranked.first().map_or(0.0, |&(_, score)| score);
        let mut rows = HashMap::new();
        self.demote_ranked(
            request,
            &mut ranked,
            &mut rows,
            crate::hybrid::spread_prior::BM25_OF_BEST * best,
        )?;
        ranked.truncate(request.limit);
        self.hits_with_rows(&request.query, ranked, rows)
    }

    /// Demotes the tests, fixtures, generated and data files and module headers of `ranked`
    /// (see `demotion`) by `unit` (the ranking's typical spread: BM25's for lexical search) times
    /// their weights, reading
    /// the rows `rows` lacks into it.
    pub(crate) fn demote_ranked(
        &self,
        request: &SearchRequest,
        ranked: &mut [(i64, f32)],
        rows: &mut HashMap<i64, ChunkRow>,
        unit: f32,
    ) -> Result<(), IndexError> {
        let weights = request.demotions.unwrap_or(DEFAULT_DEMOTIONS);
        if weights == DemotionWeights::NONE || ranked.is_empty() {
            return Ok(());
        }
        let missing = self.chunk_rows(ranked.iter().map(|&(id, _)| id), rows)?;
        rows.extend(missing);
        // The files of the ranked chunks only: `rows` may also hold the other candidates that
        // fusion read (twice as many), whose files demotion never looks at.
        let mut files: HashMap<String, (u64, Option<String>)> = HashMap::new();
        self.with_catalog(|catalog| {
            for row in ranked.iter().filter_map(|(id, _)| rows.get(id)) {
                if files.contains_key(&row.path) {
                    continue;
                }
                let size = catalog.file_size(&row.path)?.unwrap_or(0);
                // Kept for every ranked chunk of the file, whichever of them comes first here.
                let first = if row.start_line == 1 {
                    Some(row.text.clone()) // the row itself is the file's first chunk
                } else {
                    catalog.first_chunk_text(&row.path)?
                };
                files.insert(row.path.clone(), (size, first));
            }
            Ok(())
        })?;
        let intent = QueryIntent::of(&request.query);
        demote(
            ranked,
            rows,
            |row| {
                let (size, first) = files
                    .get(&row.path)
                    .map_or((0, None), |(size, first)| (*size, first.as_deref()));
                FileFacts {
                    size,
                    first_chunk: first,
                }
            },
            &intent,
            weights,
            unit,
        );
        Ok(())
    }

    /// The BM25 ranking of `request` as (chunk id, score), at most `depth`.
    pub(crate) fn lexical_ranked(
        &self,
        request: &SearchRequest,
        depth: usize,
    ) -> Result<Vec<(i64, f32)>, IndexError> {
        let paths = match &request.path_glob {
            Some(glob) => {
                let matcher = path_matcher(glob)?;
                let files = self.with_catalog(|catalog| catalog.files())?;
                Some(
                    files
                        .into_keys()
                        .filter(|path| matcher.is_match(path))
                        .collect(),
                )
            }
            None => None,
        };
        let filter = LexicalFilter {
            language: request.language.map(|l| l.name().to_string()),
            paths,
        };
        self.lexical().search(
            &request.query,
            &filter,
            request.boosts.unwrap_or(DEFAULT_BOOSTS),
            depth,
        )
    }

    /// Search hits for ranked chunk ids (ids no longer in the catalog are skipped).
    pub(crate) fn hits_for(
        &self,
        query: &str,
        ranked: Vec<(i64, f32)>,
    ) -> Result<Vec<SearchHit>, IndexError> {
        self.hits_with_rows(query, ranked, HashMap::new())
    }

    /// [`Self::hits_for`] given the catalog rows of some of the chunks, read by the caller
    /// (the rest are read here).
    pub(crate) fn hits_with_rows(
        &self,
        query: &str,
        ranked: Vec<(i64, f32)>,
        mut rows: HashMap<i64, ChunkRow>,
    ) -> Result<Vec<SearchHit>, IndexError> {
        let missing = self.chunk_rows(ranked.iter().map(|&(id, _)| id), &rows)?;
        rows.extend(missing);
        let query_terms = token_texts(query);
        let mut hits = Vec::with_capacity(ranked.len());
        for (id, score) in ranked {
            let Some(mut row) = rows.remove(&id) else {
                continue;
            };
            // When the query names one of several definitions in the chunk, report that one.
            if let Some(name) = best_matching_name(&query_terms, &row.defined_names)
                && row.symbol.as_deref() != Some(name)
                && let Some(def) = self.with_catalog(|catalog| {
                    catalog.definition_in_lines(&row.path, name, row.start_line, row.end_line)
                })?
            {
                row.symbol = Some(def.name);
                row.kind = Some(def.kind);
                row.scope = def.scope;
            }
            hits.push(SearchHit {
                snippet: snippet(&row.text, &query_terms),
                path: row.path,
                start_line: row.start_line,
                end_line: row.end_line,
                score,
                symbol: row.symbol,
                kind: row.kind,
                language: row.language,
                scope: row.scope,
            });
        }
        Ok(hits)
    }

    /// The catalog rows of the chunks `ids` that `read` lacks.
    pub(crate) fn chunk_rows(
        &self,
        ids: impl Iterator<Item = i64>,
        read: &HashMap<i64, ChunkRow>,
    ) -> Result<HashMap<i64, ChunkRow>, IndexError> {
        let mut ids: Vec<i64> = ids.filter(|id| !read.contains_key(id)).collect();
        ids.sort_unstable();
        ids.dedup();
        self.with_catalog(|catalog| catalog.chunks_by_id(&ids))
    }

    /// Definitions whose name matches `query` exactly, ignoring case, by prefix, by substring or
    /// fuzzily (in that order of preference), at most `limit`.
    pub fn symbols(&self, query: &str, limit: usize) -> Result<Vec<SymbolHit>, IndexError> {
        let query = query.trim();
        if query.is_empty() {
            return Err(IndexError::InvalidQuery("the symbol name is empty".into()));
        }
        if query.len() > MAX_NAME_BYTES {
            return Err(IndexError::InvalidQuery(format!(
                "a symbol name is at most {MAX_NAME_BYTES} bytes, this one has {}",
                query.len()
            )));
        }
        // Exact, case-insensitive and prefix matches come from the name index; the full scan
        // for substring and fuzzy matches runs only when those do not fill the limit.
        let lower = query.to_lowercase();
        let indexed = self.with_catalog(|catalog| {
            catalog.definition_names_with_prefix(&lower, limit.max(1) * 8)
        })?;
        let mut matched: Vec<(NameMatch, usize, String)> = if indexed.len() >= limit {
            indexed
                .into_iter()
                .filter_map(|name| {
                    let (how, penalty) = match_name(query, &name)?;
                    Some((how, penalty, name))
                })
                .collect()
        } else {
            // Every name is a candidate: most are ruled out by their letters alone, and the
            // rest are matched on both cores.
            use rayon::prelude::*;
            let table = self.all_definition_names()?;
            let wanted = query_mask(query);
            let query_lower = query.to_lowercase();
            // The masks are scanned alone, a contiguous slice in a tight loop per block;
            // only the names that pass are touched.
            const BLOCK: usize = 1 << 16;
            let passing: Vec<usize> = table
                .masks
                .par_chunks(BLOCK)
                .enumerate()
                .flat_map_iter(|(block, masks)| {
                    masks
                        .iter()
                        .enumerate()
                        .filter(move |(_, mask)| **mask & wanted == wanted)
                        .map(move |(offset, _)| block * BLOCK + offset)
                })
                .collect();
            passing
                .par_iter()
                .map(|&position| &table.names[position])
                .map_init(String::new, |lower, name| {
                    let (how, penalty) = if name.is_ascii() {
                        lower.clear();
                        lower.push_str(name);
                        lower.make_ascii_lowercase();
                        match_lowered(query, &query_lower, name, lower)?
                    } else {
                        match_name(query, name)?
                    };
                    Some((how, penalty, name.clone()))
                })
                .flatten()
                .collect()
        };
        matched.sort_by(|a, b| (a.0, a.1, a.2.len(), &a.2).cmp(&(b.0, b.1, b.2.len(), &b.2)));
        let mut hits = Vec::new();
        for (how, _, name) in matched {
            if hits.len() >= limit {
                break;
            }
            let rows = self.with_catalog(|catalog| catalog.definitions_named(&name))?;
            hits.extend(rows.into_iter().map(|row| SymbolHit {
                name: row.name,
                kind: row.kind,
                path: row.path,
                start_line: row.start_line,
                end_line: row.end_line,
                scope: row.scope,
                signature: row.signature,
                language: row.language,
                name_match: how,
            }));
        }
        hits.truncate(limit);
        Ok(hits)
    }

    /// Every distinct defined name: read from the catalog once per generation (a search per
    /// keystroke in an editor, or every query a daemon serves, reads it from memory while the
    /// index does not change).
    fn all_definition_names(&self) -> Result<std::sync::Arc<NameTable>, IndexError> {
        self.per_generation(&self.definition_names, || {
            let names = self.with_catalog(|catalog| catalog.definition_names())?;
            let masks = names.iter().map(|name| name_mask(name)).collect();
            Ok(std::sync::Arc::new(NameTable { names, masks }))
        })
    }

    /// References to exactly `name`, in path and line order, at most `limit`.
    pub fn references(&self, name: &str, limit: usize) -> Result<Vec<ReferenceHit>, IndexError> {
        let name = name.trim();
        if name.is_empty() {
            return Err(IndexError::InvalidQuery("the name is empty".into()));
        }
        if name.len() > MAX_NAME_BYTES {
            return Err(IndexError::InvalidQuery(format!(
                "a name is at most {MAX_NAME_BYTES} bytes, this one has {}",
                name.len()
            )));
        }
        let rows = self.with_catalog(|catalog| catalog.references_named(name, limit))?;
        Ok(rows
            .into_iter()
            .map(|row| ReferenceHit {
                name: row.name,
                kind: row.kind,
                path: row.path,
                line: row.line,
                column: row.column,
                scope: row.scope,
                language: row.language,
            })
            .collect())
    }
}

/// Compiles a user's path glob with gitignore-like anchoring ([`lode_vectors::path_glob_matcher`]).
pub fn path_matcher(glob: &str) -> Result<GlobMatcher, IndexError> {
    lode_vectors::path_glob_matcher(glob).map_err(|e| IndexError::Glob {
        glob: glob.to_string(),
        message: e.to_string(),
    })
}

/// The distinct defined names, each with its [`name_mask`].
pub(crate) struct NameTable {
    names: Vec<String>,
    masks: Vec<u32>,
}

/// Which characters a name holds, ignoring case and underscores, as bits (`a`–`z`; the digits
/// folded into five bits, `0` with `5`, `1` with `6` and so on; one for anything else): 32 bits,
/// so that the table of masks a query scans is half the memory. Every [`NameMatch`] kind needs
/// each character of the lowercased query, underscores aside (fuzzy matches skip them),
/// somewhere in the lowercased name, so a name whose mask lacks a bit of [`query_mask`] cannot
/// match. A name with any non-ASCII character gets every bit: lowercasing outside ASCII can
/// yield ASCII letters (the Kelvin sign is `k`).
pub(crate) fn name_mask(name: &str) -> u32 {
    if !name.is_ascii() {
        return u32::MAX;
    }
    ascii_mask(name)
}

/// The bit for characters other than letters, digits and `_`.
const OTHER_BIT: u32 = 1 << 31;

/// The bits a matching name must hold (see [`name_mask`]); characters that stay non-ASCII
/// after lowercasing require nothing.
pub(crate) fn query_mask(query: &str) -> u32 {
    ascii_mask(&query.to_lowercase()) & !OTHER_BIT
}

fn ascii_mask(text: &str) -> u32 {
    let mut mask = 0u32;
    for byte in text.bytes() {
        mask |= match byte.to_ascii_lowercase() {
            b'_' => 0,
            letter @ b'a'..=b'z' => 1 << (letter - b'a'),
            digit @ b'0'..=b'9' => 1 << (26 + (digit - b'0') % 5),
            _ => OTHER_BIT,
        };
    }
    mask
}

/// How well a name answers a symbol query (smaller is better): [`match_name`]'s kind and
/// penalty, then the shorter name. How an editor's `workspace/symbol` merges its buffers' names
/// with the index's.
pub type SymbolRank = (NameMatch, usize, usize);

/// The [`SymbolRank`] of a name, `None` when it does not match.
pub fn symbol_rank(query: &str, name: &str) -> Option<SymbolRank> {
    let (how, penalty) = match_name(query, name)?;
    Some((how, penalty, name.len()))
}

/// A query's letters, lowercased, without underscores: every name [`match_name`] accepts
/// (exactly, by prefix, substring or fuzzily, underscores optional) holds them in order. Lets a
/// search over thousands of names skip most of them without allocating.
pub struct QueryLetters(Option<Vec<u8>>);

impl QueryLetters {
    pub fn of(query: &str) -> QueryLetters {
        QueryLetters(query.is_ascii().then(|| {
            query
                .bytes()
                .filter(|&byte| byte != b'_')
                .map(|byte| byte.to_ascii_lowercase())
                .collect()
        }))
    }

    /// `false` only when `name` cannot match (non-ASCII queries are never ruled out here).
    pub fn may_match(&self, name: &str) -> bool {
        let Some(letters) = &self.0 else {
            return true;
        };
        if !name.is_ascii() {
            // Lowercasing some non-ASCII letters yields ASCII ones (the Kelvin sign is `k`).
            return true;
        }
        let mut wanted = letters.iter().peekable();
        for byte in name.bytes() {
            if wanted
                .peek()
                .is_some_and(|&&letter| letter == byte.to_ascii_lowercase())
            {
                wanted.next();
            }
        }
        wanted.peek().is_none()
    }
}

/// How `name` matches a symbol query, and a penalty ordering matches of one kind (smaller is
/// better): what [`Workspace::symbols`] ranks by, for callers that merge in names of their own
/// (an editor's unsaved buffers).
pub fn match_name(query: &str, name: &str) -> Option<(NameMatch, usize)> {
    if name == query {
        return Some((NameMatch::Exact, 0));
    }
    match_lowered(query, &query.to_lowercase(), name, &name.to_lowercase())
}

/// [`match_name`] with both sides already lowercased (a query matched against many names
/// lowercases itself once; ASCII names are lowercased without allocating).
fn match_lowered(
    query: &str,
    query_lower: &str,
    name: &str,
    name_lower: &str,
) -> Option<(NameMatch, usize)> {
    if name == query {
        return Some((NameMatch::Exact, 0));
    }
    if name_lower == query_lower {
        return Some((NameMatch::ExactIgnoringCase, 0));
    }
    if name_lower.starts_with(query_lower) {
        return Some((NameMatch::Prefix, name.len() - query.len()));
    }
    if let Some(at) = name_lower.find(query_lower) {
        return Some((NameMatch::Substring, at));
    }
    fuzzy_gap(query_lower, name_lower).map(|gap| (NameMatch::Fuzzy, gap))
}

/// When every query character appears in `name` in order, the number of skipped characters
/// between the first and last match (smaller is a tighter match). Underscores in the query are
/// optional, so `getusr` finds `get_user`.
fn fuzzy_gap(query: &str, name: &str) -> Option<usize> {
    let wanted: Vec<char> = query.chars().filter(|&c| c != '_').collect();
    if wanted.len() < 2 {
        return None;
    }
    let mut next = 0;
    let mut first: Option<usize> = None;
    let mut last = 0;
    for (at, ch) in name.chars().enumerate() {
        if next < wanted.len() && ch == wanted[next] {
            first.get_or_insert(at);
            last = at;
            next += 1;
        }
    }
    if next < wanted.len() {
        return None;
    }
    let span = last - first.unwrap_or(0) + 1;
    // Allow at most as many gaps as matched characters, or the match is noise.
    let gaps = span - wanted.len();
    (gaps <= wanted.len() * 2).then_some(gaps)
}

/// The lowercase (unstemmed) token texts of `text`.
fn token_texts(text: &str) -> Vec<String> {
    code_tokens(text).into_iter().map(|t| t.text).collect()
}

/// The defined name sharing the most identifier parts with the query, if any shares one.
fn best_matching_name<'n>(query_terms: &[String], names: &'n [String]) -> Option<&'n str> {
    names
        .iter()
        .map(|name| {
            let parts = token_texts(name);
            let shared = query_terms
                .iter()
                .filter(|term| parts.contains(term))
                .count();
            (shared, std::cmp::Reverse(parts.len()), name)
        })
        .filter(|(shared, _, _)| *shared > 0)
        .max_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)))
        .map(|(_, _, name)| name.as_str())
}

/// A few lines of `text` around the line that contains the most query terms.
fn snippet(text: &str, query_terms: &[String]) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return String::new();
    }
    let best = lines
        .iter()
        .enumerate()
        .map(|(at, line)| {
            let tokens = token_texts(line);
            let hits = query_terms
                .iter()
                .filter(|term| tokens.contains(term))
                .count();
            (hits, std::cmp::Reverse(at))
        })
        .max()
        .map_or(
            0,
            |(hits, std::cmp::Reverse(at))| if hits == 0 { 0 } else { at },
        );
    let mut start = best.saturating_sub(1);
    while start < best && lines[start].trim().is_empty() {
        start += 1;
    }
    let end = (start + SNIPPET_LINES).min(lines.len());
    let mut window = &lines[start..end];
    while let Some((last, rest)) = window.split_last()
        && last.trim().is_empty()
        && !rest.is_empty()
    {
        window = rest;
    }
    let indent = window
        .iter()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start().len())
        .min()
        .unwrap_or(0);
    window
        .iter()
        .map(|line| line.get(indent..).unwrap_or(line.trim_start()).trim_end())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text form shared by `lode search` and `lode mcp`: `path:start-end  symbol`, then the
/// snippet indented, then a blank line.
impl std::fmt::Display for SearchHit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let symbol = self.symbol.as_deref().unwrap_or("");
        writeln!(
            f,
            "{}:{}-{}  {symbol}",
            self.path, self.start_line, self.end_line
        )?;
        for line in self.snippet.lines() {
            writeln!(f, "    {line}")?;
        }
        Ok(())
    }
}

/// `path:start-end  kind scope > name`, then the signature indented (no final newline).
impl std::fmt::Display for SymbolHit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}-{}  {} ",
            self.path, self.start_line, self.end_line, self.kind
        )?;
        for scope in &self.scope {
            write!(f, "{scope} > ")?;
        }
        write!(f, "{}\n    {}", self.name, self.signature)
    }
}

/// `path:line:column  kind name  in scope` (no final newline).
impl std::fmt::Display for ReferenceHit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}:{}  {} {}",
            self.path, self.line, self.column, self.kind, self.name
        )?;
        if !self.scope.is_empty() {
            write!(f, "  in {}", self.scope.join(" > "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_name_ruled_out_by_its_letters_never_matches() {
        let names = [
            "spawn_blocking",
            "SpawnBlocking",
            "spawn",
            "get_user",
            "GetUser",
            "x1",
            "\u{212A}ey",
            "KEY",
            "naïve_parse",
            "parse",
            "p_a_r_s_e",
            "Ünïcode",
        ];
        let queries = [
            "spawn_blocking",
            "spbl",
            "getusr",
            "key",
            "\u{212A}EY",
            "x1",
            "naive",
            "ïve",
            "parse",
            "PARSE",
            "ünï",
            "_",
        ];
        for query in queries {
            for name in names {
                if name_mask(name) & query_mask(query) != query_mask(query) {
                    assert_eq!(
                        match_name(query, name),
                        None,
                        "{query:?} ruled out {name:?}"
                    );
                }
            }
        }
        assert_ne!(name_mask("spawn") & query_mask("spbl"), query_mask("spbl"));
        // The letters of a query rule out only names that cannot match either.
        for query in queries {
            let letters = QueryLetters::of(query);
            for name in names {
                if !letters.may_match(name) {
                    assert_eq!(
                        symbol_rank(query, name),
                        None,
                        "{query:?} ruled out {name:?}"
                    );
                }
            }
        }
        assert!(!QueryLetters::of("spbl").may_match("spawn"));
    }

    #[test]
    fn a_symbol_rank_prefers_the_better_match_then_the_shorter_name() {
        let mut names = [
            "IndexWriterBuilder",
            "MyIndexWriter",
            "IndexWriter",
            "indexwriter",
        ];
        names.sort_by_key(|name| symbol_rank("IndexWriter", name));
        assert_eq!(
            names,
            [
                "IndexWriter",
                "indexwriter",
                "IndexWriterBuilder",
                "MyIndexWriter"
            ]
        );
        assert_eq!(symbol_rank("IndexWriter", "index"), None);
        assert_eq!(symbol_rank("zzz", "IndexWriter"), None);
    }

    use super::*;

    #[test]
    fn names_match_in_order_of_preference() {
        assert_eq!(match_name("Index", "Index"), Some((NameMatch::Exact, 0)));
        assert_eq!(
            match_name("index", "Index"),
            Some((NameMatch::ExactIgnoringCase, 0))
        );
        assert_eq!(
            match_name("Ind", "IndexWriter").map(|m| m.0),
            Some(NameMatch::Prefix)
        );
        assert_eq!(
            match_name("writer", "IndexWriter").map(|m| m.0),
            Some(NameMatch::Substring)
        );
        assert_eq!(
            match_name("idxwr", "IndexWriter").map(|m| m.0),
            Some(NameMatch::Fuzzy)
        );
        assert_eq!(match_name("zzz", "IndexWriter"), None);
    }

    #[test]
    fn globs_without_a_slash_match_at_any_depth() {
        let rust = path_matcher("*.rs").unwrap();
        assert!(rust.is_match("a/b/c.rs"));
        assert!(!rust.is_match("a/b/c.py"));
        let src = path_matcher("src/**/*.rs").unwrap();
        assert!(src.is_match("src/x/y.rs"));
        assert!(!src.is_match("tests/src/y.rs"));
        let dir = path_matcher("server/").unwrap();
        assert!(dir.is_match("server/index/lib.rs"));
    }

    #[test]
    fn snippet_centres_on_the_best_line() {
        let text =
            "fn a() {\n    one();\n    two();\n    parse_config();\n    three();\n    four();\n}";
        let snip = snippet(text, &["parse".to_string(), "config".to_string()]);
        assert_eq!(snip, "two();\nparse_config();\nthree();\nfour();");
    }
}
