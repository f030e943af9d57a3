//! The snapshot reader (src/measured/pickle.rs) against corrupted real files: random bytes of a
//! real `_dump_snapshot` pickle overwritten, inserted or removed give a snapshot or an error,
//! never a panic, and never a peak that is not a finite count of bytes. The reader is our own
//! (serde-pickle cloned each shared frame per reference: README "Your run beside the estimate"),
//! so it carries the hostile-input burden a maintained crate would have shared.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::path::Path;

use proptest::prelude::*;
use vram_explorer::measured::{self, Measurement};

fn real(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/snapshots")
        .join(name);
    std::fs::read(path).unwrap()
}

/// One edit of a file: overwrite, insert or remove a byte at a fraction of its length.
#[derive(Clone, Debug)]
enum Edit {
    Set(f64, u8),
    Insert(f64, u8),
    Remove(f64),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (0.0..1.0f64, any::<u8>()).prop_map(|(at, b)| Edit::Set(at, b)),
        (0.0..1.0f64, any::<u8>()).prop_map(|(at, b)| Edit::Insert(at, b)),
        (0.0..1.0f64).prop_map(Edit::Remove),
    ]
}

fn apply(bytes: &mut Vec<u8>, edits: &[Edit]) {
    for e in edits {
        let at = |f: f64| ((f * bytes.len() as f64) as usize).min(bytes.len().saturating_sub(1));
        match *e {
            Edit::Set(f, b) => {
                let i = at(f);
                bytes[i] = b;
            }
            Edit::Insert(f, b) => {
                let i = at(f);
                bytes.insert(i, b);
            }
            Edit::Remove(f) => {
                let i = at(f);
                bytes.remove(i);
            }
        }
    }
}

fn check(bytes: &[u8]) {
    if let Ok(Measurement::Snapshot(t)) = measured::parse(bytes) {
        // Whatever survived the edits is reported as counts of bytes, not garbage.
        let figures = [
            t.allocated_peak,
            t.reserved_peak,
            t.reserved_at_peak,
            t.fragmentation,
        ];
        for f in figures.into_iter().chain(t.at_peak) {
            assert!(f.is_finite() && f >= 0.0, "{figures:?} {:?}", t.at_peak);
        }
        for p in &t.points {
            assert!(p.allocated.is_finite() && p.allocated >= 0.0, "{p:?}");
            assert!(p.reserved.is_finite() && p.reserved >= 0.0, "{p:?}");
        }
        assert!(t.points.is_empty() || t.peak_point < t.points.len());
        assert!(t.events <= measured::MAX_EVENTS);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_corrupted_generated_snapshot_is_read_or_refused(edits in prop::collection::vec(edit(), 1..8)) {
        let mut bytes = real("training_step.pickle");
        apply(&mut bytes, &edits);
        check(&bytes);
    }
}

proptest! {
    // The real files are larger: fewer cases, each a whole parse of 73–495 kB.
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_corrupted_real_snapshot_is_read_or_refused(
        which in 0usize..2,
        edits in prop::collection::vec(edit(), 1..6),
    ) {
        let name = ["real_cs336_transformer.pickle", "real_sketchkv2_no_history.pickle"][which];
        let mut bytes = real(name);
        apply(&mut bytes, &edits);
        check(&bytes);
    }
}
