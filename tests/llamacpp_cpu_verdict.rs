//! A llama.cpp CPU build (`-dev none`) uses no GPU: the table report says "GPU: none", and the JSON
//! report and `fit` say the same — no fit or headroom against the scenario's unused card (the
//! estimator has no host-memory capacity to give one against), the host's bytes instead, and the
//! GPU questions of `fit` not applicable (`cli::json::cpu_only`, `solver::host_only`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::process::Command;

use serde_json::Value;
use vram_explorer::estimator::estimate;
use vram_explorer::estimator::solver::{
    ScaleAxis, Solved, Target, host_only, max_fitting, min_degree,
};
use vram_explorer::presets::bundled_scenario;

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
fn a_cpu_build_has_no_gpu_verdict_in_the_json_report() {
    let s = bundled_scenario(CPU).unwrap();
    let host = estimate(&s).cpu_build().unwrap().host_total();
    let table = run(&["report", "--preset", CPU]);
    assert!(
        table.contains("GPU:     none (llama.cpp -dev none"),
        "{table}"
    );
    let v = json(&["report", "--preset", CPU, "--json"]);
    assert_eq!(v["schema_version"], 2);
    assert_eq!(v["gpu"]["used"], false, "{}", v["gpu"]);
    assert_eq!(
        v["gpu"]["name"], "RTX 4090",
        "the scenario's GPU is still named"
    );
    let m = &v["memory"];
    for key in ["fits", "headroom_bytes", "capacity_bytes"] {
        assert!(m[key].is_null(), "{key}: {}", m[key]);
    }
    assert_eq!(m["cpu_only"]["host_bytes"], host);
    assert!(
        m["cpu_only"]["statement"]
            .as_str()
            .unwrap()
            .contains("-dev none")
    );
    // The host's figure is the llamacpp block's, as the table's "Host memory" line.
    let h = &v["llamacpp"]["host"];
    let sum = ["model_bytes", "kv_bytes", "compute_bytes"]
        .iter()
        .map(|k| h[k].as_u64().unwrap())
        .sum::<u64>();
    assert_eq!(sum, host);
    // A GPU run keeps its verdict, and says its GPU is used.
    let v = json(&["report", "--preset", GPU, "--json"]);
    assert_eq!(v["gpu"]["used"], true);
    assert!(v["memory"]["fits"].is_boolean() && v["memory"]["cpu_only"].is_null());
    assert!(v["memory"]["headroom_bytes"].is_number());
    assert!(v["memory"]["capacity_bytes"].is_number());
}

#[test]
fn fit_on_a_cpu_build_says_what_the_table_report_says() {
    let text = run(&["fit", "--preset", CPU]);
    let head = text.lines().next().unwrap();
    assert!(
        head.contains("CPU only (llama.cpp -dev none): 5.84 GiB of host memory")
            && !head.contains("(headroom"),
        "{head}"
    );
    assert!(!text.contains("It fits as it is"), "{text}");
    assert!(text.contains("Nothing to make fit: the run uses no GPU."));
    // The GPU questions do not apply; the engine's own limits (slots of -c 8192) still do.
    let s = bundled_scenario(CPU).unwrap();
    assert!(host_only(&s));
    assert!(!host_only(&bundled_scenario(GPU).unwrap()));
    for axis in [ScaleAxis::Dp, ScaleAxis::Tp, ScaleAxis::Pp] {
        assert_eq!(min_degree(&s, axis), Solved::NotApplicable);
    }
    assert_eq!(max_fitting(&s, Target::ModelSize), Solved::NotApplicable);
    assert_eq!(max_fitting(&s, Target::Context), Solved::Found(8192 - 500));
    assert!(matches!(
        max_fitting(&s, Target::MicroBatch),
        Solved::Found(_)
    ));
    let v = json(&["fit", "--preset", CPU, "--json"]);
    assert!(v["fits"].is_null() && v["headroom_bytes"].is_null(), "{v}");
    assert_eq!(
        v["cpu_only"]["host_bytes"],
        estimate(&s).cpu_build().unwrap().host_total()
    );
    for key in ["max_model_size", "min_dp", "min_tp", "min_pp"] {
        assert_eq!(v["limits"][key]["status"], "not_applicable", "{key}");
    }
    assert_eq!(v["limits"]["max_micro_batch"]["status"], "found");
    // A GPU run's verdict is as before.
    let v = json(&["fit", "--preset", GPU, "--json"]);
    assert!(v["fits"].is_boolean() && v["cpu_only"].is_null());
}
