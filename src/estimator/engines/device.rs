//! The device memory a serving engine sees: the total `torch.cuda.mem_get_info` reports (vLLM's
//! `total_gpu_memory`) and nvidia-smi's capacity in MiB (SGLang's default `mem_fraction_static`
//! reads it). Both differ from the vendor's "80 GB": an H100 80GB holds 81,559 MiB, of which the
//! driver reports 79.19 GiB as usable.

use crate::hardware::GpuId;
use crate::scenario::GpuChoice;
use crate::units::GIB;

/// The driver's reserve: nvidia-smi capacity − `mem_get_info` total, GiB. The mean of the two
/// cards with both figures published: H100 80GB 79.65 − 79.19 = 0.46 (vLLM logs, gateway-api-
/// inference-extension #550; sglang.md §3), RTX 3090 24.00 − 23.58 = 0.42 (vLLM #10517).
pub const DRIVER_RESERVE_GIB: f64 = 0.44;

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
    Some(match id {
        // gateway-api-inference-extension #550: "total_gpu_memory (79.19GiB)".
        GpuId::H100Sxm | GpuId::H100Pcie => 79.19,
        // vLLM #10517: "total_gpu_memory=23.58GiB".
        GpuId::Rtx3090 => 23.58,
        _ => return None,
    })
}

/// nvidia-smi's capacity of the scenario's GPU, MiB: the published figure, else the catalog's
/// capacity (a custom GPU's `memory_gb`) in MiB.
pub fn smi_total_mib(gpu: &GpuChoice, catalog_bytes: f64) -> f64 {
    match gpu {
        GpuChoice::Catalog(id) => smi_mib(*id).unwrap_or(catalog_bytes / (1024.0 * 1024.0)),
        GpuChoice::Custom(_) => catalog_bytes / (1024.0 * 1024.0),
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
