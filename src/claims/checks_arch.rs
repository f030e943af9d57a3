//! Checks of the article's architecture and outlook claims (§3–§5): the memory table, embedding
//! lookups, BERT-tiny at the edge, per-layer precision, 1-bit communication, CXL, photonics, PIM.

use super::checks::{cut, gb, load, ratio, total, variant};
use super::{Check, Claimed};
use crate::estimator::article::edge_reuse::model_plan;
use crate::estimator::article::embedding_lookup::{lookup_time, scenario_lookups};
use crate::estimator::estimate;
use crate::hardware::{GpuId, MemoryTech, gpu, tech};
use crate::scenario::{Dtype, PrecisionMode, SecondTier};

pub(super) fn memory_table() -> Check {
    let a100 = gpu(GpuId::A100Sxm80);
    let lat = |t: MemoryTech| {
        tech(t)
            .latency_ns
            .map_or("unknown".to_owned(), |l| format!("{l:.0} ns"))
    };
    Check {
        claimed: Claimed::Figure(935.0),
        general: Some(a100.bandwidth_gb_s),
        conditional: None,
        detail: format!(
            "Catalog: HBM2e A100 80 GB {:.0} GB/s, latency {}; GDDR6X RTX 3090 {:.0} GB/s, RTX 4090 \
             latency {}; LPDDR5 Snapdragon 865 {:.0} GB/s, latency {}",
            a100.bandwidth_gb_s,
            lat(MemoryTech::Hbm2e),
            gpu(GpuId::Rtx3090).bandwidth_gb_s,
            lat(MemoryTech::Gddr6x),
            gpu(GpuId::Snapdragon865).bandwidth_gb_s,
            lat(MemoryTech::Lpddr5)
        ),
    }
}

pub(super) fn embedding_12_to_3() -> Check {
    // Latency-bound: one sample's lookups in flight, on the two measured latencies.
    let (hbm, gddr) = (tech(MemoryTech::Hbm2), tech(MemoryTech::Gddr6x));
    let s = load("recommender-hbm-a100");
    let (accesses, row, in_flight) = s.as_ref().map_or((0.0, 0.0, 1.0), |s| {
        let r = &s.model.recommender;
        let n = f64::from(r.lookups_per_sample);
        (
            n * f64::from(s.workload.micro_batch),
            f64::from(r.dim) * 4.0,
            n,
        )
    });
    let t = |spec: crate::hardware::TechSpec| {
        lookup_time(
            accesses,
            row,
            spec.latency_ns,
            in_flight,
            spec.bandwidth().get(),
        )
        .time_s
    };
    let latency_bound = t(gddr).zip(t(hbm)).and_then(|(g, h)| ratio(g, h));
    // Bandwidth-bound: the two presets' GPUs with every lookup in flight.
    let bw = |id: &str| load(id).map(|s| scenario_lookups(&s, f64::INFINITY).bandwidth_s);
    let bandwidth_bound = bw("recommender-gddr6x-rtx3090")
        .zip(bw("recommender-hbm-a100"))
        .and_then(|(g, h)| ratio(g, h));
    Check {
        claimed: Claimed::Figure(4.0),
        general: latency_bound,
        conditional: bandwidth_bound,
        detail: format!(
            "{accesses:.0} lookups of {row:.0} B per batch. Latency-bound (26 in flight): HBM2 \
             {:.2} ms vs GDDR6X {:.2} ms",
            t(hbm).unwrap_or(f64::NAN) * 1e3,
            t(gddr).unwrap_or(f64::NAN) * 1e3
        ),
    }
}

pub(super) fn bert_tiny_512() -> Check {
    let s = load("bert-tiny-snapdragon865");
    let e = s.as_ref().map(estimate);
    let plan = s.as_ref().zip(e).map(|(s, e)| {
        let bytes = s.precision_types().activations.bytes();
        let p = model_plan(&e.model, 1.0, f64::from(s.inference.prompt_tokens), bytes);
        (
            p,
            e.model.params.total * s.precision_types().weights.bytes(),
        )
    });
    Check {
        claimed: Claimed::AtMost(512e6),
        general: e.map(|e| total(&e)),
        conditional: None,
        detail: plan.map_or_else(String::new, |(p, w)| {
            format!(
                "Weights {:.1} MB; activations {:.2} MB if every op keeps its buffer, {:.2} MB \
                 reused by liveness: under 512 MB either way",
                w / 1e6,
                p.naive_bytes / 1e6,
                p.reused_bytes / 1e6
            )
        }),
    }
}

pub(super) fn amp_per_layer() -> Check {
    let id = "bert-base-fp32";
    let mixed = |attention_fp32: bool| {
        variant(id, move |s| {
            s.precision.mode = PrecisionMode::Amp;
            s.precision.compute = Dtype::Fp16;
            s.precision.attention_fp32 = attention_fp32;
        })
        .map(|e| total(&e))
    };
    let fp32 = variant(id, |_| {}).map(|e| total(&e));
    let (per_layer, all16) = (mixed(true), mixed(false));
    Check {
        claimed: Claimed::AtMost(1.0),
        general: per_layer.zip(fp32).and_then(|(a, b)| ratio(a, b)),
        conditional: None,
        detail: format!(
            "BERT-base batch 32 × 128: FP32 {}, attention FP32 + FFN FP16 {}, all 16-bit {}",
            fp32.map_or_else(String::new, gb),
            per_layer.map_or_else(String::new, gb),
            all16.map_or_else(String::new, gb)
        ),
    }
}

pub(super) fn one_bit() -> Check {
    let c = |warmup: f64| {
        variant("one-bit-adam", |s| {
            s.strategies.one_bit_warmup_fraction = warmup
        })
        .map(|e| e.performance.communication.compression_ratio)
    };
    let (end_to_end, stage) = (c(0.15), c(0.0));
    Check {
        claimed: Claimed::Figure(0.9375),
        general: end_to_end.map(|r| cut(r, 1.0)),
        conditional: stage.map(|r| cut(r, 1.0)),
        detail: format!(
            "Volume reduction: {:.2}× end to end with 15 % warm-up, {:.0}× during compression",
            end_to_end.unwrap_or(f64::NAN),
            stage.unwrap_or(f64::NAN)
        ),
    }
}

pub(super) fn cxl_tb() -> Check {
    let one = tech(MemoryTech::Cxl2);
    let cap = one.capacity().map(|b| b.get());
    let e = variant("gpt3-175b-mp8-a100", |_| {});
    let slow = e.and_then(|e| {
        ratio(
            e.performance.projections.cxl_pool_step_s,
            e.performance.step.total_s,
        )
    });
    Check {
        claimed: Claimed::AtLeast(1e12),
        general: cap,
        conditional: cap.map(|c| 8.0 * c),
        detail: format!(
            "CXL 2.0 in the catalog: {} at {:.0} GB/s per direction (HBM2e on an A100 80 GB: \
             {:.0} GB/s). GPT-3 175B on TP 8 with the overflow in a CXL pool: step {:.1}× longer",
            one.config,
            one.bandwidth().as_gb_per_s(),
            gpu(GpuId::A100Sxm80).bandwidth_gb_s,
            slow.unwrap_or(f64::NAN)
        ),
    }
}

pub(super) fn photonic() -> Check {
    let r = |id: &str| {
        variant(id, |_| {}).and_then(|e| {
            let p = &e.performance;
            ratio(p.projections.photonic_comm_s, p.step.communication_s)
        })
    };
    let (node, cluster) = (r("llama3-70b-zero3-8xh100"), r("zero-3d-parallel-cluster"));
    Check {
        claimed: Claimed::AtMost(0.9),
        general: node,
        conditional: cluster,
        detail: format!(
            "Exposed communication with 200 GB/s (1.6 Tb/s) links ÷ today: one 8 × H100 node \
             {:.2}×; 1024 A100 over 50 GB/s InfiniBand {:.2}×",
            node.unwrap_or(f64::NAN),
            cluster.unwrap_or(f64::NAN)
        ),
    }
}

pub(super) fn pim_10x() -> Check {
    let s = load("bert-base-fp32");
    let e = s.as_ref().map(estimate);
    let hw = s.as_ref().map(|s| s.gpu.spec());
    let share = e.zip(hw).and_then(|(e, hw)| {
        let mem_j = e.performance.cost.memory_energy_per_step_j?;
        let board_j = hw.tdp_w? * e.performance.step.total_s;
        ratio(mem_j, board_j)
    });
    Check {
        claimed: Claimed::Figure(10.0),
        general: share.map(|x| 1.0 / (1.0 - x.min(0.999))),
        conditional: None,
        detail: format!(
            "BERT-base on a V100 (HBM2, 3.97 pJ/bit): memory traffic is {:.1} % of the board's \
             energy per step; removing all of it gains at most 1 ÷ (1 − share)",
            100.0 * share.unwrap_or(f64::NAN)
        ),
    }
}

pub(super) fn swap_slowdown() -> Check {
    let id = "gpt-1.3b-amp-checkpointing";
    let tier = |t: SecondTier| {
        variant(id, |s| {
            s.strategies.second_tier = t;
            s.strategies.second_tier_gib = 64.0;
        })
        .map(|e| e.performance.offload.tier_slowdown)
    };
    let host = tier(SecondTier::Host);
    Check {
        claimed: Claimed::Range(3.0, 5.0),
        general: host,
        conditional: None,
        detail: format!(
            "1.3B on a 24 GB RTX 3090, what does not fit spilled to host memory over PCIe: step \
             {:.1}× longer",
            host.unwrap_or(f64::NAN)
        ),
    }
}
