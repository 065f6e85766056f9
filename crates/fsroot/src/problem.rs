//! [`Problem`]: one thing that went wrong on the way, carried from where it was met to the
//! report. It keeps what a caller may decide by (the path, the operation, the `io::ErrorKind`)
//! beside the message a reader sees, so nothing above this crate classifies a failure by its
//! text or by an error number.

use std::fmt;
use std::io;

use crate::Error;

/// A problem met on the way: the path it concerns, the operation that met it, how it is
/// classified, and the message a reader sees (which names the path). In JSON it is its message.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Problem {
    /// The full path it concerns (empty when it concerns none).
    pub path: String,
    /// What was being done: `read`, `list directory`, `parse`, `write receipt`, ...
    pub operation: String,
    /// How it is classified: the OS error's kind, or `InvalidData` for content the doctor
    /// cannot use, `InvalidInput` for an entry it refuses, `Other` otherwise.
    pub kind: io::ErrorKind,
    /// What a reader sees.
    pub message: String,
}

impl Problem {
    /// A problem that no OS error classifies: `kind` says what it is.
    pub fn new(
        path: impl Into<String>,
        operation: impl Into<String>,
        kind: io::ErrorKind,
        message: impl Into<String>,
    ) -> Problem {
        Problem {
            path: path.into(),
            operation: operation.into(),
            kind,
            message: message.into(),
        }
    }

    /// Content at `path` that does not have the shape the doctor needs (a record that does
    /// not parse, a line that names nothing it may act on).
    pub fn invalid_data(path: impl Into<String>, message: impl Into<String>) -> Problem {
        Problem::new(path, "parse", io::ErrorKind::InvalidData, message)
    }

    /// This problem with its message prefixed by `context` (`"<context>: <message>"`).
    pub fn context(mut self, context: &str) -> Problem {
        self.message = format!("{context}: {}", self.message);
        self
    }
}

impl From<&Error> for Problem {
    fn from(e: &Error) -> Problem {
        Problem {
            path: e.path().to_string_lossy().into_owned(),
            operation: e.operation().to_owned(),
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}

impl From<Error> for Problem {
    fn from(e: Error) -> Problem {
        Problem::from(&e)
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl serde::Serialize for Problem {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.message)
    }
}

/// Read back from a report or `last.json`, a problem is only its message.
impl<'de> serde::Deserialize<'de> for Problem {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Problem, D::Error> {
        let message = String::deserialize(d)?;
        Ok(Problem::new("", "", io::ErrorKind::Other, message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn an_error_keeps_its_path_operation_and_kind_and_shows_its_message() {
        let e = Error::io(
            "read",
            Path::new("/s/a.json"),
            io::Error::from(io::ErrorKind::PermissionDenied),
        );
        let p = Problem::from(&e);
        assert_eq!(p.path, "/s/a.json");
        assert_eq!(p.operation, "read");
        assert_eq!(p.kind, io::ErrorKind::PermissionDenied);
        assert_eq!(p.to_string(), e.to_string());
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            serde_json::Value::String(e.to_string())
        );
        let back: Problem = serde_json::from_value(serde_json::to_value(&p).unwrap()).unwrap();
        assert_eq!(back.message, p.message);
        let occupied = Problem::from(Error::occupied(Path::new("/s/b")));
        assert_eq!(
            (occupied.kind, occupied.operation.as_str()),
            (io::ErrorKind::AlreadyExists, "move")
        );
    }
}
