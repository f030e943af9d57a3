//! The remaining sections (see `sections.rs`): strategies, parallel layout, GPU, overheads, timing,
//! input pipeline, PEFT and quantization.

use crate::estimator::Diagnostics;
use crate::scenario::validate::FieldRange;
use crate::scenario::*;

/// The `RANGES` entry of a field, looked up at compile time (a misspelt name does not compile).
macro_rules! r {
    ($name:literal) => {
        const { crate::scenario::validate::field($name) }
    };
}

/// Clamps a float field; NaN becomes `default` (the section's `Default` value).
#[inline]
fn f(name: &'static FieldRange, x: f64, default: f64, d: &mut Diagnostics) -> f64 {
    name.clamp(x, default, d)
}

/// Clamps a count.
#[inline]
fn u(name: &'static FieldRange, x: u32, d: &mut Diagnostics) -> u32 {
    name.clamp_u32(x, d)
}

pub(super) fn strategies(s: &Strategies, d: &mut Diagnostics) -> Strategies {
    let Strategies {
        checkpointing,
        checkpoint_every,
        attention,
        activation_compression_8bit,
        zero,
        hybrid_shard,
        offload_optimizer,
        offload_params,
        prune_fraction,
        prune_kind,
        weight_sharing_fraction,
        one_bit_comm,
        one_bit_warmup_fraction,
        second_tier,
        second_tier_gib,
    } = s;
    let z = Strategies::default();
    Strategies {
        checkpointing: *checkpointing,
        checkpoint_every: u(r!("strategies.checkpoint_every"), *checkpoint_every, d),
        attention: *attention,
        activation_compression_8bit: *activation_compression_8bit,
        zero: *zero,
        hybrid_shard: *hybrid_shard,
        offload_optimizer: *offload_optimizer,
        offload_params: *offload_params,
        prune_fraction: f(
            r!("strategies.prune_fraction"),
            *prune_fraction,
            z.prune_fraction,
            d,
        ),
        prune_kind: *prune_kind,
        weight_sharing_fraction: f(
            r!("strategies.weight_sharing_fraction"),
            *weight_sharing_fraction,
            z.weight_sharing_fraction,
            d,
        ),
        one_bit_comm: *one_bit_comm,
        one_bit_warmup_fraction: f(
            r!("strategies.one_bit_warmup_fraction"),
            *one_bit_warmup_fraction,
            z.one_bit_warmup_fraction,
            d,
        ),
        second_tier: *second_tier,
        second_tier_gib: f(
            r!("strategies.second_tier_gib"),
            *second_tier_gib,
            z.second_tier_gib,
            d,
        ),
    }
}

pub(super) fn parallel(p: &Parallelism, d: &mut Diagnostics) -> Parallelism {
    let Parallelism {
        dp,
        tp,
        pp,
        sequence_parallel,
        pp_microbatches,
        pp_interleave,
        gpus_per_node,
        cp,
        cp_style,
    } = p;
    Parallelism {
        dp: u(r!("parallel.dp"), *dp, d),
        tp: u(r!("parallel.tp"), *tp, d),
        pp: u(r!("parallel.pp"), *pp, d),
        sequence_parallel: *sequence_parallel,
        pp_microbatches: u(r!("parallel.pp_microbatches"), *pp_microbatches, d),
        pp_interleave: u(r!("parallel.pp_interleave"), *pp_interleave, d),
        gpus_per_node: u(r!("parallel.gpus_per_node"), *gpus_per_node, d),
        cp: u(r!("parallel.cp"), *cp, d),
        cp_style: *cp_style,
    }
}

/// A custom GPU's figures (its name is not read by the estimator and is left empty, so resolving
/// does not allocate). An FP8 rate below the 16-bit floor (1 GFLOP/s) counts as no FP8 units (0):
/// the estimator then runs FP8 at the 16-bit rate, as for 0.
pub(super) fn gpu(g: &GpuChoice, d: &mut Diagnostics) -> GpuChoice {
    let c = match g {
        GpuChoice::Catalog(id) => return GpuChoice::Catalog(*id),
        GpuChoice::Custom(c) => c,
    };
    let CustomGpu {
        name: _,
        memory_gb,
        bandwidth_gb_s,
        tflops_16,
        tflops_32,
        tflops_8,
        memory_tech,
        link_gb_s,
        host_link_gb_s,
        tdp_w,
    } = c;
    let z = CustomGpu::unnamed();
    let fp8 = f(r!("gpu.tflops_8"), *tflops_8, z.tflops_8, d);
    let tflops_16_floor = r!("gpu.tflops_16").min;
    GpuChoice::Custom(CustomGpu {
        name: String::new(),
        memory_gb: f(r!("gpu.memory_gb"), *memory_gb, z.memory_gb, d),
        bandwidth_gb_s: f(
            r!("gpu.bandwidth_gb_s"),
            *bandwidth_gb_s,
            z.bandwidth_gb_s,
            d,
        ),
        tflops_16: f(r!("gpu.tflops_16"), *tflops_16, z.tflops_16, d),
        tflops_32: f(r!("gpu.tflops_32"), *tflops_32, z.tflops_32, d),
        tflops_8: if fp8 < tflops_16_floor { 0.0 } else { fp8 },
        memory_tech: *memory_tech,
        link_gb_s: f(r!("gpu.link_gb_s"), *link_gb_s, z.link_gb_s, d),
        host_link_gb_s: f(
            r!("gpu.host_link_gb_s"),
            *host_link_gb_s,
            z.host_link_gb_s,
            d,
        ),
        tdp_w: f(r!("gpu.tdp_w"), *tdp_w, z.tdp_w, d),
    })
}

pub(super) fn overheads(o: &Overheads, d: &mut Diagnostics) -> Overheads {
    let Overheads {
        cuda_context_mib,
        cuda_kernels_mib,
        allocator_reserve_fraction,
        workspace_mib,
        comm_buffer_mib,
        nccl_mib_per_communicator,
        nccl_mib_two_rank_communicator,
    } = o;
    let z = Overheads::default();
    Overheads {
        cuda_context_mib: f(
            r!("overheads.cuda_context_mib"),
            *cuda_context_mib,
            z.cuda_context_mib,
            d,
        ),
        cuda_kernels_mib: f(
            r!("overheads.cuda_kernels_mib"),
            *cuda_kernels_mib,
            z.cuda_kernels_mib,
            d,
        ),
        allocator_reserve_fraction: f(
            r!("overheads.allocator_reserve_fraction"),
            *allocator_reserve_fraction,
            z.allocator_reserve_fraction,
            d,
        ),
        workspace_mib: f(
            r!("overheads.workspace_mib"),
            *workspace_mib,
            z.workspace_mib,
            d,
        ),
        comm_buffer_mib: f(
            r!("overheads.comm_buffer_mib"),
            *comm_buffer_mib,
            z.comm_buffer_mib,
            d,
        ),
        nccl_mib_per_communicator: f(
            r!("overheads.nccl_mib_per_communicator"),
            *nccl_mib_per_communicator,
            z.nccl_mib_per_communicator,
            d,
        ),
        nccl_mib_two_rank_communicator: f(
            r!("overheads.nccl_mib_two_rank_communicator"),
            *nccl_mib_two_rank_communicator,
            z.nccl_mib_two_rank_communicator,
            d,
        ),
    }
}

pub(super) fn timing(t: &Timing, d: &mut Diagnostics) -> Timing {
    let Timing {
        compute_efficiency: ce,
        memory_efficiency: me,
        link_efficiency: le,
        comm_overlap: co,
        offload_overlap: oo,
        pinned_host_memory,
        pageable_fraction: pf,
        internode_gb_s: ib,
        link_latency_us: ll,
        collective,
        nvme_gb_s: nb,
        host_optimizer_gb_s: ho,
        token_budget: tb,
        price_per_gpu_hour: pr,
        parts,
    } = t;
    let z = Timing::default();
    Timing {
        compute_efficiency: f(
            r!("timing.compute_efficiency"),
            *ce,
            z.compute_efficiency,
            d,
        ),
        memory_efficiency: f(r!("timing.memory_efficiency"), *me, z.memory_efficiency, d),
        link_efficiency: f(r!("timing.link_efficiency"), *le, z.link_efficiency, d),
        comm_overlap: f(r!("timing.comm_overlap"), *co, z.comm_overlap, d),
        offload_overlap: f(r!("timing.offload_overlap"), *oo, z.offload_overlap, d),
        pinned_host_memory: *pinned_host_memory,
        pageable_fraction: f(r!("timing.pageable_fraction"), *pf, z.pageable_fraction, d),
        internode_gb_s: f(r!("timing.internode_gb_s"), *ib, z.internode_gb_s, d),
        link_latency_us: f(r!("timing.link_latency_us"), *ll, z.link_latency_us, d),
        collective: *collective,
        nvme_gb_s: f(r!("timing.nvme_gb_s"), *nb, z.nvme_gb_s, d),
        host_optimizer_gb_s: f(
            r!("timing.host_optimizer_gb_s"),
            *ho,
            z.host_optimizer_gb_s,
            d,
        ),
        token_budget: f(r!("timing.token_budget"), *tb, z.token_budget, d),
        price_per_gpu_hour: f(
            r!("timing.price_per_gpu_hour"),
            *pr,
            z.price_per_gpu_hour,
            d,
        ),
        parts: timing_parts(parts, d),
    }
}

/// The parts model's constants and the inference fixed overhead, each within its documented range.
fn timing_parts(p: &PartsTiming, d: &mut Diagnostics) -> PartsTiming {
    let PartsTiming {
        gemm_efficiency: ge,
        gemm_efficiency_hopper: gh,
        flash_forward_efficiency: ff,
        flash_backward_efficiency: fb,
        tp_overlap: to,
        pp_overlap: po,
        elementwise,
        kernel_floor_us: kf,
        eager_op_us: eo,
        generate_step_us: gs,
        cuda_graphs,
        int8_weight_only_read: w8,
        int4_weight_only_read: w4,
    } = p;
    let z = PartsTiming::default();
    PartsTiming {
        gemm_efficiency: f(
            r!("timing.parts.gemm_efficiency"),
            *ge,
            z.gemm_efficiency,
            d,
        ),
        gemm_efficiency_hopper: f(
            r!("timing.parts.gemm_efficiency_hopper"),
            *gh,
            z.gemm_efficiency_hopper,
            d,
        ),
        flash_forward_efficiency: f(
            r!("timing.parts.flash_forward_efficiency"),
            *ff,
            z.flash_forward_efficiency,
            d,
        ),
        flash_backward_efficiency: f(
            r!("timing.parts.flash_backward_efficiency"),
            *fb,
            z.flash_backward_efficiency,
            d,
        ),
        tp_overlap: f(r!("timing.parts.tp_overlap"), *to, z.tp_overlap, d),
        pp_overlap: f(r!("timing.parts.pp_overlap"), *po, z.pp_overlap, d),
        elementwise: *elementwise,
        kernel_floor_us: f(
            r!("timing.parts.kernel_floor_us"),
            *kf,
            z.kernel_floor_us,
            d,
        ),
        eager_op_us: f(r!("timing.parts.eager_op_us"), *eo, z.eager_op_us, d),
        generate_step_us: f(
            r!("timing.parts.generate_step_us"),
            *gs,
            z.generate_step_us,
            d,
        ),
        cuda_graphs: *cuda_graphs,
        int8_weight_only_read: f(
            r!("timing.parts.int8_weight_only_read"),
            *w8,
            z.int8_weight_only_read,
            d,
        ),
        int4_weight_only_read: f(
            r!("timing.parts.int4_weight_only_read"),
            *w4,
            z.int4_weight_only_read,
            d,
        ),
    }
}

pub(super) fn input(i: &InputPipeline, d: &mut Diagnostics) -> InputPipeline {
    let InputPipeline {
        kind,
        token_bytes,
        image_height,
        image_width,
        image_channels,
        encoding,
        image_dtype,
        gpu_prefetch_batches,
        host_staging_batches,
    } = i;
    InputPipeline {
        kind: *kind,
        token_bytes: u(r!("input.token_bytes"), *token_bytes, d),
        image_height: u(r!("input.image_height"), *image_height, d),
        image_width: u(r!("input.image_width"), *image_width, d),
        image_channels: u(r!("input.image_channels"), *image_channels, d),
        encoding: *encoding,
        image_dtype: *image_dtype,
        gpu_prefetch_batches: u(r!("input.gpu_prefetch_batches"), *gpu_prefetch_batches, d),
        host_staging_batches: u(r!("input.host_staging_batches"), *host_staging_batches, d),
    }
}

pub(super) fn peft(p: &Peft, d: &mut Diagnostics) -> Peft {
    let Peft {
        method,
        rank,
        targets,
        double_quant,
        paged_optimizer,
        lora_dropout,
        inference_adapters,
    } = p;
    let LoraTargets {
        q,
        k,
        v,
        o,
        gate,
        up,
        down,
    } = *targets;
    Peft {
        method: *method,
        rank: u(r!("peft.rank"), *rank, d),
        targets: LoraTargets {
            q,
            k,
            v,
            o,
            gate,
            up,
            down,
        },
        double_quant: *double_quant,
        paged_optimizer: *paged_optimizer,
        lora_dropout: f(r!("peft.lora_dropout"), *lora_dropout, 0.0, d),
        inference_adapters: *inference_adapters,
    }
}

pub(super) fn quantization(q: &Quantization, d: &mut Diagnostics) -> Quantization {
    let Quantization {
        weights,
        group_size,
        experts_only,
    } = q;
    Quantization {
        weights: *weights,
        group_size: u(r!("quantization.group_size"), *group_size, d),
        experts_only: *experts_only,
    }
}
