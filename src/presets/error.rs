//! Errors of reading and writing scenario files: message first, then the field, the position and
//! the file path last.

use std::fmt;
use std::path::{Path, PathBuf};

use super::text::{echo, escape_controls};
use super::{MAX_FILE_BYTES, scan};
use crate::scenario::FORMAT_VERSION;
use crate::scenario::validate::FieldError;

/// What kind of problem a file has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The file could not be read or written.
    Io,
    /// Over [`MAX_FILE_BYTES`]; refused before parsing.
    TooLarge,
    NotUtf8,
    Empty,
    /// Not valid RON (truncated, a stray character …).
    Syntax,
    /// A field name that the format does not have (a typo).
    UnknownField,
    /// An enum value that does not exist (`gpu: Catalog(H100Sxn)`).
    UnknownVariant,
    /// A value of the wrong type (a string where a number goes, a negative count …).
    WrongType,
    /// A number outside its documented range, NaN or infinite.
    OutOfRange,
    /// Written by a newer version of the program.
    UnsupportedVersion,
}

/// Why a scenario file could not be used.
#[derive(Clone, Debug, PartialEq)]
pub struct PresetError {
    pub kind: ErrorKind,
    /// What is wrong, naming the field where there is one.
    pub message: String,
    /// Dotted path of the field concerned, e.g. `model.transformer.layers`.
    pub field: Option<String>,
    /// 1-based line and column in the file.
    pub position: Option<(usize, usize)>,
    pub path: Option<PathBuf>,
}

impl PresetError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        PresetError {
            kind,
            message: message.into(),
            field: None,
            position: None,
            path: None,
        }
    }

    /// The same error, naming the file it came from.
    #[must_use]
    pub fn with_path(mut self, path: &Path) -> Self {
        self.path = Some(path.to_path_buf());
        self
    }

    /// `len` when known (a file is read only up to the limit + 1 byte, so its size is not).
    pub(super) fn too_large(len: Option<u64>) -> Self {
        let size = len.map_or_else(
            || format!("more than {MAX_FILE_BYTES} bytes"),
            |n| format!("{n} bytes"),
        );
        PresetError::new(
            ErrorKind::TooLarge,
            format!(
                "the file is too large to be a scenario ({size}; the limit is {MAX_FILE_BYTES} bytes)"
            ),
        )
    }

    pub(super) fn not_utf8(bytes: &[u8], valid_up_to: usize) -> Self {
        let text = std::str::from_utf8(bytes.get(..valid_up_to).unwrap_or(&[])).unwrap_or("");
        let mut e = PresetError::new(
            ErrorKind::NotUtf8,
            format!("the file is not valid UTF-8 text (bad byte at offset {valid_up_to})"),
        );
        e.position = Some(scan::line_col(text, text.len()));
        e
    }

    /// A file written by a newer program: names the `version` field and its line.
    pub(super) fn newer_version(text: &str, found: u64) -> Self {
        let key = scan::keys(text)
            .into_iter()
            .find(|k| k.depth == 1 && k.path == "version");
        PresetError {
            kind: ErrorKind::UnsupportedVersion,
            message: format!(
                "the file is format version {found} (field `version`), newer than this program's \
                 {FORMAT_VERSION}: update VRAM Explorer"
            ),
            field: Some("version".to_owned()),
            position: key.map(|k| scan::line_col(text, k.start)),
            path: None,
        }
    }

    /// Translates a RON parse error, naming the field at its position.
    pub(super) fn from_ron(text: &str, e: &ron::error::SpannedError) -> Self {
        use ron::Error as R;
        let (line, col) = (e.span.start.line, e.span.start.col);
        let keys = scan::keys(text);
        let at = scan::offset_of(text, line, col);
        let here = scan::key_at(&keys, at).map(|k| echo(&k.path));
        if let Some(name) = scan::ident_before_double_colon(text, at) {
            return PresetError {
                kind: ErrorKind::Syntax,
                message: format!(
                    "`::` after the field name `{0}`: a field is written `{0}: value`",
                    echo(name)
                ),
                field: Some(echo(name)),
                position: Some((line, col)),
                path: None,
            };
        }
        let (kind, message, field) = match &e.code {
            R::NoSuchStructField {
                expected, found, ..
            } => {
                // The key at the position is the unknown one; its parent is where it was written.
                let found = echo(found);
                let field = here
                    .filter(|p| p.ends_with(found.as_str()))
                    .unwrap_or(found);
                let message = format!(
                    "unknown field `{field}` (expected one of: {})",
                    expected.join(", ")
                );
                (ErrorKind::UnknownField, message, Some(field))
            }
            R::NoSuchEnumVariant {
                expected, found, ..
            } => {
                let message = format!(
                    "unknown value `{}`{} (expected one of: {})",
                    echo(found),
                    in_field(here.as_deref()),
                    expected.join(", ")
                );
                (ErrorKind::UnknownVariant, message, here)
            }
            R::InvalidValueForType { expected, found } => {
                let message = format!(
                    "wrong value{}: expected {expected}, found {}",
                    in_field(here.as_deref()),
                    echo(&found.to_string())
                );
                (ErrorKind::WrongType, message, here)
            }
            R::DuplicateStructField { field, .. } => {
                let path = here
                    .filter(|p| p.ends_with(field))
                    .unwrap_or_else(|| echo(field));
                let message = format!("field `{path}` is given twice");
                (ErrorKind::Syntax, message, Some(path))
            }
            other => {
                let (kind, what) = describe(other, text, at);
                let message = match (kind, here.as_deref()) {
                    (ErrorKind::WrongType, Some(p)) => {
                        format!("wrong value in field `{p}`: {what}")
                    }
                    _ if what == TRUNCATED => what,
                    _ => format!("{what}{}", in_field(here.as_deref())),
                };
                let field = if message == TRUNCATED { None } else { here };
                (kind, message, field)
            }
        };
        PresetError {
            kind,
            message,
            field,
            position: Some((line, col)),
            path: None,
        }
    }

    /// All out-of-range fields in one error, positioned at the first one.
    pub(super) fn out_of_range(text: &str, errors: &[FieldError]) -> Self {
        let message = errors
            .iter()
            .map(|e| format!("`{}` {}", e.field, e.message))
            .collect::<Vec<_>>()
            .join("; ");
        let first = errors.first().map(|e| e.field);
        let keys = scan::keys(text);
        // A field left at its default has no line: a cross-field check (`kv_heads` above `heads`)
        // then points at the nearest enclosing field written in the file.
        let position = first
            .and_then(|f| enclosing_key(&keys, f))
            .map(|k| scan::line_col(text, k.start));
        PresetError {
            kind: ErrorKind::OutOfRange,
            message: format!("value out of range: {message}"),
            field: first.map(str::to_owned),
            position,
            path: None,
        }
    }
}

const TRUNCATED: &str = "unexpected end of file (is it truncated? a bracket may be missing)";

/// A plain-words description of a RON error, and whether it is a type or a syntax problem.
fn describe(code: &ron::Error, text: &str, at: usize) -> (ErrorKind, String) {
    use ron::Error as R;
    let rest = text.get(at..).unwrap_or("");
    // RON reports a missing closing bracket at the last character it read.
    let at_end = rest.chars().skip(1).all(char::is_whitespace);
    if at_end && !matches!(code, R::IntegerOutOfBounds | R::InvalidValueForType { .. })
        || matches!(code, R::Eof)
    {
        return (ErrorKind::Syntax, TRUNCATED.to_owned());
    }
    let wrong = |s: &str| (ErrorKind::WrongType, s.to_owned());
    match code {
        R::ExpectedInteger => wrong("expected a whole number"),
        R::IntegerOutOfBounds => {
            wrong("the number is out of range for this field (a negative or too large count?)")
        }
        R::ExpectedComma if rest.starts_with(['.', 'e', 'E']) => {
            wrong("expected a whole number (no decimal point or exponent)")
        }
        R::ExpectedFloat => wrong("expected a number"),
        R::ExpectedBoolean => wrong("expected `true` or `false`"),
        R::ExpectedString | R::ExpectedStringEnd => wrong("expected a string in double quotes"),
        R::ExpectedOption => wrong("expected `Some(…)` or `None`"),
        R::ExpectedDifferentStructName { found, .. } => (
            ErrorKind::Syntax,
            format!(
                "the file holds a `{}`, not a scenario (write `Scenario(…)` or `(…)`)",
                echo(found)
            ),
        ),
        other => (ErrorKind::Syntax, format!("invalid scenario file: {other}")),
    }
}

/// The key at dotted path `field`, or else at its nearest ancestor written in the file.
fn enclosing_key<'a>(keys: &'a [scan::Key], field: &str) -> Option<&'a scan::Key> {
    let mut path = field;
    loop {
        if let Some(k) = keys.iter().find(|k| k.path == path) {
            return Some(k);
        }
        path = path.rsplit_once('.')?.0;
    }
}

fn in_field(path: Option<&str>) -> String {
    path.map(|p| format!(" in field `{p}`")).unwrap_or_default()
}

impl fmt::Display for PresetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One line: message, field (when the message does not name it), position, path last;
        // control characters escaped (they may come from the file or its name).
        f.write_str(&escape_controls(&self.message))?;
        if let Some(field) = &self.field
            && !self.message.contains(&format!("`{field}`"))
        {
            write!(f, " in field `{}`", escape_controls(field))?;
        }
        if let Some((line, col)) = self.position {
            write!(f, " at line {line}, column {col}")?;
        }
        if let Some(path) = &self.path {
            write!(f, ": {}", escape_controls(&path.display().to_string()))?;
        }
        Ok(())
    }
}

impl std::error::Error for PresetError {}
