//! `fit`'s weight-format table and verdict under llama.cpp (`solver::quant_fit`, `cli::fit`,
//! `cli::json`): the rows are GGUF file types, the scenario's own first with the headline's
//! headroom; the formats llama.cpp does not load are named, not estimated as an F16 file; on a CPU
//! build (`-dev none`) the rows are the host's buffers.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::process::Command;

use serde_json::Value;
use vram_explorer::estimator::estimate;
use vram_explorer::estimator::solver::{LLAMACPP_FILE_TYPES, NOT_GGUF, quant_fit};
use vram_explorer::presets::bundled_scenario;
use vram_explorer::scenario::WeightFormat;
use vram_explorer::tensor::GgufFileType;

const GPU: &str = "llama31-8b-q4km-llamacpp-12gb";
const CPU: &str = "llama31-8b-q4km-llamacpp-cpu";

fn run(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_vram-explorer"))
        .args(args)
        .output()
        .expect("the binary runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(args: &[&str]) -> Value {
    serde_json::from_str(&run(args)).expect("JSON")
}

#[test]
fn under_llama_cpp_the_rows_are_gguf_file_types_the_scenarios_first() {
    let s = bundled_scenario(GPU).unwrap();
    let e = estimate(&s);
    let rows = quant_fit(&s);
    // The scenario itself: its file type, the headline's headroom and verdict.
    let own = &rows[0];
    assert!(own.as_stored);
    assert_eq!(own.format, WeightFormat::GgufFile(GgufFileType::Q4KM));
    assert_eq!((own.fits, own.headroom), (e.memory.fits, e.memory.headroom));
    assert_eq!(own.label(), "GGUF Q4_K_M");
    assert_eq!(rows.iter().filter(|r| r.as_stored).count(), 1);
    // Every other row is a GGUF file type estimated as that file, none a format llama.cpp does
    // not load (each of those read as the same F16 file: 11.1 GiB, −6.29 GiB, all alike).
    assert_eq!(rows.len(), LLAMACPP_FILE_TYPES.len());
    for r in &rows[1..] {
        let WeightFormat::GgufFile(f) = r.format else {
            panic!("{:?}", r.format)
        };
        let mut t = s.clone();
        t.quantization.weights = WeightFormat::GgufFile(f);
        let et = estimate(&t);
        assert_eq!(et.llamacpp.unwrap().file_type, f);
        assert_eq!((r.fits, r.headroom), (et.memory.fits, et.memory.headroom));
        assert!(r.host_total.is_none() && r.native.is_none());
    }
    for f in NOT_GGUF {
        assert!(rows.iter().all(|r| r.format != f), "{f:?}");
    }
    // Fewer bits, fewer GPU weight bytes.
    let weights = |f: GgufFileType| {
        rows.iter()
            .find(|r| r.format == WeightFormat::GgufFile(f))
            .unwrap()
            .weights
            .get()
    };
    use GgufFileType as F;
    let order = [
        F::F16,
        F::Q8_0,
        F::Q6K,
        F::Q5KM,
        F::Q4KM,
        F::Q4KS,
        F::Q3KM,
        F::Q2K,
    ];
    for pair in order.windows(2) {
        assert!(weights(pair[0]) > weights(pair[1]), "{pair:?}");
    }
    // A scenario whose weights are not a GGUF type reads as its precision's file: that row first.
    let mut p = s.clone();
    p.quantization.weights = WeightFormat::AsPrecision;
    let rows = quant_fit(&p);
    assert_eq!(rows[0].format, WeightFormat::GgufFile(GgufFileType::F16));
    assert_eq!(rows[0].headroom, estimate(&p).memory.headroom);
    // Elsewhere the nine formats stay, the scenario's marked.
    let plain = bundled_scenario("llama2-7b-rtx4090").unwrap();
    let rows = quant_fit(&plain);
    assert_eq!(rows.len(), WeightFormat::ALL.len());
    assert_eq!(
        rows.iter().find(|r| r.as_stored).map(|r| r.format),
        Some(plain.quantization.weights)
    );
}

#[test]
fn fit_prints_the_gguf_table_that_agrees_with_its_headline() {
    let text = run(&["fit", "--preset", GPU]);
    assert!(text.contains(": fits (headroom 1.57 GiB)"), "{text}");
    let own = text
        .lines()
        .find(|l| l.contains("as stored (the scenario)"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        own.contains("GGUF Q4_K_M") && own.contains("fits headroom    1.57 GiB"),
        "{own}"
    );
    assert!(!text.contains("As the precision"), "{text}");
    for line in [
        "GGUF Q8_0",
        "GGUF Q6_K",
        "GGUF Q5_K_M",
        "GGUF Q4_0",
        "GGUF F16",
    ] {
        assert!(text.contains(line), "{line} missing in\n{text}");
    }
    // The formats llama.cpp does not load are named, not given an F16 file's figures.
    assert!(text.contains("not applicable under llama.cpp"), "{text}");
    let fp8 = text
        .lines()
        .find(|l| l.trim_start().starts_with("FP8"))
        .unwrap();
    assert!(
        fp8.contains("not a GGUF type") && !fp8.contains("headroom"),
        "{fp8}"
    );
    let v = json(&["fit", "--preset", GPU, "--json"]);
    let rows = v["weight_formats"].as_array().unwrap();
    assert_eq!(rows[0]["file_type"], "Q4_K_M");
    assert_eq!(rows[0]["as_stored"], true);
    assert_eq!(rows[0]["headroom_bytes"], v["headroom_bytes"]);
    assert_eq!(
        v["weight_formats_not_applicable"].as_array().unwrap().len(),
        NOT_GGUF.len()
    );
}

/// A CPU build's table is the host's buffers per file type: no GPU weights of 0 GiB, no headroom
/// against the unused card, no "native" of its FP8 units.
#[test]
fn on_a_cpu_build_the_table_is_the_hosts_buffers() {
    let s = bundled_scenario(CPU).unwrap();
    let host = estimate(&s).cpu_build().unwrap().host_total();
    let rows = quant_fit(&s);
    assert!(
        rows.iter()
            .all(|r| r.host_total.is_some() && r.weights.get() > 0.0)
    );
    assert_eq!(rows[0].host_total.unwrap().get(), host as f64);
    assert_eq!(
        rows[0].weights.get(),
        estimate(&s).cpu_build().unwrap().host_model as f64
    );
    let text = run(&["fit", "--preset", CPU]);
    let own = text
        .lines()
        .find(|l| l.contains("as stored (the scenario)"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(own.contains("host total   5.84 GiB"), "{own}");
    for row in text.lines().filter(|l| l.contains("GGUF ")) {
        assert!(
            !row.contains("headroom") && !row.contains("native") && !row.contains(" 0 GiB"),
            "{row}"
        );
    }
    let v = json(&["fit", "--preset", CPU, "--json"]);
    let row = &v["weight_formats"][0];
    assert!(
        row["fits"].is_null() && row["headroom_bytes"].is_null(),
        "{row}"
    );
    assert_eq!(row["host_total_bytes"], host as f64);
}
