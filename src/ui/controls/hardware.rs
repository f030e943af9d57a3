//! Hardware (catalog GPU or custom), overheads and timing controls.

use egui::Ui;

use crate::hardware::{self, GpuId};
use crate::scenario::{CustomGpu, GpuChoice, Scenario};
use crate::ui::Prefs;
use crate::ui::widgets::{percent_slider, real_slider, toggle};
use crate::units::fmt_sig;

pub fn ui(ui: &mut Ui, s: &mut Scenario, prefs: &Prefs) {
    let selected = match &s.gpu {
        GpuChoice::Catalog(id) => id.name(),
        GpuChoice::Custom(_) => "Custom GPU",
    };
    let mut changed = false;
    let mut response = egui::ComboBox::from_label("GPU")
        .selected_text(selected)
        .height(480.0)
        .show_ui(ui, |ui| {
            for id in GpuId::ALL {
                let spec = hardware::gpu(id);
                let r = ui.selectable_value(&mut s.gpu, GpuChoice::Catalog(id), spec.name);
                let r = r.on_hover_text(format!(
                    "{} {}, {} GB/s\n{}",
                    fmt_sig(match spec.capacity {
                        hardware::Capacity::Gb(v) | hardware::Capacity::Gib(v) => v,
                    }),
                    spec.capacity.unit_label(),
                    fmt_sig(spec.bandwidth_gb_s),
                    spec.source
                ));
                changed |= r.changed();
            }
            let is_custom = matches!(s.gpu, GpuChoice::Custom(_));
            if ui
                .selectable_label(is_custom, "Custom GPU…")
                .on_hover_text("Describe a GPU by its headline figures.")
                .clicked()
                && !is_custom
            {
                s.gpu = GpuChoice::Custom(CustomGpu::default());
                changed = true;
            }
        })
        .response
        .on_hover_text(
            "The GPU each rank runs on: its memory capacity, bandwidth and peak FLOP/s.",
        );
    if changed {
        response.mark_changed();
    }
    let spec = s.gpu.spec();
    ui.label(format!(
        "{} ({} usable) · {} GB/s",
        prefs.unit.format(spec.capacity.bytes()),
        prefs.unit.format(spec.usable()),
        fmt_sig(spec.bandwidth_gb_s)
    ))
    .on_hover_text(format!(
        "Memory capacity in {}: the datasheet's \"GB\" of memory is binary (JEDEC), so an \"80 GB\" \
         card holds 80 GiB. Usable: what the CUDA runtime lets a process allocate (cudaMemGetInfo's \
         total); the fit is measured against it. Then the peak bandwidth. Source: {}",
        prefs.unit.label(),
        spec.source
    ));
    if let GpuChoice::Custom(c) = &mut s.gpu {
        custom_ui(ui, c);
    }
}

fn custom_ui(ui: &mut Ui, c: &mut CustomGpu) {
    real_slider(
        ui,
        &mut c.memory_gb,
        1.0..=512.0,
        "Memory",
        "GB",
        "Capacity in GB (10^9 B), as vendors quote it.",
    );
    real_slider(
        ui,
        &mut c.bandwidth_gb_s,
        10.0..=16000.0,
        "Bandwidth",
        "GB/s",
        "Peak memory bandwidth.",
    );
    real_slider(
        ui,
        &mut c.tflops_16,
        1.0..=5000.0,
        "16-bit peak",
        "TFLOP/s",
        "Dense FP16/BF16 tensor throughput.",
    );
    real_slider(
        ui,
        &mut c.tflops_32,
        0.1..=200.0,
        "FP32 peak",
        "TFLOP/s",
        "Dense FP32 (non-tensor) throughput.",
    );
    real_slider(
        ui,
        &mut c.link_gb_s,
        0.0..=2000.0,
        "GPU link",
        "GB/s",
        "GPU-GPU link per direction.",
    );
    real_slider(
        ui,
        &mut c.host_link_gb_s,
        1.0..=256.0,
        "Host link",
        "GB/s",
        "Host (PCIe) link per direction.",
    );
}

pub fn overheads_ui(ui: &mut Ui, s: &mut Scenario) {
    let o = &mut s.overheads;
    real_slider(
        ui,
        &mut o.cuda_context_mib,
        0.0..=2048.0,
        "CUDA context",
        "MiB",
        "CUDA context of a process that has just initialised CUDA (PyTorch with lazy loading: 253.75 MiB, PR #86509).",
    );
    real_slider(
        ui,
        &mut o.cuda_kernels_mib,
        0.0..=2048.0,
        "Kernels loaded",
        "MiB",
        "Kernel modules CUDA loads lazily as the run first uses them, on top of the context \
         (an assumption: ~400 MB for a running process, pytorch#109888; 0 with eager loading).",
    );
    percent_slider(
        ui,
        &mut o.allocator_reserve_fraction,
        0.0..=1.0,
        "Allocator reserve",
        "Caching-allocator rounding and fragmentation, as a share of peak tensor bytes (an assumption).",
    );
    real_slider(
        ui,
        &mut o.workspace_mib,
        0.0..=4096.0,
        "Workspaces",
        "MiB",
        "cuBLAS/cuDNN workspaces.",
    );
    real_slider(
        ui,
        &mut o.comm_buffer_mib,
        0.0..=4096.0,
        "Comm buffers",
        "MiB",
        "Gradient communication buckets per GPU (DDP: 2 × 25 MB); counted only when DP > 1.",
    );
    real_slider(
        ui,
        &mut o.nccl_mib_per_communicator,
        0.0..=8192.0,
        "NCCL per communicator",
        "MiB",
        "NCCL's own buffers per parallel group of 3 or more ranks this GPU joins (data, tensor, pipeline, context, expert): 688 MB on 4 × A100 NVLink (NVIDIA/nccl#964); NCCL sizes them by its channel count, so NVSwitch systems and all-to-all take more. nvidia-smi only; 0 leaves them out.",
    );
    real_slider(
        ui,
        &mut o.nccl_mib_two_rank_communicator,
        0.0..=8192.0,
        "NCCL per 2-rank communicator",
        "MiB",
        "The same for a group of two ranks: 544 MB (NVIDIA/nccl#964).",
    );
}

pub fn timing_ui(ui: &mut Ui, s: &mut Scenario) {
    let t = &mut s.timing;
    percent_slider(
        ui,
        &mut t.compute_efficiency,
        0.01..=1.0,
        "Compute efficiency",
        "Achievable share of peak FLOP/s (MFU-like).",
    );
    percent_slider(
        ui,
        &mut t.memory_efficiency,
        0.01..=1.0,
        "Memory efficiency",
        "Achievable share of peak memory bandwidth.",
    );
    percent_slider(
        ui,
        &mut t.link_efficiency,
        0.01..=1.0,
        "Link efficiency",
        "Achievable share of link bandwidth in collectives.",
    );
    percent_slider(
        ui,
        &mut t.comm_overlap,
        0.0..=1.0,
        "Comm overlap",
        "Share of communication hidden behind compute.",
    );
    percent_slider(
        ui,
        &mut t.offload_overlap,
        0.0..=1.0,
        "Offload overlap",
        "Share of offload traffic hidden by prefetch.",
    );
    real_slider(
        ui,
        &mut t.host_optimizer_gb_s,
        1.0..=1000.0,
        "Host optimizer bandwidth",
        "GB/s",
        "Memory bandwidth one node's CPUs reach in the offloaded optimizer's update, shared by its GPUs (≈ 88 GB/s measured on 8 × H100 nodes).",
    );
    toggle(
        ui,
        &mut t.pinned_host_memory,
        "Pinned host memory",
        "Page-locked host buffers: host transfers at full PCIe speed.",
    );
    real_slider(
        ui,
        &mut t.internode_gb_s,
        1.0..=400.0,
        "Inter-node network",
        "GB/s",
        "Per GPU, per direction (400 Gb/s NDR = 50 GB/s).",
    );
}
