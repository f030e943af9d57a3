//! Text from a file, made safe to echo on a terminal and in one-line messages: control characters
//! (C0, DEL, C1: Unicode general category Cc, as `char::is_control` tests) are escaped, so a name
//! holding `ESC [2J` cannot clear the screen and a newline cannot split a message; long inputs are
//! elided.

use std::borrow::Cow;

/// Inputs longer than this (in characters) are elided by [`echo`].
pub const ELIDE_OVER: usize = 80;
/// Characters kept of an elided input, followed by `…`.
pub const ELIDE_KEEP: usize = 60;

/// `s` with every control character escaped as Rust writes it (`\n`, `\t`, `\u{1b}`); borrowed when
/// there is none.
pub fn escape_controls(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Multi-line output made safe for a terminal: as [`escape_controls`], but line feeds and tabs are
/// kept.
pub fn escape_controls_keep_lines(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return Cow::Borrowed(s);
    }
    s.split_inclusive('\n')
        .map(|line| {
            let (body, end) = line
                .strip_suffix('\n')
                .map_or((line, ""), |body| (body, "\n"));
            let parts: Vec<Cow<'_, str>> = body.split('\t').map(escape_controls).collect();
            format!("{}{end}", parts.join("\t"))
        })
        .collect::<String>()
        .into()
}

/// An input echoed back in a message: escaped, and if longer than [`ELIDE_OVER`] characters, its
/// first [`ELIDE_KEEP`] and `…`.
pub fn echo(s: &str) -> String {
    let short = if s.chars().count() > ELIDE_OVER {
        let cut = s.char_indices().nth(ELIDE_KEEP).map_or(s.len(), |(i, _)| i);
        format!("{}…", s.get(..cut).unwrap_or(""))
    } else {
        s.to_owned()
    };
    escape_controls(&short).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_elides() {
        assert_eq!(escape_controls("plain"), "plain");
        assert_eq!(escape_controls("\u{1b}[2Ja\nb"), "\\u{1b}[2Ja\\nb");
        assert_eq!(echo(&"x".repeat(80)), "x".repeat(80));
        assert_eq!(echo(&"é".repeat(81)), format!("{}…", "é".repeat(60)));
        assert_eq!(echo("\u{9b}"), "\\u{9b}", "C1 CSI too");
        assert_eq!(
            escape_controls_keep_lines("a\tb\n\u{1b}c\n"),
            "a\tb\n\\u{1b}c\n"
        );
    }
}
