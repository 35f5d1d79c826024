//! The index's vectors: the stores are `lode-vectors`' ([`VectorStore`], [`EmbeddedStore`]);
//! this module embeds chunks as the parse workers produce them ([`inline`]) and keeps a store in
//! step with the catalog ([`sync`]).

pub mod inline;
pub mod sync;

pub use lode_vectors::*;
