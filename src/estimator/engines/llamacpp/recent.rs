//! The last few replays and their results, most recent first. A replay is a pure function of
//! its key, and callers ask for a few keys in turn: one estimate asks for its plan three times
//! (the memory phases, the time, the report), `compare` once per GPU, llama-server's `-fit` once
//! per step of its binary searches (each a new shape), a sweep chart once per sample.

/// Up to `N` keys with their values, most recent first; a fixed array, no allocation.
pub struct Recent<K, V, const N: usize> {
    entries: [Option<(K, V)>; N],
}

impl<K: Copy + PartialEq, V: Copy, const N: usize> Recent<K, V, N> {
    /// Nothing kept.
    pub const fn new() -> Self {
        Recent { entries: [None; N] }
    }

    /// The value kept for `key`, which moves to the front.
    pub fn get(&mut self, key: &K) -> Option<V> {
        let i = self
            .entries
            .iter()
            .position(|e| e.as_ref().is_some_and(|(k, _)| k == key))?;
        self.entries[..=i].rotate_right(1);
        self.entries[0].map(|(_, v)| v)
    }

    /// Keeps `value` for `key` at the front, dropping the oldest.
    pub fn put(&mut self, key: K, value: V) {
        if N == 0 {
            return;
        }
        self.entries.rotate_right(1);
        self.entries[0] = Some((key, value));
    }

    /// `key`'s value, computed by `f` and kept if it was not.
    pub fn get_or(&mut self, key: K, f: impl FnOnce() -> V) -> V {
        if let Some(v) = self.get(&key) {
            return v;
        }
        let v = f();
        self.put(key, v);
        v
    }
}

impl<K: Copy + PartialEq, V: Copy, const N: usize> Default for Recent<K, V, N> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::Recent;

    #[test]
    fn keeps_the_most_recent_and_drops_the_oldest() {
        let mut r = Recent::<u32, u32, 2>::new();
        assert_eq!(r.get_or(1, || 10), 10);
        assert_eq!(r.get_or(2, || 20), 20);
        // 1 is asked again: kept, and now the most recent.
        assert_eq!(r.get_or(1, || 99), 10);
        // 3 pushes out 2, the oldest.
        assert_eq!(r.get_or(3, || 30), 30);
        assert_eq!(r.get(&2), None);
        assert_eq!(r.get(&1), Some(10));
    }
}
