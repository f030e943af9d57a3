//! Serving engines whose own allocation rules the estimator follows (issue 15).

pub mod llamacpp;
