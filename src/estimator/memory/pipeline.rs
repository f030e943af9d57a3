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
/// interior stages with one layer more, the interior stages with the base count, the last stage.
/// Empty classes are left out (`None` at the end). With p ≤ 1 the one stage is `First`.
pub fn classes(l: u32, p: u32) -> [Option<Place>; MAX_STAGE_CLASSES] {
    let mut out = [None; MAX_STAGE_CLASSES];
    let p = p.max(1);
    let last = p - 1;
    // Interior stages 1 ..= p − 2; those below l mod p hold one layer more.
    let extra_end = (l % p).clamp(1, last.max(1));
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
                layers: layers_of(l, p, first),
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
        classes(l, p)
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
