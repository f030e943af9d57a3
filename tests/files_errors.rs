//! Error messages by one rule (issue 18, item 3): one line; message first, then the field, the line
//! and column where there is one, the path last; long inputs elided; control characters escaped,
//! also in names that `check` and `report` print; a UTF-8 byte order mark accepted.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

use std::path::PathBuf;
use std::process::{Command, Output};

use vram_explorer::presets::text::escape_controls;
use vram_explorer::presets::{self, ErrorKind, PresetError, from_ron_bytes, from_ron_str};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vram-files-errors-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vram-explorer"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// The rule every message keeps: one line, no control character, path last when there is one.
fn assert_one_line(e: &PresetError) {
    let text = e.to_string();
    assert!(
        !text.chars().any(char::is_control),
        "control character in {text:?}"
    );
    if let Some(path) = &e.path {
        let shown = escape_controls(&path.display().to_string()).into_owned();
        assert!(text.ends_with(&shown), "path last: {text}");
    }
    if let Some((line, col)) = e.position {
        assert!(
            text.contains(&format!("at line {line}, column {col}")),
            "{text}"
        );
    }
    if let Some(field) = &e.field {
        assert!(
            text.contains(&format!("`{field}`")),
            "the field is named: {text}"
        );
    }
}

#[test]
fn a_newer_version_names_the_field_and_line() {
    let e = from_ron_str("(\n  name: \"x\",\n  version: 7,\n)").expect_err("newer");
    assert_eq!(e.kind, ErrorKind::UnsupportedVersion);
    assert_eq!(
        (e.field.as_deref(), e.position),
        (Some("version"), Some((3, 3)))
    );
    assert_one_line(&e);
}

#[test]
fn an_empty_or_comment_only_file_is_empty() {
    for text in ["", "  \n\t", "// only a comment\n", "/* block */"] {
        let e = from_ron_str(text).expect_err("empty");
        assert_eq!(e.kind, ErrorKind::Empty, "{text:?}: {e}");
        assert!(e.message.starts_with("the scenario file is empty"), "{e}");
        assert_one_line(&e);
    }
}

#[test]
fn a_cross_field_error_has_a_line_even_for_a_default_field() {
    // `kv_heads` is not written (its default, 8, exceeds `heads`): the error points at the nearest
    // enclosing field that is, `model.transformer` on line 2.
    let e = from_ron_str("(model: (\n  transformer: (heads: 4),\n))").expect_err("kv > heads");
    assert_eq!(
        e.field.as_deref(),
        Some("model.transformer.kv_heads"),
        "{e}"
    );
    assert_eq!(e.position.map(|p| p.0), Some(2), "{e}");
    assert_one_line(&e);
}

#[test]
fn a_double_colon_names_the_field() {
    let e = from_ron_str("(version::1)").expect_err("::");
    assert_eq!(e.field.as_deref(), Some("version"), "{e}");
    assert!(e.message.contains("version: value"), "{e}");
    assert_one_line(&e);
}

#[test]
fn a_megabyte_field_name_is_elided() {
    let name = "a".repeat(1 << 20);
    let text = format!("({name}: 1)");
    // Over the file limit as a whole: refused by size, without echoing anything.
    assert_eq!(
        from_ron_str(&text).map_err(|e| e.kind),
        Err(ErrorKind::TooLarge)
    );
    // Just under it: the name is echoed as its first 60 characters and an ellipsis.
    let text = format!("({}: 1)", &name[..1000]);
    let e = from_ron_str(&text).expect_err("unknown field");
    assert_eq!(e.kind, ErrorKind::UnknownField);
    let shown = e.to_string();
    assert!(shown.contains(&format!("`{}…`", "a".repeat(60))), "{shown}");
    assert!(shown.len() < 400, "{} bytes: {shown}", shown.len());
    assert_one_line(&e);
}

#[test]
fn a_byte_order_mark_is_accepted() {
    let s = from_ron_bytes(b"\xef\xbb\xbf(name: \"bom\")").expect("a BOM is not an error");
    assert_eq!(s.name, "bom");
    let dir = scratch("bom");
    let path = dir.join("bom.ron");
    std::fs::write(&path, b"\xef\xbb\xbf(\n  workload: (micro_batch: 0),\n)").expect("write");
    let e = presets::load(&path).expect_err("out of range");
    assert_eq!(
        e.position.map(|p| p.0),
        Some(2),
        "lines count as without the BOM: {e}"
    );
}

#[test]
fn control_characters_are_escaped_in_names_errors_and_paths() {
    let dir = scratch("escape");
    let path = dir.join("clear.ron");
    std::fs::write(&path, "(name: \"\u{1b}[2Jgone\u{9b}\")").expect("write");
    let p = path.to_str().expect("utf-8 path");
    for args in [
        vec!["check", p],
        vec!["report", p],
        vec!["report", p, "--format", "markdown"],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            !out.contains('\u{1b}') && !out.contains('\u{9b}'),
            "{args:?}: {out:?}"
        );
        assert!(out.contains("\\u{1b}[2Jgone"), "{args:?}: {out}");
    }
    // In an error: the echoed value and a path with a newline in it.
    let bad = dir.join("new\nline.ron");
    std::fs::write(&bad, "(mode: \u{1b}[31mRed)").expect("write");
    let e = presets::load(&bad).expect_err("bad");
    assert_one_line(&e);
    let o = run(&["check", bad.to_str().expect("utf-8")]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err:?}");
    assert!(err.trim_end().ends_with("new\\nline.ron"), "{err:?}");
}

#[test]
fn every_bad_file_keeps_the_rule() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/bad");
    for entry in std::fs::read_dir(dir)
        .expect("corpus")
        .filter_map(Result::ok)
    {
        let path = entry.path();
        if path.extension().is_some_and(|x| x == "ron") {
            assert_one_line(&presets::load(&path).expect_err("bad"));
        }
    }
}
