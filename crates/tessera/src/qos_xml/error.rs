//! Errors and warnings of the XML QoS loader: every one names the file, line and column.

use std::fmt;
use std::sync::Arc;

/// Where something is in a QoS document: file (or the name given to an in-memory document),
/// line and column, both counted from 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file path, or the name given to [`super::QosProvider::from_str_named`].
    pub file: Arc<str>,
    /// Line, from 1.
    pub line: u32,
    /// Column in characters, from 1.
    pub column: u32,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// Why a QoS document or a profile lookup was refused. Cloneable so that a provider loaded
/// once from the environment can report the same error to every caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QosXmlError {
    /// The file could not be read.
    #[error("{file}: cannot read: {message}")]
    Io {
        /// The path.
        file: String,
        /// What the operating system said.
        message: String,
    },
    /// The document is not well-formed XML (or nests deeper than the loader accepts).
    #[error("{at}: malformed XML: {message}")]
    Syntax {
        /// Where the parser stopped.
        at: Location,
        /// What is wrong.
        message: String,
    },
    /// The root element is neither DDS-XML's `<dds>` nor Fast DDS's `<profiles>`.
    #[error("{at}: <{element}> is not a QoS document (expected <dds> or <profiles>)")]
    NotQosDocument {
        /// Where the root element starts.
        at: Location,
        /// Its name.
        element: String,
    },
    /// An element's value or structure is invalid (a bad number, an unknown enumerator, a
    /// missing required attribute...).
    #[error("{at}: <{element}>: {message}")]
    Invalid {
        /// Where the element starts.
        at: Location,
        /// The element's name.
        element: String,
        /// What is wrong.
        message: String,
    },
    /// Two libraries contain a profile of the same qualified name.
    #[error("{at}: QoS profile `{profile}` is defined twice (first at {first})")]
    DuplicateProfile {
        /// Where the second definition starts.
        at: Location,
        /// The qualified name.
        profile: String,
        /// Where the first one starts.
        first: Location,
    },
    /// A `base_name` names no profile.
    #[error("{at}: base_name `{base}` names no QoS profile")]
    UnknownBase {
        /// Where the `base_name` attribute's element starts.
        at: Location,
        /// The name as written.
        base: String,
    },
    /// Profiles inherit from each other in a circle.
    #[error("{at}: base_name cycle: {chain}")]
    BaseCycle {
        /// Where the profile that closes the circle starts.
        at: Location,
        /// The profiles of the circle, `a -> b -> a`.
        chain: String,
    },
    /// A lookup named a profile that no loaded document defines (or an unqualified name that
    /// more than one library defines).
    #[error("no QoS profile `{0}` (names are `library::profile`)")]
    UnknownProfile(String),
    /// A profile was asked for by name but no profiles are loaded: neither
    /// `ParticipantConfig::qos_profiles` nor `TESSERA_QOS_PROFILES` is set.
    #[error(
        "no QoS profiles are loaded (set TESSERA_QOS_PROFILES or ParticipantConfig::qos_profiles)"
    )]
    NoProfiles,
}

/// Something a document says that the loader ignores: an element of another vendor, a policy
/// that does not apply where it stands. Each is also logged (`tracing::warn!`) when loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XmlWarning {
    /// Where the element starts.
    pub at: Location,
    /// The element (or `element@attribute`) ignored.
    pub element: String,
    /// Why.
    pub message: String,
}

impl fmt::Display for XmlWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: <{}>: {}", self.at, self.element, self.message)
    }
}
