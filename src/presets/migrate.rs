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
}

/// Every migration, oldest first.
///
/// Version 0 is the draft format of the prototype (before the first release, still accepted so the
/// mechanism is exercised by tests): it spelled `workload.micro_batch` as `batch_size`,
/// `strategies.zero` as `zero_stage` and `parallel.tp` as `tensor_parallel`.
pub const MIGRATIONS: &[Migration] = &[Migration {
    from: 0,
    renames: &[
        ("workload.batch_size", "micro_batch"),
        ("strategies.zero_stage", "zero"),
        ("parallel.tensor_parallel", "tp"),
    ],
}];

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
    fn newer_files_are_refused_and_current_ones_untouched() {
        assert_eq!(migrate("(version: 99)"), Err(TooNew { found: 99 }));
        assert_eq!(migrate("(name: \"x\")"), Ok(None));
    }
}
