//! Units with their names on them. Memory is stored in bytes and converted only at the edges.
//!
//! Policy (written once, used everywhere): memory is shown in GiB (2^30 B, as `nvidia-smi`'s MiB are
//! binary), bandwidth in GB/s (10^9 B/s, the vendor convention), compute in TFLOP/s (10^12).
//! Catalog values are entered in the unit the vendor used, through the matching constructor.

use serde::{Deserialize, Serialize};

/// One gibibyte, 2^30 bytes.
pub const GIB: f64 = 1_073_741_824.0;
/// One gigabyte, 10^9 bytes.
pub const GB: f64 = 1e9;
/// One mebibyte, 2^20 bytes.
pub const MIB: f64 = 1_048_576.0;

/// A byte count. `f64` so that sharded fractions (Ψ/N_d) stay exact enough and sums never overflow;
/// integers up to 2^53 (9 PB) are represented exactly.
///
/// ```
/// use vram_explorer::units::Bytes;
/// assert_eq!(Bytes::from_gib(1.0).get(), 1_073_741_824.0);
/// assert_eq!(Bytes::from_gb(80.0).as_gib(), 80e9 / 1_073_741_824.0);
/// assert!((Bytes::from_gb(1.0).as_gib() - 0.931_322_574_6).abs() < 1e-9);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Bytes(pub f64);

impl Bytes {
    pub const ZERO: Bytes = Bytes(0.0);

    pub const fn new(bytes: f64) -> Self {
        Bytes(bytes)
    }
    pub const fn from_gib(gib: f64) -> Self {
        Bytes(gib * GIB)
    }
    pub const fn from_gb(gb: f64) -> Self {
        Bytes(gb * GB)
    }
    pub const fn from_mib(mib: f64) -> Self {
        Bytes(mib * MIB)
    }
    pub const fn get(self) -> f64 {
        self.0
    }
    pub const fn as_gib(self) -> f64 {
        self.0 / GIB
    }
    pub const fn as_gb(self) -> f64 {
        self.0 / GB
    }
    pub const fn as_mib(self) -> f64 {
        self.0 / MIB
    }
    pub fn max(self, other: Bytes) -> Bytes {
        Bytes(self.0.max(other.0))
    }
}

impl std::ops::Add for Bytes {
    type Output = Bytes;
    fn add(self, rhs: Bytes) -> Bytes {
        Bytes(self.0 + rhs.0)
    }
}
impl std::ops::AddAssign for Bytes {
    fn add_assign(&mut self, rhs: Bytes) {
        self.0 += rhs.0;
    }
}
impl std::ops::Sub for Bytes {
    type Output = Bytes;
    fn sub(self, rhs: Bytes) -> Bytes {
        Bytes(self.0 - rhs.0)
    }
}
impl std::ops::Mul<f64> for Bytes {
    type Output = Bytes;
    fn mul(self, rhs: f64) -> Bytes {
        Bytes(self.0 * rhs)
    }
}
impl std::ops::Div<f64> for Bytes {
    type Output = Bytes;
    fn div(self, rhs: f64) -> Bytes {
        Bytes(self.0 / rhs)
    }
}
impl std::iter::Sum for Bytes {
    fn sum<I: Iterator<Item = Bytes>>(iter: I) -> Bytes {
        iter.fold(Bytes::ZERO, |a, b| a + b)
    }
}

/// Which memory unit a person wants to read. GiB is the default (see the module policy).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemoryUnit {
    #[default]
    GiB,
    GB,
}

impl MemoryUnit {
    /// The unit's label, always shown next to a number.
    pub const fn label(self) -> &'static str {
        match self {
            MemoryUnit::GiB => "GiB",
            MemoryUnit::GB => "GB",
        }
    }
    pub fn value(self, b: Bytes) -> f64 {
        match self {
            MemoryUnit::GiB => b.as_gib(),
            MemoryUnit::GB => b.as_gb(),
        }
    }
    /// Formats with the unit label; never prints NaN or infinity.
    ///
    /// ```
    /// use vram_explorer::units::{Bytes, MemoryUnit};
    /// assert_eq!(MemoryUnit::GiB.format(Bytes::from_gib(12.5)), "12.5 GiB");
    /// assert_eq!(MemoryUnit::GiB.format(Bytes::from_gib(2.5)), "2.50 GiB");
    /// assert_eq!(MemoryUnit::GB.format(Bytes::from_gb(80.0)), "80.0 GB");
    /// assert_eq!(MemoryUnit::GiB.format(Bytes(f64::NAN)), "— GiB");
    /// ```
    pub fn format(self, b: Bytes) -> String {
        format!("{} {}", fmt_sig(self.value(b)), self.label())
    }
}

/// Bandwidth in bytes per second; shown in GB/s (decimal, vendor convention).
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BytesPerSec(pub f64);

impl BytesPerSec {
    pub const fn from_gb_per_s(gbps: f64) -> Self {
        BytesPerSec(gbps * GB)
    }
    pub const fn as_gb_per_s(self) -> f64 {
        self.0 / GB
    }
    pub const fn get(self) -> f64 {
        self.0
    }
}

/// Compute throughput in FLOP/s; shown in TFLOP/s.
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FlopsPerSec(pub f64);

impl FlopsPerSec {
    pub const fn from_tflops(t: f64) -> Self {
        FlopsPerSec(t * 1e12)
    }
    pub const fn as_tflops(self) -> f64 {
        self.0 / 1e12
    }
    pub const fn get(self) -> f64 {
        self.0
    }
}

/// A duration with a readable unit (see [`crate::format::seconds`]): kept under its old name.
pub use crate::format::seconds as fmt_seconds;
/// About three significant digits (see [`crate::format::sig`]): kept under its old name.
pub use crate::format::sig as fmt_sig;
