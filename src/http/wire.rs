//! JSON input shapes that need more than serde: spans written as text or seconds, and
//! events parsed one by one so that a bad event in a batch is rejected on its own.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;
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

/// The body of `POST …/events`: one event, or `{"events": […]}`.
pub enum EventsIn<'a> {
    /// A single event.
    One(Event),
    /// A batch; each event is parsed on its own, so a bad one is rejected alone.
    Many(Vec<&'a RawValue>),
}

/// Why a request body is not an event nor a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadBody(pub String);

/// Reads the body of `POST …/events`.
pub fn parse_events_body(body: &[u8]) -> Result<EventsIn<'_>, BadBody> {
    let shape = || BadBody("the body must be an event object or {\"events\": [...]}".into());
    let top: HashMap<&str, &RawValue> = serde_json::from_slice(body).map_err(|e| {
        if e.is_data() {
            shape()
        } else {
            BadBody(format!("Failed to parse the request body as JSON: {e}"))
        }
    })?;
    match top.get("events") {
        Some(events) if top.len() == 1 => serde_json::from_str::<Vec<&RawValue>>(events.get())
            .map(EventsIn::Many)
            .map_err(|_| BadBody("\"events\" must be an array of events".into())),
        Some(_) => Err(BadBody(
            "a batch is {\"events\": [...]} and nothing else".into(),
        )),
        None => {
            let text = std::str::from_utf8(body).map_err(|_| shape())?;
            parse_raw_event(text)
                .map(EventsIn::One)
                .map_err(|e| BadBody(e.0))
        }
    }
}

/// The fast shape of an event; anything else goes through [`parse_event`] for a message.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventIn {
    member: String,
    #[serde(default)]
    delta: Option<i64>,
    #[serde(default)]
    at: Option<f64>,
}

/// Reads one event from its JSON text.
pub fn parse_raw_event(text: &str) -> Result<Event, NotAnEvent> {
    match serde_json::from_str::<EventIn>(text) {
        Ok(e) => Ok(Event {
            member: e.member,
            delta: e.delta.unwrap_or(1),
            at: e
                .at
                .map(Timestamp::from_unix_seconds_f64)
                .transpose()
                .map_err(|e| NotAnEvent(e.to_string()))?,
        }),
        // Not the usual shape: parse it generally to say exactly what is wrong.
        Err(_) => {
            let value: Value = serde_json::from_str(text).map_err(|e| NotAnEvent(e.to_string()))?;
            parse_event(&value)
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
    fn bodies_are_one_event_or_a_batch() {
        let Ok(EventsIn::One(e)) = parse_events_body(br#"{"member":"p","delta":3}"#) else {
            panic!()
        };
        assert_eq!((e.member.as_str(), e.delta), ("p", 3));
        let Ok(EventsIn::Many(events)) = parse_events_body(br#"{"events":[{"member":"a"},7]}"#)
        else {
            panic!()
        };
        assert_eq!(events.len(), 2);
        assert_eq!(
            parse_raw_event(events[1].get()).unwrap_err(),
            NotAnEvent("an event is a JSON object".into())
        );
        for (body, message) in [
            (
                &b"[1]"[..],
                "the body must be an event object or {\"events\": [...]}",
            ),
            (
                b"{\"events\":[],\"member\":\"m\"}",
                "a batch is {\"events\": [...]} and nothing else",
            ),
            (b"{\"events\":{}}", "\"events\" must be an array of events"),
        ] {
            assert_eq!(
                parse_events_body(body).err().unwrap(),
                BadBody(message.into())
            );
        }
        assert!(
            parse_events_body(b"{")
                .err()
                .unwrap()
                .0
                .starts_with("Failed to parse the request body as JSON")
        );
    }

    #[test]
    fn the_fast_and_the_general_parse_agree() {
        for text in [
            r#"{"member":"m"}"#,
            r#"{"member":"m","delta":-2,"at":1700000000.25}"#,
            r#"{"member":"m","delta":null}"#,
        ] {
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                parse_raw_event(text).unwrap(),
                parse_event(&value).unwrap(),
                "{text}"
            );
        }
        assert_eq!(
            parse_raw_event(r#"{"member":"m","delta":1.5}"#).unwrap_err(),
            NotAnEvent("delta must be an integer, got 1.5".into())
        );
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
