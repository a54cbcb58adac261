//! What a tool call touches (`accesses`) and when two calls may not run at the same time.

use serde::{Deserialize, Serialize};

/// How a file access uses its path. `write` and `readwrite` count as writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileOperation {
    Read,
    Write,
    Readwrite,
    Search,
}

impl FileOperation {
    pub fn writes(self) -> bool {
        match self {
            FileOperation::Write | FileOperation::Readwrite => true,
            FileOperation::Read | FileOperation::Search => false,
        }
    }
}

/// One declared access of a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Access {
    File {
        operation: FileOperation,
        path: String,
        /// A recursive access also covers everything under `path`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        recursive: bool,
    },
    /// Exclusive: conflicts with every non-empty access list.
    All,
}

impl Access {
    pub fn file(operation: FileOperation, path: impl Into<String>) -> Self {
        Access::File {
            operation,
            path: path.into(),
            recursive: false,
        }
    }

    pub fn file_recursive(operation: FileOperation, path: impl Into<String>) -> Self {
        Access::File {
            operation,
            path: path.into(),
            recursive: true,
        }
    }
}

/// Paths are compared with `\` folded to `/`, repeated slashes collapsed, case folded and any
/// trailing slash removed, so the same file spelled two ways is still one file.
pub fn normalize_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut last_slash = false;
    for ch in path.chars() {
        let ch = if ch == '\\' { '/' } else { ch };
        if ch == '/' {
            if last_slash {
                continue;
            }
            last_slash = true;
        } else {
            last_slash = false;
        }
        out.extend(ch.to_lowercase());
    }
    if out.len() > 1 && out.ends_with('/') {
        out.pop();
    }
    out
}

fn covers(outer: &str, outer_recursive: bool, inner: &str) -> bool {
    if outer == inner {
        return true;
    }
    if !outer_recursive {
        return false;
    }
    let prefix = if outer.ends_with('/') {
        outer.to_owned()
    } else {
        format!("{outer}/")
    };
    inner.starts_with(&prefix)
}

/// Whether two single accesses may not run together.
pub fn access_conflict(left: &Access, right: &Access) -> bool {
    match (left, right) {
        (Access::All, _) | (_, Access::All) => true,
        (
            Access::File {
                operation: lop,
                path: lpath,
                recursive: lrec,
            },
            Access::File {
                operation: rop,
                path: rpath,
                recursive: rrec,
            },
        ) => {
            if !lop.writes() && !rop.writes() {
                return false;
            }
            let l = normalize_path(lpath);
            let r = normalize_path(rpath);
            covers(&l, *lrec, &r) || covers(&r, *rrec, &l)
        }
    }
}

/// Two access lists conflict when any pair across them conflicts; an empty list never does.
pub fn conflict(left: &[Access], right: &[Access]) -> bool {
    left.iter()
        .any(|l| right.iter().any(|r| access_conflict(l, r)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_paths() {
        assert_eq!(normalize_path("C:\\Repo\\\\A.ts/"), "c:/repo/a.ts");
        assert_eq!(normalize_path("/"), "/");
    }

    #[test]
    fn recursive_does_not_cover_prefix_sibling() {
        let l = [Access::file_recursive(FileOperation::Write, "/repo/src")];
        let r = [Access::file(FileOperation::Read, "/repo/src2/a")];
        assert!(!conflict(&l, &r));
        let r = [Access::file(FileOperation::Read, "/repo/src/a")];
        assert!(conflict(&l, &r));
    }
}
