//! Format migrations: an old file's text is brought up to [`FORMAT_VERSION`] before it is parsed.
//!
//! The version is read first (a lexical scan, so even a file that no longer parses has one), then
//! every migration from that version on is applied to the RON text in order. Text, not a
//! `ron::Value`, because `ron::Value` drops enum variant names (`Catalog(H100Sxm)`), so a value
//! round trip would lose data; a field rename only touches the key's identifier, so comments and
//! layout survive and error positions stay on the same line.
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
    /// A change of meaning, applied to the text after the renames.
    pub edit: fn(&str) -> String,
}

fn unchanged(text: &str) -> String {
    text.to_owned()
}

/// Version 1 → 2 (6 December 2026): `overheads.cuda_context_mib` meant the CUDA context with its
/// kernels; it is now the context at CUDA initialisation, beside `overheads.cuda_kernels_mib`
/// (docs/gpu-overheads.md §2). A file that kept the old default, 273.75, gets the new one, 253.75
/// (with the kernels' default 146 beside it); a file that set its own figure keeps it as the
/// whole, with `cuda_kernels_mib: 0.0`. A file that already names the kernels is left alone.
fn split_cuda_context(text: &str) -> String {
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
    match value {
        Some(273.75) => out.replace_range(k.value_start..k.value_start + len, "253.75"),
        // After the value, so that an error in the field itself keeps its column.
        Some(_) => out.insert_str(k.value_start + len, ", cuda_kernels_mib: 0.0"),
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
pub fn migrate(text: &str) -> Result<Option<String>, TooNew> {
    let found = scan::version(text).unwrap_or(u64::from(FORMAT_VERSION));
    if found > u64::from(FORMAT_VERSION) {
        return Err(TooNew { found });
    }
    if found == u64::from(FORMAT_VERSION) {
        return Ok(None);
    }
    let mut out = text.to_owned();
    for m in MIGRATIONS.iter().filter(|m| u64::from(m.from) >= found) {
        for (old, new) in m.renames {
            out = scan::rename(&out, old, new).0;
        }
        out = (m.edit)(&out);
    }
    Ok(Some(set_version(&out)))
}

/// Replaces the top-level version number with the current one.
fn set_version(text: &str) -> String {
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
    out.replace_range(
        k.value_start..k.value_start + len,
        &FORMAT_VERSION.to_string(),
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
        let Ok(Some(out)) = migrate(v0) else {
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
        let migrated = |t: &str| migrate(t).ok().flatten().unwrap_or_default();
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
    fn newer_files_are_refused_and_current_ones_untouched() {
        assert_eq!(migrate("(version: 99)"), Err(TooNew { found: 99 }));
        assert_eq!(migrate("(name: \"x\")"), Ok(None));
    }
}
