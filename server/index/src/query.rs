//! The read queries a front end runs against an index — `search`, `symbols`, `references`,
//! `map` — as plain data, so one function answers them whether the caller opened the index
//! itself or sent the query to the process that holds the watch lease ([`crate::watch`]).
//! Both paths run [`Workspace::answer`], which is what makes a served answer identical to an
//! in-process one.

use serde::{Deserialize, Serialize};

use crate::error::IndexError;
use crate::hybrid::SearchMode;
use crate::repomap::{MapRequest, RepoMap};
use crate::search::{ReferenceHit, SearchHit, SearchRequest, SymbolHit};
use crate::workspace::Workspace;
use lode_syntax::Language;

/// One read query.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Query {
    /// Ranked chunks. `mode: None` is hybrid when the index has vectors, else lexical.
    Search {
        query: String,
        limit: usize,
        path_glob: Option<String>,
        /// A language name as [`Language::name`] prints it.
        language: Option<String>,
        mode: Option<String>,
    },
    Symbols {
        name: String,
        limit: usize,
    },
    References {
        name: String,
        limit: usize,
    },
    Map {
        max_tokens: usize,
        /// Workspace-relative, `/`-separated.
        focus_files: Vec<String>,
        mentions: Vec<String>,
    },
}

/// The answer to a [`Query`], of the same kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Answer {
    Search {
        /// The mode that ran (after the default was resolved).
        mode: String,
        hits: Vec<SearchHit>,
        /// Semantic mode only: nothing cleared the embedder's relevance floor (this value),
        /// so `hits` are the nearest chunks anyway, weak matches at best.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        below_floor: Option<f32>,
    },
    Symbols {
        hits: Vec<SymbolHit>,
    },
    References {
        hits: Vec<ReferenceHit>,
    },
    Map {
        map: RepoMap,
    },
}

impl Answer {
    /// Whether the answer holds nothing (a map always counts as something).
    pub fn is_empty(&self) -> bool {
        match self {
            Answer::Search { hits, .. } => hits.is_empty(),
            Answer::Symbols { hits } => hits.is_empty(),
            Answer::References { hits } => hits.is_empty(),
            Answer::Map { .. } => false,
        }
    }
}

impl Workspace {
    /// Runs a read query on the index as it stands (the caller brought it up to date).
    pub fn answer(&self, query: &Query) -> Result<Answer, IndexError> {
        match query {
            Query::Search {
                query,
                limit,
                path_glob,
                language,
                mode,
            } => {
                let language = match language {
                    Some(name) => Some(Language::from_name(name).ok_or_else(|| {
                        IndexError::InvalidQuery(format!(
                            "unknown language {name:?} (rust, python, javascript, typescript, tsx, go, text)"
                        ))
                    })?),
                    None => None,
                };
                let mode = match mode {
                    Some(name) => name.parse::<SearchMode>()?,
                    // Asking whether there are vectors opens the store: only without a mode.
                    None if self.has_vectors() => SearchMode::Hybrid,
                    None => SearchMode::Lexical,
                };
                let request = SearchRequest {
                    query: query.clone(),
                    limit: *limit,
                    path_glob: path_glob.clone(),
                    language,
                    boosts: None,
                    demotions: None,
                };
                let (hits, below_floor) = match mode {
                    SearchMode::Semantic => self.search_semantic(&request)?,
                    mode => (self.search_with_mode(&request, mode)?, None),
                };
                Ok(Answer::Search {
                    mode: mode.name().to_owned(),
                    hits,
                    below_floor,
                })
            }
            Query::Symbols { name, limit } => Ok(Answer::Symbols {
                hits: self.symbols(name, *limit)?,
            }),
            Query::References { name, limit } => Ok(Answer::References {
                hits: self.references(name, *limit)?,
            }),
            Query::Map {
                max_tokens,
                focus_files,
                mentions,
            } => Ok(Answer::Map {
                map: self.repo_map(&MapRequest {
                    max_tokens: *max_tokens,
                    focus_files: focus_files.clone(),
                    mentions: mentions.clone(),
                })?,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_and_answers_round_trip_through_json() {
        let query = Query::Search {
            query: "parse config".into(),
            limit: 5,
            path_glob: Some("src/**".into()),
            language: Some("rust".into()),
            mode: None,
        };
        let text = serde_json::to_string(&query).unwrap();
        assert_eq!(serde_json::from_str::<Query>(&text).unwrap(), query);
        let answer = Answer::Symbols {
            hits: vec![SymbolHit {
                name: "parse".into(),
                kind: "function".into(),
                path: "src/lib.rs".into(),
                start_line: 1,
                end_line: 3,
                scope: vec!["Config".into()],
                signature: "fn parse()".into(),
                language: "rust".into(),
                name_match: crate::search::NameMatch::Exact,
            }],
        };
        let text = serde_json::to_string(&answer).unwrap();
        assert_eq!(serde_json::from_str::<Answer>(&text).unwrap(), answer);
        assert!(serde_json::from_str::<Query>(r#"{"kind":"drop_tables"}"#).is_err());
    }
}
