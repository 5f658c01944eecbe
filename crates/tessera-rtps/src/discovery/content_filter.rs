//! PID_CONTENT_FILTER_PROPERTY (0x0035, RTPS 2.5 §9.6.2.2.1, `ContentFilterProperty_t`): a
//! reader of a content-filtered topic announces its filter in SEDP, so that writers may
//! filter for it. In the parameter list's byte order:
//!
//! ```text
//! string<256> contentFilteredTopicName
//! string<256> relatedTopicName
//! string<256> filterClassName        ("DDSSQL")
//! string      filterExpression
//! sequence<string> expressionParameters
//! ```
//! each string a CDR string (length with the NUL, the bytes, the NUL), 4-aligned from the
//! start of the value.

use super::plist::{align4, put_string, put_u32, Value};
use super::DiscoveryDecodeError as E;

/// Most expression parameters accepted from a peer (the language names `%0` to `%99`).
pub const MAX_FILTER_PARAMETERS: usize = 100;

/// A content filter as announced with a reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentFilterProperty {
    /// The content-filtered topic's own name.
    pub content_filtered_topic_name: String,
    /// The topic it filters (the reader's topic).
    pub related_topic_name: String,
    /// The filter language: [`crate::filter::DDSSQL`] for the standard one.
    pub filter_class_name: String,
    /// The expression.
    pub filter_expression: String,
    /// Its parameters (`%0`, `%1`, ...).
    pub expression_parameters: Vec<String>,
}

impl ContentFilterProperty {
    /// Appends the value (the caller's position is 4-aligned, as every parameter value is).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        for s in [
            &self.content_filtered_topic_name,
            &self.related_topic_name,
            &self.filter_class_name,
            &self.filter_expression,
        ] {
            put_string(out, s);
            align4(out, start);
        }
        put_u32(
            out,
            u32::try_from(self.expression_parameters.len()).unwrap_or(0),
        );
        for p in &self.expression_parameters {
            put_string(out, p);
            align4(out, start);
        }
    }

    /// Reads the value.
    pub(crate) fn decode(v: &mut Value<'_>) -> Result<Self, E> {
        let content_filtered_topic_name = v.string()?;
        let related_topic_name = v.string()?;
        let filter_class_name = v.string()?;
        let filter_expression = v.string()?;
        let n = v.u32()? as usize;
        if n > MAX_FILTER_PARAMETERS {
            return Err(v.invalid());
        }
        let mut expression_parameters = Vec::with_capacity(n);
        for _ in 0..n {
            expression_parameters.push(v.string()?);
        }
        Ok(ContentFilterProperty {
            content_filtered_topic_name,
            related_topic_name,
            filter_class_name,
            filter_expression,
            expression_parameters,
        })
    }
}
