//! Targets `id_tokens`, `duration`, `run_id` and `temp_name`: the small parsers of names and
//! values (`store::ids`, `store::time`, `fsroot::temp`).

use std::time::Duration;

use store::ids::{for_each_token, is_id_byte, is_uuid, is_valid_id, name_key, RunId};
use store::time::parse_duration;
use store::Timestamp;

/// The id tokenizer over `data`: asserts the tokens are, in order, exactly the maximal runs of
/// id bytes (each non-empty, bounded by the text's ends or by non-id bytes, together every id
/// byte once); that a token is a valid id exactly when it is at most 128 bytes; and that the
/// whole text is a valid id exactly when it is one such token. A UUID-shaped id keys in lower
/// case.
pub fn id_tokens(data: &[u8]) {
    let base = data.as_ptr() as usize;
    let mut next = 0usize;
    let mut tokens = 0usize;
    let mut covered = 0usize;
    for_each_token(data, |t| {
        let at = t.as_ptr() as usize - base;
        assert!(!t.is_empty(), "an empty token");
        assert!(at >= next, "tokens out of order or overlapping");
        assert!(
            t.iter().all(|b| is_id_byte(*b)),
            "a token with a non-id byte"
        );
        assert!(
            data[next..at].iter().all(|b| !is_id_byte(*b)),
            "an id byte skipped"
        );
        assert!(
            at == 0 || !is_id_byte(data[at - 1]),
            "a token not maximal at its start"
        );
        let end = at + t.len();
        assert!(
            end == data.len() || !is_id_byte(data[end]),
            "a token not maximal at its end"
        );
        let s = std::str::from_utf8(t).expect("id bytes are ASCII");
        assert_eq!(is_valid_id(s), t.len() <= 128, "{s:?}");
        next = end;
        tokens += 1;
        covered += t.len();
    });
    assert!(
        data[next..].iter().all(|b| !is_id_byte(*b)),
        "an id byte skipped at the end"
    );
    assert_eq!(covered, data.iter().filter(|b| is_id_byte(**b)).count());
    if let Ok(s) = std::str::from_utf8(data) {
        let whole = tokens == 1 && covered == data.len() && data.len() <= 128;
        assert_eq!(is_valid_id(s), whole, "{s:?}");
        if is_uuid(s) {
            assert!(is_valid_id(s));
            assert_eq!(name_key(s), s.to_ascii_lowercase());
        } else {
            assert_eq!(name_key(s), s);
        }
    }
}

/// `--older-than` and the other duration flags: asserts an accepted duration is whole seconds
/// from 0 on, that `<n>s` and the duration written back by `humantime` parse to the same
/// seconds, and that a bare number (no unit) is refused.
pub fn duration(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let Some(secs) = parse_duration(s) else {
        return;
    };
    assert!(secs >= 0, "{s:?} is {secs}s");
    assert!(
        !s.trim().bytes().all(|b| b.is_ascii_digit()),
        "a bare number {s:?} was accepted"
    );
    assert_eq!(parse_duration(&format!("{secs}s")), Some(secs));
    let written = humantime::format_duration(Duration::from_secs(secs as u64)).to_string();
    assert_eq!(parse_duration(&written), Some(secs), "{written:?}");
}

/// RFC 3339 timestamps and run ids: asserts a parsed instant written back parses to itself
/// (for years 0 to 9999, which the four-digit form can hold), that a run id made at it is valid,
/// and that a valid run id's time is read as `--purge-set-aside` reads it, without a panic.
pub fn run_id(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(t) = Timestamp::parse(s) {
        let min = Timestamp::parse("0000-01-01T00:00:00Z").expect("year 0");
        let max = Timestamp::parse("9999-12-31T23:59:59Z").expect("year 9999");
        if (min..=max).contains(&t) {
            assert_eq!(Timestamp::parse(&t.to_string()), Some(t), "{s:?} as {t}");
            let id = RunId::new(t);
            assert!(RunId::is_valid(&id.0), "{id:?}");
            assert!(id.0.starts_with(&t.compact()));
        }
    }
    if RunId::is_valid(s) {
        let time = format!(
            "{}-{}-{}T{}:{}:{}Z",
            &s[0..4],
            &s[4..6],
            &s[6..8],
            &s[9..11],
            &s[11..13],
            &s[13..15]
        );
        if let Some(t) = Timestamp::parse(&time) {
            assert!(RunId::is_valid(&format!("{}-{}", t.compact(), &s[17..])));
        }
    }
}

/// The names of the doctor's temporary files: asserts a name is a temporary file's exactly
/// when it has a target; that the name made for that target (any pid, any counter) reads back
/// as the same target and is this process's own only under its pid; and that the name made for
/// the input itself as a target reads back as the input.
pub fn temp_name(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let target = fsroot::temp::target(s);
    assert_eq!(fsroot::temp::is_temp(s), target.is_some());
    if let Some(t) = target {
        assert!(!t.is_empty());
        assert!(s.len() > t.len() + 1);
        let mine = fsroot::temp::name(t.as_ref(), std::process::id(), 9);
        let mine = mine.to_str().expect("UTF-8 in, UTF-8 out");
        assert_eq!(fsroot::temp::target(mine), Some(t));
        assert!(fsroot::temp::is_own(mine));
        let other = fsroot::temp::name(t.as_ref(), std::process::id().wrapping_add(1), 0);
        assert!(!fsroot::temp::is_own(other.to_str().expect("UTF-8")));
    }
    if !s.is_empty() {
        let made = fsroot::temp::name(s.as_ref(), 1, u64::MAX);
        assert_eq!(
            fsroot::temp::target(made.to_str().expect("UTF-8")),
            Some(s),
            "the name made for {s:?}"
        );
    }
}
