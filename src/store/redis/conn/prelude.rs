//! The prelude's definitions a script uses: every script is sent to Redis as the
//! top-level definitions of the shared files in `lua/` that it names (directly or
//! through another definition it names), then its own file. Redis runs a script's whole
//! source on every call, and each `local function` it defines is a closure made anew:
//! the whole prelude cost every call ~2.5 µs of Redis time, a sixth of a top-10 read.
//!
//! The shared files are read as one prelude, in the order of [`PRELUDE`]. Its top level
//! is kept to three forms, which [`joined`] reads: comments and
//! blank lines (left out), `local function <name>(…)` up to its `end` at the start of a
//! line, and a one-line `local <names> [= …]`. Any other top-level line is a mistake
//! that every script's test finds (it panics).

use std::collections::BTreeSet;
use std::sync::LazyLock;

/// The shared files, one per concern, in order: a definition uses only those above it.
const PRELUDE: [&str; 10] = [
    include_str!("../lua/base.lua"),
    include_str!("../lua/ranks.lua"),
    include_str!("../lua/key_record.lua"),
    include_str!("../lua/totals.lua"),
    include_str!("../lua/review.lua"),
    include_str!("../lua/watch.lua"),
    include_str!("../lua/compact_slots.lua"),
    include_str!("../lua/writes.lua"),
    include_str!("../lua/contributors.lua"),
    include_str!("../lua/maxima.lua"),
];

/// One top-level definition of the prelude.
struct Definition<'a> {
    /// The names it defines.
    names: Vec<&'a str>,
    /// Its text, whole lines, each ending with a newline.
    text: String,
}

/// The prelude's definitions, in order (read once).
fn definitions() -> &'static [Definition<'static>] {
    static DEFINITIONS: LazyLock<Vec<Definition<'static>>> = LazyLock::new(read_definitions);
    &DEFINITIONS
}

fn read_definitions() -> Vec<Definition<'static>> {
    let mut definitions = Vec::new();
    let mut lines = PRELUDE.iter().flat_map(|file| file.lines());
    while let Some(line) = lines.next() {
        if line.trim().is_empty() || line.starts_with("--") {
            continue;
        }
        let mut text = format!("{line}\n");
        let names = if let Some(rest) = line.strip_prefix("local function ") {
            for body in lines.by_ref() {
                text.push_str(body);
                text.push('\n');
                if body == "end" {
                    break;
                }
            }
            assert!(text.ends_with("\nend\n"), "lua/: {line} has no `end`");
            vec![identifier(rest)]
        } else if let Some(rest) = line.strip_prefix("local ") {
            let declared = rest.split('=').next().unwrap_or(rest);
            declared.split(',').map(identifier).collect()
        } else {
            panic!("lua/: a top-level line that is no definition: {line}");
        };
        definitions.push(Definition { names, text });
    }
    definitions
}

/// The identifier `text` starts with (after spaces).
fn identifier(text: &str) -> &str {
    let text = text.trim_start();
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// Every identifier-like word of `text` (words in comments and strings too: a name
/// found there only adds a definition the script does not need).
fn words(text: &str) -> BTreeSet<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// `script` after the prelude's definitions it needs (see the module docs).
pub(crate) fn joined(script: &str) -> String {
    let definitions = definitions();
    let mut needed = words(script);
    // Each definition only uses those above it, so one pass from the bottom up adds
    // what every needed definition needs.
    let mut kept = vec![false; definitions.len()];
    for (i, definition) in definitions.iter().enumerate().rev() {
        if definition.names.iter().any(|n| needed.contains(n)) {
            kept[i] = true;
            needed.extend(words(&definition.text));
        }
    }
    let mut source: String = definitions
        .iter()
        .zip(kept)
        .filter(|(_, kept)| *kept)
        .map(|(d, _)| d.text.as_str())
        .collect();
    source.push_str(script);
    source
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_gets_what_it_names_and_what_that_needs() {
        let source = joined("return member_rank(KEYS[1], nil, false, false, ARGV[1])\n");
        for needed in [
            "member_rank",
            "ranked_total",
            "rank_of_total",
            "position_in",
        ] {
            assert!(
                source.contains(&format!("local function {needed}(")),
                "{needed} missing"
            );
        }
        for unneeded in ["now_us", "board_record", "write_slots", "bucket_key"] {
            assert!(!source.contains(&format!("local function {unneeded}(")));
        }
        assert!(source.ends_with("return member_rank(KEYS[1], nil, false, false, ARGV[1])\n"));
    }

    #[test]
    fn a_definition_keeps_the_locals_it_uses() {
        // bucket_key fills the two tables declared above it.
        let source = joined("return bucket_key(KEYS[1], 3)\n");
        assert!(source.contains("local ones, decimal_pairs\n"));
        let prelude_order = ["local ones, decimal_pairs", "local function bucket_key("];
        let at: Vec<usize> = prelude_order
            .iter()
            .map(|p| source.find(p).unwrap())
            .collect();
        assert!(at.is_sorted(), "{at:?}");
    }

    #[test]
    fn every_prelude_definition_is_read() {
        let names: Vec<&str> = definitions().iter().flat_map(|d| d.names.clone()).collect();
        let declared = PRELUDE
            .iter()
            .flat_map(|file| file.lines())
            .filter(|l| l.starts_with("local "))
            .count();
        assert_eq!(definitions().len(), declared);
        assert!(names.contains(&"MAX_SPLITS") && names.contains(&"decimal_pairs"));
        // A script naming everything gets every definition.
        let all = joined(&names.join(" "));
        for definition in definitions() {
            assert!(all.contains(&definition.text));
        }
    }
}
