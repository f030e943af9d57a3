//! Memory technologies: per-device (stack, chip, channel, DIMM or link) bandwidth, capacity, latency
//! and energy per bit, each with its source. Source: `../shared/reference/formulas-hardware-sources.md`
//! §3. A figure that is only [U] there is `None` here (shown as unknown), with the [U] value in `note`.
//!
//! Each technology also carries a *what-if configuration*: a device count that makes a GPU-sized
//! memory system (stated in `config`), used by the architecture comparison.

use serde::{Deserialize, Serialize};

use super::Confidence;
use crate::units::{Bytes, BytesPerSec};

/// A memory technology.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MemoryTech {
    Hbm2,
    Hbm2e,
    #[default]
    Hbm3,
    Hbm3e,
    Gddr6,
    Gddr6x,
    Gddr7,
    Lpddr5,
    Lpddr5x,
    Ddr5,
    /// A CXL 2.0 Type-3 memory expander on a PCIe 5.0 x16 link.
    Cxl2,
    /// CXL 3.0 on a PCIe 6.0 x16 link.
    Cxl3,
}

impl MemoryTech {
    pub const COUNT: usize = 12;
    pub const ALL: [MemoryTech; MemoryTech::COUNT] = [
        MemoryTech::Hbm2,
        MemoryTech::Hbm2e,
        MemoryTech::Hbm3,
        MemoryTech::Hbm3e,
        MemoryTech::Gddr6,
        MemoryTech::Gddr6x,
        MemoryTech::Gddr7,
        MemoryTech::Lpddr5,
        MemoryTech::Lpddr5x,
        MemoryTech::Ddr5,
        MemoryTech::Cxl2,
        MemoryTech::Cxl3,
    ];

    pub const fn label(self) -> &'static str {
        tech(self).name
    }
}

/// One technology's figures, per device, and its what-if configuration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TechSpec {
    pub tech: MemoryTech,
    pub name: &'static str,
    /// What one "device" is (a stack, an x32 chip, an x16 channel, a DIMM, a x16 link).
    pub device: &'static str,
    /// Bandwidth of one device, GB/s (per direction for CXL).
    pub device_bandwidth_gb_s: f64,
    /// Typical capacity of one device in the vendor's "GB", which for DRAM is binary (GiB: see
    /// [`super::Capacity`]; a 16 GB HBM3 stack is 8 × 16 Gbit dies) (`None`: not sourced).
    pub device_capacity_gb: Option<f64>,
    /// Devices in the what-if configuration.
    pub devices: u32,
    /// The what-if configuration in words.
    pub config: &'static str,
    /// Load-to-use latency seen by a processor, ns (`None`: not sourced).
    pub latency_ns: Option<f64>,
    /// Access energy, pJ per bit (`None`: not sourced).
    pub energy_pj_per_bit: Option<f64>,
    pub source: &'static str,
    pub confidence: Confidence,
    pub note: &'static str,
}

impl TechSpec {
    /// Bandwidth of the what-if configuration.
    pub fn bandwidth(&self) -> BytesPerSec {
        BytesPerSec::from_gb_per_s(self.device_bandwidth_gb_s * self.devices as f64)
    }
    /// Capacity of the what-if configuration (`None`: per-device capacity not sourced).
    pub fn capacity(&self) -> Option<Bytes> {
        self.device_capacity_gb
            .map(|c| Bytes::from_gib(c * self.devices as f64))
    }
}

const BASE: TechSpec = TechSpec {
    tech: MemoryTech::Hbm2,
    name: "",
    device: "stack",
    device_bandwidth_gb_s: 0.0,
    device_capacity_gb: None,
    devices: 1,
    config: "",
    latency_ns: None,
    energy_pj_per_bit: None,
    source: "",
    confidence: Confidence::Secondary,
    note: "",
};

/// The catalog entry of a technology.
pub const fn tech(t: MemoryTech) -> TechSpec {
    match t {
        MemoryTech::Hbm2 => TechSpec {
            tech: t,
            name: "HBM2",
            device_bandwidth_gb_s: 256.0,
            device_capacity_gb: Some(8.0),
            devices: 4,
            config: "4 stacks at 2.0 Gb/s × 1024 bit, 8 GB each (V100-like)",
            latency_ns: Some(300.0),
            energy_pj_per_bit: Some(3.97),
            source: "JESD235; O'Connor et al., Fine-Grained DRAM, MICRO'17 §1–2 (3.97 pJ/bit = 1.21 \
                     activation + 2.24 on-die + 0.30 I/O) [T]; latency: V100 460 cycles [D]",
            confidence: Confidence::Transcribed,
            note: "Device tRC ~45 ns [S]; 300 ns is GPU load-to-use.",
            ..BASE
        },
        MemoryTech::Hbm2e => TechSpec {
            tech: t,
            name: "HBM2e",
            device_bandwidth_gb_s: 460.0,
            device_capacity_gb: Some(16.0),
            devices: 5,
            config: "5 stacks at 3.6 Gb/s, 16 GB each (A100-80GB-like)",
            source: "SK hynix spec sheet comparison; design-reuse [S]",
            note: "410–461 GB/s per stack. Latency \"similar to HBM2\" (no figure); ~4.3 pJ/bit [U].",
            ..BASE
        },
        MemoryTech::Hbm3 => TechSpec {
            tech: t,
            name: "HBM3",
            device_bandwidth_gb_s: 819.0,
            device_capacity_gb: Some(16.0),
            devices: 5,
            config: "5 stacks at 6.4 Gb/s, 16 GB each (H100-like)",
            source: "JEDEC JESD238 (Jan 2022) via Phoronix [S]",
            note: "H100 SXM runs its 5 stacks at 670 GB/s each [D]. No official pJ/bit [U].",
            ..BASE
        },
        MemoryTech::Hbm3e => TechSpec {
            tech: t,
            name: "HBM3e",
            device_bandwidth_gb_s: 1150.0,
            device_capacity_gb: Some(24.0),
            devices: 8,
            config: "8 stacks, 24 GB each (B200-like)",
            latency_ns: Some(438.0),
            source: "SK hynix (1.15 TB/s) and Micron (1.2 TB/s) per stack [S]; latency: B200 860 \
                     cycles [D]",
            note: "B200 runs 8 stacks at 1 TB/s each [D]. Energy per bit [U].",
            ..BASE
        },
        MemoryTech::Gddr6 | MemoryTech::Gddr6x | MemoryTech::Gddr7 | MemoryTech::Lpddr5 => {
            tech_rest(t)
        }
        MemoryTech::Lpddr5x | MemoryTech::Ddr5 | MemoryTech::Cxl2 | MemoryTech::Cxl3 => tech_far(t),
    }
}

const fn tech_rest(t: MemoryTech) -> TechSpec {
    match t {
        MemoryTech::Gddr6 => TechSpec {
            tech: t,
            name: "GDDR6",
            device: "x32 chip",
            device_bandwidth_gb_s: 64.0,
            device_capacity_gb: Some(2.0),
            devices: 12,
            config: "12 chips (384 bit) at 16 Gb/s, 2 GB each",
            source: "per-device 56–80 GB/s at 14–20 Gb/s [S]; T4/L40S arithmetic [D]",
            note: "GPU load-to-use ~250–400 ns (Chips and Cheese 2021) [S]; ~7.5 pJ/bit [U] \
                   (GDDR5-class 14 pJ/bit, O'Connor Fig. 1a [T]).",
            ..BASE
        },
        MemoryTech::Gddr6x => TechSpec {
            tech: t,
            name: "GDDR6X",
            device: "x32 chip",
            device_bandwidth_gb_s: 84.0,
            device_capacity_gb: Some(2.0),
            devices: 12,
            config: "12 chips (384 bit) at 21 Gb/s, 2 GB each (RTX 4090-like)",
            latency_ns: Some(252.0),
            source: "Micron press release, 84 GB/s per component at 21 Gb/s [S]; latency: RTX 4090 \
                     636 cycles [D]",
            note: "\"15% less power per bit than GDDR6\" (Micron) [S]; 7.25 pJ/bit [U].",
            ..BASE
        },
        MemoryTech::Gddr7 => TechSpec {
            tech: t,
            name: "GDDR7",
            device: "x32 chip",
            device_bandwidth_gb_s: 112.0,
            device_capacity_gb: Some(2.0),
            devices: 16,
            config: "16 chips (512 bit) at 28 Gb/s, 2 GB each (RTX 5090-like)",
            latency_ns: Some(389.0),
            source: "JEDEC JESD239 (Mar 2024) press coverage [S]; latency: RTX 5090 936 cycles [D]",
            note: "Up to 192 GB/s per device at 48 Gb/s (spec). Energy per bit [U].",
            ..BASE
        },
        MemoryTech::Lpddr5 => TechSpec {
            tech: t,
            name: "LPDDR5",
            device: "x16 channel",
            device_bandwidth_gb_s: 12.8,
            device_capacity_gb: Some(3.0),
            devices: 64,
            config: "64 x16 channels (1024 bit) at 6400 MT/s, 192 GB (M2 Ultra-like)",
            source: "JESD209-5 rates [S]; Apple Ultra 1024-bit × 6400 MT/s = 819.2 GB/s [D]",
            note: "Latency and energy per bit not sourced [U].",
            ..BASE
        },
        // Only the four technologies `tech` routes here reach this function.
        _ => tech_far(t),
    }
}

const fn tech_far(t: MemoryTech) -> TechSpec {
    match t {
        MemoryTech::Lpddr5x => TechSpec {
            tech: t,
            name: "LPDDR5X",
            device: "x16 channel",
            device_bandwidth_gb_s: 17.1,
            devices: 64,
            config: "64 x16 channels (1024 bit) at 8533 MT/s",
            source: "Micron LPDDR5X page quoted in a repo [T]",
            confidence: Confidence::Transcribed,
            note: "Capacity, latency and energy per bit not sourced [U].",
            ..BASE
        },
        MemoryTech::Ddr5 => TechSpec {
            tech: t,
            name: "DDR5",
            device: "64-bit DIMM",
            device_bandwidth_gb_s: 51.2,
            device_capacity_gb: Some(64.0),
            devices: 8,
            config: "8 channels of DDR5-6400 RDIMM, 64 GB each (a server socket)",
            source: "JESD79-5 rates; 6400 MT/s × 8 B = 51.2 GB/s [D]",
            confidence: Confidence::Derived,
            note: "16–128 GB per RDIMM. ~100 ns CPU latency and ~12 pJ/bit (simulator model) [U].",
            ..BASE
        },
        MemoryTech::Cxl2 => TechSpec {
            tech: t,
            name: "CXL 2.0",
            device: "x16 expander",
            device_bandwidth_gb_s: 64.0,
            device_capacity_gb: Some(128.0),
            devices: 1,
            config: "one Type-3 expander on PCIe 5.0 x16, 128 GB DDR5",
            source: "\"Exploring and Evaluating Real-world CXL\" arXiv:2405.14209; Sun et al. MICRO'23 [S]",
            note: "Per direction. Latency 2–5× local DRAM on real devices [S]; absolute ns and \
                   energy not sourced.",
            ..BASE
        },
        _ => TechSpec {
            tech: t,
            name: "CXL 3.0",
            device: "x16 link",
            device_bandwidth_gb_s: 128.0,
            devices: 1,
            config: "one device on PCIe 6.0 x16 (64 GT/s PAM4)",
            source: "64 GT/s × 16 lanes ÷ 8 = 128 GB/s per direction [D]",
            confidence: Confidence::Derived,
            note: "≈121 GB/s effective after FLIT overhead [U]. Capacity, latency, energy not sourced.",
            ..BASE
        },
    }
}
