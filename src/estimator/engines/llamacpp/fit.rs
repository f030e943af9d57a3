//! llama-server's `-fit` (on by default) for an unset `-c`: the context it picks on one GPU
//! (llama.cpp@0c1e57098 `common/fit.cpp` `common_params_fit_impl`, steps 1 and 2).
//!
//! - The context starts at the training context times the cache's streams (`n_ctx_max`; one stream
//!   with `--kv-unified`, one per `-np` slot without).
//! - If the GPU's model, KV and compute buffers at `n_ctx_max` leave at least `--fit-target`
//!   (1,024 MiB) of its free memory, nothing changes.
//! - Else, unless `-c 0` asked for the full context or `n_ctx_max` is at most `--fit-ctx` (4,096)
//!   times the streams, the buffers are measured again at that minimum, and the context is
//!   interpolated linearly between the two to use the free memory less the target, rounded down to
//!   a multiple of 256 × streams, at least the minimum.
//! - Where that does not suffice (or `-c` was set) and `-ngl` is unset, step 3 fills the GPU with
//!   layers from the back (the output layer first, as `-ngl` counts them): for a dense model on one
//!   GPU the most layers whose buffers leave the target free ([`layers`]; llama.cpp finds the same
//!   count by false position). A mixture of experts is fitted with its routed experts in host
//!   memory first, then given its experts back layer by layer from the front ([`moe_layers`],
//!   steps 3–4). Step 4's last try, part of one more layer's FFN on the GPU (`LAYER_FRACTION_UP`,
//!   `_GATE`, `_ATTN`), is not modelled: it moves at most one layer's FFN.
//!
//! The free memory is an assumption: the GPU's usable memory less the scenario's CUDA context
//! (`overheads.cuda_context_mib`); other processes on the GPU lower it further.

use crate::scenario::LlamaCpp;

/// What `-fit` did: the context it started from, the one it picked, the layers it put on the GPU,
/// and the memory it aimed at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fitted {
    /// `n_ctx_max`: the training context times the streams (`-c` when it was set).
    pub from: u32,
    /// The context used (`from` when the buffers fit with the target left free).
    pub to: u32,
    /// The GPU's free memory assumed and the target left free, bytes.
    pub free: u64,
    pub target: u64,
    /// Step 3's `-ngl` (layers from the back, the output layer counted), if it ran.
    pub ngl: Option<i32>,
    /// Step 2 settled it (the buffers fit at `to`): step 3 does not run.
    pub settled: bool,
    /// A mixture of experts: the repeating layers (`start .. end`) whose routed experts steps 3–4
    /// left in host memory.
    pub experts_host: Option<(u32, u32)>,
}

impl Fitted {
    pub const fn reduced(&self) -> bool {
        self.to < self.from
    }
}

/// The context `-fit` gives `s` on one GPU whose buffers at a context of `n` cells total
/// `used(n)` bytes, with `free` bytes free; `None` when it does not apply (`-c` set, `-fit off`).
///
/// ```
/// use vram_explorer::estimator::engines::llamacpp::fit::context;
/// use vram_explorer::scenario::LlamaCpp;
/// let s = LlamaCpp { n_ctx: 0, ..LlamaCpp::default() };
/// // 4 GiB of weights and 128 KiB of KV per cell on a GPU with 12 GiB free.
/// let used = |n: u32| (4u64 << 30) + u64::from(n) * (128 << 10);
/// let f = context(&s, 131_072, 1, 12 << 30, used).unwrap();
/// // (12 − 1 − 4) GiB of KV = 57,344 cells.
/// assert_eq!((f.from, f.to), (131_072, 57_344));
/// let c0 = LlamaCpp { fit_ctx: 0, ..s };
/// assert_eq!(context(&c0, 131_072, 1, 12 << 30, used).unwrap().to, 131_072);
/// assert!(context(&LlamaCpp { n_ctx: 8192, ..s }, 131_072, 1, 12 << 30, used).is_none());
/// ```
pub fn context(
    s: &LlamaCpp,
    train: u32,
    streams: u32,
    free: u64,
    used: impl Fn(u32) -> u64,
) -> Option<Fitted> {
    if s.n_ctx != 0 || !s.fit {
        return None;
    }
    let streams = streams.max(1);
    let from = train.max(1).saturating_mul(streams);
    let target = u64::from(s.fit_target_mib) << 20;
    let mut f = Fitted {
        from,
        to: from,
        free,
        target,
        settled: true,
        ..Fitted::default()
    };
    let used_max = used(from);
    let min = s.fit_ctx.saturating_mul(streams);
    if free.saturating_sub(used_max) >= target {
        return Some(f);
    }
    if s.fit_ctx == 0 || from <= min {
        f.settled = false;
        return Some(f);
    }
    let goal = i128::from(free) - i128::from(target);
    let used_min = i128::from(used(min));
    let used_max = i128::from(used_max);
    f.to = if goal > used_min && used_max > used_min {
        let span = i128::from(from - min);
        let n = i128::from(min) + span * (goal - used_min) / (used_max - used_min);
        let n = u32::try_from(n.clamp(0, i128::from(from))).unwrap_or(from);
        let align = 256 * streams;
        (n - n % align).max(min)
    } else {
        f.settled = false;
        min
    };
    Some(f)
}

/// Step 3 for a dense model on one GPU: the most of `n_layer + 1` offloadable layers (the repeating
/// ones and the output) whose GPU buffers, `used(ngl)` bytes, stay within `budget` (free memory
/// less the target); 0 when not even the output layer does. `used` grows with `ngl`.
///
/// ```
/// use vram_explorer::estimator::engines::llamacpp::fit::layers;
/// // 500 MB a layer, 1 GB of cache and compute besides: 10 GB holds 18 layers.
/// let used = |ngl: i32| 1_000_000_000 + 500_000_000 * ngl as u64;
/// assert_eq!(layers(32, 10_000_000_000, used), 18);
/// assert_eq!(layers(32, 100_000_000_000, used), 33);
/// assert_eq!(layers(32, 900_000_000, used), 0);
/// ```
pub fn layers(n_layer: u32, budget: u64, used: impl Fn(i32) -> u64) -> i32 {
    let all = i32::try_from(n_layer).unwrap_or(i32::MAX - 1) + 1;
    let (mut lo, mut hi) = (0, all);
    if used(hi) <= budget {
        return hi;
    }
    // used(lo) fits or lo = 0; used(hi) does not.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if used(mid) <= budget {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Steps 3–4 for a mixture of experts on one GPU, as `set_ngl_tensor_split_tbo` lays layers out:
/// `used(ngl, n_full)` is the GPU's bytes with `ngl` layers from the back (the output layer
/// counted) of which the first `n_full` keep their routed experts and the rest leave them in host
/// memory (`blk.i.ffn_*_exps` overridden to the CPU). Step 3: the most layers with one full (the
/// code counts the output layer as that one, `n_part = n_layer − 1`, but the layer indices make the
/// front-most GPU layer full; the output has no experts). Step 4, if every layer fits with all its
/// experts on the host: the most full layers. Returns `(ngl, n_full)`.
///
/// ```
/// use vram_explorer::estimator::engines::llamacpp::fit::moe_layers;
/// // 48 layers of a 100 MB dense part and 300 MB of experts, a 500 MB output layer, 1 GB besides;
/// // the first `full` GPU layers keep their experts (as `fitted` lays them out; the output layer,
/// // the last, has none).
/// let used = |ngl: i32, full: u32| {
///     let l = if ngl < 0 { 49 } else { ngl.unsigned_abs().min(49) };
///     let out = if l > 0 { 500_000_000 } else { 0 };
///     let repeating = u64::from(l.saturating_sub(1));
///     let with_experts = u64::from(full.min(l.saturating_sub(1)));
///     1_000_000_000 + out + repeating * 100_000_000 + with_experts * 300_000_000
/// };
/// // 10 GB: every layer's dense part (6.3 GB, 6.6 with step 3's one full layer), then the
/// // experts of 12 layers (3.6 GB).
/// assert_eq!(moe_layers(48, 10_000_000_000, used), (49, 12));
/// // 5 GB: not every dense part; 33 layers from the back (1.5 + 32 × 0.1 + 0.3 GB), the rest of
/// // the experts on the host.
/// assert_eq!(moe_layers(48, 5_000_000_000, used), (33, 1));
/// ```
pub fn moe_layers(n_layer: u32, budget: u64, used: impl Fn(i32, u32) -> u64) -> (i32, u32) {
    // Step 3: dense-only layers from the back.
    let ngl = layers(n_layer, budget, |n| used(n, 1));
    let l = ngl.unsigned_abs();
    // Step 4 runs when all dense parts fit with every expert on the host and memory to spare
    // (`global_surplus_cpu_moe > 0`).
    if used(-1, 0) >= budget || l == 0 {
        return (ngl, 1);
    }
    let (mut lo, mut hi) = (1, l);
    if used(ngl, hi) <= budget {
        return (ngl, hi);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if used(ngl, mid) <= budget {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (ngl, lo)
}
