//! Out-of-range values in a saved session's scenario are clamped, not refused: the session is the
//! user's own state, and losing it over one bad number is worse than a corrected number and a
//! notice. (A scenario *file* with such a value is refused by [`crate::presets`] instead.)
//!
//! The ranges are the scenario format's ([`validate::RANGES`], documented in `docs/format.md`). The
//! fix is made in the RON text, so every field keeps its type and nothing else changes: a finite
//! value outside its range goes to the nearest bound; NaN, or a value at an excluded bound, takes the
//! default scenario's value; KV heads above the query heads take the query heads.

use crate::presets::{migrate, scan};
use crate::scenario::Scenario;
use crate::scenario::validate::{self, FieldRange};

/// Passes over the text: a fix can reveal a dependent error (KV heads after the heads are clamped).
const PASSES: usize = 4;

/// The scenario with every out-of-range field clamped, and the dotted paths of those fields;
/// `None` when the text does not parse or a field cannot be fixed.
pub fn fix(text: &str) -> Option<(Scenario, Vec<String>)> {
    let mut text = match migrate::migrate(text) {
        Ok(Some(migrated)) => migrated.text,
        Ok(None) => text.to_owned(),
        Err(_) => return None,
    };
    let mut fields: Vec<String> = Vec::new();
    for _ in 0..PASSES {
        let scenario: Scenario = ron::from_str(&text).ok()?;
        let errors = validate::validate(&scenario);
        if errors.is_empty() {
            return Some((scenario, fields));
        }
        for e in errors {
            let target = target(&scenario, e.field)?;
            text = replace_value(&text, e.field, target)?;
            if !fields.iter().any(|f| f == e.field) {
                fields.push(e.field.to_owned());
            }
        }
    }
    None
}

/// The value a bad field takes.
fn target(s: &Scenario, field: &str) -> Option<f64> {
    let r = validate::range_of(field)?;
    let x = (r.get)(s)?;
    let t = &s.model.transformer;
    if field == "model.transformer.kv_heads" && t.kv_heads > t.heads && x <= r.max {
        // The one cross-field rule: KV heads are at most the query heads.
        return Some(f64::from(t.heads));
    }
    let excluded = (r.min_exclusive && x <= r.min) || (r.max_exclusive && x >= r.max);
    if x.is_nan() || excluded {
        return default_value(r);
    }
    let clamped = x.clamp(r.min, r.max);
    if clamped == x {
        // In range but still reported (a rule beyond the range): cannot fix it here.
        return None;
    }
    Some(clamped)
}

fn default_value(r: &FieldRange) -> Option<f64> {
    (r.get)(&Scenario::default()).filter(|v| v.is_finite())
}

/// Replaces the literal after the key at `field` with `value`, written as an integer when the
/// literal was one.
fn replace_value(text: &str, field: &str, value: f64) -> Option<String> {
    let key = scan::keys(text).into_iter().find(|k| k.path == field)?;
    let rest = text.get(key.value_start..)?;
    let len = rest
        .find(|c: char| c.is_whitespace() || matches!(c, ',' | ')' | ']' | '/'))
        .unwrap_or(rest.len());
    let literal = rest.get(..len)?;
    let integer = !literal.is_empty() && literal.chars().all(|c| c.is_ascii_digit() || c == '_');
    let written = if integer {
        // In range by construction: at most the largest bound (1e13 parameters), so exact.
        format!("{}", value.round())
    } else {
        format!("{value:?}")
    };
    let mut out = text.to_owned();
    out.replace_range(key.value_start..key.value_start + len, &written);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets;

    fn text_with(edit: impl FnOnce(&mut Scenario)) -> String {
        let mut s = Scenario::default();
        edit(&mut s);
        presets::to_ron_string(&s)
    }

    #[test]
    fn heads_at_u32_max_are_clamped_to_the_bound() {
        let text = text_with(|s| s.model.transformer.heads = u32::MAX);
        assert!(presets::from_ron_str(&text).is_err());
        let (s, fields) = fix(&text).expect("fixed");
        let max = validate::range_of("model.transformer.heads")
            .expect("range")
            .max;
        assert_eq!(f64::from(s.model.transformer.heads), max);
        assert_eq!(fields, vec!["model.transformer.heads".to_owned()]);
        assert!(validate::validate(&s).is_empty());
    }

    /// A serving engine's field is found under its variant's segment (before, the text scan
    /// named it without one, so such a session could not be fixed).
    #[test]
    fn an_engine_field_is_clamped_too() {
        use crate::scenario::{LlamaCpp, ServingEngine};
        let text = text_with(|s| {
            s.inference.engine = Some(ServingEngine::LlamaCpp(LlamaCpp {
                sched_max_copies: 99,
                ..LlamaCpp::default()
            }));
        });
        let (s, fields) = fix(&text).expect("fixed");
        let copies = s
            .inference
            .engine
            .as_ref()
            .and_then(|e| e.llamacpp().copied())
            .map(|l| l.sched_max_copies);
        assert_eq!(copies, Some(4));
        assert_eq!(
            fields,
            vec!["inference.engine.llamacpp.sched_max_copies".to_owned()]
        );
    }

    #[test]
    fn nan_takes_the_default_value() {
        let text = text_with(|s| s.timing.compute_efficiency = f64::NAN);
        let (s, fields) = fix(&text).expect("fixed");
        let default = Scenario::default().timing.compute_efficiency;
        assert_eq!(s.timing.compute_efficiency, default);
        assert_eq!(fields, vec!["timing.compute_efficiency".to_owned()]);
    }

    #[test]
    fn kv_heads_above_heads_take_the_heads() {
        let text = text_with(|s| {
            s.model.transformer.heads = 8;
            s.model.transformer.kv_heads = 32;
        });
        let (s, fields) = fix(&text).expect("fixed");
        assert_eq!(s.model.transformer.kv_heads, 8);
        assert_eq!(fields, vec!["model.transformer.kv_heads".to_owned()]);
    }

    #[test]
    fn text_that_does_not_parse_is_not_fixed() {
        assert!(fix("(model: (").is_none());
    }
}
