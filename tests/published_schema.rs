//! Every published-measurement file under tests/data/published/ follows the one record schema of
//! its README: the fields a record needs to be rebuilt and cited, a known role, ids unique across
//! the whole directory. A file added without them fails here.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

const REQUIRED: [&str; 10] = [
    "id",
    "kind",
    "role",
    "framework",
    "hardware",
    "statistic",
    "value",
    "unit",
    "config",
    "source",
];

#[test]
fn every_published_record_follows_the_schema() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/published");
    let mut ids = BTreeSet::new();
    let mut files = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(doc["schema"], "vram-explorer.published/1", "{name}");
        let records = doc["records"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: records"));
        assert!(!records.is_empty(), "{name}: no records");
        for r in records {
            for key in REQUIRED.iter().filter(|k| **k != "value") {
                assert!(!r[*key].is_null(), "{name}: {} lacks {key}", r["id"]);
            }
            let id = r["id"].as_str().unwrap().to_string();
            assert!(ids.insert(id.clone()), "{name}: duplicate id {id}");
            let role = r["role"].as_str().unwrap();
            assert!(
                ["calibration", "check"].contains(&role),
                "{name}: {id} role {role}"
            );
            // A run that did not fit publishes no figure: `value: null` with `outcome: "oom"`.
            let oom = r["value"].is_null() && r["outcome"] == "oom";
            assert!(
                oom || r["value"]
                    .as_f64()
                    .is_some_and(|v| v.is_finite() && v >= 0.0),
                "{name}: {id} value"
            );
            assert!(
                r["source"]["citation"].is_string() || r["source"]["locator"].is_string(),
                "{name}: {id} has no citation"
            );
        }
        files += 1;
    }
    assert!(
        files >= 4,
        "only {files} published files found in {}",
        dir.display()
    );
    println!("{files} files, {} records", ids.len());
}
