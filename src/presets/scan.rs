//! A small lexical scan of RON text that finds every struct field key and its dotted path
//! (`model.transformer.layers`). Used to name the field of an error, to find a field's line, to read
//! the `version` before parsing, and to rename fields when migrating an old file.
//!
//! It understands what can hide a bracket or a colon: line and (nested) block comments, strings with
//! escapes, raw strings `r#"…"#`, byte strings and char literals. It never fails: text it cannot make
//! sense of simply yields fewer keys (the real parser reports the error).

/// A struct field key found in the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key {
    /// Dotted path from the top-level struct, e.g. `parallel.tp`.
    pub path: String,
    /// Byte range of the identifier.
    pub start: usize,
    pub end: usize,
    /// Byte offset where the value starts (after the colon and whitespace).
    pub value_start: usize,
    /// Nesting depth: 1 for fields of the top-level struct.
    pub depth: usize,
}

/// Every field key of `text`, in order of appearance.
pub fn keys(text: &str) -> Vec<Key> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    // One entry per open bracket: the key that owns it, if any.
    let mut stack: Vec<Option<String>> = Vec::new();
    let mut pending: Option<String> = None;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if let Some(next) = skip_trivia_or_literal(bytes, i) {
            i = next;
            continue;
        }
        if is_ident_start(c) {
            let (start, end) = ident_span(bytes, i);
            let after = skip_ws_comments(bytes, end);
            let is_key = bytes.get(after) == Some(&b':') && bytes.get(after + 1) != Some(&b':');
            if is_key && !stack.is_empty() {
                let name = text.get(start..end).unwrap_or("").trim_start_matches("r#");
                let mut path: Vec<&str> = stack.iter().flatten().map(String::as_str).collect();
                path.push(name);
                out.push(Key {
                    path: path.join("."),
                    start,
                    end,
                    value_start: skip_ws_comments(bytes, after + 1),
                    depth: stack.len(),
                });
                pending = Some(name.to_owned());
                i = after + 1;
            } else {
                // A serving engine's variant (`engine: Some(LlamaCpp((…)))`) is a segment of its
                // fields' paths, as the range checks name them (`inference.engine.llamacpp.n_ctx`).
                let in_engine = stack.last().is_some_and(|k| k.as_deref() == Some("engine"));
                if in_engine && bytes.get(after) == Some(&b'(') {
                    pending = text.get(start..end).map(str::to_ascii_lowercase);
                }
                i = end;
            }
            continue;
        }
        match c {
            b'(' | b'[' | b'{' => stack.push(pending.take()),
            b')' | b']' | b'}' => {
                stack.pop();
                pending = None;
            }
            b',' => pending = None,
            _ => {}
        }
        i += 1;
    }
    out
}

/// The key whose value contains byte offset `at` (the last key starting before it), if any.
pub fn key_at(keys: &[Key], at: usize) -> Option<&Key> {
    keys.iter().rev().find(|k| k.start <= at)
}

/// The top-level `version: N` of a file, if present and a plain integer.
pub fn version(text: &str) -> Option<u64> {
    let k = keys(text)
        .into_iter()
        .find(|k| k.depth == 1 && k.path == "version")?;
    let rest = text.get(k.value_start..)?;
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '_')
        .filter(|c| *c != '_')
        .collect();
    digits.parse().ok()
}

/// 1-based line and column (in characters) of byte offset `at`.
pub fn line_col(text: &str, at: usize) -> (usize, usize) {
    let at = at.min(text.len());
    let before = text.get(..at).unwrap_or(text);
    let line = 1 + before.matches('\n').count();
    let col = 1 + before.rsplit('\n').next().map_or(0, |l| l.chars().count());
    (line, col)
}

/// Byte offset of a 1-based line and column (in characters); clamps to the text.
pub fn offset_of(text: &str, line: usize, col: usize) -> usize {
    let mut offset = 0;
    for (n, l) in text.split_inclusive('\n').enumerate() {
        if n + 1 == line {
            let within: usize = l
                .chars()
                .take(col.saturating_sub(1))
                .map(char::len_utf8)
                .sum();
            return offset + within;
        }
        offset += l.len();
    }
    text.len()
}

/// True when `text` holds nothing but whitespace and comments.
pub fn only_trivia(text: &str) -> bool {
    let bytes = text.as_bytes();
    skip_ws_comments(bytes, 0) >= bytes.len()
}

/// The identifier written just before a `::` that ends at or around byte `at` (`version::1`, an
/// error RON reports at the second colon), if there is one.
pub fn ident_before_double_colon(text: &str, at: usize) -> Option<&str> {
    let bytes = text.as_bytes();
    let at_byte = |i: usize, f: fn(u8) -> bool| bytes.get(i).copied().is_some_and(f);
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    // From the error position back over the colons (RON points at one of them or just after).
    let mut end = at.min(bytes.len());
    while at_byte(end, |b| b == b':') {
        end += 1;
    }
    let mut colons = 0;
    while end > 0 && at_byte(end - 1, |b| b == b':') {
        end -= 1;
        colons += 1;
    }
    while end > 0 && at_byte(end - 1, |b| b.is_ascii_whitespace()) {
        end -= 1;
    }
    let mut start = end;
    while start > 0 && at_byte(start - 1, is_ident) {
        start -= 1;
    }
    let name = text.get(start..end)?;
    (colons >= 2 && name.bytes().next().is_some_and(is_ident_start)).then_some(name)
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn ident_span(bytes: &[u8], start: usize) -> (usize, usize) {
    let mut end = start;
    if bytes.get(start..start + 2) == Some(b"r#") {
        end += 2;
    }
    while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
        end += 1;
    }
    (start, end.max(start + 1))
}

fn skip_ws_comments(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() {
        if bytes[i].is_ascii_whitespace() {
            i += 1;
        } else if let Some(next) = skip_comment(bytes, i) {
            i = next;
        } else {
            break;
        }
    }
    i
}

/// If a comment, string or char literal starts at `i`, the offset just past it.
fn skip_trivia_or_literal(bytes: &[u8], i: usize) -> Option<usize> {
    if let Some(next) = skip_comment(bytes, i) {
        return Some(next);
    }
    match bytes.get(i)? {
        b'"' => Some(skip_quoted(bytes, i + 1, b'"')),
        b'\'' => Some(skip_quoted(bytes, i + 1, b'\'')),
        b'b' if bytes.get(i + 1) == Some(&b'"') => Some(skip_quoted(bytes, i + 2, b'"')),
        b'r' | b'b' => skip_raw_string(bytes, i),
        _ => None,
    }
}

fn skip_comment(bytes: &[u8], i: usize) -> Option<usize> {
    match bytes.get(i..i + 2)? {
        b"//" => {
            let rest = bytes.get(i..)?;
            Some(
                rest.iter()
                    .position(|&b| b == b'\n')
                    .map_or(bytes.len(), |p| i + p + 1),
            )
        }
        b"/*" => {
            let (mut depth, mut j) = (1usize, i + 2);
            while j < bytes.len() && depth > 0 {
                match bytes.get(j..j + 2) {
                    Some(b"/*") => (depth, j) = (depth + 1, j + 2),
                    Some(b"*/") => (depth, j) = (depth - 1, j + 2),
                    _ => j += 1,
                }
            }
            Some(j)
        }
        _ => None,
    }
}

fn skip_quoted(bytes: &[u8], mut i: usize, quote: u8) -> usize {
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// `r"…"`, `r#"…"#`, `br#"…"#`: returns None when `i` is not the start of one.
fn skip_raw_string(bytes: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    if bytes.get(j) == Some(&b'b') {
        j += 1;
    }
    if bytes.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = bytes.get(j..)?.iter().take_while(|&&b| b == b'#').count();
    j += hashes;
    if bytes.get(j) != Some(&b'"') {
        return None;
    }
    j += 1;
    while j < bytes.len() {
        if bytes[j] == b'"'
            && bytes
                .get(j + 1..j + 1 + hashes)
                .is_some_and(|h| h.iter().all(|&b| b == b'#'))
        {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(bytes.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A serving engine's variant is a path segment, as the range checks name its fields.
    #[test]
    fn names_the_engine_variant_in_its_fields_paths() {
        let text =
            "Scenario(inference: (engine: Some(LlamaCpp((n_ctx: 4096, legacy_graph: true)))))";
        let paths: Vec<String> = keys(text).into_iter().map(|k| k.path).collect();
        assert_eq!(
            paths,
            [
                "inference",
                "inference.engine",
                "inference.engine.llamacpp.n_ctx",
                "inference.engine.llamacpp.legacy_graph"
            ]
        );
    }

    #[test]
    fn finds_nested_paths_and_skips_strings_and_comments() {
        let text = r##"Scenario( // a comment with x: (
            name: "a: (b",
            /* nested /* block */ y: ( */
            model: (transformer: (layers: 2, hidden: 8)),
            gpu: Custom((memory_gb: 24.0)),
            precision: (master_weights: Some(Fp32)),
            notes: r#"raw "x: (" "#,
            version: 1_0,
        )"##;
        let paths: Vec<String> = keys(text).into_iter().map(|k| k.path).collect();
        assert_eq!(
            paths,
            [
                "name",
                "model",
                "model.transformer",
                "model.transformer.layers",
                "model.transformer.hidden",
                "gpu",
                "gpu.memory_gb",
                "precision",
                "precision.master_weights",
                "notes",
                "version",
            ]
        );
        assert_eq!(version(text), Some(10));
    }

    #[test]
    fn line_col_round_trips() {
        let text = "ab\ncdé\nf";
        let at = text.find('f').unwrap_or(0);
        assert_eq!(line_col(text, at), (3, 1));
        assert_eq!(offset_of(text, 3, 1), at);
        assert_eq!(offset_of(text, 2, 4), text.find('\n').unwrap_or(0) + 5);
    }
}
