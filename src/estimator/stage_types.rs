//! Pipeline stage classes of a [`MemoryEstimate`](super::MemoryEstimate): the stages whose memory
//! differs (first, interior, last, and interior stages with a different layer count), each with its
//! phases and its peak, in a fixed-size array (no allocation).

use super::{Breakdown, Phase};

/// Distinct stage classes at most: the first, the interior stages with one layer more, the interior
/// stages with the base layer count, the last (`memory::pipeline::Layout`).
pub const MAX_STAGE_CLASSES: usize = 4;

/// Where a stage sits in the pipeline: the first holds the embedding, the last the head and the loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StageRole {
    First,
    Interior,
    Last,
}

impl StageRole {
    /// Lower-case name, as the report and the window write it.
    pub const fn label(self) -> &'static str {
        match self {
            StageRole::First => "first",
            StageRole::Interior => "interior",
            StageRole::Last => "last",
        }
    }
}

/// One class of pipeline stages: consecutive stages with the same role and layer count. Its phases
/// and peak are those of its first stage, which keeps the most micro-batches in flight under 1F1B
/// (stage i keeps p − i: Narayanan et al. 2021 §2.2), so the class's largest.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StageClass {
    pub role: StageRole,
    /// 0-based index of the class's first stage.
    pub first: u32,
    /// Stages in the class (indices `first .. first + count`).
    pub count: u32,
    /// Layers each stage of the class holds.
    pub layers: u32,
    /// Micro-batches of activations the class's first stage keeps at once (1 in inference).
    pub in_flight: f64,
    /// The phase that sets the class's peak.
    pub peak_phase: Option<Phase>,
    /// The peak phase's components plus NCCL buffers, CUDA context and allocator reserve.
    pub peak: Breakdown,
}

impl StageClass {
    /// 0-based index of the class's last stage.
    pub const fn last(&self) -> u32 {
        self.first + self.count.saturating_sub(1)
    }

    /// Whether the 0-based stage `index` belongs to the class.
    pub const fn contains(&self, index: u32) -> bool {
        index >= self.first && index <= self.last()
    }

    /// "stage 1 (first)", "stages 2–3 (interior)": 1-based, as users count stages.
    pub fn label(&self) -> String {
        let (a, b) = (self.first + 1, self.last() + 1);
        let role = self.role.label();
        if a == b {
            format!("stage {a} ({role})")
        } else {
            format!("stages {a}–{b} ({role})")
        }
    }

    /// The label with the class's layers and micro-batches in flight.
    pub fn describe(&self) -> String {
        let whole = (self.in_flight - self.in_flight.round()).abs() < 1e-9;
        let in_flight = if whole && self.in_flight.abs() < 1e15 {
            format!("{}", self.in_flight.round() as i64)
        } else {
            crate::units::fmt_sig(self.in_flight)
        };
        format!(
            "{}: {} layer{}, {in_flight} micro-batch{} in flight",
            self.label(),
            self.layers,
            if self.layers == 1 { "" } else { "s" },
            if whole && self.in_flight == 1.0 {
                ""
            } else {
                "es"
            }
        )
    }
}
