//! Which session-directory ids a document's text names: UUID-shaped windows looked up as 128
//! bits, other ids through one automaton, never inside a digest-like token.

use std::collections::{BTreeSet, HashMap, HashSet};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder};

use crate::ids;

/// Finds which session-directory ids a document's text names: a UUID-shaped id in any case,
/// any other id as a substring (the app's rule, codewhale-format.md §9.7 step 6; it errs toward
/// keeping), except a substring strictly inside a digest-like token ([`digest_spans`]): hex
/// digests and UUIDs are names of bytes, not text that names a session, and matching inside
/// them made a rerun after a kill keep a directory the uninterrupted run set aside (the
/// digests of a document R3 wrote in the killed run; issue 21). UUIDs are found by their shape:
/// every 36-byte window whose ninth byte is a hyphen is checked against the 8-4-4-4-12 pattern
/// and looked up as 128 bits, so the cost is one pass over the text whatever the number of ids. Other ids, usually few, go through one
/// Aho-Corasick automaton.
pub(crate) struct NameMatcher {
    uuids: HashMap<u128, Vec<String>>,
    pub(crate) others: Option<(AhoCorasick, Vec<String>)>,
    /// Ids whose automaton could not be built: every document names them (fails closed).
    unmatched: Vec<String>,
}

/// The 128 bits of a UUID-shaped window (`8-4-4-4-12` hex digits, any case).
pub(crate) fn uuid_bits(w: &[u8]) -> Option<u128> {
    if w.len() != 36 {
        return None;
    }
    let mut n: u128 = 0;
    for (i, &c) in w.iter().enumerate() {
        if matches!(i, 8 | 13 | 18 | 23) {
            if c != b'-' {
                return None;
            }
            continue;
        }
        let d = (c as char).to_digit(16)?;
        n = (n << 4) | u128::from(d);
    }
    Some(n)
}

impl NameMatcher {
    pub(crate) fn new(ids: &[String]) -> NameMatcher {
        let mut uuids: HashMap<u128, Vec<String>> = HashMap::new();
        let mut others = Vec::new();
        for id in ids {
            match uuid_bits(id.as_bytes()).filter(|_| ids::is_uuid(id)) {
                Some(n) => uuids.entry(n).or_default().push(id.clone()),
                None => others.push(id.clone()),
            }
        }
        let mut unmatched = Vec::new();
        let others = if others.is_empty() {
            None
        } else {
            match AhoCorasickBuilder::new().build(&others) {
                Ok(ac) => Some((ac, others)),
                Err(e) => {
                    tracing::warn!(
                        "cannot match names in documents ({e}): every id counts as named"
                    );
                    unmatched = others;
                    None
                }
            }
        };
        NameMatcher {
            uuids,
            others,
            unmatched,
        }
    }

    /// What [`NameMatcher::named`] gives for a text whose UUID-shaped windows are `uuids`
    /// ([`uuid_windows`]) and whose matches among the non-UUID ids are `others`.
    pub(crate) fn named_from(
        &self,
        uuids: &[u128],
        others: &[std::sync::Arc<str>],
    ) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = self.unmatched.iter().cloned().collect();
        for bits in uuids {
            if let Some(found) = self.uuids.get(bits) {
                out.extend(found.iter().cloned());
            }
        }
        if let Some((_, pats)) = &self.others {
            out.extend(
                others
                    .iter()
                    .filter(|o| pats.iter().any(|p| p.as_str() == &***o))
                    .map(|o| o.to_string()),
            );
        }
        out
    }

    /// The ids of `named` that are matched as substrings (not UUIDs).
    pub(crate) fn others_among(&self, named: &BTreeSet<String>) -> Vec<std::sync::Arc<str>> {
        match &self.others {
            Some((_, pats)) => pats
                .iter()
                .filter(|p| named.contains(*p))
                .map(|p| std::sync::Arc::from(p.as_str()))
                .collect(),
            None => Vec::new(),
        }
    }

    pub(crate) fn named(&self, text: &[u8]) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = self.unmatched.iter().cloned().collect();
        if !self.uuids.is_empty() {
            for p in memchr::memchr_iter(b'-', text) {
                let Some(start) = p.checked_sub(8) else {
                    continue;
                };
                let Some(bits) = text.get(start..start + 36).and_then(uuid_bits) else {
                    continue;
                };
                if let Some(found) = self.uuids.get(&bits) {
                    out.extend(found.iter().cloned());
                }
            }
        }
        if let Some((ac, pats)) = &self.others {
            let mut seen = HashSet::new();
            // Computed at the first match only: most documents name no other id at all.
            let mut spans: Option<Vec<(usize, usize)>> = None;
            for m in ac.find_overlapping_iter(text) {
                if seen.contains(&m.pattern()) {
                    continue;
                }
                let spans = spans.get_or_insert_with(|| digest_spans(text));
                if inside_a_digest(spans, m.start(), m.end()) {
                    continue;
                }
                seen.insert(m.pattern());
                out.insert(pats[m.pattern().as_usize()].clone());
            }
        }
        out
    }
}

/// Every UUID-shaped window of `text` (`8-4-4-4-12` hex digits, any case), as 128 bits,
/// sorted and distinct: what a document's text can name of any session directory.
pub(crate) fn uuid_windows(text: &[u8]) -> Vec<u128> {
    let mut out: Vec<u128> = memchr::memchr_iter(b'-', text)
        .filter_map(|p| {
            let start = p.checked_sub(8)?;
            text.get(start..start + 36).and_then(uuid_bits)
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The shortest run of hex digits taken for a digest: an MD5 in hex (SHA-256 and BLAKE3 are 64).
const DIGEST_MIN_HEX: usize = 32;

/// The digest-like tokens of `text`, as sorted, disjoint `[start, end)` spans: every maximal
/// run of at least [`DIGEST_MIN_HEX`] ASCII hex digits, and every UUID-shaped window
/// (`8-4-4-4-12` hex digits, any case) whose first group is a whole run of hex digits.
fn digest_spans(text: &[u8]) -> Vec<(usize, usize)> {
    let hex = |c: u8| c.is_ascii_hexdigit();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if !hex(text[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < text.len() && hex(text[i]) {
            i += 1;
        }
        if i - start >= DIGEST_MIN_HEX {
            spans.push((start, i));
        } else if i - start == 8 && text.get(start..start + 36).and_then(uuid_bits).is_some() {
            spans.push((start, start + 36));
            i = start + 36;
        }
    }
    spans
}

/// Whether `[start, end)` lies inside one span of `spans` without being all of it: a name
/// that is a whole digest-like token still counts.
fn inside_a_digest(spans: &[(usize, usize)], start: usize, end: usize) -> bool {
    let at = spans.partition_point(|&(_, e)| e <= start);
    spans
        .get(at)
        .is_some_and(|&(s, e)| s <= start && end <= e && (s, e) != (start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_names_match_in_any_case_and_other_ids_as_substrings() {
        let ids = vec![
            "0F8FAD5B-D9CB-469F-A165-70867728950E".to_owned(),
            "build".to_owned(),
            "zzz".to_owned(),
        ];
        let m = NameMatcher::new(&ids);
        let named = m.named(b"see 0f8fad5b-d9cb-469f-a165-70867728950e and rebuilding");
        assert_eq!(
            named.into_iter().collect::<Vec<_>>(),
            ["0F8FAD5B-D9CB-469F-A165-70867728950E", "build"]
        );
        // Inside a longer token too (a substring), and only a whole UUID shape counts.
        let named = m.named(b"sess-a0f8fad5b-d9cb-469f-a165-70867728950eff");
        assert_eq!(
            named.into_iter().collect::<Vec<_>>(),
            ["0F8FAD5B-D9CB-469F-A165-70867728950E"]
        );
        assert!(m
            .named(b"0f8fad5b-d9cb-469f-a165-70867728950 0f8fad5b-d9cb-469f-a165_70867728950e")
            .is_empty());
    }

    /// Issue 21: a non-UUID id inside a hex digest or a UUID is not a name (a document R3 wrote
    /// in a killed run must not keep what the uninterrupted run set aside); the same id as
    /// text, or an id that is a whole digest-like token, still is.
    #[test]
    fn other_ids_inside_digests_and_uuids_are_not_names() {
        let sha = "5e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85";
        let whole = "0123456789abcdef0123456789abcdef";
        let ids: Vec<String> = ["c1c149af", "d9cb", "1", whole, "build"]
            .map(str::to_owned)
            .to_vec();
        let m = NameMatcher::new(&ids);
        let names = |text: &str| m.named(text.as_bytes()).into_iter().collect::<Vec<_>>();
        let digests = format!(
            r#"{{"messages_sha256":"{sha}","id":"0f8fad5b-d9cb-469f-a165-70867728950e","n":"{}"}}"#,
            whole.to_uppercase().repeat(2)
        );
        assert_eq!(names(&digests), Vec::<String>::new(), "{digests}");
        // The same ids as text name their directories.
        assert_eq!(
            names(&format!("{digests} see c1c149af, d9cb-2 and build 1")),
            ["1", "build", "c1c149af", "d9cb"]
        );
        // A whole token, even one shaped like a digest, is a name.
        assert_eq!(names(&format!("x {whole} y")), [whole]);
        // A short hex run is no digest: an id inside it still counts (the app's substring rule).
        assert_eq!(names("ref abc1c149af0"), ["1", "c1c149af"]);
    }

    #[test]
    fn many_uuid_names_cost_one_pass() {
        let ids: Vec<String> = (0..5000u32)
            .map(|i| format!("{i:08x}-0000-4000-8000-000000000000"))
            .collect();
        let m = NameMatcher::new(&ids);
        let text = format!("x {} y {}", ids[4999].to_uppercase(), ids[7]);
        assert_eq!(
            m.named(text.as_bytes()).into_iter().collect::<Vec<_>>(),
            [ids[7].clone(), ids[4999].clone()]
        );
    }

    #[test]
    fn uuid_windows_are_found_in_any_case_once_each() {
        let text =
            b"x 5E2F3B1C-0A4D-4C8E-9F10-6B7D8E9FA0B1 y 5e2f3b1c-0a4d-4c8e-9f10-6b7d8e9fa0b1 \
                     -- 12345678-aaaa-bbbb-cccc-dddddddddddd";
        let found = uuid_windows(text);
        assert_eq!(found.len(), 2, "{found:x?}");
        assert!(found.contains(&0x5e2f3b1c_0a4d_4c8e_9f10_6b7d8e9fa0b1));
    }
}
