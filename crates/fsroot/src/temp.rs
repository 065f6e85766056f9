//! The name of the doctor's temporary files, which this crate writes (an atomic write goes to
//! `.<target>.doctor-tmp-<pid>-<n>` beside its target, then is renamed onto it) and which the
//! scan and the housekeeping recognize: the one place that pattern is spelled.

/// The infix of a temporary file's name.
const INFIX: &str = ".doctor-tmp-";

/// The temporary name for `target` written by process `pid` as its `n`th write.
pub fn name(target: &std::ffi::OsStr, pid: u32, n: u64) -> std::ffi::OsString {
    let mut tmp = std::ffi::OsString::from(".");
    tmp.push(target);
    tmp.push(format!("{INFIX}{pid}-{n}"));
    tmp
}

/// Whether a file name is exactly a temporary file of the doctor's atomic write,
/// `.<target>.doctor-tmp-<pid>-<n>`, and if so the target's name.
pub fn target(name: &str) -> Option<&str> {
    parts(name).map(|(target, _, _)| target)
}

/// Whether a file name is a temporary file of the doctor's atomic write.
pub fn is_temp(name: &str) -> bool {
    parts(name).is_some()
}

/// Whether a file name is a temporary file this very process is writing.
pub fn is_own(name: &str) -> bool {
    parts(name).is_some_and(|(_, pid, _)| pid == std::process::id())
}

/// Whether the process that wrote a temporary file is still alive (its process id names a
/// running process; where that cannot be told, it is taken as alive): its write may be in
/// flight, so the file is not an interrupted one. A name that is no temporary file's is not
/// alive. A process id reused by another process keeps the file, which is safe.
pub fn writer_alive(name: &str) -> bool {
    parts(name).is_some_and(|(_, pid, _)| crate::sys::process_alive(pid).unwrap_or(true))
}

/// Target, pid and counter of a temporary file's name.
fn parts(name: &str) -> Option<(&str, u32, u64)> {
    let rest = name.strip_prefix('.')?;
    let at = rest.rfind(INFIX)?;
    let (target, suffix) = (&rest[..at], &rest[at + INFIX.len()..]);
    let (pid, n) = suffix.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if target.is_empty() || !digits(pid) || !digits(n) {
        return None;
    }
    Some((target, pid.parse().ok()?, n.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_are_exact() {
        assert_eq!(target(".a.json.doctor-tmp-42-0"), Some("a.json"));
        assert_eq!(target(".last.json.doctor-tmp-1-17"), Some("last.json"));
        for not in [
            ".my.doctor-tmp-notes",
            "a.json.doctor-tmp-1-2",
            "..doctor-tmp-1-2",
            ".a.json.doctor-tmp-1",
            ".a.json.doctor-tmp-x-1",
            ".a.json.doctor-tmp-1-2-3",
        ] {
            assert!(!is_temp(not), "{not}");
        }
        let mine = name("a.json".as_ref(), std::process::id(), 3);
        let mine = mine.to_str().unwrap();
        assert_eq!(target(mine), Some("a.json"));
        assert!(is_own(mine));
        assert!(!is_own(".a.json.doctor-tmp-0-3"));
        assert!(writer_alive(mine), "this process is alive");
        #[cfg(unix)] // init; Windows has no process that is always pid 1
        assert!(writer_alive(".a.json.doctor-tmp-1-3"), "pid 1 is alive");
        assert!(!writer_alive(&format!(".a.json.doctor-tmp-{}-3", u32::MAX)));
        assert!(!writer_alive("a.json"));
    }
}
