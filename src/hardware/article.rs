//! The seed article's memory table, kept as printed (labelled "article"), so the comparison can show
//! it beside sourced figures.

use serde::{Deserialize, Serialize};

use super::{Confidence, MemoryTech, TechSpec};

/// The seed article's own table (§3.1), kept as printed so it can be shown beside sourced figures.
/// `../shared/reference/formulas-hardware-sources.md` §4 audits it: 935 GB/s is the RTX 3090's GDDR6X,
/// 616 GB/s the RTX 2080 Ti's GDDR6, 68 GB/s matches LPDDR4X-4266 × 128 bit; the latencies are unsourced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ArticleTech {
    Hbm2e,
    Gddr6x,
    Lpddr5,
}

impl ArticleTech {
    pub const COUNT: usize = 3;
    pub const ALL: [ArticleTech; ArticleTech::COUNT] =
        [ArticleTech::Hbm2e, ArticleTech::Gddr6x, ArticleTech::Lpddr5];
}

/// An article row as a whole-device configuration (one "device" = the whole memory system).
pub const fn article_tech(a: ArticleTech) -> TechSpec {
    let (tech, name, bw, cap, lat) = match a {
        ArticleTech::Hbm2e => (MemoryTech::Hbm2e, "HBM2e (article)", 935.0, 80.0, 100.0),
        ArticleTech::Gddr6x => (MemoryTech::Gddr6x, "GDDR6X (article)", 616.0, 24.0, 150.0),
        ArticleTech::Lpddr5 => (MemoryTech::Lpddr5, "LPDDR5 (article)", 68.0, 32.0, 200.0),
    };
    TechSpec {
        tech,
        name,
        device: "memory system",
        device_bandwidth_gb_s: bw,
        device_capacity_gb: Some(cap),
        devices: 1,
        config: "as printed in the seed article §3.1",
        latency_ns: Some(lat),
        energy_pj_per_bit: None,
        source: "seed article §3.1 (audited as wrong in the reference §4)",
        confidence: Confidence::Unverified,
        note: "Article figures: bandwidth and latency do not match the named technology.",
    }
}
