//! `cargo xtask iree-e2e`: IREE itself judges the example plugins. The work
//! (IREE's pinned tools, the cases, building and judging) is
//! [`xplug_fixtures::iree_e2e`], shared with the tests and benches; this
//! module renders its report.

pub use xplug_fixtures::iree_e2e::*;
use xplug_table::{Style, Table};

/// One line per program and plugin list: the sizes that passed, and
/// below the table every failure in full.
#[must_use]
pub fn report_table(report: &E2eReport) -> String {
    let mut rows: Vec<[String; 4]> = Vec::new();
    let mut keys: Vec<(String, String)> = Vec::new();
    for (case, _) in &report.results {
        let key = (case.program.file.to_owned(), case.plugins.join(" + "));
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    for (file, plugins) in &keys {
        let group: Vec<&(Case, E2eOutcome)> = report
            .results
            .iter()
            .filter(|(case, _)| case.program.file == *file && case.plugins.join(" + ") == *plugins)
            .collect();
        let passed = group.iter().filter(|(_, outcome)| matches!(outcome, E2eOutcome::Pass)).count();
        let sizes: Vec<String> = group.iter().map(|(case, _)| case.size.to_string()).collect();
        let expected: Vec<String> = group[0].0.expected.iter().map(ToString::to_string).collect();
        let verdict =
            if passed == group.len() { "ok".to_owned() } else { format!("FAILED {}", group.len() - passed) };
        rows.push([
            file.clone(),
            plugins.clone(),
            format!("{} [n = {}]", expected.join(", "), sizes.join(", ")),
            format!("{passed}/{} {verdict}", group.len()),
        ]);
    }
    let mut table = Table::new(["program", "--executable_plugin (in order)", "expected", "result"]);
    for row in rows {
        table.row(row);
    }
    let mut text = table.render(Style::plain());
    for (case, outcome) in &report.results {
        let detail = match outcome {
            E2eOutcome::Pass => continue,
            E2eOutcome::Wrong { detail } | E2eOutcome::Failed { detail } => detail,
        };
        text.push_str(&format!(
            "\n{} with {} at n = {}: {detail}\n",
            case.program.file,
            case.plugins.join(" + "),
            case.size
        ));
    }
    text
}
