//! Where `-ngl` and `-ts` put each layer (llama.cpp@0c1e57098 `src/llama-model.cpp`
//! `load_tensors`, `get_layer_buft_list`; docs/engines/llamacpp.md §3).

use crate::scenario::MAX_SPLIT;

/// The devices of layers `0 ..= n_layer` (index `n_layer` is the output layer).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Placement {
    pub n_layer: u32,
    /// First layer on a GPU: `max(n_layer + 1 − ngl, 0)`.
    pub i_gpu_start: u32,
    /// Layers on GPUs: `min(ngl, n_layer + 1)` (0 without a GPU).
    pub act_gpu_layers: u32,
    /// Cumulative, normalised split points per GPU (f32, as llama.cpp computes them).
    pub splits: [f32; MAX_SPLIT],
    pub gpus: usize,
}

impl Placement {
    /// `ngl < 0` offloads everything; `gpus = 0` (a CPU build, `-dev none`) nothing. An all-zero
    /// `tensor_split` is an even split (llama.cpp splits by free memory: equal GPUs, equal shares).
    pub fn new(n_layer: u32, ngl: i32, gpus: usize, tensor_split: &[f32; MAX_SPLIT]) -> Placement {
        let gpus = gpus.min(MAX_SPLIT);
        let all = n_layer.saturating_add(1);
        let ngl = Placement::offloaded(n_layer, ngl);
        let act_gpu_layers = if gpus == 0 { 0 } else { ngl };
        let i_gpu_start = all.saturating_sub(ngl);
        let mut splits = [0.0_f32; MAX_SPLIT];
        let even = tensor_split.iter().take(gpus).all(|&x| x == 0.0);
        let mut sum = 0.0_f32;
        for (i, s) in splits.iter_mut().enumerate().take(gpus) {
            sum += if even { 1.0 } else { tensor_split[i].max(0.0) };
            *s = sum;
        }
        if sum > 0.0 {
            for s in splits.iter_mut().take(gpus) {
                *s /= sum;
            }
        }
        Placement {
            n_layer,
            i_gpu_start,
            act_gpu_layers,
            splits,
            gpus,
        }
    }

    /// The start of builds before late 2025 (`legacy`: llama.cpp@4227c9be `llama-model.cpp`
    /// `load_tensors`, `i_gpu_start = max(n_layer − ngl, 0)`, the same split points): the last
    /// `ngl` repeating layers on GPUs, the output layer only when `ngl > n_layer`.
    pub const fn with_legacy_start(mut self, legacy: bool) -> Placement {
        if legacy && self.act_gpu_layers > 0 {
            self.i_gpu_start = self.n_layer.saturating_sub(self.act_gpu_layers);
        }
        self
    }

    /// The offloadable layers (repeating and output) `-ngl` asks for: all when negative, at most
    /// `n_layer + 1`.
    pub const fn offloaded(n_layer: u32, ngl: i32) -> u32 {
        let all = n_layer.saturating_add(1);
        if ngl < 0 || ngl.unsigned_abs() > all {
            all
        } else {
            ngl.unsigned_abs()
        }
    }

    /// The GPU of layer `il` (0 ..= n_layer), or `None` for the CPU: `std::upper_bound` of
    /// `(il − i_gpu_start) / act_gpu_layers` over the split points.
    pub fn device(&self, il: u32) -> Option<usize> {
        if self.gpus == 0 || il < self.i_gpu_start || il - self.i_gpu_start >= self.act_gpu_layers {
            return None;
        }
        let x = (il - self.i_gpu_start) as f32 / self.act_gpu_layers as f32;
        let idx = self.splits[..self.gpus]
            .iter()
            .take_while(|&&s| s <= x)
            .count();
        Some(idx.min(self.gpus - 1))
    }

    /// Repeating layers on GPUs.
    pub fn repeating_on_gpu(&self) -> u32 {
        (0..self.n_layer)
            .filter(|&il| self.device(il).is_some())
            .count() as u32
    }
}
