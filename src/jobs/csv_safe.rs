//! The spreadsheet-safe form of members in CSV. A spreadsheet runs a cell starting with
//! `=`, `+`, `-` or `@` (or a tab or carriage return) as a formula. By default members
//! are written exactly as they are; with `csv_safe`, export writes such a member, and
//! one starting with `'`, with a `'` in front (which spreadsheets show as text), and an
//! import with `csv_safe` takes one leading `'` off: the two are exact inverses, so a
//! safe export imports back (with `csv_safe`) to the same members.

use std::borrow::Cow;

/// Whether a spreadsheet would read `member` as a formula, or it starts with the quote
/// the safe form adds.
fn needs_quote(member: &str) -> bool {
    member.starts_with(['=', '+', '-', '@', '\t', '\r', '\''])
}

/// The safe form of `member`: `'` in front when it needs one.
pub fn protect(member: &str) -> Cow<'_, str> {
    if needs_quote(member) {
        Cow::Owned(format!("'{member}"))
    } else {
        Cow::Borrowed(member)
    }
}

/// The member a safe form stands for: one leading `'` taken off.
pub fn unprotect(field: &str) -> &str {
    field.strip_prefix('\'').unwrap_or(field)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_safe_form_is_undone_exactly() {
        let cases = [
            ("=SUM(A1)", "'=SUM(A1)"),
            ("+1", "'+1"),
            ("-1", "'-1"),
            ("@x", "'@x"),
            ("\tx", "'\tx"),
            ("'quoted", "''quoted"),
            ("post:1", "post:1"),
            (" lead", " lead"),
            ("a=b", "a=b"),
        ];
        for (member, safe) in cases {
            assert_eq!(protect(member), safe, "{member:?}");
            assert_eq!(unprotect(&protect(member)), member, "{member:?}");
        }
    }
}
