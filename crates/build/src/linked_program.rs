//! A program that calls kernels as imports, rewritten to link them
//! instead: the one change `docs/src/plugins/dispatch.md#linked-kernels` describes,
//! made by the tool rather than by hand.
//!
//! For every kernel the build made, each `func.func private @SYMBOL(...)`
//! declaration of the program becomes a static import (`hal.import.fields`
//! and `hal.import.static` dropped, then `hal.import.static, llvm.bareptr =
//! true` first, the declaration's other attributes kept), and the
//! `stream.executable` that holds it gets the `hal.executable.objects`
//! attribute. Nothing else of the program changes, so the linked program
//! computes what the import program computes, with the kernel linked.

/// The text edits that turn `source` into the program linking `kernels`
/// (symbol, number of parameters) with the executable attribute `objects`
/// (`hal.executable.objects = ...`), applied; or why it cannot be done.
pub(crate) fn rewrite(source: &str, kernels: &[(&str, usize)], objects: &str) -> Result<String, String> {
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut executables: Vec<usize> = Vec::new();
    for &(symbol, params) in kernels {
        let needle = format!("func.func private @{symbol}(");
        let mut from = 0;
        while let Some(found) = source[from..].find(needle.as_str()) {
            let start = from + found;
            let open = start + needle.len() - 1;
            let close = matching(source, open, b'(', b')')
                .ok_or_else(|| format!("the parameters of `@{symbol}` are not closed"))?;
            let declared = top_level(&source[open + 1..close], b',').len();
            if declared != params {
                return Err(format!(
                    "`@{symbol}` is declared with {declared} parameter(s) but the kernel takes {params} (the \
                     import's fields without those of `hal.import.fields`): `xplug build --mlir` prints its \
                     declaration"
                ));
            }
            let after = &source[close + 1..];
            let gap = after.len() - after.trim_start().len();
            let (end, kept) = match after.trim_start().strip_prefix("attributes") {
                Some(rest) if rest.trim_start().starts_with('{') => {
                    let brace = close + 1 + gap + "attributes".len() + (rest.len() - rest.trim_start().len());
                    let end = matching(source, brace, b'{', b'}')
                        .ok_or_else(|| format!("the attributes of `@{symbol}` are not closed"))?;
                    let kept: Vec<String> = top_level(&source[brace + 1..end], b',')
                        .into_iter()
                        .filter(|entry| {
                            let key = entry.split('=').next().unwrap_or_default().trim();
                            !matches!(key, "hal.import.fields" | "hal.import.static" | "llvm.bareptr")
                        })
                        .collect();
                    (end + 1, kept)
                }
                _ => (close + 1, Vec::new()),
            };
            let mut attributes = vec!["hal.import.static".to_owned(), "llvm.bareptr = true".to_owned()];
            attributes.extend(kept);
            edits.push((close + 1, end, format!(" attributes {{{}}}", attributes.join(", "))));
            let header = executable_header(source, start).ok_or_else(|| {
                format!(
                    "`@{symbol}` is not inside a `stream.executable`: add the objects to its executable by hand \
                     (`xplug build --mlir` prints them)"
                )
            })?;
            if !executables.contains(&header) {
                executables.push(header);
            }
            from = end;
        }
    }
    if edits.is_empty() {
        let symbols: Vec<String> = kernels.iter().map(|(symbol, _)| format!("`@{symbol}`")).collect();
        return Err(format!(
            "it declares none of the kernels ({}) as `func.func private`",
            symbols.join(", ")
        ));
    }
    for header in executables {
        let line_end = source[header..].find('\n').map_or(source.len(), |end| header + end);
        let line = &source[header..line_end];
        if line.contains("attributes") {
            return Err(format!(
                "`{}` already has attributes: add the objects to them by hand (`xplug build --mlir` prints them)",
                line.trim()
            ));
        }
        let brace = line.rfind('{').ok_or_else(|| {
            format!("`{}` does not open its body on its first line; put its `{{` there", line.trim())
        })?;
        let indent = &line[..line.len() - line.trim_start().len()];
        let objects: Vec<String> = objects.lines().map(|text| format!("{indent}  {text}")).collect();
        edits.push((
            header + brace,
            header + brace,
            format!("attributes {{\n{}\n{indent}}} ", objects.join("\n")),
        ));
    }
    edits.sort_by_key(|edit| std::cmp::Reverse(edit.0));
    let mut out = source.to_owned();
    for (start, end, text) in edits {
        out.replace_range(start..end, &text);
    }
    Ok(out)
}

/// The start of the line of the `stream.executable` whose body holds the
/// byte `at`, if it is inside one.
fn executable_header(source: &str, at: usize) -> Option<usize> {
    let mut line_start = source[..at].rfind('\n').map_or(0, |newline| newline + 1);
    loop {
        let line = source[line_start..].lines().next().unwrap_or_default();
        if line.trim_start().starts_with("stream.executable ") {
            return Some(line_start);
        }
        if line_start == 0 {
            return None;
        }
        line_start = source[..line_start - 1].rfind('\n').map_or(0, |newline| newline + 1);
    }
}

/// What a byte outside string literals is to the bracket structure.
enum Mark {
    /// `(`, `[`, `{` or `<`.
    Open,
    /// `)`, `]`, `}` or a `>` that is not part of `->`.
    Close,
    /// Anything else.
    Other,
}

/// Each byte of `text` from `start` that lies outside string literals,
/// with what it is to the bracket structure: the one scanner of
/// [`matching`] and [`top_level`].
fn marks(text: &str, start: usize) -> impl Iterator<Item = (usize, u8, Mark)> + '_ {
    let bytes = text.as_bytes();
    let (mut in_string, mut escaped) = (false, false);
    bytes.iter().enumerate().skip(start).filter_map(move |(index, &byte)| {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            return None;
        }
        let mark = match byte {
            b'"' => {
                in_string = true;
                return None;
            }
            b'(' | b'[' | b'{' | b'<' => Mark::Open,
            // `->` is an arrow, not a closing bracket.
            b'>' if index > 0 && bytes[index - 1] == b'-' => Mark::Other,
            b')' | b']' | b'}' | b'>' => Mark::Close,
            _ => Mark::Other,
        };
        Some((index, byte, mark))
    })
}

/// The index of the byte `close` that closes the bracket `open` at
/// `start`, skipping nested brackets of every kind and string literals.
fn matching(source: &str, start: usize, open: u8, close: u8) -> Option<usize> {
    debug_assert_eq!(source.as_bytes().get(start), Some(&open));
    let mut depth = 0_usize;
    for (index, byte, mark) in marks(source, start) {
        match mark {
            Mark::Open => depth += 1,
            Mark::Close => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return (byte == close).then_some(index);
                }
            }
            Mark::Other => {}
        }
    }
    None
}

/// `text` split at the separator where no bracket or string is open,
/// each part trimmed, empty parts dropped.
pub(crate) fn top_level(text: &str, separator: u8) -> Vec<String> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0_usize, 0);
    for (index, byte, mark) in marks(text, 0) {
        match mark {
            Mark::Open => depth += 1,
            Mark::Close => depth = depth.saturating_sub(1),
            Mark::Other if byte == separator && depth == 0 => {
                parts.push(text[start..index].trim().to_owned());
                start = index + 1;
            }
            Mark::Other => {}
        }
    }
    parts.push(text[start..].trim().to_owned());
    parts.retain(|part| !part.is_empty());
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    const OBJECTS: &str = "hal.executable.objects = #hal.executable.objects<{}>";

    const IMPORT: &str = r#"module @m {
  stream.executable private @kernels {
    stream.executable.export public @f workgroups(%n: index) -> (index, index, index) {
      stream.return %n, %n, %n : index, index, index
    }
    builtin.module {
      func.func private @k(
          %a: memref<f32>, %a_offset: index, %size: index) attributes {
        hal.import.fields = ["processor_id", "processor_data"],
        llvm.bareptr = true, my.note = "a, b"
      }
      func.func @f(%n: index) {
        return
      }
    }
  }
}
"#;

    #[test]
    fn the_declaration_becomes_static_and_its_executable_gets_the_objects() {
        let linked = rewrite(IMPORT, &[("k", 3)], OBJECTS).unwrap();
        assert!(linked.contains(
            "%size: index) attributes {hal.import.static, llvm.bareptr = true, my.note = \"a, b\"}\n"
        ));
        assert!(!linked.contains("hal.import.fields"), "{linked}");
        assert!(linked.contains(&format!(
            "  stream.executable private @kernels attributes {{\n    {OBJECTS}\n  }} {{\n    stream.executable.export"
        )));
        // Only the declaration and the executable's header changed.
        assert_eq!(linked.lines().count(), IMPORT.lines().count() + 2 - 3);
    }

    #[test]
    fn a_declaration_without_attributes_gets_them() {
        let source = IMPORT.replace(
            " attributes {\n        hal.import.fields = [\"processor_id\", \"processor_data\"],\n        llvm.bareptr = true, my.note = \"a, b\"\n      }",
            "",
        );
        let linked = rewrite(&source, &[("k", 3)], OBJECTS).unwrap();
        assert!(
            linked.contains("%size: index) attributes {hal.import.static, llvm.bareptr = true}\n"),
            "{linked}"
        );
    }

    #[test]
    fn refusals_name_the_kernel_and_the_fix() {
        let wrong_count = rewrite(IMPORT, &[("k", 4)], OBJECTS).unwrap_err();
        assert!(
            wrong_count.contains("`@k` is declared with 3 parameter(s) but the kernel takes 4"),
            "{wrong_count}"
        );
        let absent = rewrite(IMPORT, &[("other", 3)], OBJECTS).unwrap_err();
        assert!(absent.contains("declares none of the kernels (`@other`)"), "{absent}");
        let outside = rewrite("func.func private @k(%a: index)\n", &[("k", 1)], OBJECTS).unwrap_err();
        assert!(outside.contains("not inside a `stream.executable`"), "{outside}");
        let attributed = IMPORT.replace("@kernels {", "@kernels attributes {x} {");
        let refused = rewrite(&attributed, &[("k", 3)], OBJECTS).unwrap_err();
        assert!(refused.contains("already has attributes"), "{refused}");
        let unclosed =
            rewrite("stream.executable private @e {\nfunc.func private @k(%a: index", &[("k", 1)], OBJECTS)
                .unwrap_err();
        assert!(unclosed.contains("not closed"), "{unclosed}");
    }

    #[test]
    fn a_symbol_that_only_starts_the_same_is_left_alone() {
        let source = IMPORT.replace("@k(", "@k_other(");
        assert!(rewrite(&source, &[("k", 3)], OBJECTS).unwrap_err().contains("declares none"));
    }

    #[test]
    fn top_level_splits_outside_brackets_and_strings_only() {
        assert_eq!(
            top_level(
                r#"%a: memref<4x?xf32, strided<[?, 1]>>, %b: index, f = "x,y", g = (i32) -> i32"#,
                b','
            ),
            ["%a: memref<4x?xf32, strided<[?, 1]>>", "%b: index", "f = \"x,y\"", "g = (i32) -> i32"]
        );
    }
}
