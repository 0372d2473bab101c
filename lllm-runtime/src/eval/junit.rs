//! The report as JUnit XML, for CI systems that show test results: one `<testsuite>` of the eval
//! file, one `<testcase>` per case, a `<failure>` for a case under its pass rate. Everything
//! written from the run is escaped, and characters XML 1.0 cannot hold are dropped.

use std::fmt::Write as _;

use super::report::EvalReport;

/// Text escaped for an XML attribute or element.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => {
                let _ = write!(out, "&#{};", c as u32);
            }
            // XML 1.0 has no way to write other control characters, nor these.
            c if (c as u32) < 0x20 || matches!(c, '\u{FFFE}' | '\u{FFFF}') => {}
            c => out.push(c),
        }
    }
    out
}

/// `report` as a JUnit XML document.
pub fn junit_xml(report: &EvalReport) -> String {
    let failures = report.cases.iter().filter(|c| !c.passed).count();
    let seconds: f64 = report.cases.iter().map(|c| c.seconds).sum();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites tests=\"{}\" failures=\"{failures}\" time=\"{seconds:.3}\">",
        report.cases.len()
    );
    let _ = writeln!(
        xml,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" time=\"{seconds:.3}\">",
        escape(&report.evals),
        report.cases.len()
    );
    for case in &report.cases {
        let _ = write!(
            xml,
            "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\">",
            escape(&report.evals),
            escape(&case.id),
            case.seconds
        );
        if !case.passed {
            let message = format!(
                "{}/{} trials passed, under the pass rate {}",
                case.passes, case.trials, report.pass_rate
            );
            let _ = write!(
                xml,
                "\n      <failure message=\"{}\">{}</failure>\n    ",
                escape(&message),
                escape(case.first_failure.as_deref().unwrap_or("no trial ended"))
            );
        }
        let _ = writeln!(
            xml,
            "<system-out>requests={} tokens={} cached_share={:.3}</system-out></testcase>",
            case.requests, case.tokens, case.cached_share
        );
    }
    xml.push_str("  </testsuite>\n</testsuites>\n");
    xml
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn everything_is_escaped_and_control_characters_dropped() {
        assert_eq!(
            escape("a<b>&\"c'\u{1b}[31m\n"),
            "a&lt;b&gt;&amp;&quot;c&apos;[31m&#10;"
        );
    }
}
