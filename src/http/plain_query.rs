//! [`from_plain`]: a query string with nothing encoded in it (no `%`, no `+`), read into
//! a type as `serde_urlencoded` reads it, without decoding.
//!
//! `serde_urlencoded` decodes each key and value (`form_urlencoded::decode`: a `Cow`
//! through `+` replacement, percent-decoding and a UTF-8 check), about half of the ~3,000
//! instructions of a top-10 read's query. Almost every query a client sends has nothing
//! to decode, so its pairs are slices of the string as it is; [`ApiQuery`] reads any
//! other (and any this refuses) through `serde_urlencoded`.
//!
//! [`ApiQuery`]: super::extract::ApiQuery

use serde::Deserialize;
use serde::de::value::{Error, MapAccessDeserializer, MapDeserializer};
use serde::de::{self, Error as _, IntoDeserializer, Visitor};
use serde::forward_to_deserialize_any;

/// `query` read into `T` when it has no `%` or `+`; `None` when it has one, and an
/// error when it does not read (its message is not the one answered: see `ApiQuery`).
pub fn from_plain<'a, T: Deserialize<'a>>(query: &'a str) -> Option<Result<T, Error>> {
    if query.bytes().any(|b| b == b'%' || b == b'+') {
        return None;
    }
    // As `form_urlencoded::parse`: empty pairs are skipped, a pair without `=` has an
    // empty value. Split by a closure, not by a `char`: a `char` pattern sets up a
    // searcher for each split (~150 instructions, six of them a top-10 query).
    #[allow(clippy::manual_pattern_char_comparison)]
    let pairs = query
        .split(|c| c == '&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = match pair.bytes().position(|b| b == b'=') {
                Some(at) => (&pair[..at], &pair[at + 1..]),
                None => (pair, ""),
            };
            (Part(key), Part(value))
        });
    let map = MapDeserializer::new(pairs);
    Some(T::deserialize(MapAccessDeserializer::new(map)))
}

/// A key or a value, as `serde_urlencoded`'s own part: numbers and `bool`s parsed from
/// the text, an enum by its variant's name.
struct Part<'de>(&'de str);

impl<'de> IntoDeserializer<'de, Error> for Part<'de> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

/// Deserializers that parse the part as `$ty`.
macro_rules! parsed {
    ($($method:ident => $ty:ty,)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            let value: $ty = self.0.parse().map_err(Error::custom)?;
            value.into_deserializer().$method(visitor)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for Part<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_borrowed_str(self.0)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_enum(de::value::BorrowedStrDeserializer::new(self.0))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    parsed! {
        deserialize_bool => bool,
        deserialize_u8 => u8,
        deserialize_u16 => u16,
        deserialize_u32 => u32,
        deserialize_u64 => u64,
        deserialize_i8 => i8,
        deserialize_i16 => i16,
        deserialize_i32 => i32,
        deserialize_i64 => i64,
        deserialize_f32 => f32,
        deserialize_f64 => f64,
    }

    forward_to_deserialize_any! {
        char str string unit bytes byte_buf unit_struct tuple_struct struct identifier
        tuple ignored_any seq map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Order {
        Desc,
        Asc,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Q {
        window: Option<String>,
        limit: Option<u64>,
        min: Option<f64>,
        fill: Option<bool>,
        order: Option<Order>,
        delta: Option<i64>,
    }

    /// What `serde_urlencoded` reads, as `Ok` or the error's message.
    fn both(query: &str) -> (Result<Q, String>, Result<Q, String>) {
        let plain = from_plain::<Q>(query).expect("nothing encoded");
        let reference = serde_urlencoded::from_str::<Q>(query);
        (
            plain.map_err(|e| e.to_string()),
            reference.map_err(|e| e.to_string()),
        )
    }

    #[test]
    fn a_plain_query_reads_as_serde_urlencoded_reads_it() {
        for query in [
            "",
            "window=24h&limit=10",
            "window=&limit=10&&min=-2.5&fill=true&order=asc&delta=-7&other=x",
            "window&order=desc",
            "limit=10&limit=11",
            "limit=-1",
            "limit=ten",
            "fill=yes",
            "order=up",
            "min=1e400",
            "window=a=b;c/d?e",
        ] {
            let (plain, reference) = both(query);
            assert_eq!(plain, reference, "{query}");
        }
        let (plain, _) = both("window=24h&limit=10&order=asc");
        let expected = Q {
            window: Some("24h".into()),
            limit: Some(10),
            min: None,
            fill: None,
            order: Some(Order::Asc),
            delta: None,
        };
        assert_eq!(plain, Ok(expected));
    }

    #[test]
    fn a_query_with_something_encoded_is_left_to_serde_urlencoded() {
        for query in ["window=24%68", "member=a+b", "%20=1"] {
            assert!(from_plain::<Q>(query).is_none(), "{query}");
        }
    }
}
