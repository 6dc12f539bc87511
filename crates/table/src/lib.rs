//! Human output for xplug's tools: aligned tables ([`Table`]), colour only
//! on a terminal and without `NO_COLOR` ([`Style`]), plugin text escaped
//! for the terminal ([`terminal_safe`], [`safe`]) and durations
//! ([`format_ns`]). The `xplug` CLI prints with it, and so does `xtask`,
//! which therefore links no part of the CLI (nor IREE's runtime).
//!
//! ```
//! use xplug_table::{Style, Table, format_ns};
//!
//! let mut table = Table::new(["row", "time"]);
//! table.row(["(8)".to_owned(), format_ns(17.6)]);
//! table.row(["(2)".to_owned(), format_ns(3963.0)]);
//! let text = table.render(Style::plain());
//! assert_eq!(text, "row  time\n(8)  17.6 ns\n(2)  3.96 µs\n");
//! ```

use std::io::IsTerminal;

/// Whether to colour stdout: only when it is a terminal and `NO_COLOR` is unset.
pub fn colour_stdout() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// Whether to colour stderr, by the same rule.
pub fn colour_stderr() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// ANSI styling that turns itself off when not on a terminal.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    enabled: bool,
}

impl Style {
    /// Styling for stdout.
    pub fn stdout() -> Self {
        Self { enabled: colour_stdout() }
    }

    /// Styling for stderr.
    pub fn stderr() -> Self {
        Self { enabled: colour_stderr() }
    }

    /// No styling: for text that is returned rather than printed.
    #[must_use]
    pub fn plain() -> Self {
        Self { enabled: false }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.enabled { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_owned() }
    }

    /// Green (success).
    pub fn good(self, text: &str) -> String {
        self.paint("32", text)
    }

    /// Red (failure).
    pub fn bad(self, text: &str) -> String {
        self.paint("31", text)
    }

    /// Yellow (warning, optional).
    pub fn warn(self, text: &str) -> String {
        self.paint("33", text)
    }

    /// Bold (headings).
    pub fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }
}

/// `text` made safe to print to a terminal: control characters (ESC, CR,
/// BEL, ...) and the Unicode controls that reorder or hide text (bidi
/// overrides, zero-width marks) are written as escapes (`\x1b`, `\n`,
/// `\u{202e}`), so a plugin's strings cannot move the cursor, recolour or
/// rewrite what the report shows. A string without such characters is
/// returned as it is.
pub fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    fn unsafe_char(c: char) -> bool {
        c.is_control()
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
    }
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if unsafe_char(c) && u32::from(c) < 0x80 => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c if unsafe_char(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// [`terminal_safe`], owned.
pub fn safe(text: &str) -> String {
    terminal_safe(text).into_owned()
}

/// Width of `text` on screen, ignoring ANSI escape sequences.
fn visible_width(text: &str) -> usize {
    let mut width = 0;
    let mut in_escape = false;
    for c in text.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (true, 'm') => in_escape = false,
            (true, _) => {}
            (false, _) => width += 1,
        }
    }
    width
}

/// A table whose columns are padded to their widest cell.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column titles.
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(header: I) -> Self {
        Self { header: header.into_iter().map(Into::into).collect(), rows: Vec::new() }
    }

    /// Appends a row (cells may contain colour escapes).
    pub fn row<I: IntoIterator<Item = S>, S: Into<String>>(&mut self, cells: I) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// The table as text, two spaces between columns, no trailing spaces.
    pub fn render(&self, style: Style) -> String {
        let columns = self.rows.iter().map(Vec::len).chain([self.header.len()]).max().unwrap_or(0);
        let mut widths = vec![0; columns];
        for row in self.rows.iter().chain([&self.header]) {
            for (i, cell) in row.iter().enumerate() {
                widths[i] = widths[i].max(visible_width(cell));
            }
        }
        let line = |cells: &[String]| {
            let mut out = String::new();
            for (i, cell) in cells.iter().enumerate() {
                out.push_str(cell);
                if i + 1 < cells.len() {
                    out.push_str(&" ".repeat(widths[i] - visible_width(cell) + 2));
                }
            }
            let trimmed = out.trim_end().len();
            out.truncate(trimmed);
            out.push('\n');
            out
        };
        let mut out = String::new();
        if !self.header.is_empty() {
            let header: Vec<String> = self.header.iter().map(|title| style.bold(title)).collect();
            out.push_str(&line(&header));
        }
        for row in &self.rows {
            out.push_str(&line(row));
        }
        out
    }
}

/// A duration in nanoseconds as people read it: `12.3 ns`, `4.56 µs`,
/// `7.89 ms`.
#[must_use]
pub fn format_ns(ns: f64) -> String {
    if ns < 1_000.0 {
        format!("{ns:.1} ns")
    } else if ns < 1_000_000.0 {
        format!("{:.2} µs", ns / 1_000.0)
    } else {
        format!("{:.2} ms", ns / 1_000_000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns_columns_and_ignores_colour_codes() {
        let mut table = Table::new(["name", "provider"]);
        table.row(["a", "\x1b[32mlong_provider\x1b[0m"]);
        table.row(["longer_name", "p"]);
        let text = table.render(Style { enabled: false });
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "name         provider");
        assert_eq!(lines[1], "a            \x1b[32mlong_provider\x1b[0m");
        assert_eq!(lines[2], "longer_name  p");
    }

    #[test]
    fn control_characters_are_escaped_for_the_terminal() {
        assert!(matches!(terminal_safe("plain name é"), std::borrow::Cow::Borrowed("plain name é")));
        assert_eq!(terminal_safe("evil\x1b[2J\r\n\t\x07"), "evil\\x1b[2J\\r\\n\\t\\x07");
        assert_eq!(terminal_safe("a\u{202e}b\u{7f}"), "a\\u{202e}b\\x7f");
        assert_eq!(terminal_safe("\u{9b}31m"), "\\u{9b}31m", "the C1 control sequence introducer");
    }

    #[test]
    fn style_is_plain_when_disabled() {
        let style = Style { enabled: false };
        assert_eq!(style.good("ok"), "ok");
        assert_eq!(Style { enabled: true }.bad("x"), "\x1b[31mx\x1b[0m");
    }
}
