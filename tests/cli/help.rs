//! The command table of docs/operations.md ("The binary") against `rollboard --help`:
//! a row for every command, and in each row every option of the command's own (those
//! of the store, the config file and `serve`'s settings are documented once, elsewhere),
//! none that it lacks. Read commands offer no write option.

use std::collections::BTreeSet;
use std::process::Command;

/// `rollboard ARGS`'s standard output.
fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_rollboard"))
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "rollboard {args:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The long options (`--name`) in `text`.
fn options(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (i, _) in text.match_indices("--") {
        let name: String = text[i + 2..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '-')
            .collect();
        if !name.is_empty() {
            found.insert(name);
        }
    }
    found
}

/// The options every store command shares, documented with the configuration.
const SHARED: &[&str] = &[
    "config",
    "redis-url",
    "redis-cluster",
    "redis-tls-ca",
    "redis-connection-timeout",
    "redis-response-timeout",
    "key-prefix",
    "min-replica-acks",
    "replica-ack-timeout",
    "default-layout",
    "help",
];

#[test]
fn the_docs_command_table_lists_every_command_and_its_options() {
    let top = help(&["--help"]);
    let commands: Vec<&str> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 14, "{commands:?}");
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/operations.md"))
        .unwrap();
    let rows: Vec<&str> = docs
        .lines()
        .filter(|l| l.starts_with("| `rollboard "))
        .collect();
    let documented: Vec<&str> = rows
        .iter()
        .filter_map(|r| r["| `rollboard ".len()..].split([' ', '`']).next())
        .collect();
    assert_eq!(
        documented, commands,
        "the table's commands, in --help's order"
    );
    for (command, row) in commands.iter().zip(&rows) {
        if *command == "serve" {
            continue; // Its options are the settings of the configuration table.
        }
        let usage = row.split(" | ").next().unwrap();
        let own: BTreeSet<String> = options(&help(&[command, "--help"]))
            .into_iter()
            .filter(|o| !SHARED.contains(&o.as_str()))
            .collect();
        let listed: BTreeSet<String> = options(usage)
            .into_iter()
            .filter(|o| !SHARED.contains(&o.as_str()))
            .collect();
        assert_eq!(
            listed, own,
            "`rollboard {command}`: the docs' options, then --help's"
        );
    }
    // The read commands take no write option.
    for command in ["top", "export", "rate"] {
        let text = help(&[command, "--help"]);
        for write in ["min-replica-acks", "replica-ack-timeout", "default-layout"] {
            assert!(!text.contains(write), "{command} --help offers --{write}");
        }
    }
}
