//! Framework profiles' own rules (issue 12): what a framework's kernels keep alive beyond the
//! shared per-layer model, each derived from the framework's source at a named version
//! (docs/frameworks/).

pub mod hf;
