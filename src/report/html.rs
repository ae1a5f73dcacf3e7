//! A static `index.html` for sweep, compare and nightly folders: the verdict table first,
//! then the plots, then links to each failing seed's report. No scripts and nothing loaded
//! from the network: the page and the files it links sit in one folder tree.

use super::atomic;
use std::fmt::Write as _;
use std::path::Path;

/// One line of the verdict table.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct VerdictRow {
    /// What the verdict column shows.
    pub verdict: RowVerdict,
    /// One cell per column after the verdict column.
    pub cells: Vec<String>,
}

/// A row's verdict: a run's or a sweep's PASS or FAIL, or a review's comparison of a
/// candidate with its base.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RowVerdict {
    /// Every invariant held.
    Pass,
    /// Some invariant failed.
    Fail,
    /// The candidate alone breaks an invariant the base keeps.
    Breaks,
    /// The candidate breaks nothing the base keeps, but both fail some runs.
    BothBreak,
    /// The candidate decides differently but breaks nothing the base keeps.
    Diverges,
    /// The candidate decides exactly as the base.
    Same,
}

impl RowVerdict {
    /// `Pass` or `Fail`.
    pub(crate) fn of(passed: bool) -> RowVerdict {
        if passed {
            RowVerdict::Pass
        } else {
            RowVerdict::Fail
        }
    }

    /// The CSS class and the word the column shows.
    fn class_and_word(self) -> (&'static str, &'static str) {
        match self {
            RowVerdict::Pass => ("pass", "PASS"),
            RowVerdict::Fail => ("fail", "FAIL"),
            RowVerdict::Breaks => ("fail", "breaks"),
            RowVerdict::BothBreak => ("fail", "both break"),
            RowVerdict::Diverges => ("diverges", "diverges"),
            RowVerdict::Same => ("pass", "same"),
        }
    }
}

/// `text` escaped for HTML, with Markdown's `code` spans shown as code.
pub(crate) fn escape_with_code(text: &str) -> String {
    let escaped = escape(text);
    let mut out = String::with_capacity(escaped.len());
    for (index, part) in escaped.split('`').enumerate() {
        // Odd parts lie between a pair of backticks; an unpaired last one stays literal.
        let paired = index % 2 == 1 && escaped.split('`').count() > index + 1;
        if paired {
            out.push_str("<code>");
            out.push_str(part);
            out.push_str("</code>");
        } else {
            if index % 2 == 1 {
                out.push('`');
            }
            out.push_str(part);
        }
    }
    out
}

/// A link to a file in (or under) the page's folder.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Link {
    /// The link's text.
    pub label: String,
    /// Relative path from the page's folder.
    pub href: String,
}

/// What an index page shows.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct IndexPage {
    /// The page's title, also its `<title>`.
    pub title: String,
    /// One sentence under the title (e.g. the overall verdict and seed count).
    pub summary: String,
    /// Column names after the verdict column.
    pub columns: Vec<String>,
    /// One row per run or seed, under the column names.
    pub rows: Vec<VerdictRow>,
    /// SVG plots, each shown with its label as the caption.
    pub plots: Vec<Link>,
    /// Failing seeds' report folders (or their `summary.md`).
    pub failing: Vec<Link>,
    /// Free text lines shown after the table (regressions, warnings).
    pub notes: Vec<String>,
    /// Further sections after the notes and before the plots.
    pub sections: Vec<Section>,
}

/// A section of an index page: a heading, paragraphs, a table and preformatted lines, each
/// optional.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Section {
    /// The section's heading.
    pub heading: String,
    /// Paragraphs of plain text under the heading.
    pub paragraphs: Vec<String>,
    /// Column names of the section's table (empty: no table).
    pub columns: Vec<String>,
    /// The table's rows, one cell per column.
    pub rows: Vec<Vec<String>>,
    /// Blocks of preformatted lines (trace excerpts), each with its caption.
    pub blocks: Vec<(String, Vec<String>)>,
}

/// Escape text for HTML content and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:1300px}\
table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:4px 10px;text-align:left}\
th{background:#eee}.pass{background:#d7f0d7;font-weight:bold}\
.fail{background:#f6d2d2;font-weight:bold}.diverges{background:#f6ecc8;font-weight:bold}\
figure{margin:1.5em 0}img{max-width:100%}\
pre{background:#f6f6f6;padding:6px;overflow-x:auto}";

fn write_section(out: &mut String, section: &Section) {
    let _ = writeln!(out, "<h2>{}</h2>", escape(&section.heading));
    for paragraph in &section.paragraphs {
        let _ = writeln!(out, "<p>{}</p>", escape(paragraph));
    }
    if !section.columns.is_empty() {
        let _ = write!(out, "<table>\n<tr>");
        for column in &section.columns {
            let _ = write!(out, "<th>{}</th>", escape(column));
        }
        let _ = writeln!(out, "</tr>");
        for row in &section.rows {
            let _ = write!(out, "<tr>");
            for cell in row {
                let _ = write!(out, "<td>{}</td>", escape(cell));
            }
            let _ = writeln!(out, "</tr>");
        }
        let _ = writeln!(out, "</table>");
    }
    for (caption, lines) in &section.blocks {
        let _ = writeln!(
            out,
            "<p>{}</p>\n<pre>{}</pre>",
            escape(caption),
            escape(&lines.join("\n"))
        );
    }
}

/// A verdict table under its own heading, for a page whose first screen has several (a
/// review's feature-off and feature-on tables).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct VerdictTable {
    /// The heading above the table (Markdown `code` spans shown as code).
    pub heading: String,
    /// Column names after the verdict column.
    pub columns: Vec<String>,
    /// One row per scenario, under the column names.
    pub rows: Vec<VerdictRow>,
}

fn write_table(out: &mut String, columns: &[String], rows: &[VerdictRow]) {
    // Writing to a String cannot fail, so the fmt::Result of each write! is always Ok.
    let _ = write!(out, "<table>\n<tr><th>verdict</th>");
    for column in columns {
        let _ = write!(out, "<th>{}</th>", escape(column));
    }
    let _ = writeln!(out, "</tr>");
    for row in rows {
        let (class, word) = row.verdict.class_and_word();
        let _ = write!(out, "<tr><td class=\"{class}\">{word}</td>");
        for cell in &row.cells {
            let _ = write!(out, "<td>{}</td>", escape_with_code(cell));
        }
        let _ = writeln!(out, "</tr>");
    }
    let _ = writeln!(out, "</table>");
}

/// The page as HTML text.
#[cfg(test)]
pub(crate) fn index_html(page: &IndexPage) -> String {
    index_html_with_tables(page, &[])
}

/// The page as HTML text, with `tables` (each under its heading) in place of the page's own
/// table when there are any.
pub(crate) fn index_html_with_tables(page: &IndexPage, tables: &[VerdictTable]) -> String {
    let mut out = String::new();
    let title = escape(&page.title);
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{title}</h1>\n\
         <p>{}</p>",
        escape_with_code(&page.summary)
    );
    if tables.is_empty() {
        write_table(&mut out, &page.columns, &page.rows);
    }
    for table in tables {
        let _ = writeln!(out, "<h2>{}</h2>", escape_with_code(&table.heading));
        write_table(&mut out, &table.columns, &table.rows);
    }
    for note in &page.notes {
        let _ = writeln!(out, "<p>{}</p>", escape(note));
    }
    for section in &page.sections {
        write_section(&mut out, section);
    }
    if !page.plots.is_empty() {
        let _ = writeln!(out, "<h2>Plots</h2>");
    }
    for plot in &page.plots {
        let (href, label) = (escape(&plot.href), escape(&plot.label));
        let _ = writeln!(
            out,
            "<figure><a href=\"{href}\"><img src=\"{href}\" alt=\"{label}\"/></a>\
             <figcaption>{label}</figcaption></figure>"
        );
    }
    if !page.failing.is_empty() {
        let _ = writeln!(out, "<h2>Failing seeds</h2>\n<ul>");
        for link in &page.failing {
            let _ = writeln!(
                out,
                "<li><a href=\"{}\">{}</a></li>",
                escape(&link.href),
                escape(&link.label)
            );
        }
        let _ = writeln!(out, "</ul>");
    }
    let _ = writeln!(out, "</body>\n</html>");
    out
}

/// Write `dir/index.html` atomically.
pub(crate) fn write_index(dir: &Path, page: &IndexPage) -> std::io::Result<()> {
    write_index_with_tables(dir, page, &[])
}

/// Write `dir/index.html` atomically, with `tables` as in [`index_html_with_tables`].
pub(crate) fn write_index_with_tables(
    dir: &Path,
    page: &IndexPage,
    tables: &[VerdictTable],
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let html = index_html_with_tables(page, tables);
    atomic::write_file(&dir.join("index.html"), html.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::{IndexPage, Link, RowVerdict, VerdictRow, escape_with_code, index_html};

    #[test]
    fn an_index_page_puts_the_verdicts_before_the_plots_and_escapes_text() {
        let page = IndexPage {
            title: "nightly <all>".to_owned(),
            summary: "1 of 2 failed".to_owned(),
            columns: vec!["scenario".to_owned()],
            rows: vec![
                VerdictRow {
                    verdict: RowVerdict::Pass,
                    cells: vec!["burst".to_owned()],
                },
                VerdictRow {
                    verdict: RowVerdict::Fail,
                    cells: vec!["a&b".to_owned()],
                },
            ],
            plots: vec![Link {
                label: "compare".to_owned(),
                href: "burst/compare.svg".to_owned(),
            }],
            failing: vec![Link {
                label: "seed 3".to_owned(),
                href: "burst/safe/seed-3/summary.md".to_owned(),
            }],
            notes: Vec::new(),
            sections: Vec::new(),
        };
        let html = index_html(&page);
        let table = html.find("<table>").expect("the page has a verdict table");
        let plot = html
            .find("<img src=\"burst/compare.svg\"")
            .expect("the plot is shown");
        let failing = html
            .find("seed-3/summary.md")
            .expect("the failing seed is linked");
        assert!(table < plot && plot < failing, "{html}");
        assert!(html.contains("nightly &lt;all&gt;") && html.contains("a&amp;b"));
        assert!(
            !html.contains("<script") && !html.contains("http"),
            "{html}"
        );
        assert_eq!(html.matches("class=\"fail\"").count(), 1);
    }

    #[test]
    fn markdown_code_spans_become_code_and_a_lone_backtick_stays() {
        assert_eq!(
            escape_with_code("`pr355` breaks `a<b`"),
            "<code>pr355</code> breaks <code>a&lt;b</code>"
        );
        assert_eq!(escape_with_code("a ` b"), "a ` b");
    }
}
