//! The device memory a serving engine sees: the total `torch.cuda.mem_get_info` reports (vLLM's
//! `total_gpu_memory`) and nvidia-smi's capacity in MiB (SGLang's default `mem_fraction_static`
//! reads it). Both differ from the vendor's "80 GB": an H100 80GB holds 81,559 MiB, of which the
//! driver reports 79.19 GiB as usable.

use crate::hardware::GpuId;
use crate::scenario::GpuChoice;
use crate::units::GIB;

/// The driver's reserve: nvidia-smi capacity − `mem_get_info` total, GiB (the catalog's
/// [`crate::hardware::CUDA_RUNTIME_RESERVE_GIB`], where its sources are named).
pub const DRIVER_RESERVE_GIB: f64 = crate::hardware::CUDA_RUNTIME_RESERVE_GIB;

/// nvidia-smi's capacity, MiB, where a source prints it; `None`: derived from the catalog.
fn smi_mib(id: GpuId) -> Option<f64> {
    Some(match id {
        // sglang.md §3 (`get_nvgpu_memory_capacity` on an H100 80GB and an RTX 4090).
        GpuId::H100Sxm | GpuId::H100Pcie => 81_559.0,
        GpuId::Rtx4090 => 24_564.0,
        // 24 GiB GDDR6X as nvidia-smi shows it (vLLM #10517's total 23.58 GiB + the reserve).
        GpuId::Rtx3090 => 24_576.0,
        _ => return None,
    })
}

/// The `mem_get_info` total, GiB, where a log prints it.
fn driver_gib(id: GpuId) -> Option<f64> {
    // The catalog holds these totals (its `runtime_reserve_gib` of these cards is the logs'):
    // gateway-api-inference-extension #550 "total_gpu_memory (79.19GiB)", vLLM #10517
    // "total_gpu_memory=23.58GiB".
    match id {
        GpuId::H100Sxm | GpuId::H100Pcie | GpuId::Rtx3090 => {
            Some(crate::hardware::usable(id).as_gib())
        }
        _ => None,
    }
}

/// The catalog's capacity in MiB: the vendor's "N GB" as N GiB (`hardware::Capacity`), which
/// nvidia-smi shows within 0.5 % (H100 "80 GB" 81,559 MiB = 79.65 GiB, RTX 4090 "24 GB" 24,564
/// MiB, RTX 3090 24,576 MiB, as published above).
fn vendor_number_as_gib_mib(catalog_bytes: f64) -> f64 {
    catalog_bytes / 1_048_576.0
}

/// nvidia-smi's capacity of the scenario's GPU, MiB: the published figure, else the catalog's
/// (a custom GPU's `memory_gb`) "N GB" as N GiB.
pub fn smi_total_mib(gpu: &GpuChoice, catalog_bytes: f64) -> f64 {
    match gpu {
        GpuChoice::Catalog(id) => {
            smi_mib(*id).unwrap_or_else(|| vendor_number_as_gib_mib(catalog_bytes))
        }
        GpuChoice::Custom(_) => vendor_number_as_gib_mib(catalog_bytes),
    }
}

/// The `mem_get_info` total of the scenario's GPU, bytes: the published figure, else nvidia-smi's
/// capacity minus [`DRIVER_RESERVE_GIB`].
pub fn driver_total_bytes(gpu: &GpuChoice, catalog_bytes: f64) -> f64 {
    let published = match gpu {
        GpuChoice::Catalog(id) => driver_gib(*id),
        GpuChoice::Custom(_) => None,
    };
    match published {
        Some(g) => g * GIB,
        None => (smi_total_mib(gpu, catalog_bytes) * 1024.0 * 1024.0 - DRIVER_RESERVE_GIB * GIB)
            .max(0.0),
    }
}
