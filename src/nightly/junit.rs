//! `junit.xml`: testsuites → one testsuite per scenario (plus `regressions`) → one testcase
//! per policy (or entry), with a `<failure>` carrying the violations or regressions and the
//! commands that reproduce them.

use std::fmt::Write as _;

/// One testcase.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Case {
    /// The testcase's name (the policy, or the entry's label).
    pub name: String,
    /// Wall-clock seconds the case took.
    pub time_s: f64,
    /// `(message, text)` when the case failed: a one-line summary and the full detail.
    pub failure: Option<(String, String)>,
}

/// One testsuite.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Suite {
    /// The testsuite's name (the scenario, or `regressions`).
    pub name: String,
    /// Its testcases, in run order.
    pub cases: Vec<Case>,
}

/// Escape text for XML content and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 forbids most control characters even when escaped.
            character if character.is_control() && !matches!(character, '\n' | '\t') => {
                out.push(' ')
            }
            other => out.push(other),
        }
    }
    out
}

fn failures(cases: &[Case]) -> usize {
    cases.iter().filter(|case| case.failure.is_some()).count()
}

/// The whole document.
pub(crate) fn junit_xml(suites: &[Suite]) -> String {
    let tests: usize = suites.iter().map(|suite| suite.cases.len()).sum();
    let failed: usize = suites.iter().map(|suite| failures(&suite.cases)).sum();
    let time_s: f64 = suites
        .iter()
        .flat_map(|suite| suite.cases.iter().map(|case| case.time_s))
        .sum();
    let mut out = String::new();
    // Writing to a String cannot fail, so the fmt::Result of each write! is always Ok.
    let _ = writeln!(
        out,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <testsuites name=\"elasticsim nightly\" tests=\"{tests}\" failures=\"{failed}\" \
         errors=\"0\" time=\"{time_s:.3}\">"
    );
    for suite in suites {
        let suite_time_s: f64 = suite.cases.iter().map(|case| case.time_s).sum();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\" \
             time=\"{suite_time_s:.3}\">",
            escape(&suite.name),
            suite.cases.len(),
            failures(&suite.cases)
        );
        for case in &suite.cases {
            let _ = write!(
                out,
                "    <testcase classname=\"nightly.{}\" name=\"{}\" time=\"{:.3}\"",
                escape(&suite.name),
                escape(&case.name),
                case.time_s
            );
            match &case.failure {
                None => {
                    let _ = writeln!(out, "/>");
                }
                Some((message, text)) => {
                    let _ = writeln!(
                        out,
                        ">\n      <failure message=\"{}\" type=\"elasticsim\">{}</failure>\n    \
                         </testcase>",
                        escape(message),
                        escape(text)
                    );
                }
            }
        }
        let _ = writeln!(out, "  </testsuite>");
    }
    let _ = writeln!(out, "</testsuites>");
    out
}
