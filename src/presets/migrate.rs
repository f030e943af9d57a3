//! Format migrations: an old file's text is brought up to [`FORMAT_VERSION`] before it is parsed.
//!
//! The version is read first (a lexical scan, so even a file that no longer parses has one), then
//! every migration from that version on is applied to the RON text in order. Text, not a
//! `ron::Value`, because `ron::Value` drops enum variant names (`Catalog(H100Sxm)`), so a value
//! round trip would lose data; a field rename only touches the key's identifier, so comments and
//! layout survive. Every replacement is logged ([`Edit`]), so that an error found in the migrated
//! text is reported at its line and column in the file as written ([`Migrated::original_offset`]).
//!
//! To rename a field: bump [`FORMAT_VERSION`] in `scenario/mod.rs`, rename it in the type, and add a
//! [`Migration`] here whose `from` is the old version.

use super::scan;
use crate::scenario::FORMAT_VERSION;

/// One change made to the format between `from` and `from + 1`.
#[derive(Clone, Copy, Debug)]
pub struct Migration {
    pub from: u32,
    /// Field renames: the old dotted path and the new field name.
    pub renames: &'static [(&'static str, &'static str)],
    /// A change of meaning, applied to the text after the renames; logs its replacements.
    pub edit: fn(&str, &mut Vec<Edit>) -> String,
}

/// One replacement a migration made: `removed` bytes at byte `at` of the text as it was then,
/// replaced by `inserted` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edit {
    pub at: usize,
    pub removed: usize,
    pub inserted: usize,
}

/// A migrated text and the replacements that made it, in the order they were made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Migrated {
    pub text: String,
    pub edits: Vec<Edit>,
}

impl Migrated {
    /// The byte offset in the file as written of byte `offset` of the migrated text: the edits
    /// undone, last first; a place inside replaced text maps to where the replacement starts.
    pub fn original_offset(&self, offset: usize) -> usize {
        self.edits.iter().rev().fold(offset, |x, e| {
            if x < e.at {
                x
            } else if x >= e.at + e.inserted {
                x - e.inserted + e.removed
            } else {
                e.at
            }
        })
    }
}

/// `text` with `range` replaced by `with`, logged.
fn replace(text: &mut String, range: std::ops::Range<usize>, with: &str, log: &mut Vec<Edit>) {
    log.push(Edit {
        at: range.start,
        removed: range.len(),
        inserted: with.len(),
    });
    text.replace_range(range, with);
}

fn unchanged(text: &str, _: &mut Vec<Edit>) -> String {
    text.to_owned()
}

/// Version 1 → 2 (6 December 2026): `overheads.cuda_context_mib` meant the CUDA context with its
/// kernels; it is now the context at CUDA initialisation, beside `overheads.cuda_kernels_mib`
/// (docs/gpu-overheads.md §2). A file that kept the old default, 273.75, gets the new one, 253.75
/// (with the kernels' default 146 beside it); a file that set its own figure keeps it as the
/// whole, with `cuda_kernels_mib: 0.0`. A file that already names the kernels is left alone.
fn split_cuda_context(text: &str, log: &mut Vec<Edit>) -> String {
    let keys = scan::keys(text);
    if keys.iter().any(|k| k.path == "overheads.cuda_kernels_mib") {
        return text.to_owned();
    }
    let Some(k) = keys.iter().find(|k| k.path == "overheads.cuda_context_mib") else {
        return text.to_owned();
    };
    let rest = text.get(k.value_start..).unwrap_or("");
    let len = rest
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '_' | 'e' | 'E' | '+' | '-')))
        .unwrap_or(rest.len());
    let value = rest
        .get(..len)
        .and_then(|v| v.replace('_', "").parse::<f64>().ok());
    let mut out = text.to_owned();
    let end = k.value_start + len;
    match value {
        Some(273.75) => replace(&mut out, k.value_start..end, "253.75", log),
        // After the value, so that an error in the field itself is where the file has it.
        Some(_) => replace(&mut out, end..end, ", cuda_kernels_mib: 0.0", log),
        None => {}
    }
    out
}

/// Every migration, oldest first.
///
/// Version 0 is the draft format of the prototype (before the first release, still accepted so the
/// mechanism is exercised by tests): it spelled `workload.micro_batch` as `batch_size`,
/// `strategies.zero` as `zero_stage` and `parallel.tp` as `tensor_parallel`. Version 1 is the format
/// until 6 December 2026 ([`split_cuda_context`]).
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        from: 0,
        renames: &[
            ("workload.batch_size", "micro_batch"),
            ("strategies.zero_stage", "zero"),
            ("parallel.tensor_parallel", "tp"),
        ],
        edit: unchanged,
    },
    Migration {
        from: 1,
        renames: &[],
        edit: split_cuda_context,
    },
];

/// Why a file's version cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooNew {
    pub found: u64,
}

/// Brings `text` from the version it declares (the current one when it names none) to
/// [`FORMAT_VERSION`], setting the `version` field to the current one.
pub fn migrate(text: &str) -> Result<Option<Migrated>, TooNew> {
    let found = scan::version(text).unwrap_or(u64::from(FORMAT_VERSION));
    if found > u64::from(FORMAT_VERSION) {
        return Err(TooNew { found });
    }
    if found == u64::from(FORMAT_VERSION) {
        return Ok(None);
    }
    let mut out = text.to_owned();
    let mut edits = Vec::new();
    for m in MIGRATIONS.iter().filter(|m| u64::from(m.from) >= found) {
        for (old, new) in m.renames {
            out = rename(&out, old, new, &mut edits);
        }
        out = (m.edit)(&out, &mut edits);
    }
    let text = set_version(&out, &mut edits);
    Ok(Some(Migrated { text, edits }))
}

/// Every key at dotted path `from` renamed to the last segment `to`, logged (last key first, so
/// each logged offset holds in the text as it then was).
fn rename(text: &str, from: &str, to: &str, log: &mut Vec<Edit>) -> String {
    let mut out = text.to_owned();
    for k in scan::keys(text).iter().rev().filter(|k| k.path == from) {
        replace(&mut out, k.start..k.end, to, log);
    }
    out
}

/// Replaces the top-level version number with the current one.
fn set_version(text: &str, log: &mut Vec<Edit>) -> String {
    let Some(k) = scan::keys(text)
        .into_iter()
        .find(|k| k.depth == 1 && k.path == "version")
    else {
        return text.to_owned();
    };
    let rest = text.get(k.value_start..).unwrap_or("");
    let len = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '_'))
        .unwrap_or(rest.len());
    let mut out = text.to_owned();
    replace(
        &mut out,
        k.value_start..k.value_start + len,
        &FORMAT_VERSION.to_string(),
        log,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_ordered_and_reach_the_current_version() {
        for (n, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.from as usize, n);
        }
        assert_eq!(MIGRATIONS.len(), FORMAT_VERSION as usize);
    }

    #[test]
    fn v0_renames_and_sets_version() {
        let v0 = "(version: 0, workload: (batch_size: 4), strategies: (zero_stage: Stage2))";
        let Ok(Some(Migrated { text: out, .. })) = migrate(v0) else {
            panic!("v0 must migrate");
        };
        assert_eq!(
            out,
            format!(
                "(version: {FORMAT_VERSION}, workload: (micro_batch: 4), strategies: (zero: Stage2))"
            )
        );
    }

    #[test]
    fn v1_splits_the_cuda_context() {
        let migrated = |t: &str| {
            migrate(t)
                .ok()
                .flatten()
                .map(|m| m.text)
                .unwrap_or_default()
        };
        // The old default becomes the new one (the kernels' default is added by serde).
        assert_eq!(
            migrated("(version: 1, overheads: (cuda_context_mib: 273.75, workspace_mib: 32.0))"),
            "(version: 2, overheads: (cuda_context_mib: 253.75, workspace_mib: 32.0))"
        );
        // A figure of the user's own stays the whole context: no kernels beside it.
        assert_eq!(
            migrated("(version: 1, overheads: (cuda_context_mib: 1_343.0))"),
            "(version: 2, overheads: (cuda_context_mib: 1_343.0, cuda_kernels_mib: 0.0))"
        );
        // Nothing to do without the field, or with the kernels already named.
        assert_eq!(
            migrated("(version: 1, mode: Training)"),
            "(version: 2, mode: Training)"
        );
        let both = "(version: 1, overheads: (cuda_context_mib: 273.75, cuda_kernels_mib: 9.0))";
        assert_eq!(migrated(both), both.replace("version: 1", "version: 2"));
    }

    #[test]
    fn renames_only_the_given_path() {
        let mut log = Vec::new();
        let out = rename("(a: (zero: 1), zero: 2)", "a.zero", "stage", &mut log);
        assert_eq!(out, "(a: (stage: 1), zero: 2)");
        assert_eq!(log.len(), 1);
    }

    /// A place in the migrated text maps back to the file as written: after a shorter key, after
    /// an inserted field, and inside replaced text (to where the replacement starts).
    #[test]
    fn migrated_offsets_map_back_to_the_file() {
        let v0 = "(version: 0, workload: (batch_size: 4, oops: 1))";
        let Ok(Some(m)) = migrate(v0) else {
            panic!("v0 must migrate");
        };
        let at = |t: &str, s: &str| t.find(s).unwrap_or(usize::MAX);
        assert_eq!(m.original_offset(at(&m.text, "oops")), at(v0, "oops"));
        assert_eq!(
            m.original_offset(at(&m.text, "micro_batch") + 3),
            at(v0, "batch_size")
        );
        let v1 = "(version: 1, overheads: (cuda_context_mib: 1_343.0, oops: 1))";
        let Ok(Some(m)) = migrate(v1) else {
            panic!("v1 must migrate");
        };
        assert!(m.text.contains("cuda_kernels_mib: 0.0, oops"));
        assert_eq!(m.original_offset(at(&m.text, "oops")), at(v1, "oops"));
        assert_eq!(
            m.original_offset(at(&m.text, "cuda_kernels")),
            at(v1, ", oops")
        );
    }

    #[test]
    fn newer_files_are_refused_and_current_ones_untouched() {
        assert_eq!(migrate("(version: 99)"), Err(TooNew { found: 99 }));
        assert_eq!(migrate("(name: \"x\")"), Ok(None));
    }
}
