//! Exports parsed back: CSV cells equal the estimate's numbers exactly; the Markdown report holds the
//! breakdown in bytes, the peak phase, the diagnostics and the comparison.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

use vram_explorer::estimator::performance::compare;
use vram_explorer::estimator::{Component, Phase, estimate};
use vram_explorer::report::csv::{COMPARISON_COLUMNS, ROOFLINE_COLUMNS, field, parse};
use vram_explorer::report::markdown::bytes_exact;
use vram_explorer::report::{
    breakdown_csv, comparison_csv, markdown, markdown_with, phases_csv, roofline_csv,
};
use vram_explorer::scenario::{Mode, Scenario};

fn scenarios() -> Vec<Scenario> {
    let training = Scenario {
        mode: Mode::Training,
        name: "Training, with \"quotes\" | pipes, commas".to_owned(),
        ..Scenario::default()
    };
    vec![Scenario::default(), training]
}

fn number(cell: &str) -> f64 {
    cell.parse().unwrap_or_else(|e| panic!("{cell:?}: {e}"))
}

#[test]
fn breakdown_csv_round_trips_exactly() {
    for s in scenarios() {
        let e = estimate(&s);
        let rows = parse(&breakdown_csv(&e));
        assert_eq!(rows[0], ["component", "label", "bytes", "gib"]);
        for (row, c) in rows[1..].iter().zip(Component::ALL) {
            assert_eq!(row[0], c.key());
            assert_eq!(number(&row[2]), e.memory.peak.get(c).get(), "{}", c.key());
        }
        let total = |key: &str| {
            let row = rows.iter().find(|r| r[0] == key).expect(key);
            number(&row[2])
        };
        assert_eq!(total("gpu_total"), e.memory.gpu_total.get());
        assert_eq!(total("tensor_peak"), e.memory.tensor_peak.get());
        assert_eq!(total("capacity"), e.memory.capacity.get());
        assert_eq!(total("reserved_peak"), e.memory.reserved_peak().get());
        assert_eq!(rows.len(), 1 + Component::COUNT + 5);
    }
}

#[test]
fn phases_csv_round_trips_exactly() {
    for s in scenarios() {
        let e = estimate(&s);
        let rows = parse(&phases_csv(&e));
        assert_eq!(rows[0].len(), Component::COUNT + 2);
        let present: Vec<Phase> = Phase::ALL
            .into_iter()
            .filter(|p| e.memory.phases.get(*p).is_some())
            .collect();
        assert_eq!(rows.len() - 1, present.len());
        for (row, p) in rows[1..].iter().zip(present) {
            let b = e.memory.phases.get(p).copied().unwrap_or_default();
            assert_eq!(row[0], p.key());
            for (i, c) in Component::ALL.iter().enumerate() {
                assert_eq!(number(&row[i + 1]), b.get(*c).get());
            }
            assert_eq!(number(&row[Component::COUNT + 1]), b.tensor_total().get());
        }
    }
}

#[test]
fn roofline_csv_round_trips_exactly() {
    for s in scenarios() {
        let e = estimate(&s);
        let rows = parse(&roofline_csv(&e));
        assert_eq!(rows[0].join(","), ROOFLINE_COLUMNS);
        let p = &e.performance;
        for row in &rows[1..] {
            let r = match row[0].as_str() {
                "training" => p.training,
                "optimizer" => p.optimizer,
                "prefill" => p.prefill,
                "decode" => p.decode,
                other => panic!("unknown phase {other}"),
            }
            .expect("a row only for a phase the estimate has");
            assert_eq!(number(&row[1]), r.flops);
            assert_eq!(number(&row[2]), r.bytes.get());
            assert_eq!(number(&row[3]), r.intensity);
            assert_eq!(number(&row[10]), r.time_s);
            assert_eq!(row[11], r.bound.label());
        }
        let expected = [p.training, p.optimizer, p.prefill, p.decode];
        assert_eq!(rows.len() - 1, expected.iter().flatten().count());
    }
}

#[test]
fn comparison_csv_round_trips() {
    let s = Scenario::default();
    let c = compare(&s);
    let rows = parse(&comparison_csv(&c));
    assert_eq!(rows[0].join(","), COMPARISON_COLUMNS);
    assert_eq!(rows.len() - 1, c.rows().count());
    for (row, r) in rows[1..].iter().zip(c.rows()) {
        assert_eq!(row.len(), rows[0].len());
        assert_eq!(row[0], r.label);
        match r.capacity {
            Some(cap) => assert_eq!(number(&row[1]), cap.get()),
            None => assert!(row[1].is_empty()),
        }
        assert_eq!(row[6], r.fits.map(|f| f.to_string()).unwrap_or_default());
        assert_eq!(number(&row[9]), r.step_time_s);
    }
}

#[test]
fn csv_fields_are_quoted_when_needed() {
    let tricky = "a, \"b\" c";
    let line = format!("{},x", field(tricky));
    assert_eq!(parse(&line), vec![vec![tricky.to_owned(), "x".to_owned()]]);
    assert_eq!(field("plain"), "plain");
}

#[test]
fn markdown_report_holds_the_numbers() {
    for s in scenarios() {
        let e = estimate(&s);
        let md = markdown(&s, &e);
        assert!(md.starts_with("# VRAM report: "));
        for section in [
            "## Memory per GPU",
            "## Diagnostics",
            "## Time and roofline",
        ] {
            assert!(md.contains(section), "{section}");
        }
        assert!(md.contains("## Architecture comparison"));
        // Every component's exact byte count appears in its table row.
        for (c, b) in e.memory.peak.iter() {
            let row = md
                .lines()
                .find(|l| l.starts_with(&format!("| {} |", c.label())))
                .unwrap_or_else(|| panic!("no row for {}", c.label()));
            assert!(row.ends_with(&format!("| {} |", bytes_exact(b))), "{row}");
        }
        if let Some(p) = e.memory.peak_phase {
            assert!(md.contains(&format!("**{}** phase", p.label())));
        }
        for d in e.diagnostics.iter() {
            assert!(md.contains(d.code()), "{}", d.code());
        }
        let verdict = if e.memory.fits {
            "**Fits**"
        } else {
            "**Does not fit**"
        };
        assert!(md.contains(verdict));
        // A pipe in the name does not break the tables; without a comparison the section is absent.
        let md = markdown_with(&s, &e, None);
        assert!(!md.contains("## Architecture comparison"));
        assert!(
            md.lines()
                .filter(|l| l.starts_with('|'))
                .all(|l| l.ends_with('|'))
        );
    }
}

#[test]
fn bytes_are_printed_exactly() {
    use vram_explorer::units::Bytes;
    assert_eq!(bytes_exact(Bytes(6_738_415_616.0)), "6,738,415,616");
    assert_eq!(bytes_exact(Bytes(999.0)), "999");
    assert_eq!(bytes_exact(Bytes(-1_000.0)), "−1,000");
    assert_eq!(bytes_exact(Bytes(f64::NAN)), "—");
}
