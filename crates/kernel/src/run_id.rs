//! Run ids: `YYYYMMDDTHHMMSSZ-<6 hex>`, the name of every run a pack records.

/// A run id, `YYYYMMDDTHHMMSSZ-<6 hex>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunId(pub String);

impl RunId {
    /// A fresh run id at `now`: the time, then six hex digits unique to this process and call.
    // The system clock only seeds the random part; the time in the id is `now`.
    #[allow(clippy::disallowed_methods)]
    pub fn new(now: crate::time::Timestamp) -> RunId {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let mut h = blake3::Hasher::new();
        h.update(&std::process::id().to_le_bytes());
        h.update(&nanos.to_le_bytes());
        h.update(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
        let hex = h.finalize().to_hex();
        RunId(format!("{}-{}", now.compact(), &hex[..6]))
    }

    /// Whether `s` has the shape of a run id.
    pub fn is_valid(s: &str) -> bool {
        let b = s.as_bytes();
        b.len() == 23
            && b[8] == b'T'
            && b[15] == b'Z'
            && b[16] == b'-'
            && b[..8].iter().chain(&b[9..15]).all(u8::is_ascii_digit)
            && b[17..]
                .iter()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_run_id_is_valid_and_names_its_second() {
        let t = crate::time::Timestamp::parse("2026-12-02T06:56:19Z").unwrap();
        let a = RunId::new(t);
        assert!(RunId::is_valid(&a.0), "{}", a.0);
        assert!(a.0.starts_with("20261202T065619Z-"), "{}", a.0);
        assert_ne!(RunId::new(t), a, "two calls, two ids");
        for bad in [
            "20261202T065619Z-abcdeg",
            "20261202T065619Z_abcdef",
            "20261202T065619Z-abcde",
        ] {
            assert!(!RunId::is_valid(bad), "{bad}");
        }
    }
}
