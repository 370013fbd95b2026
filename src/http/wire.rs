//! JSON input shapes that need more than serde: spans written as text or seconds, and
//! events parsed one by one so that a bad event in a batch is rejected on its own.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::{Event, Span, Timestamp};

/// A duration as JSON carries it: `"24h"` or `86400`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum SpanInput {
    /// Integer seconds.
    Seconds(u64),
    /// `"90s"`, `"5m"`, `"1h"`, `"7d"` or integer seconds as text.
    Text(String),
}

impl SpanInput {
    /// The span, or the reason it is not one.
    pub fn parse(self) -> crate::Result<Span> {
        match self {
            SpanInput::Seconds(s) => Span::from_seconds(s),
            SpanInput::Text(t) => Span::parse(&t),
        }
    }
}

/// Why a JSON value is not an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAnEvent(pub String);

/// Reads `{"member": string, "delta": integer (default 1), "at": unix seconds (default now)}`.
/// Values the rules reject (empty member, zero delta) are left for the library to judge;
/// only a wrong shape is refused here.
pub fn parse_event(value: &Value) -> Result<Event, NotAnEvent> {
    let fields: &Map<String, Value> = value
        .as_object()
        .ok_or_else(|| NotAnEvent("an event is a JSON object".into()))?;
    if let Some(unknown) = fields
        .keys()
        .find(|k| !matches!(k.as_str(), "member" | "delta" | "at"))
    {
        return Err(NotAnEvent(format!(
            "unknown field {unknown:?}; an event has member, delta and at"
        )));
    }
    let member = match fields.get("member") {
        Some(Value::String(m)) => m.clone(),
        Some(_) => return Err(NotAnEvent("member must be a string".into())),
        None => return Err(NotAnEvent("member is missing".into())),
    };
    let delta = match fields.get("delta") {
        None | Some(Value::Null) => 1,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| NotAnEvent(format!("delta must be an integer, got {v}")))?,
    };
    let at = match fields.get("at") {
        None | Some(Value::Null) => None,
        Some(v) => {
            let seconds = v
                .as_f64()
                .ok_or_else(|| NotAnEvent(format!("at must be unix seconds, got {v}")))?;
            Some(Timestamp::from_unix_seconds_f64(seconds).map_err(|e| NotAnEvent(e.to_string()))?)
        }
    };
    Ok(Event { member, delta, at })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_default_delta_and_time() {
        let e = parse_event(&json!({"member": "post:1"})).unwrap();
        assert_eq!((e.member.as_str(), e.delta, e.at), ("post:1", 1, None));
        let e = parse_event(&json!({"member": "p", "delta": -2, "at": 1700000000.5})).unwrap();
        assert_eq!(e.delta, -2);
        assert_eq!(e.at.unwrap().unix_millis(), 1_700_000_000_500);
    }

    #[test]
    fn wrong_shapes_are_explained() {
        let cases = [
            (json!("x"), "an event is a JSON object"),
            (json!({"delta": 1}), "member is missing"),
            (json!({"member": 5}), "member must be a string"),
            (
                json!({"member": "m", "delta": 1.5}),
                "delta must be an integer, got 1.5",
            ),
            (
                json!({"member": "m", "delta": "1"}),
                "delta must be an integer, got \"1\"",
            ),
            (
                json!({"member": "m", "at": "now"}),
                "at must be unix seconds, got \"now\"",
            ),
            (
                json!({"member": "m", "detla": 1}),
                "unknown field \"detla\"; an event has member, delta and at",
            ),
        ];
        for (value, message) in cases {
            assert_eq!(
                parse_event(&value).unwrap_err(),
                NotAnEvent(message.into()),
                "{value}"
            );
        }
    }
}
