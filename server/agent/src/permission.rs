//! The permission policy, owned by the `lode-policy` crate and re-exported here so that
//! `lode_agent::permission::…` keeps naming it.

pub use lode_policy::*;
