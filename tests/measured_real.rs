//! Real memory snapshots (`torch.cuda.memory._dump_snapshot` output committed by public projects;
//! sources, commits and licences in tests/data/snapshots/README.md) load, give the peaks Python's
//! own pickle module computes (`scripts/check_real_snapshots.py` → real_expected.json), and are
//! attributed where their frames allow, Windows paths included.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::path::{Path, PathBuf};

use vram_explorer::measured::attribution::Kind;
use vram_explorer::measured::{self, MeasuredTimeline, Measurement};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/snapshots")
        .join(name)
}

fn expected(name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(data("real_expected.json")).unwrap();
    let all: serde_json::Value = serde_json::from_str(&text).unwrap();
    all[name].clone()
}

fn load(name: &str) -> MeasuredTimeline {
    match measured::load(&data(name)).unwrap() {
        Measurement::Snapshot(t) => *t,
        Measurement::Light(l) => panic!("{name} read as text: {l:?}"),
    }
}

const REAL: [&str; 3] = [
    "real_cs336_transformer.pickle",
    "real_decomfl_opt.pickle",
    "real_sketchkv2_no_history.pickle",
];

#[test]
fn real_snapshots_give_the_peaks_python_computes() {
    for name in REAL {
        let t = load(name);
        let want = expected(name);
        let f = |k: &str| want[k].as_f64().unwrap();
        assert_eq!(t.events as f64, f("events"), "{name}");
        assert_eq!(t.device as f64, f("device"), "{name}");
        assert_eq!(t.allocated_peak, f("allocated_peak"), "{name}");
        assert_eq!(t.reserved_peak, f("reserved_peak"), "{name}");
        assert_eq!(t.reserved_at_peak, f("reserved_at_peak"), "{name}");
        let at_peak = t.points[t.peak_point];
        assert_eq!(at_peak.allocated, t.allocated_peak, "{name}");
        if let Some(e) = want["peak_event"].as_u64() {
            assert_eq!(at_peak.event as u64, e, "{name}: the peak's event");
        }
        // Every allocated byte at the peak is in exactly one kind.
        let sum: f64 = t.at_peak.iter().sum();
        assert!((sum - t.allocated_peak).abs() < 1.0, "{name}: {sum}");
    }
}

#[test]
fn the_cs336_step_peaks_in_forward_with_saved_activations() {
    let name = "real_cs336_transformer.pickle";
    let t = load(name);
    let want = expected(name);
    // Python: the peak comes before the first event with a backward frame.
    let peak_event = t.points[t.peak_point].event as u64;
    assert!(peak_event < want["first_backward_event"].as_u64().unwrap());
    // So what is live is mostly what forward saved for backward.
    let saved = t.at_peak[Kind::SavedActivations as usize];
    assert!(
        saved > 0.75 * t.allocated_peak,
        "{saved} of {}",
        t.allocated_peak
    );
}

#[test]
fn parameters_moved_by_module_to_on_windows_are_parameters() {
    let name = "real_decomfl_opt.pickle";
    let t = load(name);
    // Python: bytes live at the peak that `torch\nn\modules\module.py` `_apply` allocated.
    let moved = expected(name)["module_apply_bytes_at_peak"]
        .as_f64()
        .unwrap();
    assert!(moved > 4e8);
    let params = t.at_peak[Kind::Parameters as usize];
    assert!(params >= moved, "{params} < {moved}");
    assert!(params < 1.01 * moved, "{params} vs {moved}");
}

#[test]
fn a_real_snapshot_without_history_is_the_state_at_the_dump() {
    let name = "real_sketchkv2_no_history.pickle";
    let t = load(name);
    let want = expected(name);
    assert_eq!(t.reserved_peak, want["reserved_at_dump"].as_f64().unwrap());
    // One free event and no frames: what was live was allocated before the recording.
    assert_eq!(t.at_peak[Kind::BeforeRecording as usize], t.allocated_peak);
    assert!(t.fragmentation > 0.0);
}
