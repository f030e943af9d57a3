//! The seed article's remaining mechanisms, pure and sourced: input pipeline memory and transfer,
//! block-compressed image inputs, embedding-table lookups, edge inference with liveness-based
//! buffer reuse, and a CNN's traffic against batch size. `crate::claims` checks the article's
//! claims with them.
//!
//! Every function is total (finite out for any input) and allocation-free, except
//! [`cnn_bandwidth`], which estimates a copy of the scenario at another batch size.

pub mod cnn_bandwidth;
pub mod edge_reuse;
pub mod embedding_lookup;
pub mod input_pipeline;
pub mod textures;
