//! JSON input shapes that need more than serde: spans written as text or seconds, and
//! events parsed one by one so that a bad event in a batch is rejected on its own, with
//! keys decoded from their escapes and a key given twice refused.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::{Event, MemberData, Span, Timestamp};

/// A request's `window` (`window=24h` in a query, `"window": "24h"` in a body): absent
/// means the board's first window.
pub(super) fn window(text: &Option<String>) -> crate::Result<Option<Span>> {
    text.as_deref().map(Span::parse).transpose()
}

/// A duration as JSON carries it: `"24h"` or `86400`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum SpanInput {
    /// Integer seconds.
    Seconds(u64),
    /// Seconds as any other JSON number: whole (`3600.0`) is seconds; else refused.
    Number(f64),
    /// `"90s"`, `"5m"`, `"1h"`, `"7d"` or integer seconds as text.
    Text(String),
}

impl SpanInput {
    /// The span, or the reason it is not one.
    pub fn parse(self) -> crate::Result<Span> {
        match self {
            SpanInput::Seconds(s) => Span::from_seconds(s),
            SpanInput::Number(n) if n.fract() == 0.0 && n >= 0.0 && n < u64::MAX as f64 => {
                Span::from_seconds(n as u64)
            }
            SpanInput::Number(n) => Err(crate::Error::InvalidSpan {
                input: n.to_string(),
                reason: "must be a whole number of seconds from 1 to 400 days".into(),
            }),
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
#[derive(Debug, Clone, PartialEq)]
pub enum BadBody {
    /// Not JSON, or not the shape of an event nor of a batch (400).
    Shape(String),
    /// A single event whose values a rule rejects, e.g. `at` out of range (422).
    Invalid(crate::Error),
}

/// Reads the body of `POST …/events`.
pub fn parse_events_body(body: &[u8]) -> Result<EventsIn<'_>, BadBody> {
    let shape = || BadBody::Shape("the body must be an event object or {\"events\": [...]}".into());
    let text = std::str::from_utf8(body).map_err(|_| {
        BadBody::Shape("Failed to parse the request body as JSON: it is not UTF-8".into())
    })?;
    // The usual body, one event of the fast shape, in one pass: that shape has no
    // `events` key and refuses a key given twice, so the reading below would come to it.
    match fast_event(text) {
        Ok(event) => return Ok(EventsIn::One(event)),
        Err(Some(refused)) => return Err(refused.into()),
        Err(None) => {}
    }
    let top: UniqueKeys<'_> = serde_json::from_str(text).map_err(|e| {
        if e.is_data() && !e.to_string().starts_with(DUPLICATE) {
            shape()
        } else if e.is_data() {
            BadBody::Shape(e.to_string())
        } else {
            BadBody::Shape(format!("Failed to parse the request body as JSON: {e}"))
        }
    })?;
    match top.get("events") {
        Some(events) if top.0.len() == 1 => serde_json::from_str::<Vec<&RawValue>>(events.get())
            .map(EventsIn::Many)
            .map_err(|_| BadBody::Shape("\"events\" must be an array of events".into())),
        Some(_) => Err(BadBody::Shape(
            "a batch is {\"events\": [...]} and nothing else".into(),
        )),
        // Not of the fast shape (read above) and its keys unique (just checked): what is
        // wrong with it, from its general reading.
        None => serde_json::from_str::<Value>(text)
            .map_err(|e| NotAnEvent::Shape(e.to_string()))
            .and_then(|value| parse_event(&value))
            .map(EventsIn::One)
            .map_err(Into::into),
    }
}

/// How serde_json's message for a repeated key begins (see [`UniqueKeys`]).
const DUPLICATE: &str = "duplicate key";

/// A JSON object's members in order, refusing a key given twice (serde_json keeps the
/// last one silently). Keys written with escapes (`"\u006dember"`) are decoded.
struct UniqueKeys<'a>(Vec<(String, &'a RawValue)>);

impl<'a> UniqueKeys<'a> {
    fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for UniqueKeys<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Members<'a> {
            type Value = UniqueKeys<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut members: Vec<(String, &'a RawValue)> = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if members.iter().any(|(k, _)| *k == key) {
                        return Err(serde::de::Error::custom(format!(
                            "{DUPLICATE} {key:?}: each key may appear once"
                        )));
                    }
                    members.push((key, map.next_value()?));
                }
                Ok(UniqueKeys(members))
            }
        }
        deserializer.deserialize_map(Members(PhantomData))
    }
}

/// The fast shape of an event; anything else goes through [`parse_event`] for a message.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventIn {
    member: String,
    #[serde(default, deserialize_with = "super::json_int::opt_i64")]
    delta: Option<i64>,
    #[serde(default, deserialize_with = "super::json_int::opt_i64")]
    value: Option<i64>,
    #[serde(default)]
    at: Option<f64>,
    #[serde(default)]
    data: Option<Value>,
    #[serde(default)]
    by: Option<String>,
}

/// An event's `data`: absent or null is none (the member's data stays as it is).
fn event_data(data: Option<&Value>) -> Result<Option<MemberData>, NotAnEvent> {
    match data {
        None | Some(Value::Null) => Ok(None),
        Some(v) => Ok(Some(MemberData::from_value(v)?)),
    }
}

/// One event of the fast shape ([`EventIn`]: serde refuses a key it names twice, and any
/// other key); `Err(None)` when the text is not of that shape.
fn fast_event(text: &str) -> Result<Event, Option<NotAnEvent>> {
    let e = serde_json::from_str::<EventIn>(text).map_err(|_| None)?;
    if e.delta.is_some() && e.value.is_some() {
        return Err(Some(both()));
    }
    Ok(Event {
        member: e.member,
        delta: e.delta.unwrap_or(1),
        value: e.value,
        at: e
            .at
            .map(Timestamp::from_unix_seconds_f64)
            .transpose()
            .map_err(|e| Some(e.into()))?,
        data: event_data(e.data.as_ref()).map_err(Some)?,
        by: e.by,
    })
}

/// Reads one event from its JSON text. A key given twice is a wrong shape.
pub fn parse_raw_event(text: &str) -> Result<Event, NotAnEvent> {
    match fast_event(text) {
        Ok(event) => Ok(event),
        Err(Some(refused)) => Err(refused),
        // Not the usual shape: parse it generally to say exactly what is wrong.
        Err(None) => {
            let shape = |e: serde_json::Error| NotAnEvent::Shape(e.to_string());
            if text.trim_start().starts_with('{') {
                serde_json::from_str::<UniqueKeys<'_>>(text).map_err(shape)?;
            }
            let value: Value = serde_json::from_str(text).map_err(shape)?;
            parse_event(&value)
        }
    }
}

/// The error of an event with both `delta` and `value` (a rule, not a shape: 422
/// `invalid_value`, and in a batch that event alone).
fn both() -> NotAnEvent {
    NotAnEvent::Invalid(crate::Error::InvalidValue {
        reason:
            "an event carries delta (a sum board) or value (a max, min or latest board), not both"
                .into(),
    })
}

/// Why a JSON value is not an event.
#[derive(Debug, Clone, PartialEq)]
pub enum NotAnEvent {
    /// Not the shape of an event: 400 alone, `invalid_event` in a batch.
    Shape(String),
    /// An event whose values a rule rejects before any store sees it (`invalid_time`).
    Invalid(crate::Error),
}

impl From<NotAnEvent> for BadBody {
    fn from(error: NotAnEvent) -> Self {
        match error {
            NotAnEvent::Shape(message) => BadBody::Shape(message),
            NotAnEvent::Invalid(error) => BadBody::Invalid(error),
        }
    }
}

impl From<crate::Error> for NotAnEvent {
    fn from(error: crate::Error) -> Self {
        NotAnEvent::Invalid(error)
    }
}

/// Reads `{"member": string, "delta": integer (default 1), "value": integer, "at": unix
/// seconds (default now), "data": object, "by": string}` (`delta` or `value`, not both).
/// Values the rules reject (empty member, zero delta) are left for the library to judge,
/// but for `at`, which must be a time to be an [`Event`] at all (422 `invalid_time`).
pub fn parse_event(value: &Value) -> Result<Event, NotAnEvent> {
    let shape = |message: String| NotAnEvent::Shape(message);
    let fields: &Map<String, Value> = value
        .as_object()
        .ok_or_else(|| shape("an event is a JSON object".into()))?;
    if let Some(unknown) = fields.keys().find(|k| {
        !matches!(
            k.as_str(),
            "member" | "delta" | "value" | "at" | "data" | "by"
        )
    }) {
        return Err(shape(format!(
            "unknown field {unknown:?}; an event has member, delta or value, at, data and by"
        )));
    }
    let member = match fields.get("member") {
        Some(Value::String(m)) => m.clone(),
        Some(_) => return Err(shape("member must be a string".into())),
        None => return Err(shape("member is missing".into())),
    };
    // An integer field: absent or null is none.
    let integer = |key: &str| match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_number()
            .and_then(super::json_int::to_i64)
            .map(Some)
            .ok_or_else(|| shape(format!("{key} must be an integer, got {v}"))),
    };
    let delta = integer("delta")?.unwrap_or(1);
    let value = integer("value")?;

    let at = match fields.get("at") {
        None | Some(Value::Null) => None,
        Some(v) => {
            let seconds = v
                .as_f64()
                .ok_or_else(|| shape(format!("at must be unix seconds, got {v}")))?;
            Some(Timestamp::from_unix_seconds_f64(seconds)?)
        }
    };
    // Both given is a rule's error (422), judged once the event has the shape of one
    // (else it is a wrong shape: 400, and in a batch the whole batch's).
    if value.is_some() && integer("delta")?.is_some() {
        return Err(both());
    }
    let data = event_data(fields.get("data"))?;
    let by = match fields.get("by") {
        None | Some(Value::Null) => None,
        Some(Value::String(by)) => Some(by.clone()),
        Some(v) => {
            return Err(shape(format!(
                "by must be a string (who gave the event), got {v}"
            )));
        }
    };
    Ok(Event {
        member,
        delta,
        value,
        at,
        data,
        by,
    })
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
    fn an_event_carries_a_delta_or_a_value_not_both() {
        for text in [
            r#"{"member":"p","value":0}"#,
            r#"{"value":-4,"member":"p"}"#,
        ] {
            let e = parse_raw_event(text).unwrap();
            assert_eq!(
                e.value,
                Some(
                    serde_json::from_str::<Value>(text).unwrap()["value"]
                        .as_i64()
                        .unwrap()
                )
            );
        }
        for text in [
            r#"{"member":"p","value":1,"delta":2}"#,
            r#"{"delta":2,"member":"p","value":1}"#,
        ] {
            let Err(NotAnEvent::Invalid(error)) = parse_raw_event(text) else {
                panic!("{text} is an invalid value");
            };
            assert_eq!(error.code(), "invalid_value", "{text}");
        }
        // The general path (an escaped key) says the same.
        let escaped = r#"{"member":"p","valu\u0065":1,"delta":2}"#;
        let Err(NotAnEvent::Invalid(error)) = parse_raw_event(escaped) else {
            panic!("{escaped} is an invalid value");
        };
        assert_eq!(error.code(), "invalid_value");
        // A wrong shape stays a wrong shape with both given (a batch is refused whole).
        for text in [
            r#"{"member":"p","value":1,"delta":1e30}"#,
            r#"{"member":"p","value":1e30,"delta":1}"#,
            r#"{"member":"p","value":1,"delta":1,"at":"now"}"#,
        ] {
            assert!(
                matches!(parse_raw_event(text), Err(NotAnEvent::Shape(_))),
                "{text}"
            );
        }
    }

    #[test]
    fn bodies_are_one_event_or_a_batch() {
        let Ok(EventsIn::One(e)) = parse_events_body(br#"{"member":"p","delta":3}"#) else {
            panic!()
        };
        assert_eq!((e.member.as_str(), e.delta), ("p", 3));
        assert!(matches!(
            parse_events_body(br#"{"member":"p","delta":1,"value":2}"#),
            Err(BadBody::Invalid(crate::Error::InvalidValue { .. }))
        ));
        let Ok(EventsIn::Many(events)) = parse_events_body(br#"{"events":[{"member":"a"},7]}"#)
        else {
            panic!()
        };
        assert_eq!(events.len(), 2);
        assert_eq!(
            parse_raw_event(events[1].get()).unwrap_err(),
            NotAnEvent::Shape("an event is a JSON object".into())
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
                BadBody::Shape(message.into())
            );
        }
        let Err(BadBody::Shape(message)) = parse_events_body(b"{") else {
            panic!()
        };
        assert!(message.starts_with("Failed to parse the request body as JSON"));
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
            NotAnEvent::Shape("delta must be an integer, got 1.5".into())
        );
    }

    #[test]
    fn escaped_keys_are_keys_and_a_repeated_key_is_refused() {
        let Ok(EventsIn::One(e)) = parse_events_body(br#"{"\u006dember":"x","d\u0065lta":2}"#)
        else {
            panic!()
        };
        assert_eq!((e.member.as_str(), e.delta), ("x", 2));
        let Ok(EventsIn::Many(events)) =
            parse_events_body(br#"{"\u0065vents":[{"m\u0065mber":"y"}]}"#)
        else {
            panic!()
        };
        assert_eq!(parse_raw_event(events[0].get()).unwrap().member, "y");
        for body in [
            &br#"{"member":"a","member":"b"}"#[..],
            br#"{"member":"a","\u006dember":"b"}"#,
            br#"{"events":[],"events":[]}"#,
        ] {
            let Err(BadBody::Shape(message)) = parse_events_body(body) else {
                panic!("{body:?} was accepted")
            };
            assert!(message.starts_with("duplicate key"), "{message}");
        }
        let Err(NotAnEvent::Shape(message)) =
            parse_raw_event(r#"{"member":"a","delta":1,"delta":2}"#)
        else {
            panic!()
        };
        assert!(message.starts_with("duplicate key \"delta\""), "{message}");
    }

    #[test]
    fn a_time_out_of_range_is_invalid_not_malformed() {
        for text in [r#"{"member":"m","at":-1}"#, r#"{"member":"m","at":1e300}"#] {
            let Err(NotAnEvent::Invalid(error)) = parse_raw_event(text) else {
                panic!("{text}")
            };
            assert_eq!(error.code(), "invalid_time", "{text}");
        }
        let Err(BadBody::Invalid(error)) = parse_events_body(br#"{"member":"m","at":-5}"#) else {
            panic!()
        };
        assert_eq!(error.code(), "invalid_time");
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
                "unknown field \"detla\"; an event has member, delta or value, at, data and by",
            ),
            (
                json!({"member": "m", "value": 1.5}),
                "value must be an integer, got 1.5",
            ),
        ];
        for (value, message) in cases {
            assert_eq!(
                parse_event(&value).unwrap_err(),
                NotAnEvent::Shape(message.into()),
                "{value}"
            );
        }
    }
}
