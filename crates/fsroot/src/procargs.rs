//! Parsing what macOS's process interfaces return, kept apart from the system calls
//! (`macproc.rs`) so it is tested on every OS on captured bytes: the `KERN_PROCARGS2` buffer
//! (argument count, executable path, argv, environment) and the NUL-terminated paths of
//! `proc_pidinfo`'s vnode records.

use std::ffi::OsString;
use std::path::PathBuf;

/// The argv and environment of a `KERN_PROCARGS2` buffer: a native-endian `i32` argument
/// count, the executable path and its NUL padding, `argc` NUL-terminated arguments, then the
/// NUL-terminated `KEY=value` entries up to an empty one (the "apple" strings that follow it
/// are not the environment). `None` when the buffer is shorter than its count says.
pub fn parse_procargs2(buf: &[u8]) -> Option<(Vec<OsString>, Vec<OsString>)> {
    let argc = i32::from_ne_bytes(buf.get(..4)?.try_into().ok()?);
    let argc = usize::try_from(argc).ok()?;
    let mut at = 4;
    // The executable path, then the NULs that pad it.
    at += buf.get(at..)?.iter().position(|b| *b == 0)?;
    while buf.get(at) == Some(&0) {
        at += 1;
    }
    let mut next = |buf: &[u8]| -> Option<Vec<u8>> {
        let rest = buf.get(at..)?;
        let end = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
        if end == 0 && rest.is_empty() {
            return None;
        }
        at += end + 1;
        Some(rest[..end].to_vec())
    };
    let mut argv = Vec::with_capacity(argc);
    for _ in 0..argc {
        argv.push(os(next(buf)?));
    }
    let mut environ = Vec::new();
    while let Some(entry) = next(buf) {
        if entry.is_empty() {
            break;
        }
        environ.push(os(entry));
    }
    Some((argv, environ))
}

/// The path in a fixed-size, NUL-terminated buffer (`vip_path`); `None` when it is empty.
pub fn nul_terminated_path(buf: &[u8]) -> Option<PathBuf> {
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    (end > 0).then(|| PathBuf::from(os(buf[..end].to_vec())))
}

/// The bytes as an OS string, invalid UTF-8 replaced: the liveness index compares paths in
/// their Unicode form anyway (`engine::liveness`), so nothing it matches is lost.
fn os(bytes: Vec<u8>) -> OsString {
    OsString::from(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The buffer of `go build ./...` run from a shell, as macOS returns it: the count, the
    /// executable path padded with NULs, the arguments, the environment, the empty entry, then
    /// the apple strings.
    fn captured() -> Vec<u8> {
        let mut b = 3i32.to_ne_bytes().to_vec();
        b.extend(b"/usr/local/go/bin/go\0\0\0\0\0\0");
        b.extend(b"go\0build\0-o=/private/var/folders/x/T/go-build1/b001/exe\0");
        b.extend(b"PATH=/usr/bin:/bin\0GOTMPDIR=/private/tmp/gotmp\0\0");
        b.extend(b"executable_path=/usr/local/go/bin/go\0ptr_munge=\0\0\0");
        b
    }

    #[test]
    fn procargs2_gives_argv_and_the_environment_but_not_the_apple_strings() {
        let (argv, environ) = parse_procargs2(&captured()).unwrap();
        assert_eq!(
            argv,
            [
                "go",
                "build",
                "-o=/private/var/folders/x/T/go-build1/b001/exe"
            ]
        );
        assert_eq!(
            environ,
            ["PATH=/usr/bin:/bin", "GOTMPDIR=/private/tmp/gotmp"]
        );
    }

    #[test]
    fn a_short_or_odd_buffer_gives_what_it_holds_or_none() {
        let b = captured();
        // Cut inside the arguments: fewer than argc.
        assert_eq!(parse_procargs2(&b[..30]), None);
        assert_eq!(parse_procargs2(&[1, 0]), None);
        assert_eq!(parse_procargs2(&(-1i32).to_ne_bytes()), None);
        // No environment at all, and no closing entry.
        let mut none = 1i32.to_ne_bytes().to_vec();
        none.extend(b"/bin/sh\0sh\0");
        assert_eq!(
            parse_procargs2(&none),
            Some((vec![OsString::from("sh")], vec![]))
        );
        // The end of the buffer ends the environment.
        let mut open = none.clone();
        open.extend(b"A=1");
        assert_eq!(parse_procargs2(&open).unwrap().1, ["A=1"]);
    }

    #[test]
    fn a_vnode_path_is_read_up_to_its_nul() {
        let mut buf = [0u8; 1024];
        buf[..23].copy_from_slice(b"/private/tmp/go-build12");
        assert_eq!(
            nul_terminated_path(&buf),
            Some(PathBuf::from("/private/tmp/go-build12"))
        );
        assert_eq!(nul_terminated_path(&[0; 16]), None);
        assert_eq!(nul_terminated_path(b"/x"), Some(PathBuf::from("/x")));
    }
}
