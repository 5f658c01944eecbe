//! A small element tree built with quick-xml, each element with its position. The QoS
//! documents are small and read once; a tree lets inheritance and vendor dialects be handled
//! as plain tree walks, and keeps positions for every error.

use super::error::{Location, QosXmlError};
use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;
use std::sync::Arc;

/// The deepest nesting accepted (DDS-XML QoS documents nest about eight levels); deeper input
/// is refused rather than followed.
const MAX_DEPTH: usize = 64;
/// The most elements accepted in one document.
const MAX_ELEMENTS: usize = 100_000;

/// One element: local name (namespace prefix dropped), attributes (qualified names),
/// child elements and the concatenated, trimmed text directly inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Node {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub children: Vec<Node>,
    pub text: String,
    pub at: Location,
}

impl Node {
    /// The value of the attribute `name` (compared on the qualified name).
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A [`QosXmlError::Invalid`] about this element.
    pub fn invalid(&self, message: impl Into<String>) -> QosXmlError {
        QosXmlError::Invalid {
            at: self.at.clone(),
            element: self.name.clone(),
            message: message.into(),
        }
    }
}

/// Maps byte offsets to lines and columns.
struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
    file: Arc<str>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str, file: Arc<str>) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines { text, starts, file }
    }

    fn at(&self, offset: u64) -> Location {
        let offset = (offset.min(self.text.len() as u64)) as usize;
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        let start = self.starts[line - 1];
        // Columns count characters; an offset inside a character counts up to it.
        let column = self
            .text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count());
        Location {
            file: self.file.clone(),
            line: line as u32,
            column: column as u32 + 1,
        }
    }
}

fn utf8(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn open(e: &BytesStart<'_>, at: Location) -> Result<Node, QosXmlError> {
    let mut attrs = Vec::new();
    for a in e.attributes() {
        let a = a.map_err(|err| QosXmlError::Syntax {
            at: at.clone(),
            message: err.to_string(),
        })?;
        let value = a
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .map_err(|err| QosXmlError::Syntax {
                at: at.clone(),
                message: err.to_string(),
            })?;
        attrs.push((utf8(a.key.as_ref().as_bytes()), value.into_owned()));
    }
    Ok(Node {
        name: utf8(e.local_name().as_ref().as_bytes()),
        attrs,
        children: Vec::new(),
        text: String::new(),
        at,
    })
}

/// Parses `text` into its root element. `file` names the document in positions.
pub(crate) fn parse(text: &str, file: Arc<str>) -> Result<Node, QosXmlError> {
    let lines = Lines::new(text, file);
    let mut reader = Reader::from_str(text);
    let mut stack: Vec<Node> = Vec::new();
    let mut root: Option<Node> = None;
    let mut elements = 0usize;
    loop {
        let before = reader.buffer_position();
        let event = reader.read_event().map_err(|e| QosXmlError::Syntax {
            at: lines.at(reader.error_position()),
            message: e.to_string(),
        })?;
        let syntax = |message: &str| QosXmlError::Syntax {
            at: lines.at(before),
            message: message.to_string(),
        };
        match event {
            Event::Start(_) | Event::Empty(_) if root.is_some() => {
                return Err(syntax("content after the root element"));
            }
            Event::Start(e) => {
                elements += 1;
                if stack.len() >= MAX_DEPTH || elements > MAX_ELEMENTS {
                    return Err(syntax("document nests too deep or has too many elements"));
                }
                stack.push(open(&e, lines.at(before))?);
            }
            Event::Empty(e) => {
                elements += 1;
                if elements > MAX_ELEMENTS {
                    return Err(syntax("document has too many elements"));
                }
                let node = open(&e, lines.at(before))?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(node),
                    None => root = Some(node),
                }
            }
            Event::End(_) => {
                // quick-xml checks that end names match their start.
                let Some(mut node) = stack.pop() else {
                    return Err(syntax("unexpected end tag"));
                };
                let trimmed = node.text.trim();
                if trimmed.len() != node.text.len() {
                    node.text = trimmed.to_string();
                }
                match stack.last_mut() {
                    Some(parent) => parent.children.push(node),
                    None => root = Some(node),
                }
            }
            Event::Text(t) => {
                if let Some(node) = stack.last_mut() {
                    node.text.push_str(&t.xml10_content());
                } else if !t.xml10_content().trim().is_empty() {
                    return Err(syntax("text outside the root element"));
                }
            }
            Event::CData(t) => {
                if let Some(node) = stack.last_mut() {
                    node.text.push_str(&t.xml10_content());
                }
            }
            Event::GeneralRef(r) => {
                let c = match r.resolve_char_ref() {
                    Ok(Some(c)) => c,
                    Ok(None) => match &*r.xml10_content() {
                        "lt" => '<',
                        "gt" => '>',
                        "amp" => '&',
                        "apos" => '\'',
                        "quot" => '"',
                        other => return Err(syntax(&format!("unknown entity &{other};"))),
                    },
                    Err(e) => return Err(syntax(&e.to_string())),
                };
                if let Some(node) = stack.last_mut() {
                    node.text.push(c);
                }
            }
            Event::Eof => break,
            Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {}
        }
    }
    if !stack.is_empty() {
        return Err(QosXmlError::Syntax {
            at: lines.at(text.len() as u64),
            message: format!("<{}> is not closed", stack[stack.len() - 1].name),
        });
    }
    root.ok_or_else(|| QosXmlError::Syntax {
        at: lines.at(0),
        message: "no root element".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Node, QosXmlError> {
        parse(s, "t.xml".into())
    }

    #[test]
    fn tree_text_and_positions() {
        let n =
            p("<?xml version=\"1.0\"?>\n<a x=\"1&amp;2\">\n  <b> hi &lt;there&gt; </b>\n<c/></a>")
                .unwrap();
        assert_eq!(n.name, "a");
        assert_eq!(n.attr("x"), Some("1&2"));
        assert_eq!(n.children[0].text, "hi <there>");
        assert_eq!((n.children[0].at.line, n.children[0].at.column), (3, 3));
        assert_eq!((n.children[1].at.line, n.children[1].at.column), (4, 1));
    }

    #[test]
    fn malformed_input_is_an_error_with_a_position() {
        for bad in [
            "",
            "<a>",
            "<a></b>",
            "<a/><b/>",
            "text",
            "<a>&foo;</a>",
            "<a x=1/>",
        ] {
            assert!(matches!(p(bad), Err(QosXmlError::Syntax { .. })), "{bad}");
        }
        let deep = "<a>".repeat(100) + &"</a>".repeat(100);
        assert!(p(&deep).is_err());
        match p("<a>\n<b>\n</c></a>") {
            Err(QosXmlError::Syntax { at, .. }) => assert_eq!(at.line, 3),
            other => panic!("{other:?}"),
        }
    }
}
