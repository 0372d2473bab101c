//! The one splicer of BENCHMARKS.md: a benchmark's generated section goes between its two named
//! markers, `<!-- NAME:start -->` and `<!-- NAME:end -->`, and nothing else in the file changes.
//! A file without the markers gets them appended under a heading of their own.

use std::fmt;
use std::path::{Path, PathBuf};

/// A generated section of BENCHMARKS.md.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The markers' name: `journal` for `<!-- journal:start -->` … `<!-- journal:end -->`.
    pub name: &'static str,
    /// The heading put above the markers when the file has none yet.
    pub heading: &'static str,
    /// The Markdown between the markers (its trailing newlines are dropped).
    pub body: String,
}

/// Why a section could not be put in place.
#[derive(Debug, thiserror::Error)]
pub enum SpliceError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The markers of a section are not one start followed by one end.
    #[error("{path}: {problem}")]
    Markers {
        /// The file.
        path: PathBuf,
        /// What is wrong with them, with the line.
        problem: MarkerProblem,
    },
}

/// What is wrong with a section's markers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MarkerProblem {
    /// A marker appears more than once (its second line).
    Repeated(String, usize),
    /// One marker is there (on its line), the other is not.
    Unpaired(String, usize),
    /// The end marker (its line) comes before the start marker.
    EndBeforeStart(String, usize),
}

impl fmt::Display for MarkerProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MarkerProblem::Repeated(marker, line) => {
                write!(f, "line {line}: `{marker}` appears a second time")
            }
            MarkerProblem::Unpaired(marker, line) => {
                write!(f, "line {line}: `{marker}` has no partner marker")
            }
            MarkerProblem::EndBeforeStart(marker, line) => {
                write!(f, "line {line}: `{marker}` comes before its start marker")
            }
        }
    }
}

/// `text` with `section` between its markers, or appended with its heading if `text` has neither.
pub fn splice(text: &str, section: &Section) -> Result<String, MarkerProblem> {
    let start = format!("<!-- {}:start -->", section.name);
    let end = format!("<!-- {}:end -->", section.name);
    let body = section.body.trim_end_matches('\n');
    let block = format!("{start}\n{body}\n{end}");
    match (find_once(text, &start)?, find_once(text, &end)?) {
        (None, None) => Ok(format!(
            "{}\n\n## {}\n\n{block}\n",
            text.trim_end_matches('\n'),
            section.heading
        )),
        (Some(at), None) => Err(MarkerProblem::Unpaired(start, line_of(text, at))),
        (None, Some(at)) => Err(MarkerProblem::Unpaired(end, line_of(text, at))),
        (Some(from), Some(to)) if to < from => {
            Err(MarkerProblem::EndBeforeStart(end, line_of(text, to)))
        }
        (Some(from), Some(to)) => Ok(format!(
            "{}{block}{}",
            &text[..from],
            &text[to + end.len()..]
        )),
    }
}

/// Puts every section in place in the file at `path`: all or none (the file is replaced whole).
pub fn splice_file(path: &Path, sections: &[Section]) -> Result<(), SpliceError> {
    let io = |source| SpliceError::Io {
        path: path.to_owned(),
        source,
    };
    let mut text = std::fs::read_to_string(path).map_err(io)?;
    for section in sections {
        text = splice(&text, section).map_err(|problem| SpliceError::Markers {
            path: path.to_owned(),
            problem,
        })?;
    }
    // Written beside it, then renamed over it: a failed write leaves the old file as it was.
    let temporary = path.with_extension("md.splicing");
    std::fs::write(&temporary, text).map_err(io)?;
    std::fs::rename(&temporary, path).map_err(io)
}

/// Where `marker` is in `text`, if it is there once.
fn find_once(text: &str, marker: &str) -> Result<Option<usize>, MarkerProblem> {
    let mut found = text.match_indices(marker).map(|(at, _)| at);
    let first = found.next();
    match found.next() {
        Some(second) => Err(MarkerProblem::Repeated(
            marker.to_owned(),
            line_of(text, second),
        )),
        None => Ok(first),
    }
}

/// The line (from 1) of byte `at` of `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(body: &str) -> Section {
        Section {
            name: "mcp",
            heading: "MCP tool calls",
            body: body.to_owned(),
        }
    }

    #[test]
    fn replaces_what_is_between_the_markers_and_nothing_else() {
        let text = "# B\n\nbefore\n<!-- mcp:start -->\nold\nlines\n<!-- mcp:end -->\nafter\n";
        let spliced = splice(text, &section("new\n\n")).expect("spliced");
        assert_eq!(
            spliced,
            "# B\n\nbefore\n<!-- mcp:start -->\nnew\n<!-- mcp:end -->\nafter\n"
        );
        // Splicing again with the same section changes nothing.
        assert_eq!(splice(&spliced, &section("new")).expect("again"), spliced);
    }

    #[test]
    fn leaves_other_sections_alone() {
        let text = "<!-- payoff:start -->\np\n<!-- payoff:end -->\n<!-- mcp:start -->\nm\n<!-- mcp:end -->\n";
        let spliced = splice(text, &section("M")).expect("spliced");
        assert_eq!(
            spliced,
            "<!-- payoff:start -->\np\n<!-- payoff:end -->\n<!-- mcp:start -->\nM\n<!-- mcp:end -->\n"
        );
    }

    #[test]
    fn appends_a_section_the_file_does_not_have_under_its_heading() {
        let spliced = splice("# B\n\ntext\n\n", &section("new")).expect("spliced");
        assert_eq!(
            spliced,
            "# B\n\ntext\n\n## MCP tool calls\n\n<!-- mcp:start -->\nnew\n<!-- mcp:end -->\n"
        );
    }

    #[test]
    fn refuses_markers_that_do_not_pair_and_names_the_line() {
        let lone = splice("a\n<!-- mcp:start -->\nb\n", &section("x"));
        assert_eq!(
            lone,
            Err(MarkerProblem::Unpaired("<!-- mcp:start -->".into(), 2))
        );
        let twice = splice(
            "<!-- mcp:start -->\n<!-- mcp:end -->\n<!-- mcp:start -->\n",
            &section("x"),
        );
        assert_eq!(
            twice,
            Err(MarkerProblem::Repeated("<!-- mcp:start -->".into(), 3))
        );
        let reversed = splice("<!-- mcp:end -->\n<!-- mcp:start -->\n", &section("x"));
        assert_eq!(
            reversed,
            Err(MarkerProblem::EndBeforeStart("<!-- mcp:end -->".into(), 1))
        );
        assert_eq!(
            reversed.expect_err("reversed").to_string(),
            "line 1: `<!-- mcp:end -->` comes before its start marker"
        );
    }

    #[test]
    fn splices_a_file_whole_or_not_at_all() {
        let dir = std::env::temp_dir().join(format!("lllm-splice-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("BENCHMARKS.md");
        let text = "<!-- mcp:start -->\nold\n<!-- mcp:end -->\n";
        std::fs::write(&path, text).expect("write");
        let broken = Section {
            name: "journal",
            heading: "J",
            body: String::new(),
        };
        std::fs::write(&path, format!("{text}<!-- journal:end -->\n")).expect("write");
        let error = splice_file(&path, &[section("new"), broken]).expect_err("unpaired");
        assert!(
            error.to_string().contains("line 4: `<!-- journal:end -->`"),
            "{error}"
        );
        // The first section was not written either.
        let kept = std::fs::read_to_string(&path).expect("read");
        assert!(kept.contains("\nold\n"), "{kept}");
        std::fs::write(&path, text).expect("write");
        splice_file(&path, &[section("new")]).expect("spliced");
        let spliced = std::fs::read_to_string(&path).expect("read");
        assert_eq!(spliced, "<!-- mcp:start -->\nnew\n<!-- mcp:end -->\n");
        std::fs::remove_dir_all(&dir).ok();
    }
}
