//! The KV cache and allocator reserve of a vLLM or SGLang scenario as the engine holds them
//! (`engines::reservation`): every phase's KV is the pool allocated at startup, and a vLLM
//! instance holds what its budget charged. The requests' own KV (the plain explanation) would
//! name bytes the figure does not hold.

use super::parts::Parts;
use crate::estimator::Component;
use crate::estimator::engines::figures::{EngineFigures, EngineKind};
use crate::units::{Bytes, fmt_sig};

const SOURCE: &str =
    "docs/engines/vllm.md §1, §8; docs/engines/sglang.md §1 (engines::reservation)";

/// Whether `a` and `b` are the same byte count up to rounding.
fn same(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// The pool that `value` is: the single pool (KV, recurrent state), or one pipeline stage
/// class's under vLLM (its KV, and `true`).
fn pool_of(f: &EngineFigures, value: f64) -> Option<(f64, f64, bool)> {
    let (kv, state) = (f.kv_pool.get(), f.state_pool.get());
    if same(kv + state, value) {
        return Some((kv, state, false));
    }
    f.stages
        .iter()
        .flatten()
        .find(|s| same(s.pool.get(), value))
        .map(|s| (s.pool.get(), 0.0, true))
}

/// The explanation of component `k` under the engine, when its figure is the engine's (else the
/// plain explanation stands: SGLang's other pipeline classes show the requests' KV).
pub(super) fn parts(
    f: &EngineFigures,
    k: Component,
    value: Bytes,
    tensor_peak: Bytes,
) -> Option<Parts> {
    match k {
        Component::KvCache => kv_pool(f, value),
        Component::AllocatorReserve if f.kind == EngineKind::Vllm => {
            Some(reserve(value, tensor_peak))
        }
        _ => None,
    }
}

/// Every phase's KV is the pool the engine allocated at startup.
fn kv_pool(f: &EngineFigures, value: Bytes) -> Option<Parts> {
    let (kv, state, staged) = pool_of(f, value.get())?;
    let engine = f.kind.label();
    let mut terms = vec![(
        format!("{engine}'s KV pool, allocated at startup"),
        Bytes(kv),
    )];
    if state > 0.0 {
        terms.push(("its recurrent-state pool".to_owned(), Bytes(state)));
    }
    let (formula, lead) = match f.kind {
        EngineKind::Vllm if staged => (
            "pool = num_gpu_blocks × this stage class's bytes per block",
            format!(
                "the common {} blocks of {} tokens",
                fmt_sig(f.blocks),
                fmt_sig(f.block_tokens)
            ),
        ),
        EngineKind::Vllm => (
            "pool = num_gpu_blocks × bytes per block, whatever the requests hold",
            format!(
                "{} blocks × {} per block of {} tokens = {} tokens of capacity",
                fmt_sig(f.blocks),
                super::show(Bytes(f.block_bytes)),
                fmt_sig(f.block_tokens),
                fmt_sig(f.tokens)
            ),
        ),
        EngineKind::Sglang => (
            "pool = (max_total_num_tokens + page_size) × bytes per token, whatever the requests \
             hold",
            format!(
                "({} + {}) tokens × {} B",
                fmt_sig(f.tokens),
                fmt_sig(f.block_tokens),
                fmt_sig(f.block_bytes)
            ),
        ),
    };
    Some(Parts {
        formula: formula.to_owned(),
        lead,
        terms,
        source: SOURCE,
        assumption: "The engine sizes the pool from its memory budget at startup and keeps it; \
                     requests beyond it wait for free blocks.",
        rest: "",
    })
}

/// vLLM: what its budget holds beyond the tensors of the peak (SGLang keeps PyTorch's rule on its
/// own tensors: the plain explanation, without side-stream pools).
fn reserve(value: Bytes, tensor_peak: Bytes) -> Parts {
    Parts {
        formula: "reserve = what the instance holds (weights + profiled activation peak + \
                  non-torch memory + CUDA graphs + KV pool) − the tensors of the peak"
            .to_owned(),
        lead: format!(
            "held by the budget {} − tensor peak {}",
            super::show(value + tensor_peak),
            super::show(tensor_peak)
        ),
        terms: vec![(
            "vLLM's budget beyond the tensors of the peak".to_owned(),
            value,
        )],
        source: SOURCE,
        assumption: "vLLM charges its budget once, at startup; what the step's tensors do not \
                     fill stays with the instance.",
        rest: "",
    }
}
