//! Small value types of the catalog: confidence tags, capacities in the vendor's unit, links.

use serde::{Deserialize, Serialize};

use crate::units::{Bytes, BytesPerSec};

/// Confidence of a figure, as tagged in the reference.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Confidence {
    /// [P] read from the primary text.
    Primary,
    /// [T] a verbatim transcription of the primary text.
    Transcribed,
    /// [S] consistent secondary sources.
    #[default]
    Secondary,
    /// [D] derived by arithmetic from sourced figures.
    Derived,
    /// [U] unverified: never used as a test expectation.
    Unverified,
    /// Entered by the user.
    User,
}

impl Confidence {
    pub const fn tag(self) -> &'static str {
        match self {
            Confidence::Primary => "[P]",
            Confidence::Transcribed => "[T]",
            Confidence::Secondary => "[S]",
            Confidence::Derived => "[D]",
            Confidence::Unverified => "[U]",
            Confidence::User => "[user]",
        }
    }
}

/// A capacity in the unit it is counted in.
///
/// A datasheet's "80 GB" of device memory is binary: DRAM is built and sold in powers of two, and
/// JEDEC's JESD100B.01 (Terms, Definitions, and Letter Symbols for Microcomputers, Microprocessors,
/// and Memory Integrated Circuits) defines "giga" as a prefix of semiconductor storage capacity as
/// 2^30. The devices show it: nvidia-smi reports 81,559 MiB on an H100 80GB, 24,576 MiB on an RTX
/// 3090 and 24,564 MiB on an RTX 4090 (docs/engines/sglang.md §3, vLLM #10517), where 80·10⁹ B
/// would be 76,294 MiB. The catalog therefore stores every device's memory as [`Capacity::Gib`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Capacity {
    /// Decimal gigabytes (10^9 B), for a figure that really is decimal.
    Gb(f64),
    /// Binary gibibytes (2^30 B): a datasheet's "GB" of DRAM (see above).
    Gib(f64),
}

impl Default for Capacity {
    fn default() -> Self {
        Capacity::Gb(0.0)
    }
}

impl Capacity {
    pub const fn bytes(self) -> Bytes {
        match self {
            Capacity::Gb(v) => Bytes::from_gb(v),
            Capacity::Gib(v) => Bytes::from_gib(v),
        }
    }
    /// The unit the vendor used.
    pub const fn unit_label(self) -> &'static str {
        match self {
            Capacity::Gb(_) => "GB",
            Capacity::Gib(_) => "GiB",
        }
    }
}

/// How a vendor quoted a link's bandwidth.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Quoted {
    /// Both directions added (NVIDIA NVLink 300/600/900/1800 GB/s, PCIe "64 GB/s" for Gen4 x16).
    #[default]
    Bidirectional,
    /// One direction.
    PerDirection,
}

/// A link: GPU-GPU (NVLink, Infinity Fabric, ICI) or host (PCIe).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Link {
    pub name: &'static str,
    /// The vendor's figure, GB/s, as quoted.
    pub quoted_gb_s: f64,
    pub quoted: Quoted,
}

impl Link {
    pub const fn bidir(name: &'static str, quoted_gb_s: f64) -> Link {
        Link {
            name,
            quoted_gb_s,
            quoted: Quoted::Bidirectional,
        }
    }
    /// Bandwidth in one direction (what a ring all-reduce step or a copy sees).
    pub const fn per_direction(self) -> BytesPerSec {
        match self.quoted {
            Quoted::Bidirectional => BytesPerSec::from_gb_per_s(self.quoted_gb_s / 2.0),
            Quoted::PerDirection => BytesPerSec::from_gb_per_s(self.quoted_gb_s),
        }
    }
}
