//! Helpers shared by the benchmarks.

pub mod corpus;
