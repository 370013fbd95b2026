//! Member data: a small JSON value kept beside a member of a windowed board (a post's
//! title beside its id), returned with reads that ask for it (`with=data`). It lives
//! exactly as long as the member's total in the board's largest window.

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::error::Error;

/// The most bytes of JSON text a member's data may take, as stored (compact).
pub const MAX_MEMBER_DATA: usize = 1024;

/// A member's data: any JSON value but null, kept as its compact JSON text (at most
/// [`MAX_MEMBER_DATA`] bytes). It serializes as the JSON value itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MemberData(String);

impl MemberData {
    /// The data of a JSON value: its compact text. Null is no data (`invalid_member_data`:
    /// a write leaves data unchanged without it, DELETE removes it), and so is a text over
    /// [`MAX_MEMBER_DATA`] bytes.
    pub fn from_value(value: &Value) -> Result<MemberData, Error> {
        if value.is_null() {
            return Err(Error::InvalidMemberData {
                reason: "null is no data: leave data out to keep it, or DELETE it".into(),
            });
        }
        Self::checked(value.to_string())
    }

    /// The data of a JSON text (any spacing: it is kept compact).
    pub fn parse(text: &str) -> Result<MemberData, Error> {
        let value: Value = serde_json::from_str(text).map_err(|e| Error::InvalidMemberData {
            reason: format!("not JSON: {e}"),
        })?;
        Self::from_value(&value)
    }

    /// Data read back from a store, stored compact by [`from_value`](Self::from_value).
    pub(crate) fn stored(text: String) -> MemberData {
        MemberData(text)
    }

    fn checked(text: String) -> Result<MemberData, Error> {
        if text.len() > MAX_MEMBER_DATA {
            return Err(Error::InvalidMemberData {
                reason: format!(
                    "{} bytes of JSON (compact): at most {MAX_MEMBER_DATA} are kept per member",
                    text.len()
                ),
            });
        }
        Ok(MemberData(text))
    }

    /// Its compact JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }
}

impl Serialize for MemberData {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match RawValue::from_string(self.0.clone()) {
            Ok(raw) => raw.serialize(serializer),
            Err(_) => serializer.serialize_none(),
        }
    }
}

#[cfg(feature = "server")]
impl utoipa::PartialSchema for MemberData {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::SchemaType::AnyValue)
            .description(Some(
                "Any JSON value (null: none), at most 1,024 bytes as compact JSON text",
            ))
            .into()
    }
}

#[cfg(feature = "server")]
impl utoipa::ToSchema for MemberData {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn data_is_kept_compact_and_bounded_at_1024_bytes() {
        let data = MemberData::parse("{ \"title\" : \"Hi\" }").unwrap();
        assert_eq!(data.as_str(), r#"{"title":"Hi"}"#);
        assert_eq!(serde_json::to_string(&data).unwrap(), r#"{"title":"Hi"}"#);
        // A string of 1022 characters is 1024 bytes of JSON with its quotes.
        let fits = json!("x".repeat(1022));
        assert_eq!(MemberData::from_value(&fits).unwrap().as_str().len(), 1024);
        let over = MemberData::from_value(&json!("x".repeat(1023))).unwrap_err();
        assert_eq!(over.code(), "invalid_member_data");
        assert_eq!(
            over.to_string(),
            "invalid member data: 1025 bytes of JSON (compact): at most 1024 are kept per member"
        );
        assert_eq!(
            MemberData::from_value(&Value::Null).unwrap_err().code(),
            "invalid_member_data"
        );
        assert_eq!(
            MemberData::parse("{").unwrap_err().code(),
            "invalid_member_data"
        );
    }
}
