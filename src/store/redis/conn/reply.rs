//! Turning Redis replies into rollboard values.

use redis::Value;

use crate::error::Error;

fn unexpected(what: &str, v: &Value) -> Error {
    Error::store(format!("unexpected reply for {what}: {v:?}"))
}

/// The elements of an array reply.
pub(crate) fn array(v: Value, what: &str) -> Result<Vec<Value>, Error> {
    match v {
        Value::Array(items) => Ok(items),
        Value::Nil => Ok(Vec::new()),
        other => Err(unexpected(what, &other)),
    }
}

/// A string reply, `None` for nil.
pub(crate) fn opt_string(v: &Value, what: &str) -> Result<Option<String>, Error> {
    match v {
        Value::Nil => Ok(None),
        Value::BulkString(b) => String::from_utf8(b.clone())
            .map(Some)
            .map_err(|_| unexpected(what, v)),
        Value::SimpleString(s) => Ok(Some(s.clone())),
        Value::Int(i) => Ok(Some(i.to_string())),
        other => Err(unexpected(what, other)),
    }
}

/// A string reply.
pub(crate) fn string(v: &Value, what: &str) -> Result<String, Error> {
    opt_string(v, what)?.ok_or_else(|| unexpected(what, v))
}

/// An integer reply (or an integer sent as a string), `None` for nil.
pub(crate) fn opt_int(v: &Value, what: &str) -> Result<Option<i64>, Error> {
    match v {
        Value::Int(i) => Ok(Some(*i)),
        Value::Nil => Ok(None),
        _ => {
            let text = string(v, what)?;
            parse_integer(&text)
                .map(Some)
                .ok_or_else(|| unexpected(what, v))
        }
    }
}

/// An integer reply (or an integer sent as a string).
pub(crate) fn int(v: &Value, what: &str) -> Result<i64, Error> {
    opt_int(v, what)?.ok_or_else(|| unexpected(what, v))
}

/// A sorted-set score holding an integer (see [`parse_integer`]).
pub(crate) fn int_score(v: &Value) -> Result<i64, Error> {
    text(v)
        .and_then(parse_integer)
        .ok_or_else(|| unexpected("an integer score", v))
}

/// The text of a string reply, borrowed (`None` for nil and any other reply).
pub(crate) fn text(v: &Value) -> Option<&str> {
    match v {
        Value::BulkString(b) => std::str::from_utf8(b).ok(),
        Value::SimpleString(s) => Some(s),
        _ => None,
    }
}

/// A string reply, taken whole.
pub(crate) fn into_string(v: Value, what: &str) -> Result<String, Error> {
    match v {
        Value::BulkString(b) => String::from_utf8(b)
            .map_err(|e| Error::store(format!("unexpected reply for {what}: {:?}", e.as_bytes()))),
        Value::SimpleString(s) => Ok(s),
        other => Err(unexpected(what, &other)),
    }
}

/// Parses an integer as Redis prints it: `"42"`, or a sorted-set score such as
/// `"9007199254740991"` or `"1e+15"` (scores are doubles holding exact integers).
pub(crate) fn parse_integer(text: &str) -> Option<i64> {
    if let Ok(i) = text.parse::<i64>() {
        return Some(i);
    }
    let f = text.parse::<f64>().ok()?;
    (f.is_finite() && f.fract() == 0.0 && f.abs() <= 2f64.powi(63)).then_some(f as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_integers_and_scores_as_redis_prints_them() {
        assert_eq!(parse_integer("42"), Some(42));
        assert_eq!(parse_integer("-7"), Some(-7));
        assert_eq!(
            parse_integer("9007199254740991"),
            Some(9_007_199_254_740_991)
        );
        assert_eq!(parse_integer("1e+15"), Some(1_000_000_000_000_000));
        assert_eq!(parse_integer("1.5"), None);
        assert_eq!(parse_integer("inf"), None);
    }
}
