//! Content digests: SHA-256 of files, BLAKE3 of directory trees (the preconditions and
//! manifest hashes).

use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::{EntryKind, Result, Root};

/// Size and SHA-256 (lowercase hex) of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDigest {
    /// Size in bytes.
    pub bytes: u64,
    /// Lowercase hex SHA-256.
    pub sha256: String,
}

/// Digest of a directory tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeDigest {
    /// Sum of the sizes of the regular files.
    pub bytes: u64,
    /// Number of entries below the directory.
    pub entries: u64,
    /// Lowercase hex BLAKE3 of the sorted listing (path, kind, size, content hash).
    pub tree_blake3: String,
}

/// Lowercase hex of a byte slice.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

pub(crate) fn file_digest(mut f: impl Read) -> io::Result<FileDigest> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut bytes = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        bytes += n as u64;
        h.update(&buf[..n]);
    }
    Ok(FileDigest {
        bytes,
        sha256: hex(&h.finalize()),
    })
}

pub(crate) fn tree_digest(root: &Root, top: &Path) -> Result<TreeDigest> {
    let mut hasher = blake3::Hasher::new();
    let mut out = TreeDigest {
        bytes: 0,
        entries: 0,
        tree_blake3: String::new(),
    };
    walk(root, top, Path::new(""), &mut hasher, &mut out)?;
    out.tree_blake3 = hasher.finalize().to_hex().to_string();
    Ok(out)
}

fn walk(
    root: &Root,
    top: &Path,
    rel: &Path,
    hasher: &mut blake3::Hasher,
    out: &mut TreeDigest,
) -> Result<()> {
    for entry in root.list(&top.join(rel))? {
        let child = rel.join(&entry.name);
        let full = top.join(&child);
        out.entries += 1;
        let tag: &[u8] = match entry.kind {
            EntryKind::File => b"f",
            EntryKind::Dir => b"d",
            EntryKind::Symlink => b"l",
            EntryKind::Other => b"o",
        };
        hasher.update(tag);
        hasher.update(b"\0");
        hasher.update(child.as_os_str().as_bytes());
        hasher.update(b"\0");
        match entry.kind {
            EntryKind::File => {
                let d = root.file_digest(&full)?;
                out.bytes += d.bytes;
                hasher.update(d.bytes.to_string().as_bytes());
                hasher.update(b"\0");
                hasher.update(d.sha256.as_bytes());
            }
            EntryKind::Dir => walk(root, top, &child, hasher, out)?,
            EntryKind::Symlink => {
                let target = root.read_link(&full)?;
                hasher.update(target.as_os_str().as_bytes());
            }
            EntryKind::Other => {}
        }
        hasher.update(b"\n");
    }
    Ok(())
}
