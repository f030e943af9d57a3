//! The corpus of bad scenario files (tests/data/bad/): each is refused with a clear error that
//! names the problem, the field where there is one, the line, and the file path last. No panics.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

use std::path::{Path, PathBuf};

use vram_explorer::presets::{self, ErrorKind, MAX_FILE_BYTES, from_ron_bytes, from_ron_str};

fn bad(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/bad")
        .join(name)
}

/// (file, kind, field named, line, words the message must contain)
type Case = (
    &'static str,
    ErrorKind,
    Option<&'static str>,
    Option<usize>,
    &'static str,
);

const CASES: &[Case] = &[
    (
        "truncated.ron",
        ErrorKind::Syntax,
        None,
        Some(7),
        "truncated",
    ),
    (
        "wrong-type.ron",
        ErrorKind::WrongType,
        Some("workload.micro_batch"),
        Some(4),
        "whole number",
    ),
    (
        "unknown-field.ron",
        ErrorKind::UnknownField,
        Some("model.transformer.layrs"),
        Some(5),
        "layers",
    ),
    (
        "unknown-variant.ron",
        ErrorKind::UnknownVariant,
        Some("gpu"),
        Some(3),
        "H100Sxm",
    ),
    (
        "nan.ron",
        ErrorKind::OutOfRange,
        Some("timing.compute_efficiency"),
        Some(4),
        "NaN",
    ),
    (
        "huge-number.ron",
        ErrorKind::OutOfRange,
        Some("model.params"),
        Some(5),
        "1e300",
    ),
    (
        "negative-count.ron",
        ErrorKind::WrongType,
        Some("parallel.dp"),
        Some(4),
        "negative",
    ),
    (
        "zero-degree.ron",
        ErrorKind::OutOfRange,
        Some("parallel.tp"),
        Some(4),
        "[1, 65536]",
    ),
    (
        "float-for-integer.ron",
        ErrorKind::WrongType,
        Some("workload.seq_len"),
        Some(4),
        "whole number",
    ),
    ("empty.ron", ErrorKind::Empty, None, None, "empty"),
    ("whitespace-only.ron", ErrorKind::Empty, None, None, "empty"),
    (
        "invalid-utf8.ron",
        ErrorKind::NotUtf8,
        None,
        Some(3),
        "UTF-8",
    ),
    (
        "not-a-scenario.ron",
        ErrorKind::Syntax,
        None,
        Some(1),
        "Settings",
    ),
    (
        "duplicate-field.ron",
        ErrorKind::Syntax,
        Some("mode"),
        Some(4),
        "twice",
    ),
    (
        "future-version.ron",
        ErrorKind::UnsupportedVersion,
        Some("version"),
        Some(2),
        "version 9",
    ),
    (
        "out-of-range-fraction.ron",
        ErrorKind::OutOfRange,
        Some("strategies.prune_fraction"),
        Some(4),
        "[0, 0.99]",
    ),
];

#[test]
fn every_bad_file_gives_a_clear_error() {
    for &(file, kind, field, line, words) in CASES {
        let path = bad(file);
        let e = presets::load(&path).expect_err(file);
        let text = e.to_string();
        println!("{file}: {text}");
        assert_eq!(e.kind, kind, "{file}: {text}");
        if let Some(f) = field {
            assert_eq!(e.field.as_deref(), Some(f), "{file}: {text}");
            assert!(
                text.contains(f),
                "{file}: the message names the field: {text}"
            );
        }
        assert_eq!(e.position.map(|p| p.0), line, "{file}: {text}");
        if let Some(l) = line {
            assert!(text.contains(&format!("line {l}")), "{file}: {text}");
        }
        assert!(text.contains(words), "{file}: expected {words:?} in {text}");
        assert!(
            text.ends_with(&path.display().to_string()),
            "{file}: path last: {text}"
        );
    }
}

#[test]
fn the_corpus_has_no_untested_file() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/bad");
    for entry in std::fs::read_dir(dir)
        .expect("corpus")
        .filter_map(Result::ok)
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".ron") {
            assert!(
                CASES.iter().any(|c| c.0 == name),
                "{name} has no expectation"
            );
        }
    }
}

#[test]
fn a_10_mb_file_is_refused_before_parsing() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bad-files");
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let path = dir.join("ten-megabytes.ron");
    // Valid RON all the way (a huge comment), so only the size can be the reason.
    let mut text = String::from("(\n    version: 1,\n    // ");
    text.push_str(&"x".repeat(10 * 1024 * 1024));
    text.push_str("\n)\n");
    std::fs::write(&path, &text).expect("write");
    let e = presets::load(&path).expect_err("too large");
    assert_eq!(e.kind, ErrorKind::TooLarge, "{e}");
    assert!(e.to_string().contains(&MAX_FILE_BYTES.to_string()), "{e}");
    assert_eq!(
        from_ron_str(&text).map_err(|e| e.kind),
        Err(ErrorKind::TooLarge)
    );
    let _ = std::fs::remove_file(&path);
}

#[test]
fn deep_nesting_and_garbage_do_not_panic() {
    let deep = format!("{}{}", "(".repeat(100_000), ")".repeat(100_000));
    assert!(from_ron_str(&deep).is_err());
    let cases: [&[u8]; 10] = [
        b"(",
        b")",
        b"(version: )",
        b"(version: 1e999)",
        b"(model: (params: inf))",
        b"(model: (params: -inf))",
        b"(\"unterminated",
        b"(/* unterminated comment",
        b"(gpu: Custom((memory_gb: -1.0)))",
        b"\xff\xfe\x00\x00",
    ];
    for c in cases {
        let r = from_ron_bytes(c);
        assert!(
            r.is_err(),
            "{:?} must be refused",
            String::from_utf8_lossy(c)
        );
    }
    // Every prefix of a real preset: an error or a scenario, never a panic.
    let text = include_str!("../presets/llama2-70b-inference-gqa-2xa100.ron");
    for (i, _) in text.char_indices().step_by(7) {
        let _ = from_ron_str(&text[..i]);
    }
}

#[test]
fn a_missing_file_and_a_directory_are_io_errors_naming_the_path() {
    let missing = bad("does-not-exist.ron");
    let e = presets::load(&missing).expect_err("missing");
    assert_eq!(e.kind, ErrorKind::Io);
    assert!(e.to_string().ends_with(&missing.display().to_string()));
    let e = presets::load(&bad("")).expect_err("a directory");
    assert_eq!(e.kind, ErrorKind::Io);
    assert!(e.message.contains("directory"), "{e}");
}

/// An old file is migrated before it is parsed, but its errors are reported where the file as
/// written has them: after a key a migration renamed (shorter by one), after a field a migration
/// inserted on the same line, and at the renamed key of an out-of-range value.
#[test]
fn an_old_files_errors_keep_their_columns() {
    let col = |text: &str, at: &str| {
        let e = from_ron_str(text).expect_err("refused");
        let want = text.find(at).unwrap() + 1;
        assert_eq!(e.position, Some((1, want)), "{text}: {e}");
    };
    col("(version: 0, workload: (batch_size: 4, oops: 1))", "oops");
    col(
        "(version: 1, overheads: (cuda_context_mib: 1_343.0, oops: 1))",
        "oops",
    );
    col(
        "(version: 0, workload: (batch_size: 4), parallel: (tensor_parallel: 0))",
        "tensor_parallel",
    );
}
