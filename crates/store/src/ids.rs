//! Names in a session store: what is an id, what is reserved, what is a runtime store.

/// Whether `s` matches `^[A-Za-z0-9_-]{1,128}$`.
pub fn is_valid_id(s: &str) -> bool {
    !s.is_empty() && s.len() <= 128 && s.bytes().all(is_id_byte)
}

/// Whether `b` may appear in an id.
pub fn is_id_byte(b: u8) -> bool {
    ID_BYTES[b as usize]
}

/// `ID_BYTES[b]`: whether byte `b` may appear in an id (a table: the tokenizer runs over every
/// byte of every readable document).
static ID_BYTES: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || c == b'_' || c == b'-';
        b += 1;
    }
    t
};

/// Top-level file names that look like documents but are host bookkeeping (store-format.md,
/// Version 2); every `*.lock` is reserved too ([`is_reserved_top`]).
pub const RESERVED_FILES: &[&str] = &[
    "session_boot_owners.json",
    "latest.json",
    "offline_queue.json",
];

/// Whether a top-level name of S is reserved: never a document.
pub fn is_reserved_top(name: &str) -> bool {
    RESERVED_FILES.contains(&name) || (name.ends_with(".lock") && name != RECONCILE_LOCK)
}

/// Stems of `checkpoints/` that are not session checkpoints (the legacy single slot and the
/// global offline queue).
pub const RESERVED_CHECKPOINT_IDS: &[&str] = &["latest", "offline_queue"];

/// Whether `s` is UUID-shaped: 8-4-4-4-12 hex digits, in any case.
pub fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// How a name is compared with a directory id: UUIDs in lower case, anything else as is.
pub fn name_key(s: &str) -> String {
    if is_uuid(s) {
        s.to_ascii_lowercase()
    } else {
        s.to_owned()
    }
}

/// The UUID made from the first 16 bytes of SHA-256 of `text` with the version-8 and variant
/// bits set (`uuid::Builder::from_custom_bytes`), hyphenated, lower case.
pub fn derived_uuid(text: &str) -> String {
    use sha2::{Digest, Sha256};
    let h = Sha256::digest(text.as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&h[..16]);
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex = fsroot::hex(&b);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// The document id Codewhale 0.10.0 derived for a runtime thread (`thread_session_id`
/// @25ab3abc); 0.10.1 uses the thread id itself. Stores written by either exist.
pub fn thread_session_uuid(thread_id: &str) -> String {
    derived_uuid(&format!("codewhale-thread-session-v1:{thread_id}"))
}

/// Top-level entries with a fixed meaning that are never documents, stores or unknown.
pub const STRUCTURAL: &[&str] = &[
    "checkpoints",
    ".late-usage",
    ".reconcile",
    ".reconcile.lock",
    ".set-aside",
];

/// The doctor's single-flight lock, relative to S.
pub const RECONCILE_LOCK: &str = ".reconcile.lock";
/// The doctor's receipts and last summary, relative to S.
pub const RECONCILE_DIR: &str = ".reconcile";
/// Where set-aside runs live, relative to S.
pub const SET_ASIDE_DIR: &str = ".set-aside";
/// The run manifest's file name inside `.set-aside/<run>/`.
pub const MANIFEST_FILE: &str = "MANIFEST.jsonl";
/// The receipts of every run, relative to S.
pub const RECEIPTS_PATH: &str = ".reconcile/receipts.jsonl";
/// The last run's summary, relative to S (the app's `codewhale doctor` reads it).
pub const LAST_RUN_PATH: &str = ".reconcile/last.json";
/// The records of purges in progress (`<run>.json`, one per set-aside run being deleted),
/// relative to S: written before the deletion starts, removed once it is receipted.
pub const PURGE_PENDING_DIR: &str = ".reconcile/purge-pending";

/// The manifest of set-aside run `run`, relative to S.
pub fn manifest_path(run: &str) -> String {
    format!("{SET_ASIDE_DIR}/{run}/{MANIFEST_FILE}")
}
/// Live leases and tombstones, relative to S.
pub const LATE_USAGE_DIR: &str = ".late-usage";
/// The owner lock file inside a runtime store.
pub const OWNER_LOCK: &str = "runtime-process.owner.lock";

/// Whether a directory name inside a session directory names a runtime store.
pub fn is_store_name(name: &str) -> bool {
    name == "runtime" || name.starts_with("runtime-recovered-")
}

/// The seven work directories of a runtime store.
pub const WORK_DIRS: &[&str] = &[
    "threads",
    "turns",
    "items",
    "events",
    "goals",
    "agent-mail",
    "turn-operations",
];

/// Entries an artifact-only session directory may hold.
pub const ARTIFACT_ENTRIES: &[&str] = &[
    "artifacts",
    "approval_receipts.jsonl",
    "approval_receipts.lock",
];

/// Splits `text` into maximal runs of id bytes and calls `f` on each.
pub fn for_each_token(text: &[u8], mut f: impl FnMut(&[u8])) {
    let mut start = None;
    for (i, &b) in text.iter().enumerate() {
        match (is_id_byte(b), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                f(&text[s..i]);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        f(&text[s..]);
    }
}

pub use kernel::RunId;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        assert!(is_valid_id("abc-DEF_123"));
        assert!(is_valid_id(&"a".repeat(128)));
        assert!(!is_valid_id(&"a".repeat(129)));
        for bad in ["", "a.b", "a b", "..", "ä", "a/b"] {
            assert!(!is_valid_id(bad), "{bad}");
        }
    }

    #[test]
    fn uuids_and_derived_ids() {
        assert!(is_uuid("0f8fad5b-d9cb-469f-a165-70867728950e"));
        assert!(is_uuid("0F8FAD5B-D9CB-469F-A165-70867728950E"));
        assert!(!is_uuid("0f8fad5b-d9cb-469f-a165-70867728950"));
        assert!(!is_uuid("0f8fad5bxd9cb-469f-a165-70867728950e"));
        assert_eq!(
            name_key("0F8FAD5B-D9CB-469F-A165-70867728950E"),
            "0f8fad5b-d9cb-469f-a165-70867728950e"
        );
        assert_eq!(name_key("Thread-A"), "Thread-A");
        let u = thread_session_uuid("thr_0123");
        assert!(is_uuid(&u));
        assert_eq!(&u[14..15], "8", "version 8");
        assert!(
            matches!(&u[19..20], "8" | "9" | "a" | "b"),
            "RFC 4122 variant"
        );
        assert_eq!(u, thread_session_uuid("thr_0123"), "deterministic");
        assert_ne!(u, thread_session_uuid("thr_0124"));
        assert!(is_reserved_top("latest.json") && is_reserved_top("x.lock"));
        assert!(!is_reserved_top(".reconcile.lock") && !is_reserved_top("latest2.json"));
    }

    #[test]
    fn tokens_are_whole() {
        let mut seen = Vec::new();
        for_each_token(br#"{"parent_session_id":"s-1","x":"s-12 s-1"}"#, |t| {
            seen.push(String::from_utf8(t.to_vec()).unwrap())
        });
        assert_eq!(seen, ["parent_session_id", "s-1", "x", "s-12", "s-1"]);
    }
}
