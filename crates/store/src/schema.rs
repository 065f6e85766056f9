//! The published JSON Schemas (`docs/schemas/`) and the compiled validators built from them.

use std::sync::OnceLock;

use serde_json::Value;

/// The session document schema.
pub const DOCUMENT_SCHEMA: &str = include_str!("../../../docs/schemas/document.schema.json");
/// The thread record schema.
pub const THREAD_SCHEMA: &str = include_str!("../../../docs/schemas/thread.schema.json");
/// The turn schema.
pub const TURN_SCHEMA: &str = include_str!("../../../docs/schemas/turn.schema.json");

fn build(text: &str) -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(text).expect("shipped schema is JSON");
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("shipped schema compiles")
}

/// The compiled document validator (built once).
pub fn document_validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| build(DOCUMENT_SCHEMA))
}

/// The compiled thread record validator (built once).
pub fn thread_validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| build(THREAD_SCHEMA))
}

/// The compiled turn validator (built once).
pub fn turn_validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| build(TURN_SCHEMA))
}

/// The first validation error of `value`, as `"<pointer>: <message>"`.
pub fn first_error(validator: &jsonschema::Validator, value: &Value) -> Option<String> {
    validator.iter_errors(value).next().map(|e| {
        let at = e.instance_path().to_string();
        let at = if at.is_empty() { "/".to_string() } else { at };
        format!("{at}: {e}")
    })
}
