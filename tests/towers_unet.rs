//! The Stable-Diffusion-style UNet walk (`model::cnn::unet_walk`) against a tiny random-init
//! diffusers `UNet2DConditionModel` of the SD 1.5 structure measured on CPU
//! (tests/data/measured/unet-cpu-steps.json, `scripts/measure/unet_run.py`): saved for backward,
//! the training phases (model states from the record's parameter and optimizer bytes), and the
//! `no_grad` denoising step's peak, each within 3 % (the ResNet bar). Run with `--nocapture` for the
//! table.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use serde_json::Value;
use vram_explorer::estimator::estimate;
use vram_explorer::estimator::model::cnn::unet::{sd15_params, transformer, transformer_with};
use vram_explorer::estimator::model::cnn::unet_walk::{
    SD15, Unet, backward_peak, counts, inference_peak, saved_bytes,
};
use vram_explorer::presets::bundled_scenario;

fn records() -> Vec<Value> {
    let text = include_str!("data/measured/unet-cpu-steps.json");
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(v)) => v,
        other => panic!("measured data is not an array: {other:?}"),
    }
}

fn unet_of(r: &Value) -> Unet {
    let c = &r["config"];
    let w: Vec<f64> = c["block_out_channels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    Unet {
        widths: [w[0], w[1], w[2], w[3]],
        cross: c["cross_attention_dim"].as_f64().unwrap(),
        text_tokens: r["text_tokens"].as_f64().unwrap(),
        heads: c["attention_head_dim"].as_f64().unwrap(),
        groups: c["norm_num_groups"].as_f64().unwrap(),
    }
}

fn check(what: &str, name: &str, est: f64, meas: f64, bar: f64, fails: &mut Vec<String>) {
    let e = (est - meas) / meas;
    println!(
        "{name:<48} {what:<10} {est:>13.0} {meas:>13.0} {:>+7.2}%",
        e * 100.0
    );
    if e.abs() > bar {
        fails.push(format!("{name} {what}: {:+.2}%", e * 100.0));
    }
}

#[test]
fn the_walk_holds_the_measured_tiny_unet() {
    let mut fails = Vec::new();
    for r in records() {
        let u = unet_of(&r);
        let name = r["name"].as_str().unwrap();
        let (b, side) = (r["batch"].as_f64().unwrap(), r["latent"].as_f64().unwrap());
        if let Some(train) = r.get("train") {
            let saved = saved_bytes(&u, side, b, 4.0);
            let meas = r["saved_by_module"]["total_bytes"].as_f64().unwrap();
            check("saved", name, saved, meas, 0.01, &mut fails);
            let w = r["param_bytes"].as_f64().unwrap();
            let o = r["optimizer_state_bytes"].as_f64().unwrap();
            let peaks = &train["step2"]["phase_peaks"];
            // Forward: the model states and everything saved (the inputs are in the walk).
            check(
                "forward",
                name,
                w + o + saved,
                peaks["forward"].as_f64().unwrap(),
                0.03,
                &mut fails,
            );
            let bw = backward_peak(&u, side, b, 4.0, 4.0);
            check(
                "backward",
                name,
                w + o + bw.total(),
                peaks["backward"].as_f64().unwrap(),
                0.03,
                &mut fails,
            );
        } else {
            let start = r["inference"]["forward"]["phase_peaks"]["start"]
                .as_f64()
                .unwrap();
            let peak = r["inference"]["forward"]["peak_total"].as_f64().unwrap();
            let w = r["param_bytes"].as_f64().unwrap();
            // The peak's activations: the walk's working set (with the text states) and the
            // latent and timestep inputs.
            let text = b * r["text_tokens"].as_f64().unwrap() * u.cross * 4.0;
            let inputs = start - w - text;
            let est = inference_peak(&u, side, b, 4.0) + inputs;
            check("inference", name, w + est, peak, 0.03, &mut fails);
            check("working", name, est, peak - w, 0.03, &mut fails);
        }
    }
    assert!(fails.is_empty(), "{fails:#?}");
}

/// The walk's parameters (per block) add up to the SD 1.5 UNet's 859,520,964 at SD 1.5's shape
/// (`sum(p.numel())` of diffusers' `UNet2DConditionModel` from runwayml/stable-diffusion-v1-5's
/// `unet/config.json`), and to each tiny record's measured count; the preset holds it.
#[test]
fn the_walk_counts_the_parameters() {
    assert_eq!(sd15_params(), 859_520_964.0);
    assert_eq!(counts(&SD15, 64.0).0, 859_520_964.0);
    assert_eq!(transformer_with(320.0, 768.0), transformer(320.0));
    for r in records() {
        assert_eq!(
            counts(&unet_of(&r), 16.0).0,
            r["n_params"].as_f64().unwrap(),
            "{}",
            r["name"]
        );
    }
    let s = bundled_scenario("sd15-unet-finetune-a100").unwrap();
    assert_eq!(estimate(&s).model.params.total, 859_520_964.0);
}
