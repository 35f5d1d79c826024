//! Chunk heads as a signal of hybrid search.
//!
//! A chunk's vector sums every word of its text, so a function's name and parameters weigh no
//! more than the words of its body. Its head (symbol, scope labels, first line: see
//! [`chunk_head_text`]) says what the chunk is. For sentence queries, hybrid search embeds the
//! head of each candidate BM25 and the vectors proposed, at query time, with the workspace's
//! embedder, and adds the head's cosine to the query as a standard score beside theirs. No
//! second vector is stored per chunk; the catalog reads and the embedding of up to a hundred
//! one-line heads did not move a whole `lode search` process's median out of its noise (17.3
//! against 17.9 ms and 15.4 against 14.8 ms on two sets). Measured on bench/multilang
//! (bench/README.md, "Chunk heads"): the default mode gains in every language, most in
//! JavaScript.

use std::collections::HashMap;

use crate::catalog::ChunkRow;
use crate::embed::{chunk_head_text, dot};
use crate::error::IndexError;
use crate::workspace::Workspace;

impl Workspace {
    /// The cosine between `query_vector` (the workspace embedder's vector of the query) and
    /// the head of each of `candidates` that is still in the catalog, in `candidates` order.
    /// Empty without an embedder, candidates or query vector.
    #[cfg(test)]
    pub(crate) fn head_cosines(
        &self,
        candidates: &[i64],
        query_vector: &[f32],
    ) -> Result<Vec<(i64, f32)>, IndexError> {
        let rows = self.with_catalog(|catalog| catalog.chunks_by_id(candidates))?;
        self.head_cosines_of(candidates, &rows, query_vector)
    }

    /// [`Self::head_cosines`] with the candidates' catalog rows already read (`rows`; a
    /// candidate it lacks is no longer in the catalog).
    pub(crate) fn head_cosines_of(
        &self,
        candidates: &[i64],
        rows: &HashMap<i64, ChunkRow>,
        query_vector: &[f32],
    ) -> Result<Vec<(i64, f32)>, IndexError> {
        let Some(embedder) = self.embedder() else {
            return Ok(Vec::new());
        };
        if candidates.is_empty() || query_vector.is_empty() {
            return Ok(Vec::new());
        }
        let split = !embedder.splits_identifiers();
        let (ids, heads): (Vec<i64>, Vec<String>) = candidates
            .iter()
            .filter_map(|id| {
                let row = rows.get(id)?;
                Some((
                    *id,
                    chunk_head_text(row.symbol.as_deref(), &row.scope, &row.text, split),
                ))
            })
            .unzip();
        let texts: Vec<&str> = heads.iter().map(String::as_str).collect();
        let vectors = embedder.embed_batch(&texts)?;
        Ok(ids
            .into_iter()
            .zip(vectors)
            .map(|(id, vector)| (id, dot(&vector, query_vector)))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use crate::embed::{chunk_head_text, default_embedder};
    use crate::{Workspace, WorkspaceOptions};

    #[test]
    fn a_head_is_the_symbol_the_scope_and_the_first_line() {
        let scope = vec!["class Reader".to_string()];
        let text = "\n   def read_all(self, size):\n        return self.buffer[:size]\n";
        assert_eq!(
            chunk_head_text(Some("read_all"), &scope, text, false),
            "read_all class Reader def read_all(self, size):"
        );
        assert_eq!(
            chunk_head_text(Some("read_all"), &scope, text, true),
            "read_all class Reader def read_all(self, size):\nread all"
        );
        assert_eq!(chunk_head_text(None, &[], "", false), "");
        assert_eq!(chunk_head_text(None, &[], "x = 1\ny = 2", false), "x = 1");
    }

    #[test]
    fn heads_are_scored_against_the_query_and_missing_chunks_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        // One file each: a small file's definitions would share a chunk.
        std::fs::write(
            dir.path().join("shapes.py"),
            "def circle_area(radius):\n    value = radius * radius\n    return value * 3.14159\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("config.py"),
            "def parse_config(path):\n    value = open(path).read()\n    return value.split()\n",
        )
        .unwrap();
        let options = WorkspaceOptions::new(dir.path()).with_embedder(default_embedder().unwrap());
        let workspace = Workspace::open(options).unwrap();
        workspace.refresh(&|_| {}).unwrap();
        let rows = workspace
            .with_catalog(|catalog| {
                let ids = catalog.chunk_ids()?;
                catalog.chunks_by_id(&ids)
            })
            .unwrap();
        let id_of = |symbol: &str| {
            *rows
                .iter()
                .find(|(_, row)| row.symbol.as_deref() == Some(symbol))
                .unwrap_or_else(|| panic!("no chunk for {symbol}: {rows:?}"))
                .0
        };
        let (area, config) = (id_of("circle_area"), id_of("parse_config"));
        let query = workspace
            .embedder()
            .unwrap()
            .embed_query("the area of a circle")
            .unwrap();
        let cosines = workspace
            .head_cosines(&[config, i64::MAX, area], &query)
            .unwrap();
        assert_eq!(
            cosines.iter().map(|&(id, _)| id).collect::<Vec<_>>(),
            [config, area],
            "in candidate order, the unknown id left out"
        );
        assert!(
            cosines[1].1 > cosines[0].1 + 0.1,
            "the circle's head is nearer: {cosines:?}"
        );
        assert!(workspace.head_cosines(&[], &query).unwrap().is_empty());
        assert!(workspace.head_cosines(&[area], &[]).unwrap().is_empty());
    }
}
