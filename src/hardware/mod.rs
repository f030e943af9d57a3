//! The hardware catalog: GPUs and memory technologies, every entry with its source and confidence.
//! (Skeleton: the bandwidth issue fills in the datasheets.)

use serde::{Deserialize, Serialize};

use crate::units::Bytes;

/// Catalog GPUs. Serialized by variant name in scenario files, so never rename a variant
/// (add `#[serde(alias)]` if one must change).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum GpuId {
    V100Sxm32,
    A100Pcie40,
    A100Sxm40,
    A100Pcie80,
    A100Sxm80,
    #[default]
    H100Sxm,
    H100Pcie,
    H200,
    B200,
    L40S,
    T4,
    Rtx3090,
    Rtx4090,
    Rtx5090,
    Mi250X,
    Mi300X,
    AppleM2Ultra,
    AppleM3Ultra,
    Snapdragon865,
    TpuV4,
    TpuV5e,
}

impl GpuId {
    pub const ALL: [GpuId; 21] = [
        GpuId::V100Sxm32,
        GpuId::A100Pcie40,
        GpuId::A100Sxm40,
        GpuId::A100Pcie80,
        GpuId::A100Sxm80,
        GpuId::H100Sxm,
        GpuId::H100Pcie,
        GpuId::H200,
        GpuId::B200,
        GpuId::L40S,
        GpuId::T4,
        GpuId::Rtx3090,
        GpuId::Rtx4090,
        GpuId::Rtx5090,
        GpuId::Mi250X,
        GpuId::Mi300X,
        GpuId::AppleM2Ultra,
        GpuId::AppleM3Ultra,
        GpuId::Snapdragon865,
        GpuId::TpuV4,
        GpuId::TpuV5e,
    ];
}

/// Placeholder capacity until the catalog lands.
pub fn capacity(id: GpuId) -> Bytes {
    match id {
        GpuId::Rtx3090 | GpuId::Rtx4090 => Bytes::from_gb(24.0),
        _ => Bytes::from_gb(80.0),
    }
}
