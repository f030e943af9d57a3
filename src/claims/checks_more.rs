//! Checks of the article's bandwidth claims (§2): ResNet-50 traffic, idle time, saturation, the
//! input pipeline, texture compression and all-reduce scaling.

use super::checks::{cut, gb, load, ratio, total, variant};
use super::{Check, Claimed};
use crate::estimator::article::cnn_bandwidth::batch_scaling;
use crate::estimator::article::input_pipeline::input_transfer;
use crate::estimator::{Estimate, estimate};
use crate::scenario::{CollectiveAlgorithm, Dtype, ImageEncoding, PrecisionMode, Scenario};

const INPUTS: &str = "resnet50-input-pipeline";

pub(super) fn resnet_bandwidth() -> Check {
    let r = load("resnet50-batch32").map(|s| batch_scaling(&s, 32, 128));
    Check {
        claimed: Claimed::Trend(3.0),
        general: r.map(|(_, _, x)| x[1]),
        conditional: r.map(|(_, _, x)| x[0]),
        detail: r.map_or_else(String::new, |(a, b, _)| {
            format!(
                "Bytes per step {} to {}; demand {:.0} to {:.0} GB/s; intensity {:.0} to {:.0} FLOP/B",
                gb(a.bytes_per_step),
                gb(b.bytes_per_step),
                a.bytes_per_s / 1e9,
                b.bytes_per_s / 1e9,
                a.intensity,
                b.intensity
            )
        }),
    }
}

fn idle(e: &Estimate) -> Option<f64> {
    e.performance.training.map(|r| r.idle_share)
}

pub(super) fn resnet_idle() -> Check {
    let fp32 = variant("resnet50-batch32", |_| {});
    let fp16 = variant("resnet50-batch32", |s| {
        s.precision.mode = PrecisionMode::Amp;
        s.precision.compute = Dtype::Fp16;
    });
    let ridge = |e: &Option<Estimate>| e.and_then(|e| e.performance.training).map(|r| r.ridge);
    let intensity =
        |e: &Option<Estimate>| e.and_then(|e| e.performance.training).map(|r| r.intensity);
    Check {
        claimed: Claimed::Range(0.3, 0.5),
        general: fp32.as_ref().and_then(idle),
        conditional: fp16.as_ref().and_then(idle),
        detail: format!(
            "A100 80 GB, batch 32: FP32 intensity {:.0} vs ridge {:.0} FLOP/B; FP16 tensor cores \
             intensity {:.0} vs ridge {:.0}",
            intensity(&fp32).unwrap_or(f64::NAN),
            ridge(&fp32).unwrap_or(f64::NAN),
            intensity(&fp16).unwrap_or(f64::NAN),
            ridge(&fp16).unwrap_or(f64::NAN)
        ),
    }
}

pub(super) fn saturation() -> Check {
    let on = |gpu| {
        variant("resnet50-batch32", |s| {
            s.gpu = crate::scenario::GpuChoice::Catalog(gpu)
        })
        .and_then(|e| e.performance.training)
        .map(|r| r.saturation)
    };
    use crate::hardware::GpuId;
    let (a100, v100) = (on(GpuId::A100Sxm80), on(GpuId::V100Sxm32));
    Check {
        claimed: Claimed::Figure(0.85),
        general: a100,
        conditional: None,
        detail: format!(
            "Roofline saturation of ResNet-50 FP32 training: A100 {:.0} %, V100 {:.0} % (the \
             article: 85 % and 65 %)",
            100.0 * a100.unwrap_or(f64::NAN),
            100.0 * v100.unwrap_or(f64::NAN)
        ),
    }
}

/// The input pipeline preset's copy with the step's compute time.
fn transfer(edit: impl FnOnce(&mut Scenario)) -> Option<(f64, f64, f64)> {
    let mut s = load(INPUTS)?;
    edit(&mut s);
    let e = estimate(&s);
    let t = input_transfer(&s, e.performance.step.compute_phase_s);
    Some((
        t.hidden_share,
        t.transfer_s,
        e.performance.step.compute_phase_s,
    ))
}

pub(super) fn prefetch_70() -> Check {
    let pageable = transfer(|s| s.timing.pinned_host_memory = false);
    let pinned = transfer(|s| s.timing.pinned_host_memory = true);
    Check {
        claimed: Claimed::AtLeast(0.7),
        general: pageable.map(|x| x.0),
        conditional: pinned.map(|x| x.0),
        detail: pinned.map_or_else(String::new, |(_, copy, compute)| {
            format!(
                "Batch of 128 FP32 images: copy {:.1} ms (pinned) under {:.0} ms of compute",
                copy * 1e3,
                compute * 1e3
            )
        }),
    }
}

pub(super) fn pinned_3x() -> Check {
    let pageable = transfer(|s| s.timing.pinned_host_memory = false);
    let pinned = transfer(|s| s.timing.pinned_host_memory = true);
    let speedup = pageable.zip(pinned).and_then(|(a, b)| ratio(a.1, b.1));
    Check {
        claimed: Claimed::Figure(3.0),
        general: None,
        conditional: speedup,
        detail: format!(
            "Copy of one batch: pageable {:.1} ms, pinned {:.1} ms (PCIe 4.0 x16, 32 GB/s per \
             direction)",
            pageable.map_or(f64::NAN, |x| x.1 * 1e3),
            pinned.map_or(f64::NAN, |x| x.1 * 1e3)
        ),
    }
}

/// GPU memory with the inputs counted (the estimate does not yet add them) and the input bytes.
fn with_inputs(enc: ImageEncoding) -> Option<(f64, f64)> {
    let mut s = load(INPUTS)?;
    s.input.encoding = enc;
    let inputs = input_transfer(&s, 0.0).gpu_resident.get();
    Some((total(&estimate(&s)) + inputs, inputs))
}

pub(super) fn bcn_75() -> Check {
    let (rgba, bc7) = (
        with_inputs(ImageEncoding::Rgba8),
        with_inputs(ImageEncoding::Bc7),
    );
    let both = rgba.zip(bc7);
    Check {
        claimed: Claimed::Figure(0.75),
        general: both.map(|(a, b)| cut(a.0, b.0)),
        conditional: both.map(|(a, b)| cut(a.1, b.1)),
        detail: both.map_or_else(String::new, |(a, b)| {
            format!(
                "Input batches on the GPU (2 × 128 images): RGBA8 {}, BC7 {}; whole GPU {} to {}",
                gb(a.1),
                gb(b.1),
                gb(a.0),
                gb(b.0)
            )
        }),
    }
}

pub(super) fn allreduce_log_n() -> Check {
    let comm = |dp: u32, algo: CollectiveAlgorithm| {
        variant("one-bit-adam", |s| {
            s.parallel.dp = dp;
            s.strategies.one_bit_comm = false;
            s.timing.collective = algo;
        })
        .map(|e| e.performance.communication)
    };
    let (a, b) = (
        comm(8, CollectiveAlgorithm::Auto),
        comm(1024, CollectiveAlgorithm::Auto),
    );
    let both = a.zip(b);
    Check {
        claimed: Claimed::Figure(1024f64.ln() / 8f64.ln()),
        general: both.and_then(|(a, b)| ratio(b.dp_time_s, a.dp_time_s)),
        conditional: both.and_then(|(a, b)| ratio(b.dp_tree_latency_s, a.dp_tree_latency_s)),
        detail: both.map_or_else(String::new, |(a, b)| {
            format!(
                "BERT-large gradients, 8 to 1024 GPUs: all-reduce {:.0} to {:.0} ms; bus factor \
                 {:.3} to {:.3}; tree latency {:.2} to {:.2} ms; ring latency {:.2} to {:.1} ms",
                a.dp_time_s * 1e3,
                b.dp_time_s * 1e3,
                a.dp_bus_factor,
                b.dp_bus_factor,
                a.dp_tree_latency_s * 1e3,
                b.dp_tree_latency_s * 1e3,
                a.dp_ring_latency_s * 1e3,
                b.dp_ring_latency_s * 1e3
            )
        }),
    }
}
