//! Hybrid retrieval: BM25 hits, vector hits and symbol-name matches fused into one ranking.
//!
//! The query's shape picks the fusion: an identifier (`parse_config`, `HashMap::new`) leans on
//! BM25 and symbol names by weighted reciprocal rank fusion (a chunk at rank `r`, 1-based, of a
//! list adds `weight / (k + r)`); a sentence (`read the config from disk`) adds each list's
//! standard scores (how far a chunk stands above that list's mean, in its spread), so the list
//! whose best hits stand out for this query has the larger say, plus the standard score of
//! each candidate's head cosine (`heads`) and a prior for candidates that do something (a
//! function, a method, prose) over those that only declare (see `CALLABLE_WEIGHT`). The
//! weights were tuned on `bench/retrieval.py` with `bench/semantic/fusion.py` and per language
//! on `bench/multilang` with `bench/multilang/fusion.py` and `signals.py` ([`FusionWeights`]).

use std::collections::{HashMap, HashSet};
use std::str::FromStr;

use crate::catalog::ChunkRow;
use crate::embed::SimilarityScale;
use crate::error::IndexError;
use crate::search::{NameMatch, SearchHit, SearchRequest, path_matcher};
use crate::vectors::VectorFilter;
use crate::workspace::Workspace;
use lode_syntax::{DefKind, Language};

/// Chunk ids with their scores, best first.
type RankedIds = Vec<(i64, f32)>;

/// How `search_with_mode` ranks chunks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SearchMode {
    /// BM25 over the code-aware fields only.
    Lexical,
    /// Nearest chunk vectors only.
    Semantic,
    /// BM25, vectors and symbol names fused.
    #[default]
    Hybrid,
}

impl SearchMode {
    pub fn name(self) -> &'static str {
        match self {
            SearchMode::Lexical => "lexical",
            SearchMode::Semantic => "semantic",
            SearchMode::Hybrid => "hybrid",
        }
    }
}

impl FromStr for SearchMode {
    type Err = IndexError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "lexical" => Ok(SearchMode::Lexical),
            "semantic" => Ok(SearchMode::Semantic),
            "hybrid" => Ok(SearchMode::Hybrid),
            other => Err(IndexError::InvalidQuery(format!(
                "unknown search mode {other:?} (lexical, semantic, hybrid)"
            ))),
        }
    }
}

/// What a query looks like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryShape {
    /// One identifier or path-like token: `parse_config`, `HashMap::new`, `src/lib.rs`.
    Identifier,
    /// A few words, some of them identifiers.
    Mixed,
    /// A sentence of plain words.
    NaturalLanguage,
}

/// A whitespace-separated word of a query without the punctuation around it (quotes,
/// backticks, a trailing `?` or `,`).
fn without_punctuation(word: &str) -> &str {
    word.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_'))
}

/// Whether a whitespace-separated word of a query looks like code: `snake_case`, `camelCase`,
/// `a::b`, `a.b`, `a/b`, `f(`.
fn identifier_like(word: &str) -> bool {
    let trimmed = without_punctuation(word);
    trimmed.contains('_')
        || trimmed.contains("::")
        || trimmed.contains('.')
        || trimmed.contains('/')
        || trimmed.contains('(')
        || trimmed
            .char_indices()
            .skip(1)
            .any(|(_, c)| c.is_uppercase())
            && trimmed.chars().any(|c| c.is_lowercase())
}

/// Classifies a query by its words.
pub fn query_shape(query: &str) -> QueryShape {
    let words: Vec<&str> = query.split_whitespace().collect();
    let identifiers = words.iter().filter(|w| identifier_like(w)).count();
    match words.len() {
        0 => QueryShape::Mixed,
        1 if identifiers == 1 => QueryShape::Identifier,
        n if identifiers == 0 && n >= 3 => QueryShape::NaturalLanguage,
        _ => QueryShape::Mixed,
    }
}

/// How the ranked lists are combined.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FusionMethod {
    /// Weighted reciprocal rank fusion: a chunk at rank `r` (0-based) of a list adds
    /// `weight / (k + r + 1)`. Only ranks count, so lists with incomparable scores mix.
    ReciprocalRank { k: f32 },
    /// Weighted sum of scores: BM25 divided by the best BM25 score of the query, cosine
    /// similarity as it is, 1 for a symbol match. Keeps how far apart hits are, which ranks
    /// throw away.
    Scores,
    /// Weighted sum of standard scores: BM25 and cosine each as `(score - mean) / spread` over
    /// their own list of candidates, for every chunk on either list (a chunk BM25 did not list
    /// counts as the list's lowest score; the cosine of one the vectors did not list is read
    /// from the store, or is the embedder's floor when under it). A query whose best BM25 hits
    /// stand far above the rest leans on BM25, one whose nearest vectors do leans on those.
    /// Symbol and table lists, if weighted, add their scores as they are.
    Standardised,
}

/// Weights of the fused lists and how they are fused.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FusionWeights {
    pub lexical: f32,
    pub semantic: f32,
    pub symbols: f32,
    /// The built-in table's cosine over the other lists' candidates, for workspaces whose
    /// vectors come from another embedder (0 turns it off; see `table_signal`).
    pub table: f32,
    /// The cosine between the query and each candidate's head (symbol, scope, first line),
    /// embedded at query time, as a standard score (standardised fusion only; 0 turns it off;
    /// see `heads`).
    pub heads: f32,
    /// What a candidate that does something (a function or method, a passage of prose, code
    /// that declares nothing) gains over one that only declares (a type, a field, a constant,
    /// a module, a macro), in standard-score units (standardised fusion only; 0 turns it off;
    /// see [`CALLABLE_WEIGHT`]).
    pub callables: f32,
    pub method: FusionMethod,
}

impl FusionWeights {
    /// The tuned weights for a query shape, an embedder's kind of similarity and the
    /// workspace's main code language.
    pub fn for_query(
        shape: QueryShape,
        similarities: SimilarityScale,
        language: Option<Language>,
    ) -> FusionWeights {
        match (shape, similarities) {
            (QueryShape::Identifier, _) => FusionWeights {
                lexical: 1.0,
                semantic: 0.15,
                symbols: 1.0,
                table: 0.0,
                heads: 0.0,
                callables: 0.0,
                method: FusionMethod::ReciprocalRank { k: 20.0 },
            },
            // Tuned offline by bench/semantic/fusion.py on both retrieval suites with the
            // built-in table (trained against this very score, see train.py --bm25-weight):
            // BM25 / best BM25 + 1.5 x cosine, MRR@10 0.400 (small) and 0.423 (large), against
            // 0.393 / 0.421 with weight 1 and lexical alone 0.309 / 0.349. RRF with semantic 1,
            // k = 5 does better on the small suite (0.404) but worse on the large (0.415), and
            // the large suite's best RRF (0.420) gives 0.384 on the small. Symbol matches hurt
            // on sentences, even those naming an identifier: BM25 already weighs symbol names,
            // and the extra list crowds out the semantic one.
            //
            // The weight of the cosine depends on the language (bench/multilang, issue 27): fitted
            // on the training split's packages (scores:1,W,0 for W in 0..2), then checked on the
            // evaluation split. Python and JavaScript: 0.5 (eval MRR@10 0.303 and 0.217, against
            // 0.294 and 0.208 with 1.5, and lexical alone 0.295 and 0.213); Go: 1.0 (0.284
            // against 0.276, lexical 0.274); TypeScript and Rust keep 1.5 (their best on the
            // training split within its noise). Refitted with 300-byte chunks and the table
            // blended from five languages (bench/README.md, "The blend ships"): unchanged.
            //
            // Standard scores replaced the scaled sum after that (bench/multilang/fusion.py:
            // weights fitted on the training split, checked on the evaluation split, both
            // listed in bench/README.md under "Fusion by standard scores"): evaluation MRR@10
            // Python 0.397 -> 0.403, JavaScript 0.270 -> 0.274, TypeScript 0.269 -> 0.276,
            // Go 0.373 -> 0.384, Rust 0.232 -> 0.245 (through the binary); the Rust suites of
            // bench/retrieval.py 0.378 -> 0.393 (small) and 0.426 -> 0.431 (large).
            (QueryShape::Mixed | QueryShape::NaturalLanguage, SimilarityScale::Calibrated) => {
                FusionWeights {
                    lexical: 1.0,
                    semantic: calibrated_semantic_weight(language),
                    symbols: 0.0,
                    table: 0.0,
                    heads: heads_weight(language),
                    callables: CALLABLE_WEIGHT,
                    method: FusionMethod::Standardised,
                }
            }
            // Other embedders (tuned with MiniLM, bench/semantic/fusion.py --embedder minilm):
            // their cosine adds little to BM25 on doc-sentence -> code retrieval (RRF with
            // semantic 0.4, k = 10, used until 11-24: MRR@10 0.330 small, 0.371 large, against
            // lexical 0.309 / 0.349). The built-in table's cosine over the candidates of both
            // lists lifts it to 0.399 / 0.429 with these weights (table 1.5-2 with MiniLM
            // 0.75-1.5 stay within 0.01 of that); the table with BM25 and no MiniLM gives
            // 0.395 / 0.424 on the same lists, so most of the gain is the table's.
            (QueryShape::Mixed | QueryShape::NaturalLanguage, SimilarityScale::RankOnly) => {
                FusionWeights {
                    lexical: 1.0,
                    semantic: 1.0,
                    symbols: 0.0,
                    table: 2.0,
                    heads: 0.0,
                    callables: 0.0,
                    method: FusionMethod::Scores,
                }
            }
        }
    }
}

/// The weight of the candidates' head cosines on sentences (standard scores), by the
/// workspace's main language. Studied offline on bench/multilang's lists (multilang/heads.py):
/// of the heads tried (the symbol alone, with its scope, with the first line, the first line
/// alone, the line naming the symbol), symbol + scope + first line at 0.3 gave the best mean
/// of default / best single mode over both splits and five languages, 1.129 against 1.096
/// without heads; 0.2 and 0.4 are within 0.006 of it. Rust takes 0.1: the Rust suites of
/// bench/retrieval.py (MRR@10, small / large) give 0.402 / 0.430 without heads, 0.400 /
/// 0.433 at 0.1 and 0.389 / 0.435 at 0.3, and the small suite may not lose more than 1%.
/// Refitted per language on the training split with the table of 11-27 (a weight moves only
/// when the split prefers another by more than 0.01 MRR@10): JavaScript's prefers 0.5 (0.427
/// against 0.416 at 0.3); Python, TypeScript and Go stay within 0.005 of their best at 0.3.
fn heads_weight(language: Option<Language>) -> f32 {
    match language {
        Some(Language::Rust) => 0.1,
        Some(Language::JavaScript) => 0.5,
        _ => 0.3,
    }
}

/// How much a candidate that does something outranks one that only declares, on sentences
/// (standard scores): a sentence says what code does, and what does it is a function or a
/// method, while a type's head, a list of fields, a constant or a macro only names things.
/// Prose (a Markdown section, a text paragraph) and code that defines nothing (a script's
/// statements, a callback passed at the top level) count as doing something, and so does a
/// declaration the query names in code form (`RetryPolicy`, `max_retries`).
///
/// Fitted on bench/multilang's training splits, all eleven languages, with the candidates of
/// [`candidate_depth`] (`multilang/signals.py`, mean of default / best single mode): 1.120
/// without the prior, 1.167 / 1.176 / 1.177 / 1.183 / 1.174 / 1.168 at 1 / 1.5 / 2 / 2.5 / 3 /
/// 4. One weight for every language: each split's own best lies between 1.5 (TypeScript,
/// Ruby, PHP) and 4 (Python, Go, Rust, Java, C), and 2.5 is within 0.026 of every one's best
/// (the farthest, TypeScript's 60 queries, where interfaces and fields are a tenth of the
/// answers: 1.232 against 1.258).
const CALLABLE_WEIGHT: f32 = 2.5;

/// Whether a chunk only declares things: its definition is a type, a field, a constant, a
/// module, a macro and the like, not a function, a method or a document's section. A
/// JavaScript variable is not counted: the grammar already makes `const f = () => ...` a
/// function, and what it leaves a variable is mostly a module-level binding to a call that
/// makes one (`createSelector(...)`, lodash's `var baseEach = createBaseEach(baseForOwn)`, a
/// quarter of bench/multilang's JavaScript answers). JavaScript's training split alone would
/// count them as declarations (bench/README.md, "The callable prior").
fn declares_only(row: &ChunkRow) -> bool {
    let Some(kind) = row.kind.as_deref().and_then(DefKind::from_name) else {
        return false;
    };
    match kind {
        DefKind::Function | DefKind::Method | DefKind::Section => false,
        DefKind::Variable => Language::from_name(&row.language) != Some(Language::JavaScript),
        _ => true,
    }
}

/// The names a query writes in code form (its identifier-like words, stripped of the
/// punctuation around them): a declaration so named is what the query is about.
fn names_in_code_form(query: &str) -> HashSet<&str> {
    query
        .split_whitespace()
        .filter(|word| identifier_like(word))
        .map(without_punctuation)
        .filter(|name| !name.is_empty())
        .collect()
}

/// Score 1 for each of `candidates` that does something (see [`CALLABLE_WEIGHT`]), for fusion
/// beside the standard scores; a candidate no longer in the catalog gets nothing.
fn callable_prior(query: &str, candidates: &[i64], rows: &HashMap<i64, ChunkRow>) -> RankedIds {
    let named = names_in_code_form(query);
    candidates
        .iter()
        .filter_map(|id| {
            let row = rows.get(id)?;
            let named_here = row.symbol.as_deref().is_some_and(|s| named.contains(s));
            (!declares_only(row) || named_here).then_some((*id, 1.0))
        })
        .collect()
}

/// The built-in table's weight beside BM25 on sentences (standard scores), by the workspace's
/// main language: each language's best on the training split of bench/multilang. Rust's split
/// prefers 2.0 by 0.004 (0.388 against 0.384 at 1.5); the two Rust suites of
/// bench/retrieval.py, six times as many queries, prefer 1.5 (scored offline: 0.395 and 0.431
/// against 0.395 and 0.421). A workspace with no code language gets 1, within 0.01 of the
/// best on every evaluation set but JavaScript's (0.266 against 0.274). After small files were
/// split at their definitions (chunk schema 8) JavaScript's split prefers 0.5 (0.371 against
/// 0.351 at 0.25; the evaluation split: 0.336 against 0.337); the others keep theirs. Refitted
/// again once the comments field was dropped: Python's and JavaScript's 0.5 are their best, and
/// the others are within 0.012 of it (TypeScript's 60 queries prefer 1.0, Go's 0.75). With the
/// heads' cosine beside them ([`heads_weight`]) Go's split prefers 0.5 (0.539 against 0.530 at
/// 1.0); the others keep theirs. With the table of 11-27 (more TypeScript pairs, README prose
/// held still) TypeScript's split prefers 1.0 (0.350 against 0.327 at 1.25, 60 queries); the
/// others stay within 0.004 of their best.
fn calibrated_semantic_weight(language: Option<Language>) -> f32 {
    match language {
        Some(Language::JavaScript | Language::Python | Language::Go) => 0.5,
        Some(Language::TypeScript | Language::Tsx) => 1.0,
        Some(Language::Rust) => 1.5,
        // Issue 43's sets (bench/multilang, heads at 0.3): C's training split prefers 0.5
        // (MRR@10 0.482 against 0.456 at 1.0; BM25 alone 0.490: its cosine adds little to
        // doc comments that mostly restate the code). C#'s stays within 0.01 of its best at
        // 1.0 (0.528 against 0.535 at 0.5, 63 queries). Ruby's prefers 0.75 (0.416 against
        // 0.397 at 1.0; BM25 alone 0.393). With the ten-language table of 12-07, C++'s and
        // PHP's training splits prefer 0.5 (`heads.py --semantic-weights`: 0.270 against 0.262
        // at 1.0, 275 queries; 0.396 against 0.384, 360 queries); on their evaluation splits
        // through the binary, 0.238 against 0.220 and 0.400 against 0.380.
        Some(Language::C | Language::Cpp | Language::Php) => 0.5,
        Some(Language::Ruby) => 0.75,
        // Not fitted yet (no retrieval set of their own, or no fit yet: Java):
        // the weight of a workspace with no code language, within 0.01 of the best on every
        // fitted set but JavaScript's.
        Some(_) | None => 1.0,
    }
}

/// How a list's spread is estimated. A spread measured over a handful of candidates (a small
/// workspace, a query few chunks clear the floor for) says little: two hits are always one
/// spread apart, however close their scores. So the measured variance is pooled with a typical
/// spread worth `weight` candidates, and a cosine spread is never below `min_cosine`.
/// Typical spreads over the top 50 on bench/multilang's evaluation sets: cosine 0.044-0.053
/// (median per language), BM25 0.116-0.134 of the query's best score. A weight of 5 costs no
/// language more than 0.004 MRR@10 against none (bench/multilang/fusion.py), and a minimum
/// cosine spread of 0.02 is best or within 0.002 in every language.
pub(crate) mod spread_prior {
    pub const WEIGHT: f32 = 5.0;
    pub const COSINE: f32 = 0.05;
    pub const BM25_OF_BEST: f32 = 0.12;
    pub const MIN_COSINE: f32 = 0.02;
    /// Heads are a line long, so their cosines spread wider: 0.14-0.15 over a query's
    /// candidates (median per language on bench/multilang's evaluation sets).
    pub const HEAD_COSINE: f32 = 0.14;
}

/// Candidates taken from each list: enough for fusion to reorder, few enough to stay fast.
/// Standard scores take twice as many: with the callable prior a function BM25 ranks 60th
/// may still rise above the declarations ahead of it (bench/multilang's training splits, mean
/// of default / best single mode at the prior's weight: 1.178 with 50, 1.183 with 100).
fn candidate_depth(limit: usize, method: FusionMethod) -> usize {
    match method {
        FusionMethod::Standardised => (limit * 10).max(100),
        FusionMethod::ReciprocalRank { .. } | FusionMethod::Scores => (limit * 5).max(50),
    }
}

impl Workspace {
    /// Ranked chunks for `request` in the given mode. Semantic and hybrid need vectors
    /// ([`Workspace::has_vectors`]); without them they fail with [`IndexError::NoVectors`].
    pub fn search_with_mode(
        &self,
        request: &SearchRequest,
        mode: SearchMode,
    ) -> Result<Vec<SearchHit>, IndexError> {
        match mode {
            SearchMode::Lexical => self.search(request),
            // Only what clears the relevance floor; `search_semantic` also offers the nearest.
            SearchMode::Semantic => {
                let (ranked, _) = self.semantic_ranked(request, request.limit)?;
                self.hits_for(&request.query, ranked)
            }
            SearchMode::Hybrid => self.search_hybrid(request),
        }
    }

    /// Semantic search alone: the chunks that clear the embedder's relevance floor, or, when
    /// none does (a small workspace, a query about something it lacks), the nearest ones
    /// anyway with `Some(floor)`, so that the caller can say they are weak matches rather
    /// than print nothing.
    pub fn search_semantic(
        &self,
        request: &SearchRequest,
    ) -> Result<(Vec<SearchHit>, Option<f32>), IndexError> {
        let (ranked, _) = self.semantic_ranked(request, request.limit)?;
        if !ranked.is_empty() {
            return Ok((self.hits_for(&request.query, ranked)?, None));
        }
        let (nearest, _) = self.semantic_nearest(request, request.limit)?;
        let floor = self.embedder().map(|embedder| embedder.relevance_floor());
        match floor {
            Some(floor) if !nearest.is_empty() && floor.is_finite() => {
                Ok((self.hits_for(&request.query, nearest)?, Some(floor)))
            }
            _ => Ok((Vec::new(), None)),
        }
    }

    /// Hybrid search with the weights for the query's shape. This is what the agent's
    /// `search_code` tool and automatic context call.
    pub fn search_hybrid(&self, request: &SearchRequest) -> Result<Vec<SearchHit>, IndexError> {
        let similarities = self
            .embedder()
            .map_or(SimilarityScale::RankOnly, |e| e.similarity_scale());
        let weights = FusionWeights::for_query(
            query_shape(&request.query),
            similarities,
            self.main_language()?,
        );
        self.search_hybrid_with(request, weights)
    }

    /// The code language with the most indexed bytes (`None`: no code indexed), read from the
    /// catalog once per generation.
    pub fn main_language(&self) -> Result<Option<Language>, IndexError> {
        self.per_generation(&self.main_language, || {
            let bytes = self.with_catalog(|catalog| catalog.language_bytes())?;
            Ok(bytes
                .iter()
                .filter_map(|(name, _)| Language::from_name(name))
                .find(|language| !matches!(language, Language::Text | Language::Markdown)))
        })
    }

    /// Hybrid search with explicit fusion weights (benchmarks and experiments).
    pub fn search_hybrid_with(
        &self,
        request: &SearchRequest,
        weights: FusionWeights,
    ) -> Result<Vec<SearchHit>, IndexError> {
        let depth = candidate_depth(request.limit, weights.method);
        // The catalog rows of the chunks on either list, read once for the two signals that
        // embed them at query time (the table and the heads) and for the hits.
        let standardised = matches!(weights.method, FusionMethod::Standardised);
        let heads_wanted = weights.heads > 0.0 && standardised;
        let callables_wanted = weights.callables > 0.0 && standardised;
        let rows_wanted = weights.table > 0.0 || heads_wanted || callables_wanted;
        // BM25, the symbol names and the BM25 hits' rows are read while the vector search,
        // the longest step, runs on the other cores.
        let (lexical_side, semantic_side) = rayon::join(
            || {
                let lexical = self.lexical_ranked(request, depth)?;
                let symbols = if weights.symbols > 0.0 {
                    self.symbol_ranked(request)?
                } else {
                    Vec::new()
                };
                let rows = if rows_wanted {
                    self.chunk_rows(lexical.iter().map(|&(id, _)| id), &HashMap::new())?
                } else {
                    HashMap::new()
                };
                Ok::<_, IndexError>((lexical, symbols, rows))
            },
            || self.semantic_ranked(request, depth),
        );
        let (lexical, symbols, mut rows) = lexical_side?;
        let (mut semantic, query_vector) = semantic_side?;
        if rows_wanted {
            let more = self.chunk_rows(semantic.iter().map(|&(id, _)| id), &rows)?;
            rows.extend(more);
        }
        let table = if weights.table > 0.0 {
            self.table_signal(request, &lexical, &mut semantic, &query_vector, &rows)?
        } else {
            Vec::new()
        };
        // Fused deeper than asked, so that demoted chunks' places go to the next ones.
        let fused_depth = crate::search::demotion_depth(request.limit);
        let (mut fused, demotion_unit) = match weights.method {
            // Ranks' unit: what moving from first to sixth on a list of weight 1 costs.
            FusionMethod::ReciprocalRank { k } => (
                fuse(
                    &[
                        (&lexical, weights.lexical),
                        (&semantic, weights.semantic),
                        (&symbols, weights.symbols),
                        (&table, weights.table),
                    ],
                    k,
                    fused_depth,
                ),
                1.0 / (k + 1.0) - 1.0 / (k + 6.0),
            ),
            // BM25 scaled to its best: its typical spread is that share of 1.
            FusionMethod::Scores => (
                fuse_scores(
                    &[
                        (&scaled_to_best(&lexical), weights.lexical),
                        (&semantic, weights.semantic),
                        (&symbols, weights.symbols),
                        (&table, weights.table),
                    ],
                    fused_depth,
                ),
                spread_prior::BM25_OF_BEST * weights.lexical,
            ),
            FusionMethod::Standardised => {
                let (lexical, semantic, candidates) =
                    self.standard_scores(&lexical, semantic, &query_vector)?;
                let heads = if heads_wanted {
                    let cosines = self.head_cosines_of(&candidates, &rows, &query_vector)?;
                    let spread = Spread::of_head_cosines(&cosines);
                    spread.standardise(&cosines, &candidates, spread.mean)
                } else {
                    Vec::new()
                };
                let callables = if callables_wanted {
                    callable_prior(&request.query, &candidates, &rows)
                } else {
                    Vec::new()
                };
                // Standard scores: the unit is one.
                (
                    fuse_scores(
                        &[
                            (&lexical, weights.lexical),
                            (&semantic, weights.semantic),
                            (&symbols, weights.symbols),
                            (&table, weights.table),
                            (&heads, weights.heads),
                            (&callables, weights.callables),
                        ],
                        fused_depth,
                    ),
                    1.0,
                )
            }
        };
        self.demote_ranked(request, &mut fused, &mut rows, demotion_unit)?;
        fused.truncate(request.limit);
        self.hits_with_rows(&request.query, fused, rows)
    }

    /// The standard scores of the lexical and semantic lists over the chunks on either, in the
    /// same order for both (see [`FusionMethod::Standardised`]), and those chunks.
    fn standard_scores(
        &self,
        lexical: &[(i64, f32)],
        mut semantic: RankedIds,
        query_vector: &[f32],
    ) -> Result<(RankedIds, RankedIds, Vec<i64>), IndexError> {
        let lexical_spread = Spread::of_bm25(lexical);
        let semantic_spread = Spread::of_cosines(&semantic);
        let mut candidates: Vec<i64> = lexical.iter().map(|&(id, _)| id).collect();
        let on_lexical: HashSet<i64> = candidates.iter().copied().collect();
        candidates.extend(
            semantic
                .iter()
                .map(|&(id, _)| id)
                .filter(|id| !on_lexical.contains(id)),
        );
        self.complete_semantic(&mut semantic, lexical, query_vector)?;
        let cosine_floor = self
            .embedder()
            .map(|embedder| embedder.relevance_floor())
            .filter(|floor| floor.is_finite());
        let lowest_cosine = semantic.last().map_or(0.0, |&(_, score)| score);
        let lowest_bm25 = lexical.last().map_or(0.0, |&(_, score)| score);
        Ok((
            lexical_spread.standardise(lexical, &candidates, lowest_bm25),
            semantic_spread.standardise(
                &semantic,
                &candidates,
                cosine_floor.unwrap_or(lowest_cosine),
            ),
            candidates,
        ))
    }

    /// The chunks nearest to the query's vector, as (chunk id, similarity), and that vector
    /// (empty for an empty query).
    pub(crate) fn semantic_ranked(
        &self,
        request: &SearchRequest,
        depth: usize,
    ) -> Result<(RankedIds, Vec<f32>), IndexError> {
        let floor = self
            .embedder()
            .map_or(f32::NEG_INFINITY, |embedder| embedder.relevance_floor());
        let (mut ranked, vector) = self.semantic_nearest(request, depth)?;
        ranked.retain(|&(_, score)| score >= floor);
        Ok((ranked, vector))
    }

    /// [`Self::semantic_ranked`] without the relevance floor.
    fn semantic_nearest(
        &self,
        request: &SearchRequest,
        depth: usize,
    ) -> Result<(RankedIds, Vec<f32>), IndexError> {
        let (Some(embedder), Some(store)) = (self.embedder(), self.vector_store_for_search()?)
        else {
            return Err(IndexError::NoVectors(
                "no embedder is configured for this workspace".into(),
            ));
        };
        let state = store.state();
        if state.identity.as_ref() != Some(embedder.identity()) {
            return Err(IndexError::NoVectors(match state.identity {
                Some(stored) => format!(
                    "the vectors were made by {stored}, not {}; refresh the index to re-embed",
                    embedder.identity()
                ),
                None => "the index has no vectors yet; run `lode index`".into(),
            }));
        }
        if request.query.trim().is_empty() || depth == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        let vector = embedder.embed_query(&request.query)?;
        let filter = VectorFilter {
            language: request.language.map(|l| l.name().to_string()),
            path_glob: request.path_glob.clone(),
        };
        let ranked = store
            .search(&vector, depth, &filter)?
            .into_iter()
            .map(|hit| (hit.id, hit.score))
            .collect();
        Ok((ranked, vector))
    }

    /// Chunks holding definitions named by the query: its identifier-like words (matched
    /// exactly, ignoring case or by prefix) or, for a one-word query, that word (matched
    /// exactly or ignoring case). Plain English words of a sentence are not looked up: they
    /// match names like `new` or `get` everywhere and only add noise.
    fn symbol_ranked(&self, request: &SearchRequest) -> Result<Vec<(i64, f32)>, IndexError> {
        let matcher = request.path_glob.as_deref().map(path_matcher).transpose()?;
        let language = request.language.map(|l| l.name());
        let mut ranked: Vec<(i64, f32)> = Vec::new();
        let words: Vec<&str> = request.query.split_whitespace().collect();
        let lookups = words
            .iter()
            .filter(|word| words.len() == 1 || identifier_like(word))
            .flat_map(|word| {
                let loosest = if identifier_like(word) {
                    NameMatch::Prefix
                } else {
                    NameMatch::ExactIgnoringCase
                };
                word.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .filter(|name| name.len() >= 3)
                    .map(move |name| (name, loosest))
            })
            .take(4);
        for (name, loosest) in lookups {
            for hit in self.symbols(name, 10)? {
                if hit.name_match > loosest
                    || language.is_some_and(|l| l != hit.language)
                    || matcher.as_ref().is_some_and(|m| !m.is_match(&hit.path))
                {
                    continue;
                }
                let chunk =
                    self.with_catalog(|catalog| catalog.chunk_at_line(&hit.path, hit.start_line))?;
                if let Some(chunk) = chunk
                    && !ranked.iter().any(|&(id, _)| id == chunk.id)
                {
                    ranked.push((chunk.id, 1.0));
                }
            }
        }
        Ok(ranked)
    }
}

/// A best-first list with every score divided by the first (best) one; all 0 when that is not
/// positive.
fn scaled_to_best(list: &[(i64, f32)]) -> Vec<(i64, f32)> {
    let best = list.first().map_or(0.0, |&(_, score)| score);
    list.iter()
        .map(|&(id, score)| (id, if best > 0.0 { score / best } else { 0.0 }))
        .collect()
}

/// Where a list's scores centre and how far they spread: what turns a score into a standard
/// score. An empty list standardises nothing (every score 0).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Spread {
    mean: f32,
    spread: f32,
    listed: bool,
}

impl Spread {
    /// The mean of `list`'s scores and their standard deviation pooled with `typical` (worth
    /// [`spread_prior::WEIGHT`] scores), at least `min_spread`; 1 when that is 0, so equal
    /// scores all standardise to 0.
    fn of(list: &[(i64, f32)], typical: f32, min_spread: f32) -> Spread {
        if list.is_empty() {
            return Spread {
                mean: 0.0,
                spread: 1.0,
                listed: false,
            };
        }
        let count = list.len() as f32;
        let mean = list.iter().map(|&(_, score)| score).sum::<f32>() / count;
        let squares = list
            .iter()
            .map(|&(_, score)| (score - mean) * (score - mean))
            .sum::<f32>();
        let pooled =
            (squares + spread_prior::WEIGHT * typical * typical) / (count + spread_prior::WEIGHT);
        let spread = pooled.sqrt().max(min_spread);
        Spread {
            mean,
            spread: if spread > 0.0 { spread } else { 1.0 },
            listed: true,
        }
    }

    /// The spread of a BM25 list: typically [`spread_prior::BM25_OF_BEST`] of its best score.
    fn of_bm25(list: &[(i64, f32)]) -> Spread {
        let best = list.first().map_or(0.0, |&(_, score)| score);
        Spread::of(list, spread_prior::BM25_OF_BEST * best, 0.0)
    }

    /// The spread of a list of cosine similarities.
    fn of_cosines(list: &[(i64, f32)]) -> Spread {
        Spread::of(list, spread_prior::COSINE, spread_prior::MIN_COSINE)
    }

    /// The spread of the candidates' head cosines.
    fn of_head_cosines(list: &[(i64, f32)]) -> Spread {
        Spread::of(list, spread_prior::HEAD_COSINE, spread_prior::MIN_COSINE)
    }

    /// The standard score of each of `candidates`: its score on `scores` (first entry wins),
    /// else `missing`. All 0 when the list the spread was measured on was empty.
    fn standardise(&self, scores: &[(i64, f32)], candidates: &[i64], missing: f32) -> RankedIds {
        let mut by_id: HashMap<i64, f32> = HashMap::with_capacity(scores.len());
        for &(id, score) in scores {
            by_id.entry(id).or_insert(score);
        }
        candidates
            .iter()
            .map(|id| {
                let score = by_id.get(id).copied().unwrap_or(missing);
                let standard = if self.listed {
                    (score - self.mean) / self.spread
                } else {
                    0.0
                };
                (*id, standard)
            })
            .collect()
    }
}

/// Weighted reciprocal rank fusion of ranked id lists; ties go to the better lexical rank,
/// then the better rank in the later lists, then the lower id.
pub fn fuse(lists: &[(&Vec<(i64, f32)>, f32)], k: f32, limit: usize) -> Vec<(i64, f32)> {
    fuse_by(lists, limit, |weight, rank, _| {
        weight / (k + rank as f32 + 1.0)
    })
}

/// Weighted sum of each list's scores (a chunk missing from a list adds nothing for it); ties
/// go the same way as in [`fuse`].
pub fn fuse_scores(lists: &[(&Vec<(i64, f32)>, f32)], limit: usize) -> Vec<(i64, f32)> {
    fuse_by(lists, limit, |weight, _, score| weight * score)
}

/// Sums `contribution(weight, rank, score)` over the lists a chunk is on (its first, better
/// entry per list; lists with weight 0 skipped) and returns the best `limit`: by fused score,
/// then by the ranks in the lists in order, then by id.
fn fuse_by(
    lists: &[(&Vec<(i64, f32)>, f32)],
    limit: usize,
    contribution: impl Fn(f32, usize, f32) -> f32,
) -> Vec<(i64, f32)> {
    // id -> (fused score, best rank per list)
    let mut scores: HashMap<i64, (f32, Vec<usize>)> = HashMap::new();
    for (list_index, (list, weight)) in lists.iter().enumerate() {
        if *weight <= 0.0 {
            continue;
        }
        for (rank, &(id, score)) in list.iter().enumerate() {
            let entry = scores
                .entry(id)
                .or_insert_with(|| (0.0, vec![usize::MAX; lists.len()]));
            if entry.1[list_index] != usize::MAX {
                continue; // listed twice: the first (better) rank counts
            }
            entry.0 += contribution(*weight, rank, score);
            entry.1[list_index] = rank;
        }
    }
    let mut fused: Vec<(i64, f32, Vec<usize>)> = scores
        .into_iter()
        .map(|(id, (score, ranks))| (id, score, ranks))
        .collect();
    fused.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then_with(|| a.2.cmp(&b.2))
            .then(a.0.cmp(&b.0))
    });
    fused.truncate(limit);
    fused
        .into_iter()
        .map(|(id, score, _)| (id, score))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_shapes() {
        assert_eq!(query_shape("parse_config"), QueryShape::Identifier);
        assert_eq!(query_shape("HashMap::new"), QueryShape::Identifier);
        assert_eq!(query_shape("parseConfig"), QueryShape::Identifier);
        assert_eq!(
            query_shape("read the config file from disk"),
            QueryShape::NaturalLanguage
        );
        assert_eq!(
            query_shape("where is parse_config called"),
            QueryShape::Mixed
        );
        assert_eq!(query_shape("spawn"), QueryShape::Mixed);
        assert_eq!(query_shape("HTTP"), QueryShape::Mixed);
    }

    #[test]
    fn what_only_declares_is_told_from_what_does_something() {
        let row = |id: i64, language: &str, kind: Option<&str>, symbol: &str| ChunkRow {
            id,
            path: format!("f{id}"),
            language: language.into(),
            start_line: 1,
            end_line: 2,
            symbol: Some(symbol.into()),
            kind: kind.map(str::to_string),
            scope: Vec::new(),
            defined_names: vec![symbol.into()],
            text: String::new(),
        };
        let rows: HashMap<i64, ChunkRow> = [
            row(1, "java", Some("method"), "openWithRetries"),
            row(2, "java", Some("field"), "retryLimit"),
            row(3, "java", Some("class"), "RetryPolicy"),
            row(4, "markdown", Some("section"), "Retrying"),
            row(5, "python", None, ""),
            row(6, "javascript", Some("variable"), "baseEach"),
            row(7, "typescript", Some("variable"), "defaults"),
            row(8, "c", Some("macro"), "MAX_RETRIES"),
        ]
        .into_iter()
        .map(|row| (row.id, row))
        .collect();
        let favoured = |query: &str| -> Vec<i64> {
            let mut ids: Vec<i64> = callable_prior(query, &[1, 2, 3, 4, 5, 6, 7, 8, 9], &rows)
                .into_iter()
                .map(|(id, score)| {
                    assert_eq!(score, 1.0);
                    id
                })
                .collect();
            ids.sort_unstable();
            ids
        };
        // 9 is no longer in the catalog: no score at all.
        assert_eq!(
            favoured("retry the connection until the limit"),
            [1, 4, 5, 6]
        );
        // Named in code form, a declaration is what the query is about; a plain word is not.
        assert_eq!(
            favoured("where is `RetryPolicy` built, and what is retryLimit?"),
            [1, 2, 3, 4, 5, 6]
        );
        assert_eq!(favoured("the retry policy"), [1, 4, 5, 6]);
    }

    #[test]
    fn modes_parse_by_name() {
        assert_eq!("hybrid".parse::<SearchMode>().unwrap(), SearchMode::Hybrid);
        assert_eq!("lexical".parse::<SearchMode>().unwrap().name(), "lexical");
        assert!("fuzzy".parse::<SearchMode>().is_err());
    }

    #[test]
    fn fusion_rewards_agreement_and_respects_weights() {
        let lexical = vec![(1, 9.0), (2, 8.0), (3, 7.0)];
        let semantic = vec![(3, 0.9), (4, 0.8), (1, 0.7)];
        let fused = fuse(&[(&lexical, 1.0), (&semantic, 1.0)], 60.0, 10);
        let order: Vec<i64> = fused.iter().map(|&(id, _)| id).collect();
        assert_eq!(order, [1, 3, 2, 4], "chunks on both lists come first");
        let lexical_only = fuse(&[(&lexical, 1.0), (&semantic, 0.0)], 60.0, 2);
        assert_eq!(
            lexical_only.iter().map(|&(id, _)| id).collect::<Vec<_>>(),
            [1, 2]
        );
        let semantic_heavy = fuse(&[(&lexical, 0.1), (&semantic, 1.0)], 60.0, 1);
        assert_eq!(semantic_heavy[0].0, 3);
    }

    #[test]
    fn sentences_fuse_by_score_and_other_embedders_add_the_table() {
        let sentence = query_shape("read the config file from disk");
        let calibrated = FusionWeights::for_query(sentence, SimilarityScale::Calibrated, None);
        assert_eq!(calibrated.method, FusionMethod::Standardised);
        assert_eq!(
            calibrated.table, 0.0,
            "the table's own vectors are the semantic list"
        );
        let rank_only = FusionWeights::for_query(sentence, SimilarityScale::RankOnly, None);
        assert_eq!(rank_only.method, FusionMethod::Scores);
        assert!(rank_only.table > rank_only.semantic);
        for scale in [SimilarityScale::Calibrated, SimilarityScale::RankOnly] {
            let identifier = FusionWeights::for_query(query_shape("parse_config"), scale, None);
            assert!(matches!(
                identifier.method,
                FusionMethod::ReciprocalRank { .. }
            ));
            assert!(identifier.symbols > 0.0);
            assert_eq!(identifier.table, 0.0);
        }
        let builtin = crate::embed::default_embedder().unwrap();
        assert_eq!(builtin.similarity_scale(), SimilarityScale::Calibrated);
    }

    #[test]
    fn the_table_weighs_less_beside_bm25_where_it_helps_less() {
        let sentence = query_shape("read the config file from disk");
        let weight = |language| {
            FusionWeights::for_query(sentence, SimilarityScale::Calibrated, language).semantic
        };
        assert_eq!(weight(Some(Language::JavaScript)), 0.5);
        assert_eq!(weight(Some(Language::Python)), 0.5);
        assert_eq!(weight(Some(Language::Go)), 0.5);
        assert_eq!(weight(Some(Language::TypeScript)), 1.0);
        assert_eq!(weight(Some(Language::Rust)), 1.5);
        assert_eq!(weight(Some(Language::Cpp)), 0.5);
        assert_eq!(weight(Some(Language::Php)), 0.5);
        assert_eq!(weight(None), 1.0);
        let heads = |language| {
            FusionWeights::for_query(sentence, SimilarityScale::Calibrated, language).heads
        };
        assert_eq!(heads(Some(Language::Python)), 0.3);
        assert_eq!(heads(Some(Language::JavaScript)), 0.5);
        assert_eq!(heads(Some(Language::Rust)), 0.1);
        assert_eq!(heads(None), 0.3);
        // Other embedders' cosines are not standardised, and take no heads.
        assert_eq!(
            FusionWeights::for_query(sentence, SimilarityScale::RankOnly, None).heads,
            0.0
        );
        // Identifiers fuse by rank whatever the language.
        let identifier = FusionWeights::for_query(
            query_shape("parse_config"),
            SimilarityScale::Calibrated,
            Some(Language::Python),
        );
        assert!(matches!(
            identifier.method,
            FusionMethod::ReciprocalRank { .. }
        ));
    }

    #[test]
    fn score_fusion_keeps_margins_that_ranks_lose() {
        // Chunk 2 is a close second lexically and the clear semantic best; chunk 1 barely
        // wins lexically and is semantically weak. Rank fusion ties them (each has one first
        // and one second place); score fusion sees the margins.
        let lexical = vec![(1, 1.0), (2, 0.98)];
        let semantic = vec![(2, 0.8), (1, 0.3)];
        let by_scores = fuse_scores(&[(&lexical, 1.0), (&semantic, 1.0)], 10);
        assert_eq!(
            by_scores.iter().map(|&(id, _)| id).collect::<Vec<_>>(),
            [2, 1]
        );
        assert!((by_scores[0].1 - 1.78).abs() < 1e-5);
        let by_ranks = fuse(&[(&lexical, 1.0), (&semantic, 1.0)], 20.0, 10);
        assert_eq!(by_ranks[0].1, by_ranks[1].1);
        // A list with weight 0 is ignored; a chunk on one list only gets that list's share.
        let lexical_only = fuse_scores(&[(&lexical, 1.0), (&semantic, 0.0)], 10);
        assert_eq!(lexical_only, vec![(1, 1.0), (2, 0.98)]);
        let semantic_only = vec![(3, 0.5)];
        let mixed = fuse_scores(&[(&lexical, 1.0), (&semantic_only, 1.0)], 1);
        assert_eq!(mixed, vec![(1, 1.0)]);
    }

    #[test]
    fn standard_scores_give_the_standing_out_list_the_larger_say() {
        // BM25 ranks chunk 1 well above the rest; the cosines are bunched, but chunk 3's stands
        // out of the bunch. Scaled to the best BM25 (1 + 0.40 against 0.89 + 0.50), chunk 1
        // wins by a hair; in standard scores chunk 3's cosine is far above its list's mean
        // while chunk 1's is below it, so chunk 3 wins.
        let lexical = vec![(1, 10.0), (3, 8.9), (5, 8.85), (6, 8.8), (7, 8.7), (2, 8.6)];
        let semantic = vec![
            (3, 0.50),
            (5, 0.44),
            (6, 0.43),
            (7, 0.43),
            (8, 0.42),
            (1, 0.40),
        ];
        let lexical_spread = Spread::of_bm25(&lexical);
        let semantic_spread = Spread::of_cosines(&semantic);
        let candidates = [1, 3, 5, 6, 7, 2, 8];
        let lexical_z = lexical_spread.standardise(&lexical, &candidates, 8.6);
        let semantic_z = semantic_spread.standardise(&semantic, &candidates, 0.3);
        let fused = fuse_scores(&[(&lexical_z, 1.0), (&semantic_z, 1.0)], 3);
        assert_eq!(
            fused.iter().map(|&(id, _)| id).collect::<Vec<_>>(),
            [3, 1, 5]
        );
        let scaled = fuse_scores(&[(&scaled_to_best(&lexical), 1.0), (&semantic, 1.0)], 2);
        assert_eq!(scaled.iter().map(|&(id, _)| id).collect::<Vec<_>>(), [1, 3]);
        // With no typical spread to pool with, a long list's standard scores have mean 0 and
        // a spread of 1 shrunk by n / (n + WEIGHT).
        let pure = Spread::of(&lexical, 0.0, 0.0).standardise(&lexical, &candidates[..6], 0.0);
        let listed: Vec<f32> = pure.iter().map(|&(_, z)| z).collect();
        assert!(listed.iter().sum::<f32>().abs() < 1e-4);
        let variance = listed.iter().map(|z| z * z).sum::<f32>() / 6.0;
        assert!((variance - (6.0 + spread_prior::WEIGHT) / 6.0).abs() < 1e-3);
        // A chunk missing from a list gets the value given for missing ones: chunk 8, which
        // BM25 did not list, counts as its lowest score, like chunk 2.
        assert_eq!(lexical_z[6].1, lexical_z[5].1);
    }

    #[test]
    fn standard_scores_stay_finite_on_flat_small_and_empty_lists() {
        // Equal scores with nothing to pool: spread 0 becomes 1, every listed chunk is 0.
        let flat = vec![(1, 5.0), (2, 5.0)];
        let z = Spread::of(&flat, 0.0, 0.0).standardise(&flat, &[1, 2], 5.0);
        assert_eq!(z, vec![(1, 0.0), (2, 0.0)]);
        // Near-equal cosines: the typical spread keeps their difference small.
        let close = vec![(1, 0.31), (2, 0.30)];
        let z = Spread::of_cosines(&close).standardise(&close, &[1, 2], 0.3);
        assert!(z[0].1 - z[1].1 < 0.25, "{z:?}");
        // An empty list has no say at all.
        let none: Vec<(i64, f32)> = Vec::new();
        let z = Spread::of_cosines(&none).standardise(&none, &[7, 8], 0.3);
        assert_eq!(z, vec![(7, 0.0), (8, 0.0)]);
        assert!(z.iter().all(|&(_, score)| score.is_finite()));
    }

    #[test]
    fn two_candidates_keep_their_margins() {
        // A tiny workspace: BM25 puts the method 2.3 times above a doc page, the table puts the
        // page a little nearer. Measured over two hits alone, each list would be exactly one
        // spread apart and the cosine's weight would decide; pooled with the typical spreads,
        // BM25's wide margin wins at every weight in use.
        let lexical = vec![(1, 4.24), (2, 1.84)];
        let semantic = vec![(2, 0.509), (1, 0.442)];
        let candidates = [1, 2];
        let lexical_z = Spread::of_bm25(&lexical).standardise(&lexical, &candidates, 1.84);
        let semantic_z = Spread::of_cosines(&semantic).standardise(&semantic, &candidates, 0.3);
        for language in [None, Some(Language::Rust), Some(Language::TypeScript)] {
            let weight = calibrated_semantic_weight(language);
            let fused = fuse_scores(&[(&lexical_z, 1.0), (&semantic_z, weight)], 2);
            assert_eq!(fused[0].0, 1, "weight {weight}");
        }
        let unpooled_lexical =
            Spread::of(&lexical, 0.0, 0.0).standardise(&lexical, &candidates, 1.84);
        let unpooled_semantic =
            Spread::of(&semantic, 0.0, 0.0).standardise(&semantic, &candidates, 0.3);
        let fused = fuse_scores(&[(&unpooled_lexical, 1.0), (&unpooled_semantic, 1.5)], 2);
        assert_eq!(fused[0].0, 2, "without pooling the page wins");
    }
}
