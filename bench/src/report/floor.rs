//! lllm against the floor of its stack (`floor`): the binary prints its Markdown table and a line on
//! how it measured; the section puts them under what was measured and how to repeat it.

use std::path::Path;

use super::{machine, read_text, today, ReportError};
use crate::splice::Section;

/// The section from the `floor` binary's output in the file at `path`.
pub fn report(path: &Path) -> Result<Vec<Section>, ReportError> {
    let output = read_text(path)?;
    if !output.trim_start().starts_with("| measure |") {
        return Err(ReportError::Figures(format!(
            "{}: not the floor benchmark's table (it starts with `| measure |`)",
            path.display()
        )));
    }
    Ok(vec![section(output.trim())])
}

/// The section `floor` around the binary's `output`.
pub fn section(output: &str) -> Section {
    let body = format!(
        "Measured {} on {}; command `scripts/bench.sh floor` (`scripts/bench_floor.sh --write`). \
         The release `lllm run` of a one-agent tactic of one step per turn and a bare async-openai \
         client (`bench/src/bin/bare_client.rs`: the crate and features lllm uses, its own `Client`) \
         send the same growing conversation to the same stand-in server, each run a process of its \
         own measured by `getrusage` (`bench/src/bin/rusage.rs`). Cold: a one-turn run, the whole \
         process. Marginal CPU: a 100-turn run minus a one-turn run, over 99. Peak RSS: the \
         100-turn run's.\n\n{output}",
        today(),
        machine(),
    );
    Section {
        name: "floor",
        heading: "lllm against the floor of its stack",
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_keeps_the_table_and_refuses_other_output() {
        let dir = std::env::temp_dir().join(format!("lllm-report-floor-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let table = dir.join("floor.md");
        std::fs::write(
            &table,
            "| measure | a |\n|---|---|\n| x | 1 |\n\n31 repeats\n",
        )
        .expect("write");
        let sections = report(&table).expect("a table");
        assert_eq!(sections[0].name, "floor");
        assert!(sections[0].body.ends_with("| x | 1 |\n\n31 repeats"));
        std::fs::write(&table, "error: no stub server\n").expect("write");
        assert!(report(&table).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }
}
