//! The typed reader of a `config.json` object: every key read is remembered (the rest are listed as
//! ignored), every problem collected so one message names all of them.

use serde_json::{Map, Value};

use super::hf_keys::{IRRELEVANT, IRRELEVANT_KEYS};
use crate::presets::text::echo;

/// Reads typed fields and collects every problem, so one message names all of them.
pub(super) struct Reader<'a> {
    pub(super) obj: &'a Map<String, Value>,
    pub(super) used: Vec<&'static str>,
    pub(super) problems: Vec<String>,
}

impl<'a> Reader<'a> {
    pub(super) fn get(&mut self, key: &'static str) -> Option<&'a Value> {
        self.used.push(key);
        self.obj.get(key).filter(|v| !v.is_null())
    }

    /// A positive integer that fits in u32.
    pub(super) fn count(&mut self, key: &'static str) -> Option<u32> {
        let v = self.get(key)?;
        match v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n > 0)
        {
            Some(n) => Some(n),
            None => {
                self.problems.push(format!(
                    "`{key}` = {} is not a positive integer",
                    echo_json(v)
                ));
                None
            }
        }
    }

    pub(super) fn required(&mut self, key: &'static str) -> u32 {
        if self.obj.get(key).is_none_or(Value::is_null) {
            self.problems.push(format!("`{key}` is missing"));
            self.used.push(key);
            return 0;
        }
        self.count(key).unwrap_or(0)
    }

    pub(super) fn flag(&mut self, key: &'static str, default: bool) -> bool {
        match self.get(key) {
            None => default,
            Some(Value::Bool(b)) => *b,
            Some(v) => {
                self.problems
                    .push(format!("`{key}` = {} is not true or false", echo_json(v)));
                default
            }
        }
    }

    /// A finite non-negative number (`routed_scaling_factor`), or `default`.
    pub(super) fn number(&mut self, key: &'static str, default: f64) -> f64 {
        match self.get(key) {
            None => default,
            Some(v) => match v.as_f64().filter(|x| x.is_finite() && *x >= 0.0) {
                Some(x) => x,
                None => {
                    self.problems.push(format!(
                        "`{key}` = {} is not a non-negative number",
                        echo_json(v)
                    ));
                    default
                }
            },
        }
    }

    pub(super) fn text(&mut self, key: &'static str) -> Option<&'a str> {
        self.get(key).and_then(Value::as_str)
    }

    /// A reader over a nested object (`text_config`, `vision_config`).
    pub(super) fn new(obj: &'a Map<String, Value>) -> Self {
        Reader {
            obj,
            used: Vec::new(),
            problems: Vec::new(),
        }
    }

    /// A positive integer, or the configuration class's default when absent or null.
    pub(super) fn or(&mut self, key: &'static str, default: u32) -> u32 {
        self.count(key).unwrap_or(default)
    }

    /// A non-negative integer (0 allowed: `first_k_dense_replace`, `q_lora_rank` absent), or `default`.
    pub(super) fn zero_or(&mut self, key: &'static str, default: u32) -> u32 {
        let Some(v) = self.get(key) else {
            return default;
        };
        match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
            Some(n) => n,
            None => {
                self.problems.push(format!(
                    "`{key}` = {} is not a non-negative integer",
                    echo_json(v)
                ));
                default
            }
        }
    }

    /// A list of strings (`layer_types`); None when absent. At most `max` entries.
    pub(super) fn strings(&mut self, key: &'static str, max: usize) -> Option<Vec<&'a str>> {
        let v = self.get(key)?;
        let list = v
            .as_array()
            .filter(|a| a.len() <= max)
            .and_then(|a| a.iter().map(Value::as_str).collect::<Option<Vec<&str>>>());
        if list.is_none() {
            self.problems.push(format!(
                "`{key}` = {} is not a list of at most {max} strings",
                echo_json(v)
            ));
        }
        list
    }

    /// A list of non-negative integers (`mlp_only_layers`, `no_rope_layers`); empty when absent.
    pub(super) fn integers(&mut self, key: &'static str, max: usize) -> Vec<u32> {
        let Some(v) = self.get(key) else {
            return Vec::new();
        };
        let list = v.as_array().filter(|a| a.len() <= max).and_then(|a| {
            a.iter()
                .map(|x| x.as_u64().and_then(|n| u32::try_from(n).ok()))
                .collect::<Option<Vec<u32>>>()
        });
        list.unwrap_or_else(|| {
            self.problems.push(format!(
                "`{key}` = {} is not a list of at most {max} non-negative integers",
                echo_json(v)
            ));
            Vec::new()
        })
    }

    /// A nested object; None when absent.
    pub(super) fn object(&mut self, key: &'static str) -> Option<&'a Map<String, Value>> {
        let v = self.get(key)?;
        let o = v.as_object();
        if o.is_none() {
            self.problems
                .push(format!("`{key}` = {} is not an object", echo_json(v)));
        }
        o
    }

    /// Marks keys as read (they change no parameter nor memory the import models).
    pub(super) fn skip(&mut self, keys: &[&'static str]) {
        self.used.extend_from_slice(keys);
    }

    /// The key is present with a null value (marked as read).
    pub(super) fn is_null(&mut self, key: &'static str) -> bool {
        self.used.push(key);
        self.obj.get(key).is_some_and(Value::is_null)
    }

    /// A value is present and not null.
    pub(super) fn has(&self, key: &str) -> bool {
        self.obj.get(key).is_some_and(|v| !v.is_null())
    }

    /// "Ignored keys (in `where`): …" for keys no family read, if any.
    pub(super) fn ignored(&self, place: &str) -> Option<String> {
        let mut ignored: Vec<&str> = self
            .obj
            .keys()
            .map(String::as_str)
            .filter(|k| !self.used.contains(k) && !IRRELEVANT_KEYS.contains(k))
            .filter(|k| !IRRELEVANT.contains(k))
            .collect();
        ignored.sort_unstable();
        (!ignored.is_empty()).then(|| ignored_note(&ignored, place))
    }
}

/// A JSON value echoed in a message: one line, long values elided.
pub(crate) fn echo_json(v: &Value) -> String {
    echo(&v.to_string())
}

/// "Ignored keys: a, b, c" with each key echoed safely, the first 20 named and the rest counted.
fn ignored_note(keys: &[&str], place: &str) -> String {
    const NAMED: usize = 20;
    let named: Vec<String> = keys.iter().take(NAMED).map(|k| echo(k)).collect();
    let more = keys.len().saturating_sub(NAMED);
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!("Ignored keys{place}: {}{tail}", named.join(", "))
}
