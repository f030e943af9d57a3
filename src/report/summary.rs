//! The one-page summary for slides, written beside the exported chart images: the scenario's title,
//! the verdict, the key figures (the Markdown report's input table, then memory and speed) and the
//! charts. Markdown links the PNG files beside it; HTML is one self-contained file, each image
//! inlined as a base64 `data:` URI (RFC 2397) so that it can be mailed or opened anywhere.

use std::fmt::Write;

use super::family::{throughput_text, view};
use super::markdown::summary_rows;
use crate::estimator::Estimate;
use crate::presets::text::escape_controls;
use crate::scenario::Scenario;
use crate::units::{MemoryUnit, fmt_seconds};

/// One chart image of the summary.
#[derive(Clone, Copy, Debug)]
pub struct Figure<'a> {
    /// The chart's name ("Memory", "Sweep", …).
    pub name: &'a str,
    /// The PNG's file name, beside the summary.
    pub file: &'a str,
    /// The PNG's bytes (inlined in the HTML).
    pub png: &'a [u8],
    /// The chart's size on screen in points: the images are drawn at 2 px per point, and shown
    /// at this size so that they stay sharp on a high-density screen or projector.
    pub points: [u32; 2],
}

/// The title, verdict line and key figures: (title, verdict, rows).
fn content(
    s: &Scenario,
    e: &Estimate,
    unit: MemoryUnit,
) -> (String, String, Vec<(String, String)>) {
    let title = escape_controls(&s.title().replace('\n', " ")).into_owned();
    let m = &e.memory;
    let verdict = match e.cpu_build() {
        Some(b) => format!(
            "CPU only (llama.cpp -dev none): {} of host memory, no GPU used",
            unit.format(crate::units::Bytes(b.host_total() as f64))
        ),
        None => format!(
            "{}: {} of {} per GPU ({} headroom)",
            if m.fits { "Fits" } else { "Does not fit" },
            unit.format(m.gpu_total),
            unit.format(m.capacity),
            unit.format(m.headroom)
        ),
    };
    let mut rows: Vec<(String, String)> = summary_rows(s, e, unit)
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    let p = &e.performance;
    let time = if p.training.is_some() {
        ("Step time", fmt_seconds(p.step.total_s))
    } else {
        ("Time per output token", fmt_seconds(p.throughput.tpot_s))
    };
    let memory = if e.cpu_build().is_some() {
        "Memory"
    } else {
        "Memory per GPU"
    };
    rows.push((memory.to_owned(), verdict.clone()));
    rows.push((time.0.to_owned(), time.1));
    rows.push((
        "Throughput".to_owned(),
        throughput_text(e, view(s.model.family)),
    ));
    (title, verdict, rows)
}

/// The summary as GitHub Markdown, the images linked by file name.
pub fn markdown(s: &Scenario, e: &Estimate, figures: &[Figure<'_>], unit: MemoryUnit) -> String {
    let (title, verdict, rows) = content(s, e, unit);
    let cell = |t: &str| t.replace('|', "\\|");
    let mut out = format!("# {title}\n\n**{verdict}**\n\n| Figure | Value |\n|---|---|\n");
    for (k, v) in &rows {
        let _ = writeln!(out, "| {} | {} |", cell(k), cell(v));
    }
    for f in figures {
        let _ = write!(out, "\n## {}\n\n![{}]({})\n", f.name, f.name, f.file);
    }
    out
}

/// The summary as one self-contained HTML page.
pub fn html(s: &Scenario, e: &Estimate, figures: &[Figure<'_>], unit: MemoryUnit) -> String {
    let (title, verdict, rows) = content(s, e, unit);
    let mut out =
        String::with_capacity(figures.iter().map(|f| f.png.len() * 4 / 3).sum::<usize>() + 4096);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\n\
         <style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}}\
         table{{border-collapse:collapse}}td,th{{border:1px solid #999;padding:.25em .6em;text-align:left}}\
         img{{max-width:100%;height:auto}}</style></head><body>\n<h1>{t}</h1>\n<p><strong>{v}</strong></p>\n\
         <table><tr><th>Figure</th><th>Value</th></tr>\n",
        t = escape_html(&title),
        v = escape_html(&verdict)
    );
    for (k, v) in &rows {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td></tr>",
            escape_html(k),
            escape_html(v)
        );
    }
    out.push_str("</table>\n");
    for f in figures {
        let name = escape_html(f.name);
        let _ = write!(
            out,
            "<h2>{name}</h2>\n<img alt=\"{name}\" width=\"{}\" height=\"{}\" src=\"data:image/png;base64,",
            f.points[0], f.points[1]
        );
        base64(f.png, &mut out);
        out.push_str("\">\n");
    }
    out.push_str("</body></html>\n");
    out
}

/// Text safe inside an HTML element or a quoted attribute.
fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// The base64 alphabet of RFC 4648 §4 (Table 1).
const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Appends `bytes` in base64 (RFC 4648 §4, with `=` padding): each 3 bytes become 4 characters.
///
/// ```
/// let mut s = String::new();
/// vram_explorer::report::summary::base64(b"foobar", &mut s);
/// assert_eq!(s, "Zm9vYmFy"); // RFC 4648 §10 test vectors
/// s.clear();
/// vram_explorer::report::summary::base64(b"fooba", &mut s);
/// assert_eq!(s, "Zm9vYmE=");
/// s.clear();
/// vram_explorer::report::summary::base64(b"f", &mut s);
/// assert_eq!(s, "Zg==");
/// ```
pub fn base64(bytes: &[u8], out: &mut String) {
    let char_of = |i: u32| char::from(ALPHABET.get((i & 63) as usize).copied().unwrap_or(b'A'));
    for chunk in bytes.chunks(3) {
        let b = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = (b(0) << 16) | (b(1) << 8) | b(2);
        out.push(char_of(n >> 18));
        out.push(char_of(n >> 12));
        out.push(if chunk.len() > 1 {
            char_of(n >> 6)
        } else {
            '='
        });
        out.push(if chunk.len() > 2 { char_of(n) } else { '=' });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimator::estimate;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        for (input, expected) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            let mut s = String::new();
            base64(input.as_bytes(), &mut s);
            assert_eq!(s, expected, "{input}");
        }
        let mut s = String::new();
        base64(&[0xfb, 0xff], &mut s);
        assert_eq!(s, "+/8=");
    }

    #[test]
    fn the_summary_names_the_scenario_the_verdict_and_every_chart() {
        let s = Scenario {
            name: "A <b>bold</b> name".to_owned(),
            ..Scenario::default()
        };
        let e = estimate(&s);
        let png = [1u8, 2, 3, 4];
        let figures = [Figure {
            name: "Memory",
            file: "x-memory.png",
            png: &png,
            points: [600, 300],
        }];
        let md = markdown(&s, &e, &figures, MemoryUnit::GiB);
        assert!(md.starts_with("# A <b>bold</b> name\n"), "{md}");
        assert!(
            md.contains("**Fits: ") || md.contains("**Does not fit: "),
            "{md}"
        );
        assert!(md.contains("![Memory](x-memory.png)"), "{md}");
        assert!(md.contains("| Throughput | "), "{md}");
        assert!(md.contains("= 1 GPU |"), "singular: {md}");
        let page = html(&s, &e, &figures, MemoryUnit::GiB);
        assert!(
            page.contains("<h1>A &lt;b&gt;bold&lt;/b&gt; name</h1>"),
            "{page}"
        );
        assert!(
            page.contains("width=\"600\" height=\"300\" src=\"data:image/png;base64,AQIDBA==\""),
            "{page}"
        );
        assert!(
            !page.contains("x-memory.png"),
            "self-contained: no file link"
        );
    }
}
