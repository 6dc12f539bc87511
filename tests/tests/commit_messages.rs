//! Commit messages: a summary line of at most 72 characters, then a blank
//! line before any body (docs/src/design/contributing.md). Checked on every commit made
//! after the rule began (`RULE_SINCE`, whose own message predates it), so a
//! submission whose commits break it fails CI.

use std::process::Command;

use xplug_fixtures::workspace_root;

/// The last commit before the rule: every commit reachable from `HEAD` and
/// not from this one is checked.
const RULE_SINCE: &str = "a7273805faac99a1ed31ebba752ee202bd1c4809";

/// The longest summary line a commit may have, in characters.
const MAX_SUMMARY: usize = 72;

/// What is wrong with one commit message, if anything.
fn message_problem(message: &str) -> Option<String> {
    let mut lines = message.lines();
    let summary = lines.next().unwrap_or("");
    if summary.trim().is_empty() {
        return Some("the summary line is empty".to_owned());
    }
    let length = summary.chars().count();
    if length > MAX_SUMMARY {
        return Some(format!(
            "the summary line has {length} characters, more than {MAX_SUMMARY}: move details to the body"
        ));
    }
    match lines.next() {
        Some(line) if !line.trim().is_empty() => {
            Some("the line after the summary is not blank: the body starts after a blank line".to_owned())
        }
        _ => None,
    }
}

#[test]
fn the_checker_finds_long_summaries_and_missing_blank_lines() {
    assert_eq!(
        message_problem(
            "Short summary\n\nA body line that may be as long as it likes, well past seventy-two characters.\n"
        ),
        None
    );
    assert_eq!(message_problem(&"x".repeat(72)), None);
    // Characters, not bytes: 72 two-byte characters are fine.
    assert_eq!(message_problem(&"é".repeat(72)), None);
    let long = message_problem(&"x".repeat(73)).expect("73 characters are too many");
    assert!(long.contains("73 characters"), "{long}");
    let glued = message_problem("Summary\nbody glued to it\n").expect("no blank line");
    assert!(glued.contains("not blank"), "{glued}");
    assert!(message_problem("\n\nbody only\n").is_some());
}

#[test]
fn every_commit_since_the_rule_has_a_short_summary_and_a_blank_line() {
    let root = workspace_root();
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(args)
            .output()
            .unwrap_or_else(|error| panic!("cannot run git in {}: {error}", root.display()))
    };
    if !git(&["rev-parse", "--git-dir"]).status.success() {
        eprintln!("note: {} is not a git checkout; commit messages not checked", root.display());
        return;
    }
    let base = git(&["cat-file", "-e", &format!("{RULE_SINCE}^{{commit}}")]);
    assert!(
        base.status.success(),
        "commit {RULE_SINCE} (where the commit-message rule starts) is not in this clone: \
         fetch the full history (`git fetch --unshallow`) to check commit messages"
    );
    // NUL-separated records: hash, then the raw message.
    let log = git(&["log", "-z", "--format=%H%n%B", &format!("{RULE_SINCE}..HEAD")]);
    assert!(log.status.success(), "git log failed: {}", String::from_utf8_lossy(&log.stderr));
    let log = String::from_utf8_lossy(&log.stdout);
    let problems: Vec<String> = log
        .split('\0')
        .filter(|record| !record.trim().is_empty())
        .filter_map(|record| {
            let (hash, message) = record.trim_start_matches('\n').split_once('\n').unwrap_or((record, ""));
            message_problem(message).map(|problem| format!("{}: {problem}", &hash[..hash.len().min(12)]))
        })
        .collect();
    assert!(
        problems.is_empty(),
        "commit messages break the rule (a summary of at most {MAX_SUMMARY} characters, a blank line, \
         then details; reword with `git rebase -i` before submitting):\n{}",
        problems.join("\n")
    );
}
