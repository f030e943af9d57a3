//! Pipeline stages: the layers each stage holds, and the classes of stages whose memory differs
//! (first, interior stages by layer count, last). Each class is computed once, at its first stage,
//! which keeps the most micro-batches in flight (`Ctx::in_flight_at`). Fixed-size, no allocation.

use crate::estimator::{MAX_STAGE_CLASSES, StageRole};

/// Layers of the 0-based stage `i` of `p` stages for `l` layers: ⌊l/p⌋, one more on each of the
/// first l mod p stages (DeepSpeed 0.19.8, deepspeed/runtime/utils.py `partition_uniform`, the
/// split of `PipelineModule(partition_method="uniform")`; Megatron-Core requires p to divide the
/// layers unless the first and last stages' counts are given, so every stage then has l/p).
///
/// ```
/// use vram_explorer::estimator::memory::pipeline::layers_of;
/// // 10 layers on 4 stages: 3, 3, 2, 2.
/// assert_eq!([0, 1, 2, 3].map(|i| layers_of(10, 4, i)), [3, 3, 2, 2]);
/// ```
pub const fn layers_of(l: u32, p: u32, i: u32) -> u32 {
    let p = if p == 0 { 1 } else { p };
    l / p + if i < l % p { 1 } else { 0 }
}

/// How a framework spreads layers that the stage count does not divide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// One more layer on each of the first l mod p stages ([`layers_of`]: DeepSpeed).
    FirstStages,
    /// One more on each of the l mod p stages just before the last: vLLM 0.34
    /// `vllm/distributed/utils.py` `get_pp_indices` (`partitions[-i] += 1` for i in 2 ..= r + 1:
    /// the last stage holds the norm and the head, the first the embedding).
    BeforeLast,
}

/// Layers of the 0-based stage `i` of `p` stages for `l` layers under `split`.
///
/// ```
/// use vram_explorer::estimator::memory::pipeline::{Split, split_layers_of};
/// // vLLM: 32 layers on 5 stages are 6, 6, 7, 7, 6.
/// assert_eq!([0, 1, 2, 3, 4].map(|i| split_layers_of(32, 5, i, Split::BeforeLast)), [6, 6, 7, 7, 6]);
/// ```
pub const fn split_layers_of(l: u32, p: u32, i: u32, split: Split) -> u32 {
    match split {
        Split::FirstStages => layers_of(l, p, i),
        Split::BeforeLast => {
            let p = if p == 0 { 1 } else { p };
            let r = l % p;
            l / p + if i + 1 < p && i + 1 + r >= p { 1 } else { 0 }
        }
    }
}

/// One class of consecutive stages with the same role and layer count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    pub role: StageRole,
    /// 0-based index of the class's first stage.
    pub first: u32,
    pub count: u32,
    pub layers: u32,
}

/// The stage classes of `p` stages (p ≥ 2) holding `l` layers, in stage order: the first stage, the
/// interior stages in two runs of equal layer counts (first stages split: those with one layer more,
/// then the base count; vLLM's: the base count, then one more), the last stage. Empty classes are
/// left out (`None` at the end). With p ≤ 1 the one stage is `First`.
pub fn classes(l: u32, p: u32, split: Split) -> [Option<Place>; MAX_STAGE_CLASSES] {
    let mut out = [None; MAX_STAGE_CLASSES];
    let p = p.max(1);
    let last = p - 1;
    // Interior stages 1 ..= p − 2 in two runs: [1, boundary) and [boundary, p − 1).
    let boundary = match split {
        // Those below l mod p hold one layer more.
        Split::FirstStages => (l % p).clamp(1, last.max(1)),
        // Those from p − 1 − l mod p on hold one layer more.
        Split::BeforeLast => (p - 1 - l % p).clamp(1, last.max(1)),
    };
    let extra_end = boundary;
    let ranges = [
        (StageRole::First, 0, 1),
        (StageRole::Interior, 1, extra_end.saturating_sub(1)),
        (
            StageRole::Interior,
            extra_end,
            last.saturating_sub(extra_end),
        ),
        (StageRole::Last, last, u32::from(p > 1)),
    ];
    let places =
        ranges
            .into_iter()
            .filter(|&(_, _, count)| count > 0)
            .map(|(role, first, count)| Place {
                role,
                first,
                count,
                layers: split_layers_of(l, p, first, split),
            });
    for (slot, place) in out.iter_mut().zip(places) {
        *slot = Some(place);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(l: u32, p: u32) -> Vec<(StageRole, u32, u32, u32)> {
        split_shape(l, p, Split::FirstStages)
    }

    fn split_shape(l: u32, p: u32, split: Split) -> Vec<(StageRole, u32, u32, u32)> {
        classes(l, p, split)
            .into_iter()
            .flatten()
            .map(|c| (c.role, c.first, c.count, c.layers))
            .collect()
    }

    #[test]
    fn classes_cover_every_stage_once_with_every_layer() {
        for p in 1..=12 {
            for l in p..=40 {
                let cs = shape(l, p);
                let stages: u32 = cs.iter().map(|c| c.2).sum();
                let layers: u32 = cs.iter().map(|c| c.2 * c.3).sum();
                assert_eq!((stages, layers), (p, l), "l {l} p {p}: {cs:?}");
                let mut next = 0;
                for c in &cs {
                    assert_eq!(c.1, next, "l {l} p {p}: {cs:?}");
                    next += c.2;
                }
            }
        }
    }

    #[test]
    fn vllm_classes_match_its_partition() {
        use StageRole::{First, Interior, Last};
        for p in 1..=12 {
            for l in p..=40 {
                let cs: Vec<_> = classes(l, p, Split::BeforeLast)
                    .into_iter()
                    .flatten()
                    .collect();
                let mut next = 0;
                for c in &cs {
                    assert_eq!(c.first, next, "l {l} p {p}: {cs:?}");
                    for i in c.first..c.first + c.count {
                        assert_eq!(
                            split_layers_of(l, p, i, Split::BeforeLast),
                            c.layers,
                            "l {l} p {p} i {i}"
                        );
                    }
                    next += c.count;
                }
                assert_eq!(next, p);
                let layers: u32 = cs.iter().map(|c| c.count * c.layers).sum();
                assert_eq!(layers, l);
            }
        }
        let shape = |l, p| split_shape(l, p, Split::BeforeLast);
        // vLLM: 32 layers on 5 stages are 6, 6, 7, 7, 6; on 3, 11, 11, 10; 31 on 4: 8, 8, 8, 7.
        assert_eq!(
            shape(32, 5),
            [
                (First, 0, 1, 6),
                (Interior, 1, 1, 6),
                (Interior, 2, 2, 7),
                (Last, 4, 1, 6)
            ]
        );
        assert_eq!(
            shape(32, 3),
            [(First, 0, 1, 11), (Interior, 1, 1, 11), (Last, 2, 1, 10)]
        );
        assert_eq!(
            shape(31, 4),
            [(First, 0, 1, 8), (Interior, 1, 2, 8), (Last, 3, 1, 7)]
        );
    }

    #[test]
    fn uneven_layers_make_four_classes() {
        use StageRole::{First, Interior, Last};
        // 10 layers on 5 stages: 2 each.
        assert_eq!(
            shape(10, 5),
            [(First, 0, 1, 2), (Interior, 1, 3, 2), (Last, 4, 1, 2)]
        );
        // 11 layers on 5 stages: 3, 2, 2, 2, 2.
        assert_eq!(
            shape(11, 5),
            [(First, 0, 1, 3), (Interior, 1, 3, 2), (Last, 4, 1, 2)]
        );
        // 13 layers on 5 stages: 3, 3, 3, 2, 2.
        assert_eq!(
            shape(13, 5),
            [
                (First, 0, 1, 3),
                (Interior, 1, 2, 3),
                (Interior, 3, 1, 2),
                (Last, 4, 1, 2)
            ]
        );
        assert_eq!(shape(7, 2), [(First, 0, 1, 4), (Last, 1, 1, 3)]);
        assert_eq!(shape(5, 1), [(First, 0, 1, 5)]);
    }
}
