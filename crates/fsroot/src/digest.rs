//! Content digests: SHA-256 of files, BLAKE3 of directory trees (the preconditions and
//! manifest hashes).

use std::io::{self, Read};
use std::path::{Path, PathBuf};

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

/// The digest of the directory tree at `top`: for every entry below it, in name order depth
/// first, its kind, its path relative to `top`, and for a file its size and SHA-256, for a
/// symlink its target (never followed). The walk acts on held directory handles, each checked
/// to be the directory looked at, never crosses a mount, and keeps an explicit stack, so its
/// cost is linear in the entries at any depth.
pub(crate) fn tree_digest(root: &Root, top: &Path) -> Result<TreeDigest> {
    merged_tree_digest(root, &[top])
}

/// The digest [`tree_digest`] gives a directory whose entries are those of all `tops`
/// together (their names must not overlap): what one tree split in two by an interrupted
/// entry-by-entry move digested to before the split.
pub(crate) fn merged_tree_digest(root: &Root, tops: &[&Path]) -> Result<TreeDigest> {
    merged_tree_digest_except(root, tops, None)
}

/// [`merged_tree_digest`] of the tree without its top-level entry `except`: what the tree
/// digested to before that entry was created in it.
pub(crate) fn merged_tree_digest_except(
    root: &Root,
    tops: &[&Path],
    except: Option<&std::ffi::OsStr>,
) -> Result<TreeDigest> {
    let mut hasher = blake3::Hasher::new();
    let mut out = TreeDigest {
        bytes: 0,
        entries: 0,
        tree_blake3: String::new(),
    };
    let io_err =
        |op: &'static str, at: &Path, e: io::Error| crate::Error::io(op, &root.display_path(at), e);
    struct Frame {
        dirs: Vec<(crate::sys::Dir, PathBuf)>,
        rel: PathBuf,
        names: Vec<(std::ffi::OsString, usize)>,
    }
    let mut dirs = Vec::new();
    let mut names = Vec::new();
    let mut mount = None;
    for (i, top) in tops.iter().enumerate() {
        let dir = root.open_dir_checked(top)?;
        let here = dir.mount_self().map_err(|e| io_err("inspect", top, e))?;
        if *mount.get_or_insert(here) != here {
            return Err(io_err(
                "digest",
                top,
                io::Error::other("it is on another mount than the rest of the tree"),
            ));
        }
        names.extend(
            root.sorted_names(&dir, top)?
                .into_iter()
                .filter(|n| Some(n.as_os_str()) != except)
                .map(|n| (n, i)),
        );
        dirs.push((dir, top.to_path_buf()));
    }
    let Some(mount) = mount else {
        return Err(crate::Error::escape(Path::new("")));
    };
    // Popped from the back: entries go in name order.
    names.sort_by(|a, b| b.0.cmp(&a.0));
    if let Some(w) = names.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(io_err(
            "digest",
            &dirs[w[1].1].1.join(&w[1].0),
            io::Error::other("the same name is in more than one part of the tree"),
        ));
    }
    let mut stack = vec![Frame {
        dirs,
        rel: PathBuf::new(),
        names,
    }];
    while let Some(frame) = stack.last_mut() {
        let Some((name, i)) = frame.names.pop() else {
            stack.pop();
            if !stack.is_empty() {
                // The end of a directory's entry comes after its children.
                hasher.update(b"\n");
            }
            continue;
        };
        let (dir, at) = &frame.dirs[i];
        let child = frame.rel.join(&name);
        let full = at.join(&name);
        let meta = dir.stat(&name).map_err(|e| io_err("inspect", &full, e))?;
        let kind = meta.kind;
        out.entries += 1;
        let tag: &[u8] = match kind {
            EntryKind::File => b"f",
            EntryKind::Dir => b"d",
            EntryKind::Symlink => b"l",
            EntryKind::Other => b"o",
        };
        hasher.update(tag);
        hasher.update(b"\0");
        hasher.update(&portable_bytes(&child));
        hasher.update(b"\0");
        match kind {
            EntryKind::File => {
                let f = dir
                    .open_file(&name, &crate::sys::FileOpts::read())
                    .map_err(|e| io_err("hash", &full, e))?;
                let d = file_digest(f).map_err(|e| io_err("hash", &full, e))?;
                out.bytes += d.bytes;
                hasher.update(d.bytes.to_string().as_bytes());
                hasher.update(b"\0");
                hasher.update(d.sha256.as_bytes());
            }
            EntryKind::Dir => {
                let here = dir.mount(&name).map_err(|e| io_err("inspect", &full, e))?;
                if here != mount {
                    return Err(io_err(
                        "digest",
                        &full,
                        io::Error::other("it is a mount point, never crossed"),
                    ));
                }
                let sub = root.open_checked(dir, &name, &meta, &full)?;
                let names = root
                    .sorted_names(&sub, &full)?
                    .into_iter()
                    .map(|n| (n, 0))
                    .collect();
                stack.push(Frame {
                    dirs: vec![(sub, full)],
                    rel: child,
                    names,
                });
                // Its "\n" is written when its frame ends.
                continue;
            }
            EntryKind::Symlink => {
                let target = dir
                    .read_link(&name)
                    .map_err(|e| io_err("read link", &full, e))?;
                hasher.update(target.as_os_str().as_encoded_bytes());
            }
            EntryKind::Other => {}
        }
        hasher.update(b"\n");
    }
    out.tree_blake3 = hasher.finalize().to_hex().to_string();
    Ok(out)
}

/// The bytes a digest hashes for the relative path `p`: its components joined with `/` on
/// every OS, so a tree digests the same on Windows as on Unix.
fn portable_bytes(p: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, c) in p.components().enumerate() {
        if i > 0 {
            out.push(b'/');
        }
        out.extend_from_slice(c.as_os_str().as_encoded_bytes());
    }
    out
}
