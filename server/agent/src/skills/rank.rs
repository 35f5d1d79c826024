//! Small-collection ranking shared by skill selection and memory search: an in-memory BM25 over
//! lode's code-aware tokens (stemmed), exact cosine similarity over embedding vectors (from
//! `lode_index::Embedder`), and their hybrid. Collections here are small (tens of skills, thousands of memories), so
//! everything is scored exactly, without an index.

use std::collections::HashMap;

use lode_index::{code_tokens, stem};

/// Search tokens: lode's code tokenizer (identifier splitting, lowercase), then English stemming.
pub fn search_terms(text: &str) -> Vec<String> {
    code_tokens(text)
        .into_iter()
        .map(|token| stem(&token.text))
        .filter(|term| !term.is_empty() && !is_stop_word(term))
        .collect()
}

fn is_stop_word(term: &str) -> bool {
    const STOP: &[&str] = &[
        "a", "an", "and", "are", "as", "at", "be", "by", "do", "for", "from", "how", "i", "in",
        "is", "it", "me", "my", "of", "on", "or", "pleas", "please", "so", "that", "the", "thi",
        "this", "to", "we", "what", "when", "with", "you", "can", "use",
    ];
    STOP.contains(&term)
}

/// BM25 (k1 = 1.2, b = 0.75) over a fixed set of documents.
#[derive(Debug, Clone, Default)]
pub struct Bm25Index {
    documents: Vec<HashMap<String, u32>>,
    lengths: Vec<usize>,
    document_frequency: HashMap<String, u32>,
    average_length: f64,
}

impl Bm25Index {
    pub fn new<'a>(texts: impl IntoIterator<Item = &'a str>) -> Self {
        let mut index = Bm25Index::default();
        for text in texts {
            let mut counts: HashMap<String, u32> = HashMap::new();
            let terms = search_terms(text);
            index.lengths.push(terms.len());
            for term in terms {
                *counts.entry(term).or_default() += 1;
            }
            for term in counts.keys() {
                *index.document_frequency.entry(term.clone()).or_default() += 1;
            }
            index.documents.push(counts);
        }
        let total: usize = index.lengths.iter().sum();
        index.average_length = if index.lengths.is_empty() {
            0.0
        } else {
            total as f64 / index.lengths.len() as f64
        };
        index
    }

    /// One score per document, in insertion order; 0 where no query term occurs.
    pub fn scores(&self, query: &str) -> Vec<f64> {
        const K1: f64 = 1.2;
        const B: f64 = 0.75;
        let mut query_terms = search_terms(query);
        query_terms.sort();
        query_terms.dedup();
        let count = self.documents.len() as f64;
        self.documents
            .iter()
            .zip(&self.lengths)
            .map(|(counts, &length)| {
                query_terms
                    .iter()
                    .filter_map(|term| {
                        let frequency = f64::from(*counts.get(term)?);
                        let df = f64::from(self.document_frequency.get(term).copied()?);
                        let idf = ((count - df + 0.5) / (df + 0.5) + 1.0).ln();
                        let norm = if self.average_length > 0.0 {
                            length as f64 / self.average_length
                        } else {
                            1.0
                        };
                        Some(idf * frequency * (K1 + 1.0) / (frequency + K1 * (1.0 - B + B * norm)))
                    })
                    .sum()
            })
            .collect()
    }
}

/// Cosine similarity; 0 for empty, mismatched or zero vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (mut dot, mut norm_a, mut norm_b) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        norm_a += x * x;
        norm_b += y * y;
    }
    if norm_a == 0.0 || norm_b == 0.0 {
        0.0
    } else {
        dot / (norm_a.sqrt() * norm_b.sqrt())
    }
}

/// Weights for combining lexical and semantic evidence.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HybridWeights {
    /// Weight of the BM25 score normalised by the best BM25 score of the collection.
    pub lexical: f64,
    /// Weight of the cosine similarity, rescaled from floor..full to 0..1.
    pub semantic: f64,
    /// Cosine at or below this counts as no semantic match (lode's static embeddings rate
    /// unrelated texts around -0.1–0.1 and related ones around 0.3–0.6).
    pub semantic_floor: f64,
    /// Cosine at or above this counts as a full semantic match.
    pub semantic_full: f64,
}

impl Default for HybridWeights {
    fn default() -> Self {
        Self {
            lexical: 0.6,
            semantic: 0.4,
            semantic_floor: 0.15,
            semantic_full: 0.55,
        }
    }
}

/// Combines per-document BM25 scores and (optional) cosine similarities into one score per
/// document; a document with neither lexical nor semantic evidence scores 0.
pub fn hybrid_scores(bm25: &[f64], cosines: Option<&[f32]>, weights: HybridWeights) -> Vec<f64> {
    let best = bm25.iter().copied().fold(0.0f64, f64::max);
    bm25.iter()
        .enumerate()
        .map(|(i, &lexical)| {
            let lexical = if best > 0.0 { lexical / best } else { 0.0 };
            match cosines.and_then(|c| c.get(i)) {
                Some(&cos) => {
                    let span = (weights.semantic_full - weights.semantic_floor).max(f64::EPSILON);
                    let semantic =
                        ((f64::from(cos) - weights.semantic_floor) / span).clamp(0.0, 1.0);
                    weights.lexical * lexical + weights.semantic * semantic
                }
                None => lexical,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bm25_prefers_documents_with_rare_query_terms() {
        let index = Bm25Index::new([
            "fix rust compile errors from cargo check",
            "write unit tests for new code",
            "review a pull request",
        ]);
        let scores = index.scores("my cargo build fails with a compile error");
        assert!(scores[0] > 0.0);
        assert_eq!(scores[1], 0.0);
        assert_eq!(scores[2], 0.0);
    }

    #[test]
    fn cosine_of_parallel_vectors_is_one() {
        assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]) - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0);
    }
}
