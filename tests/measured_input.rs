//! Reading measurements (src/measured): the generated snapshots of tests/data/snapshots/ (see its
//! README) load with the figures their generator computed, in every pickle protocol; attribution
//! puts each block where the frames say; hostile files (truncated, huge counts, deep nesting,
//! shared-reference blow-up, wrong types, class references) get a clear error; light
//! measurements (PyTorch pair, nvidia-smi CSV, vLLM log) are read with their statistic.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::path::{Path, PathBuf};

use vram_explorer::measured::attribution::Kind;
use vram_explorer::measured::compare::{self, calibration};
use vram_explorer::measured::{self, MeasuredError, Measurement, Statistic};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn expected() -> serde_json::Value {
    let text = std::fs::read_to_string(data("snapshots/expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn timeline(name: &str) -> measured::MeasuredTimeline {
    match measured::load(&data(name)).unwrap() {
        Measurement::Snapshot(t) => *t,
        Measurement::Light(l) => panic!("{name} read as text: {l:?}"),
    }
}

#[test]
fn the_training_snapshot_has_the_generators_peaks_in_every_protocol() {
    let want = expected();
    for name in [
        "training_step",
        "training_step_protocol2",
        "training_step_protocol0",
    ] {
        let t = timeline(&format!("snapshots/{name}.pickle"));
        assert_eq!(t.events as u64, want["events"].as_u64().unwrap(), "{name}");
        assert_eq!(
            t.allocated_peak,
            want["allocated_peak"].as_f64().unwrap(),
            "{name}"
        );
        assert_eq!(
            t.reserved_at_peak,
            want["reserved_at_peak"].as_f64().unwrap(),
            "{name}"
        );
        assert_eq!(
            t.reserved_peak,
            want["reserved_peak"].as_f64().unwrap(),
            "{name}"
        );
        assert_eq!(t.fragmentation, t.reserved_at_peak - t.allocated_peak);
        let peak = &t.points[t.peak_point];
        assert_eq!(
            peak.allocated, t.allocated_peak,
            "the peak is one of the drawn points"
        );
    }
}

#[test]
fn blocks_are_attributed_from_their_frames() {
    let want = expected();
    let t = timeline("snapshots/training_step.pickle");
    for k in Kind::ALL {
        let w = want["at_peak"][k.key()].as_f64().unwrap_or(0.0);
        assert_eq!(t.at_peak[k as usize], w, "{k:?} at the peak");
    }
    // Mid-forward, the saved activations are live and counted as such.
    let saved = t
        .points
        .iter()
        .map(|p| p.by_kind[Kind::SavedActivations as usize])
        .fold(0.0, f64::max);
    assert_eq!(
        saved,
        (4.0 * 3.0 + 6.0) * 1_048_576.0,
        "four layers' saved activations and the logits (alive from the loss to its backward)"
    );
    assert_eq!(t.at_peak[Kind::Unattributed as usize], 0.0);
    for p in &t.points {
        let sum: f64 = p.by_kind.iter().sum();
        assert_eq!(
            sum, p.allocated,
            "kinds sum to allocated at event {}",
            p.event
        );
        assert!(
            p.reserved >= p.allocated,
            "reserved ≥ allocated at event {}",
            p.event
        );
    }
}

#[test]
fn a_snapshot_without_history_gives_the_state_at_the_dump() {
    let t = timeline("snapshots/no_history.pickle");
    assert_eq!(t.events, 0);
    assert_eq!(t.points.len(), 1);
    assert_eq!(
        t.reserved_peak,
        expected()["reserved_peak"].as_f64().unwrap()
    );
    assert!(t.allocated_peak > 0.0);
}

#[test]
fn hostile_snapshots_get_clear_errors() {
    // The reader never recurses and never expands a shared entry (src/measured/pickle.rs), so
    // deep nesting and shared blow-ups are only not snapshots.
    let cases: [(&str, &str); 6] = [
        ("truncated", "ends early"),
        ("huge_count", "ends early"),
        ("deep_nesting", "the top level is not a dict"),
        ("shared_blowup", "the top level is not a dict"),
        ("wrong_type", "total_size is not an integer"),
        ("object_reference", "object reference"),
    ];
    for (name, msg) in cases {
        let e = measured::load(&data(&format!("snapshots/{name}.pickle"))).unwrap_err();
        assert!(e.to_string().contains(msg), "{name}: {e}");
    }
    // Every prefix of a real snapshot is an error or a snapshot, never a panic.
    let whole = std::fs::read(data("snapshots/training_step.pickle")).unwrap();
    for n in (0..whole.len()).step_by(7) {
        let _ = measured::parse(&whole[..n]);
    }
    let big = vec![0x80u8; (measured::MAX_SNAPSHOT_BYTES + 1) as usize];
    assert!(matches!(
        measured::parse(&big),
        Err(MeasuredError::TooLarge(_))
    ));
}

/// `{"device_traces": [T, T, …]}` with one trace `T` of `events` empty events referenced `refs`
/// times through the memo: a few KB that would be `events × refs` events once expanded.
fn shared_traces(events: usize, refs: usize) -> Vec<u8> {
    // root dict, key, the outer list, T (memoised as entry 0), a mark for T's events.
    let mut p = b"\x80\x04}\x8c\x0ddevice_traces]]\x94(".to_vec();
    p.extend(std::iter::repeat_n(b'}', events));
    p.push(b'e');
    p.push(b'a');
    for _ in 1..refs {
        p.extend_from_slice(b"h\x00a");
    }
    p.extend_from_slice(b"s.");
    p
}

#[test]
fn shared_and_nested_structures_are_bounded_without_expanding() {
    // 10,000 events × 1,000 references = 10^7 events > MAX_EVENTS: refused before reading them.
    let t = std::time::Instant::now();
    let e = measured::parse(&shared_traces(10_000, 1_000)).unwrap_err();
    assert!(matches!(e, MeasuredError::TooLarge(_)), "{e}");
    assert!(e.to_string().contains("events"), "{e}");
    assert!(t.elapsed().as_secs_f64() < 2.0, "{:?}", t.elapsed());
    // Under the bound the shared trace is read once per reference (two devices, same events).
    let Measurement::Snapshot(m) = measured::parse(&shared_traces(3, 2)).unwrap() else {
        panic!("not a snapshot");
    };
    assert_eq!(m.events, 3);
    // 100,000 nested lists where the segments go: an error, no recursion.
    let mut p = b"\x80\x04}\x8c\x08segments".to_vec();
    p.extend(std::iter::repeat_n(b']', 100_000));
    p.extend(std::iter::repeat_n(b'a', 99_999));
    p.extend_from_slice(b"s.");
    let e = measured::parse(&p).unwrap_err();
    assert!(e.to_string().contains("a segment is not a dict"), "{e}");
}

fn light(name: &str) -> measured::LightMeasurement {
    match measured::load(&data(&format!("measured_light/{name}"))).unwrap() {
        Measurement::Light(l) => l,
        Measurement::Snapshot(_) => panic!("{name} read as a snapshot"),
    }
}

#[test]
fn light_measurements_are_read_with_their_statistic() {
    let gib = 1_073_741_824.0;
    let t = light("torch_pair.txt");
    assert_eq!(t.get(Statistic::Allocated), Some(15_032_385_536.0));
    assert_eq!(t.get(Statistic::Reserved), Some(16.5 * gib));
    let n = light("nvidia_smi.csv");
    assert_eq!(
        n.values,
        vec![(Statistic::NvidiaSmi, 17_900.0 * 1_048_576.0)]
    );
    let v = light("vllm_startup.log");
    assert_eq!(
        v.get(Statistic::VllmWeights),
        Some(14.99 * gib),
        "the largest of the weight lines"
    );
    assert_eq!(v.get(Statistic::VllmKvCache), Some(54.25 * gib));
    assert_eq!(v.get(Statistic::VllmActivations), Some(1.43 * gib));
    assert_eq!(
        measured::parse(b"hello\nworld\n"),
        Err(MeasuredError::NotRecognised)
    );
}

#[test]
fn rows_and_calibration_follow_the_measurement() {
    let s = vram_explorer::presets::bundled_scenario("llama3-8b-full-finetune-h100").unwrap();
    let est = vram_explorer::estimator::estimate(&s);
    let m = Measurement::Light(light("torch_pair.txt"));
    let rows = compare::rows(&m, &est);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].estimated, est.memory.tensor_peak.get());
    let e = rows[0].error().unwrap();
    assert!((e - (rows[0].estimated / 15_032_385_536.0 - 1.0)).abs() < 1e-12);
    let changes = calibration(&m, &s, &est);
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].field, "overheads.allocator_reserve_fraction");
    let f = (16.5 * 1_073_741_824.0 - 15_032_385_536.0) / 15_032_385_536.0;
    assert!((changes[0].to - f).abs() < 1e-12);
    let mut s2 = s.clone();
    compare::apply(&changes, &mut s2);
    assert_eq!(s2.overheads.allocator_reserve_fraction, changes[0].to);
    // Under FSDP2 at 8 ranks the estimate's side-stream pools are part of the reserve: the
    // fraction takes only what the measurement shows beyond them.
    let mut fsdp = s.clone();
    fsdp.parallel.dp = 8;
    fsdp.strategies.zero = vram_explorer::scenario::ZeroStage::Stage3;
    fsdp.implementation.sharding = vram_explorer::scenario::Sharding::Fsdp2;
    let est_f = vram_explorer::estimator::estimate(&fsdp);
    let o = &fsdp.overheads;
    let pools = est_f
        .memory
        .peak
        .get(vram_explorer::estimator::Component::AllocatorReserve)
        .get()
        - o.allocator_reserve_fraction * est_f.memory.tensor_peak.get()
        - o.workspace_mib * 1_048_576.0;
    assert!(pools > 1e8, "{pools}");
    let ch = calibration(&m, &fsdp, &est_f);
    let want = (16.5 * 1_073_741_824.0 - 15_032_385_536.0 - pools) / 15_032_385_536.0;
    assert!(
        (ch[0].to - want.max(0.0)).abs() < 1e-9,
        "{} vs {want}",
        ch[0].to
    );
    // The snapshot's workspace blocks calibrate the workspace.
    let snap = Measurement::Snapshot(Box::new(timeline("snapshots/training_step.pickle")));
    let ch = calibration(&snap, &s, &est);
    assert!(
        ch.iter()
            .any(|c| c.field == "overheads.workspace_mib" && c.to == 1.0),
        "{ch:?}"
    );
}

/// A measurement path that is not a regular file is refused without reading it: `/dev/zero`
/// reports a length of 0 and was read until memory ran out; a directory is named as one.
#[cfg(unix)]
#[test]
fn devices_and_directories_are_refused_not_read() {
    for (path, what) in [("/dev/zero", "device"), ("/", "directory")] {
        let e = measured::load(std::path::Path::new(path)).unwrap_err();
        assert!(
            matches!(e, MeasuredError::Io(_)) && e.to_string().contains(what),
            "{path}: {e}"
        );
    }
}

/// nvidia-smi − max_memory_reserved is the CUDA context plus NCCL's buffers: the calibrated context
/// leaves out the estimate's NCCL buffers (data parallel over 8: one 688 MB communicator).
#[test]
fn the_context_calibration_leaves_out_the_nccl_buffers() {
    let mut s = vram_explorer::presets::bundled_scenario("llama3-8b-full-finetune-h100").unwrap();
    s.parallel.dp = 8;
    let est = vram_explorer::estimator::estimate(&s);
    let nccl = est
        .memory
        .peak
        .get(vram_explorer::estimator::Component::NcclBuffers)
        .get();
    assert_eq!(nccl, 688e6);
    let text = "torch.cuda.max_memory_allocated(0) = 15032385536\n\
                torch.cuda.max_memory_reserved() = 16.5 GiB\n\
                memory.used [MiB]\n18000 MiB\n";
    let m = measured::parse(text.as_bytes()).expect("a light measurement");
    let changes = calibration(&m, &s, &est);
    let context = changes
        .iter()
        .find(|c| c.field == "overheads.cuda_context_mib")
        .expect("a context calibration");
    // The kernels the run loaded (`cuda_kernels_mib`) stay their own assumption.
    let want = (18000.0 * 1_048_576.0 - 16.5 * 1_073_741_824.0 - nccl) / 1_048_576.0
        - s.overheads.cuda_kernels_mib;
    assert!((context.to - want).abs() < 1e-9, "{} vs {want}", context.to);
}
