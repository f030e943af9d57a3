//! Where each layer kind sits in the model's layer order, for the few phase rules that depend on
//! it (issue 14): a Hugging Face prefill's peak lies inside the last layer of some kind, when only
//! the caches of the layers before it exist (measured, docs/blocks-measured.md "Prefill"). Two
//! small fixed arrays per kind, filled while the pattern is resolved: no allocation.

use super::blocks::MAX_KINDS;

/// Runs of one pattern part remembered for its repeats; a part with more runs is placed as if each
/// run's copies were contiguous (only the order facts degrade).
const PART_RUNS: usize = 32;

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LayerOrder {
    /// Layers placed so far.
    placed: u32,
    /// Index (0-based) of each kind's last layer.
    last: [u32; MAX_KINDS],
    /// `after[i][j]`: layers of kind j after kind i's last layer.
    after: [[u32; MAX_KINDS]; MAX_KINDS],
    /// `before[i][j]`: layers of kind j before kind i's first layer.
    before: [[u32; MAX_KINDS]; MAX_KINDS],
    /// Layers of each kind placed so far.
    of: [u32; MAX_KINDS],
}

impl LayerOrder {
    /// Index of kind `i`'s last layer.
    pub fn last(&self, i: usize) -> u32 {
        self.last.get(i).copied().unwrap_or(0)
    }

    /// Layers of kind `j` that come after the last layer of kind `i`.
    pub fn after(&self, i: usize, j: usize) -> u32 {
        self.after
            .get(i)
            .and_then(|r| r.get(j))
            .copied()
            .unwrap_or(0)
    }

    /// Layers of kind `j` that come before the first layer of kind `i`.
    pub fn before(&self, i: usize, j: usize) -> u32 {
        self.before
            .get(i)
            .and_then(|r| r.get(j))
            .copied()
            .unwrap_or(0)
    }

    /// `count` layers of kind `i` follow the layers placed so far.
    pub fn place(&mut self, i: usize, count: u32) {
        if count == 0 {
            return;
        }
        if let (Some(row), Some(n)) = (self.before.get_mut(i), self.of.get(i))
            && *n == 0
        {
            *row = self.of;
        }
        if let Some(n) = self.of.get_mut(i) {
            *n = n.saturating_add(count);
        }
        for (k, row) in self.after.iter_mut().enumerate() {
            if let Some(a) = row.get_mut(i)
                && k != i
            {
                *a = a.saturating_add(count);
            }
        }
        if let Some(row) = self.after.get_mut(i) {
            *row = [0; MAX_KINDS];
        }
        self.placed = self.placed.saturating_add(count);
        if let Some(l) = self.last.get_mut(i) {
            *l = self.placed - 1;
        }
    }

    /// `per_kind[j]` more layers of kind j follow, in an order that leaves no kind's last layer
    /// among them (the middle copies of a repeated part).
    fn skip(&mut self, per_kind: [u32; MAX_KINDS]) {
        for row in &mut self.after {
            for (a, p) in row.iter_mut().zip(per_kind) {
                *a = a.saturating_add(p);
            }
        }
        let n = per_kind.iter().fold(0u32, |a, p| a.saturating_add(*p));
        self.placed = self.placed.saturating_add(n);
        for (o, p) in self.of.iter_mut().zip(per_kind) {
            *o = o.saturating_add(p);
        }
    }
}

/// One pattern part being resolved: its runs (kind index, layers per copy), placed `repeat` times
/// when it ends.
#[derive(Clone, Copy, Debug)]
pub struct PartOrder {
    runs: [(u8, u32); PART_RUNS],
    len: usize,
    repeat: u32,
    overflow: bool,
}

impl PartOrder {
    pub fn new(repeat: u32) -> PartOrder {
        PartOrder {
            runs: [(0, 0); PART_RUNS],
            len: 0,
            repeat,
            overflow: false,
        }
    }

    /// A run of the part: `count` layers of kind `i` per copy. Past [`PART_RUNS`] runs the part's
    /// runs are placed with their copies contiguous.
    pub fn run(&mut self, o: &mut LayerOrder, i: usize, count: u32) {
        if !self.overflow
            && let Some(slot) = self.runs.get_mut(self.len)
        {
            *slot = (u8::try_from(i).unwrap_or(u8::MAX), count);
            self.len += 1;
            return;
        }
        if !self.overflow {
            self.overflow = true;
            for &(k, n) in self.runs.get(..self.len).unwrap_or(&[]) {
                o.place(usize::from(k), n.saturating_mul(self.repeat));
            }
        }
        o.place(i, count.saturating_mul(self.repeat));
    }

    /// The part's `repeat` copies follow the layers placed so far. The copies between the first and
    /// the last only add their counts (a kind's last layer is in the last copy).
    pub fn end(self, o: &mut LayerOrder) {
        if self.overflow || self.repeat == 0 {
            return;
        }
        let runs = self.runs.get(..self.len).unwrap_or(&[]);
        let copy = |o: &mut LayerOrder| {
            for &(i, n) in runs {
                o.place(usize::from(i), n);
            }
        };
        copy(o);
        if self.repeat > 2 {
            let mut per_kind = [0u32; MAX_KINDS];
            for &(i, n) in runs {
                if let Some(p) = per_kind.get_mut(usize::from(i)) {
                    *p = p.saturating_add(n.saturating_mul(self.repeat - 2));
                }
            }
            o.skip(per_kind);
        }
        if self.repeat > 1 {
            copy(o);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A B B repeated 4 times, then C: A B B A B B A B B A B B C.
    #[test]
    fn a_repeated_part_places_every_copy() {
        let mut o = LayerOrder::default();
        let mut p = PartOrder::new(4);
        p.run(&mut o, 0, 1);
        p.run(&mut o, 1, 2);
        p.end(&mut o);
        o.place(2, 1);
        assert_eq!((o.last(0), o.last(1), o.last(2)), (9, 11, 12));
        assert_eq!((o.after(0, 1), o.after(0, 2), o.after(1, 0)), (2, 1, 0));
        assert_eq!((o.after(1, 2), o.after(2, 0), o.after(2, 1)), (1, 0, 0));
        assert_eq!((o.before(1, 0), o.before(2, 0), o.before(2, 1)), (1, 4, 8));
        assert_eq!(o.before(0, 1), 0);
    }
}
