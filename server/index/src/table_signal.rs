//! The built-in static table as a third signal of hybrid search.
//!
//! When a workspace's vectors come from another embedder (MiniLM, an HTTP provider), hybrid
//! search still asks the built-in table about the chunks BM25 and those vectors proposed: the
//! table was trained for doc-sentence → code retrieval against BM25, which a general sentence
//! model was not (see [`crate::hybrid::FusionWeights::for_query`] for the figures). Candidates
//! are embedded at query time from their catalog rows, with the text the table would have
//! indexed them by; a hundred chunks take about a millisecond, so no second vector store is
//! kept. Every candidate also gets its cosine under the workspace's own vectors, not only
//! those in that list's top: score fusion then compares like with like.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use crate::catalog::ChunkRow;
use crate::embed::{EmbedError, Embedder, StaticEmbedder, dot};
use crate::error::IndexError;
use crate::search::SearchRequest;
use crate::vectors::inline::{file_imports, row_text};
use crate::workspace::Workspace;

/// The built-in table, built once per process (its vocabulary takes a moment to build).
fn shared_table() -> Result<Arc<StaticEmbedder>, EmbedError> {
    static TABLE: OnceLock<Result<Arc<StaticEmbedder>, String>> = OnceLock::new();
    TABLE
        .get_or_init(|| {
            StaticEmbedder::builtin()
                .map(Arc::new)
                .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(EmbedError::BadTable)
}

impl Workspace {
    /// The table's list for a hybrid query: its cosine for every chunk on `lexical` or
    /// `semantic`, best first. `semantic` (the workspace embedder's hits for `query_vector`)
    /// is completed with the cosine of the lexical candidates it lacks.
    /// `rows` holds the catalog rows of the chunks on either list (those it lacks are no
    /// longer in the catalog).
    pub(crate) fn table_signal(
        &self,
        request: &SearchRequest,
        lexical: &[(i64, f32)],
        semantic: &mut Vec<(i64, f32)>,
        query_vector: &[f32],
        rows: &HashMap<i64, ChunkRow>,
    ) -> Result<Vec<(i64, f32)>, IndexError> {
        let mut candidates: Vec<i64> = semantic.iter().map(|&(id, _)| id).collect();
        let missing = self.complete_semantic(semantic, lexical, query_vector)?;
        candidates.extend(&missing);
        self.table_ranked_of(&request.query, &candidates, rows)
    }

    /// Adds to `semantic` the similarity, under the workspace's own vectors, of each chunk on
    /// `lexical` it lacks (those under the embedder's floor stay off), best first. Returns the
    /// chunks it lacked.
    pub(crate) fn complete_semantic(
        &self,
        semantic: &mut Vec<(i64, f32)>,
        lexical: &[(i64, f32)],
        query_vector: &[f32],
    ) -> Result<Vec<i64>, IndexError> {
        let on_semantic: HashSet<i64> = semantic.iter().map(|&(id, _)| id).collect();
        let missing: Vec<i64> = lexical
            .iter()
            .map(|&(id, _)| id)
            .filter(|id| !on_semantic.contains(id))
            .collect();
        let (Some(embedder), Some(store)) = (self.embedder(), self.vector_store_for_search()?)
        else {
            return Ok(missing);
        };
        if missing.is_empty() || query_vector.is_empty() {
            return Ok(missing);
        }
        let floor = embedder.relevance_floor();
        semantic.extend(
            store
                .vectors(&missing)?
                .into_iter()
                .map(|(id, vector)| (id, dot(&vector, query_vector)))
                .filter(|&(_, cosine)| cosine >= floor),
        );
        semantic.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(missing)
    }

    /// The built-in table's cosine between `query` and each of `candidates` (chunk ids), best
    /// first, without those under the table's relevance floor or no longer in the catalog.
    #[cfg(test)]
    fn table_ranked(&self, query: &str, candidates: &[i64]) -> Result<Vec<(i64, f32)>, IndexError> {
        let rows = self.with_catalog(|catalog| catalog.chunks_by_id(candidates))?;
        self.table_ranked_of(query, candidates, &rows)
    }

    /// [`Self::table_ranked`] with the candidates' catalog rows already read.
    fn table_ranked_of(
        &self,
        query: &str,
        candidates: &[i64],
        rows: &HashMap<i64, ChunkRow>,
    ) -> Result<Vec<(i64, f32)>, IndexError> {
        if candidates.is_empty() || query.trim().is_empty() {
            return Ok(Vec::new());
        }
        let table = shared_table()?;
        let (ids, texts) = self.with_catalog(|catalog| {
            let mut imports_of = HashMap::new();
            let mut ids = Vec::with_capacity(rows.len());
            let mut texts = Vec::with_capacity(rows.len());
            for id in candidates {
                if let Some(row) = rows.get(id) {
                    let imports = file_imports(catalog, &row.path, &mut imports_of)?;
                    texts.push(row_text(&*table, row, imports).0);
                    ids.push(*id);
                }
            }
            Ok((ids, texts))
        })?;
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = table.embed_batch(&refs)?;
        let query_vector = table.embed_query(query)?;
        let floor = table.relevance_floor();
        let mut ranked: Vec<(i64, f32)> = ids
            .into_iter()
            .zip(vectors)
            .map(|(id, vector)| (id, dot(&vector, &query_vector)))
            .filter(|&(_, cosine)| cosine >= floor)
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(ranked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WorkspaceOptions;
    use crate::embed::default_embedder;

    /// A workspace whose vectors are the built-in table's, so the query-time path can be
    /// compared with what indexing stored.
    fn indexed() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(
            dir.path().join("src/net.rs"),
            "use std::net::TcpListener;\nuse std::io;\n\n\
             /// Binds a listener.\npub fn open_socket(port: u16) -> io::Result<TcpListener> {\n    \
             TcpListener::bind((\"127.0.0.1\", port))\n}\n\n\
             pub fn close_socket(listener: TcpListener) {\n    drop(listener)\n}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("src/paint.rs"),
            "pub fn draw_circle(canvas: &mut Canvas, radius: f32) {\n    canvas.arc(radius)\n}\n",
        )
        .unwrap();
        let options = WorkspaceOptions::new(dir.path()).with_embedder(default_embedder().unwrap());
        let workspace = Workspace::open(options).unwrap();
        workspace.refresh(&|_| {}).unwrap();
        (dir, workspace)
    }

    #[test]
    fn table_cosines_at_query_time_match_the_indexed_vectors() {
        let (_dir, workspace) = indexed();
        let ids = workspace.with_catalog(|c| c.chunk_ids()).unwrap();
        assert!(ids.len() >= 2, "{ids:?}");
        let query = "accept network connections on a port";
        let at_query_time = workspace.table_ranked(query, &ids).unwrap();
        let (stored, _) = workspace
            .semantic_ranked(&SearchRequest::new(query), ids.len())
            .unwrap();
        assert!(!stored.is_empty());
        assert_eq!(
            at_query_time.len(),
            stored.len(),
            "the same chunks pass the floor"
        );
        for ((id, cosine), (stored_id, stored_cosine)) in at_query_time.iter().zip(&stored) {
            assert_eq!(id, stored_id);
            // The stored vectors are int8, the query-time ones are not: half a quantization
            // step per component. 0.0002 apart here with the table of 11-24, 0.0017 with that
            // of 11-27; a different text (the file's imports left out) moves it by 0.003 and
            // more, and the fusion's cosine spreads are 0.02 and up.
            assert!(
                (cosine - stored_cosine).abs() < 2.5e-3,
                "{cosine} vs {stored_cosine}"
            );
        }
        assert!(workspace.table_ranked(query, &[]).unwrap().is_empty());
        assert!(workspace.table_ranked(" ", &ids).unwrap().is_empty());
        assert!(
            workspace
                .table_ranked(query, &[i64::MAX])
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn completing_the_semantic_list_gives_each_candidate_its_stored_cosine() {
        let (_dir, workspace) = indexed();
        let ids = workspace.with_catalog(|c| c.chunk_ids()).unwrap();
        let request = SearchRequest::new("accept network connections on a port");
        let (all, _) = workspace.semantic_ranked(&request, ids.len()).unwrap();
        let (mut top, query_vector) = workspace.semantic_ranked(&request, 1).unwrap();
        assert_eq!(top.len(), 1);
        let rest: Vec<i64> = ids.iter().copied().filter(|&id| id != top[0].0).collect();
        // Every chunk as a lexical candidate: the one already on the list is not looked up.
        let lexical: Vec<(i64, f32)> = ids.iter().map(|&id| (id, 1.0)).collect();
        let missing = workspace
            .complete_semantic(&mut top, &lexical, &query_vector)
            .unwrap();
        assert_eq!(missing, rest);
        assert_eq!(top.len(), all.len());
        for ((id, cosine), (all_id, all_cosine)) in top.iter().zip(&all) {
            assert_eq!(id, all_id);
            assert!(
                (cosine - all_cosine).abs() < 1e-3,
                "{cosine} vs {all_cosine}"
            );
        }
    }
}
