//! Why a configuration cannot be used, and a TOML error as one line that names the
//! file, the line, the column and the key.

use std::path::Path;

/// A configuration that cannot be used, and why.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// A TOML error as one line: `FILE:LINE:COLUMN: KEY: what is wrong`.
pub(super) fn toml_error(path: &Path, text: &str, err: &toml::de::Error) -> ConfigError {
    let message = plain_message(err.message());
    let Some(span) = err.span() else {
        return ConfigError(format!("{}: {message}", path.display()));
    };
    let start = span.start.min(text.len());
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line = text[..start].matches('\n').count() + 1;
    let column = text[line_start..start].chars().count() + 1;
    let line_text = text[line_start..].lines().next().unwrap_or("");
    // The key of a `key = value` line whose value the error points at.
    let key = line_text
        .split_once('=')
        .filter(|(k, _)| line_start + k.len() < start)
        .map(|(k, _)| k.trim())
        .filter(|k| !k.is_empty() && !k.starts_with('#'));
    match key {
        Some(key) => ConfigError(format!(
            "{}:{line}:{column}: {key}: {message}",
            path.display()
        )),
        None => ConfigError(format!("{}:{line}:{column}: {message}", path.display())),
    }
}

/// serde's `invalid type: string "lots", expected usize` as `expected an integer, found
/// string "lots"`; other messages on one line as they are.
fn plain_message(message: &str) -> String {
    let message = message.trim().replace('\n', " ");
    let Some((found, expected)) = message
        .strip_prefix("invalid type: ")
        .and_then(|m| m.rsplit_once(", expected "))
    else {
        return message;
    };
    let expected = match expected {
        "usize" | "u64" | "u32" | "u16" | "u8" | "i64" | "i32" => "an integer",
        "a boolean" => "true or false",
        other => other,
    };
    format!("expected {expected}, found {found}")
}
