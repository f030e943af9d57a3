//! Issue 14 item 3: every `config.json` under tests/data/hf imports, and the estimate's parameter
//! counts equal `sum(p.numel())` of the Transformers class (tests/data/hf/params.json, transformers
//! 5.25.0 on the meta device), total and active.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test fails by panicking; table-driven tests run long"
)]

use std::path::PathBuf;

use serde_json::Value;
use vram_explorer::estimator::estimate;
use vram_explorer::import::{ImportedConfig, from_hf_config};
use vram_explorer::scenario::{ModelSpec, Scenario};

fn data(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/hf")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}: {}", path.display()))
}

fn import(name: &str) -> ImportedConfig {
    from_hf_config(&data(name), &ModelSpec::default()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn scenario(imported: &ImportedConfig) -> Scenario {
    let mut s = Scenario::default();
    imported.apply(&mut s);
    s
}

fn records() -> Vec<Value> {
    let v: Value = serde_json::from_str(&data("params.json")).unwrap();
    v["records"].as_array().unwrap().clone()
}

#[test]
fn every_fixture_imports_with_the_exact_parameter_counts() {
    let mut wrong = Vec::new();
    for r in records() {
        let file = r["file"].as_str().unwrap();
        let imported = match from_hf_config(&data(file), &ModelSpec::default()) {
            Ok(i) => i,
            Err(e) => {
                wrong.push(format!("{file}: {e}"));
                continue;
            }
        };
        let e = estimate(&scenario(&imported));
        let total = r["total_params"].as_f64().unwrap();
        eprintln!(
            "{file}: {} {} layers {} pattern parts {}",
            e.model.params.total,
            e.model.params.active,
            e.model.layers,
            imported.model.pattern.len()
        );
        if e.model.params.total != total {
            wrong.push(format!(
                "{file}: total {} vs {total} ({:+})",
                e.model.params.total,
                e.model.params.total - total
            ));
        }
        if let Some(active) = r["active_params"].as_f64() {
            if (e.model.params.active - active).abs() > 0.5 {
                wrong.push(format!(
                    "{file}: active {} vs {active} ({:+})",
                    e.model.params.active,
                    e.model.params.active - active
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
