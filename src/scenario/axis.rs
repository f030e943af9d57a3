//! "Move one knob": the one vocabulary of the scalar inputs that sweeps, solvers and the sensitivity
//! chart vary. Each [`Axis`] knows which field the estimator actually reads for a scenario (concurrent
//! requests under dynamic batching, the prompt in inference, layers or parameters by shape source),
//! how to read and write it, and its valid range — taken from [`validate::RANGES`], the one source of
//! ranges (docs/format.md prints the same table).

use super::validate::{self, FieldRange};
use super::{Mode, ModelFamily, Scenario, ShapeSource};

/// A scalar input of a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Axis {
    /// Sequences per GPU per forward: `workload.micro_batch`, or `inference.concurrent_requests` in
    /// inference with dynamic batching (the estimator ignores the micro-batch there).
    Batch,
    /// Tokens per sequence: `workload.seq_len` in training, `inference.prompt_tokens` in inference.
    /// Transformers only (CNNs and recommenders have no sequence).
    Context,
    /// The model's size in the field its shape source reads: `model.transformer.layers` for a
    /// transformer given by dimensions, `model.params` by parameter count, `model.cnn.params` for a CNN.
    /// Not applicable to recommenders.
    ModelSize,
    /// Parameter count: `model.params` for a transformer (setting it switches the shape source to the
    /// parameter count, so the shape is derived from it), `model.cnn.params` for a CNN.
    Params,
    /// `parallel.dp`.
    Dp,
    /// `parallel.tp`.
    Tp,
    /// `parallel.pp`.
    Pp,
    /// `parallel.cp` (transformer training).
    Cp,
}

impl Axis {
    pub const ALL: [Axis; 8] = [
        Axis::Batch,
        Axis::Context,
        Axis::ModelSize,
        Axis::Params,
        Axis::Dp,
        Axis::Tp,
        Axis::Pp,
        Axis::Cp,
    ];

    /// The dotted path of the field this axis moves in `s` (as in a scenario file and in
    /// [`validate::RANGES`]).
    pub fn field(self, s: &Scenario) -> &'static str {
        let dims = s.model.shape == ShapeSource::Dimensions;
        match (self, s.model.family) {
            (Axis::Batch, _) if dynamic_batching(s) => "inference.concurrent_requests",
            (Axis::Batch, _) => "workload.micro_batch",
            (Axis::Context, _) => match s.mode {
                Mode::Training => "workload.seq_len",
                Mode::Inference => "inference.prompt_tokens",
            },
            (Axis::ModelSize | Axis::Params, ModelFamily::Cnn) => "model.cnn.params",
            (Axis::ModelSize, ModelFamily::Transformer) if dims => "model.transformer.layers",
            (Axis::ModelSize | Axis::Params, _) => "model.params",
            (Axis::Dp, _) => "parallel.dp",
            (Axis::Tp, _) => "parallel.tp",
            (Axis::Pp, _) => "parallel.pp",
            (Axis::Cp, _) => "parallel.cp",
        }
    }

    /// Whether moving this axis changes what the estimator computes for `s`'s family and mode.
    pub fn applies(self, s: &Scenario) -> bool {
        match self {
            Axis::Context => s.model.family == ModelFamily::Transformer,
            Axis::ModelSize | Axis::Params => s.model.family != ModelFamily::Recommender,
            Axis::Batch | Axis::Dp | Axis::Tp | Axis::Pp => true,
            Axis::Cp => s.model.family == ModelFamily::Transformer && s.mode == Mode::Training,
        }
    }

    /// The valid range of the field, inclusive, from [`validate::RANGES`].
    pub fn range(self, s: &Scenario) -> (f64, f64) {
        self.field_range(s).map_or((1.0, 1.0), |r| (r.min, r.max))
    }

    fn field_range(self, s: &Scenario) -> Option<&'static FieldRange> {
        validate::range_of(self.field(s))
    }

    /// Whether the field holds whole numbers (every field but a parameter count).
    pub fn is_integer(self, s: &Scenario) -> bool {
        !self.field(s).ends_with("params")
    }

    /// The current value of the field in `s`.
    pub fn get(self, s: &Scenario) -> f64 {
        self.field_range(s).and_then(|r| (r.get)(s)).unwrap_or(0.0)
    }

    /// Sets the field to `v`, rounded for integer fields (saturating at the field type's bounds; the
    /// valid range is checked by [`validate::validate`], not clamped here). A non-finite `v` changes
    /// nothing. [`Axis::Params`] on a transformer also switches the shape source to the parameter count.
    pub fn set(self, s: &mut Scenario, v: f64) {
        if !v.is_finite() {
            return;
        }
        let field = self.field(s);
        // `as` saturates a float to the integer type's bounds (Rust reference, "Numeric cast").
        let n = v.round().max(0.0) as u32;
        match field {
            "inference.concurrent_requests" => s.inference.concurrent_requests = n,
            "workload.micro_batch" => s.workload.micro_batch = n,
            "workload.seq_len" => s.workload.seq_len = n,
            "inference.prompt_tokens" => s.inference.prompt_tokens = n,
            "model.transformer.layers" => s.model.transformer.layers = n,
            "model.cnn.params" => s.model.cnn.params = v,
            "model.params" => {
                s.model.params = v;
                if self == Axis::Params {
                    s.model.shape = ShapeSource::ParamCount;
                }
            }
            "parallel.dp" => s.parallel.dp = n,
            "parallel.tp" => {
                s.parallel.tp = n;
                // Megatron-Core trains a mixture of experts at TP > 1 only with sequence
                // parallelism (`Scenario::megatron_moe_needs_sp`): a swept or searched TP brings it.
                if n > 1 && s.megatron_moe_needs_sp() {
                    s.parallel.sequence_parallel = true;
                }
            }
            "parallel.cp" => s.parallel.cp = n,
            _ => s.parallel.pp = n,
        }
    }

    /// The span a sweep shows by default: where the memory curve usually crosses a GPU's capacity
    /// (an editorial choice, e.g. batches 1–4096, contexts 128–1 Mi tokens, 10⁸–2·10¹² parameters),
    /// within the valid [`range`](Self::range).
    pub fn typical(self, s: &Scenario) -> (f64, f64) {
        let (lo, hi): (f64, f64) = match (self, self.field(s)) {
            (Axis::Batch, _) => (1.0, 4096.0),
            (Axis::Context, _) => (128.0, 1_048_576.0),
            (_, "model.transformer.layers") => (1.0, 512.0),
            (_, "model.cnn.params") => (1e6, 1e11),
            (Axis::ModelSize | Axis::Params, _) => (1e8, 2e12),
            (Axis::Dp, _) => (1.0, 1024.0),
            (Axis::Tp | Axis::Pp | Axis::Cp, _) => (1.0, 64.0),
        };
        let (min, max) = self.range(s);
        (lo.clamp(min, max), hi.clamp(min, max))
    }

    /// A short name for UIs.
    pub const fn label(self) -> &'static str {
        match self {
            Axis::Batch => "Batch size",
            Axis::Context => "Sequence length",
            Axis::ModelSize => "Model size",
            Axis::Params => "Parameter count",
            Axis::Dp => "Data-parallel degree",
            Axis::Tp => "Tensor-parallel degree",
            Axis::Pp => "Pipeline-parallel degree",
            Axis::Cp => "Context-parallel degree",
        }
    }

    /// The unit written after a value of the field in `s`.
    pub fn unit(self, s: &Scenario) -> &'static str {
        match self.field(s) {
            "inference.concurrent_requests" => "requests",
            "workload.micro_batch" => "sequences",
            "workload.seq_len" | "inference.prompt_tokens" => "tokens",
            "model.transformer.layers" => "layers",
            "model.params" | "model.cnn.params" => "parameters",
            _ => "GPUs",
        }
    }

    /// More of this axis means less memory per GPU (the parallel degrees): a solver looks for the
    /// smallest value that fits rather than the largest.
    pub const fn more_is_less(self) -> bool {
        matches!(self, Axis::Dp | Axis::Tp | Axis::Pp | Axis::Cp)
    }
}

fn dynamic_batching(s: &Scenario) -> bool {
    s.mode == Mode::Inference && s.inference.dynamic_batching
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::validate::validate;

    #[test]
    fn batch_moves_concurrent_requests_under_dynamic_batching() {
        let mut s = Scenario::default();
        s.inference.dynamic_batching = true;
        Axis::Batch.set(&mut s, 31.6);
        assert_eq!(s.inference.concurrent_requests, 32);
        assert_eq!(s.workload.micro_batch, 1);
        assert_eq!(Axis::Batch.get(&s), 32.0);
        assert_eq!(Axis::Batch.unit(&s), "requests");
    }

    #[test]
    fn every_axis_reads_back_what_it_sets_and_its_range_is_valid() {
        let mut s = Scenario::default();
        for mode in [Mode::Training, Mode::Inference] {
            for shape in [ShapeSource::Dimensions, ShapeSource::ParamCount] {
                for family in [ModelFamily::Transformer, ModelFamily::Cnn] {
                    s.mode = mode;
                    s.model.shape = shape;
                    s.model.family = family;
                    for axis in Axis::ALL.into_iter().filter(|a| a.applies(&s)) {
                        let (lo, hi) = axis.range(&s);
                        assert!(validate::range_of(axis.field(&s)).is_some(), "{axis:?}");
                        for v in [lo, hi] {
                            let mut x = s.clone();
                            axis.set(&mut x, v);
                            assert_eq!(axis.get(&x), v, "{axis:?} {}", axis.field(&s));
                            assert_eq!(validate(&x), Vec::new(), "{axis:?} = {v}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn model_size_follows_the_shape_source() {
        let mut s = Scenario::default();
        s.model.shape = ShapeSource::Dimensions;
        assert_eq!(Axis::ModelSize.field(&s), "model.transformer.layers");
        assert!(Axis::ModelSize.is_integer(&s));
        assert_eq!(Axis::ModelSize.range(&s), (1.0, 10_000.0));
        Axis::Params.set(&mut s, 7e9);
        assert_eq!(s.model.shape, ShapeSource::ParamCount);
        assert_eq!(Axis::ModelSize.field(&s), "model.params");
        assert!(!Axis::ModelSize.is_integer(&s));
        s.model.family = ModelFamily::Recommender;
        assert!(!Axis::ModelSize.applies(&s));
    }
}
