//! Path rules shared by the file tools: resolution against the cwd, `~` expansion, the
//! workspace boundary (relative paths may not leave it, symlinks may not smuggle a path out of
//! it) and the sensitive-file matcher.

use std::path::{Component, Path, PathBuf};

use crate::context::ToolContext;
use crate::error::ToolError;

/// Whether the path is used for reading (skill roots count as workspace) or writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathUse {
    Read,
    Write,
}

/// Resolve `.`/`..` without touching the file system.
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for comp in path.components() {
        match comp {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            Component::Prefix(_) | Component::RootDir | Component::Normal(_) => out.push(comp),
        }
    }
    out
}

/// Canonicalise the deepest existing ancestor and re-attach the rest, so symlinks are followed
/// even for a file that does not exist yet.
pub fn canonicalize_lenient(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(canon) = std::fs::canonicalize(&existing) {
            let mut out = canon;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (
            existing.file_name().map(ToOwned::to_owned),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Just before a write: the planned path (canonical when it was approved) must still resolve
/// to itself. A symlink created since — by a command running in the same batch, say — would
/// otherwise carry the approved write somewhere the permission chain never saw.
pub fn check_unchanged_since_approval(planned: &Path) -> Result<(), String> {
    // The planned path was canonical, so a symlink at its end now (even a dangling one, which
    // canonicalising cannot follow) is new.
    let now = match std::fs::symlink_metadata(planned) {
        Ok(meta) if meta.file_type().is_symlink() => std::fs::read_link(planned)
            .map(|target| planned.parent().unwrap_or(planned).join(target))
            .unwrap_or_else(|_| planned.join("<symlink>")),
        _ => canonicalize_lenient(planned),
    };
    if now == planned {
        Ok(())
    } else {
        Err(format!(
            "`{}` now resolves to `{}`: a symlink on the way changed after the call was \
             approved, so nothing was written. Check the path and call the tool again.",
            planned.display(),
            now.display()
        ))
    }
}

fn expand_home(raw: &str, home: Option<&Path>) -> PathBuf {
    match (raw, home) {
        ("~", Some(home)) => home.to_path_buf(),
        (r, Some(home)) if r.starts_with("~/") => home.join(&r[2..]),
        _ => PathBuf::from(raw),
    }
}

/// The workspace roots for a use, canonicalised.
pub fn workspace_roots(ctx: &ToolContext, use_: PathUse) -> Vec<PathBuf> {
    let mut roots = vec![ctx.cwd.clone()];
    roots.extend(ctx.additional_dirs.iter().cloned());
    if use_ == PathUse::Read {
        roots.extend(ctx.skill_roots.iter().cloned());
    }
    roots.iter().map(|r| canonicalize_lenient(r)).collect()
}

fn inside(path: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|root| path.starts_with(root))
}

/// The session's working directory, canonical on the environment the tools act on.
pub fn canonical_cwd(ctx: &ToolContext) -> Result<PathBuf, ToolError> {
    if ctx.environment.is_local() {
        return Ok(canonicalize_lenient(&ctx.cwd));
    }
    let mut out = ctx
        .environment
        .canonicalize_lenient(std::slice::from_ref(&ctx.cwd))?;
    Ok(out.pop().unwrap_or_else(|| ctx.cwd.clone()))
}

/// Resolve a path argument to the canonical absolute path the tool will touch.
///
/// Rules: relative paths resolve against the cwd and must stay in the workspace; a path that is
/// in the workspace by its spelling but leaves it through a symlink is refused; absolute paths
/// outside the workspace are allowed (the permission system decides about them). On a remote
/// environment the paths are the target's, canonicalised there in one round trip.
pub fn resolve_path(ctx: &ToolContext, raw: &str, use_: PathUse) -> Result<PathBuf, ToolError> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err(ToolError::EmptyPath);
    }
    let home = if ctx.environment.is_this_machine() {
        ctx.home.as_deref()
    } else {
        ctx.environment.info().home.as_deref()
    };
    let expanded = expand_home(trimmed, home);
    let was_relative = expanded.is_relative();
    let joined = if was_relative {
        ctx.cwd.join(&expanded)
    } else {
        expanded
    };
    let lexical = normalize_lexically(&joined);
    // The spelling may use the roots as configured (possibly through a symlinked parent) or
    // their canonical form; either way the model meant "inside".
    let mut raw_roots = vec![ctx.cwd.clone()];
    raw_roots.extend(ctx.additional_dirs.iter().cloned());
    if use_ == PathUse::Read {
        raw_roots.extend(ctx.skill_roots.iter().cloned());
    }
    let (canonical, roots) = if ctx.environment.is_local() {
        (canonicalize_lenient(&lexical), workspace_roots(ctx, use_))
    } else {
        let mut batch = raw_roots.clone();
        batch.push(lexical.clone());
        let mut out = ctx.environment.canonicalize_lenient(&batch)?;
        let canonical = out.pop().unwrap_or_else(|| lexical.clone());
        (canonical, out)
    };
    let lexical_inside = inside(&lexical, &roots) || inside(&lexical, &raw_roots);
    let canonical_inside = inside(&canonical, &roots);
    if was_relative && !lexical_inside {
        return Err(ToolError::RelativeOutsideWorkspace {
            path: raw.to_owned(),
            workspace: roots
                .iter()
                .map(|r| r.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    if lexical_inside && !canonical_inside {
        return Err(ToolError::SymlinkEscape {
            path: raw.to_owned(),
            target: canonical,
        });
    }
    if is_sensitive_path(&lexical) || is_sensitive_path(&canonical) {
        return Err(ToolError::Sensitive {
            path: raw.to_owned(),
        });
    }
    Ok(canonical)
}

const KEY_NAMES: [&str; 4] = ["id_rsa", "id_ed25519", "id_ecdsa", "credentials"];
const KEY_SUFFIXES: [&str; 11] = [
    ".bak",
    ".backup",
    ".copy",
    ".disabled",
    ".key",
    ".old",
    ".orig",
    ".pem",
    ".save",
    ".tmp",
    "",
];
const ENV_EXEMPT: [&str; 3] = [".env.example", ".env.sample", ".env.template"];

/// `isSensitiveFile`: secrets and credentials the file tools refuse (case-insensitive).
pub fn is_sensitive_path(path: &Path) -> bool {
    let text = path.to_string_lossy().replace('\\', "/").to_lowercase();
    for dir in [".aws/credentials", ".gcp/credentials"] {
        if text == dir
            || text.ends_with(&format!("/{dir}"))
            || text.starts_with(&format!("{dir}/"))
            || text.contains(&format!("/{dir}/"))
        {
            return true;
        }
    }
    let base = text.rsplit('/').next().unwrap_or(&text);
    is_sensitive_name(base)
}

fn is_sensitive_name(base: &str) -> bool {
    if base == ".env" || (base.starts_with(".env.") && !ENV_EXEMPT.contains(&base)) {
        return true;
    }
    KEY_NAMES.iter().any(|name| {
        let Some(rest) = base.strip_prefix(name) else {
            return false;
        };
        rest.starts_with('-') || rest.starts_with('_') || KEY_SUFFIXES.contains(&rest)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_symlink_made_after_approval_stops_the_write() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let planned = canonicalize_lenient(&root.join("link/config.toml"));
        assert_eq!(planned, root.join("link/config.toml"));
        assert!(check_unchanged_since_approval(&planned).is_ok());
        std::fs::create_dir(root.join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(root.join("elsewhere"), root.join("link")).unwrap();
        let err = check_unchanged_since_approval(&planned).unwrap_err();
        assert!(err.contains("elsewhere"), "{err}");
        // The final component turned into a symlink is caught too.
        let file = root.join("f.txt");
        let planned = canonicalize_lenient(&file);
        std::os::unix::fs::symlink(root.join("elsewhere/x"), &file).unwrap();
        assert!(check_unchanged_since_approval(&planned).is_err());
    }

    #[test]
    fn sensitive_table() {
        let cases = [
            (".env", true),
            (".ENV", true),
            (".env.local", true),
            (".env.production", true),
            (".env.example", false),
            (".env.sample", false),
            (".env.template", false),
            (".envrc", false),
            ("id_rsa", true),
            ("ID_RSA", true),
            ("id_rsa.pub", false),
            ("id_ed25519.pub", false),
            ("id_ecdsa.pub", false),
            ("id_rsa.bak", true),
            ("id_rsa-old", true),
            ("id_ed25519_work", true),
            ("id_ecdsa.pem", true),
            ("credentials", true),
            ("credentials.json", false),
            ("credentials.orig", true),
            ("credentials_prod", true),
            ("/home/u/.aws/credentials", true),
            ("/home/u/.AWS/credentials/extra", true),
            ("/home/u/.gcp/credentials", true),
            ("/home/u/.aws/config", false),
            ("src/main.rs", false),
            ("id_rsa2", false),
        ];
        for (path, expected) in cases {
            assert_eq!(is_sensitive_path(Path::new(path)), expected, "{path}");
        }
    }

    #[test]
    fn lexical_normalization() {
        assert_eq!(
            normalize_lexically(Path::new("/a/b/../c/./d")),
            PathBuf::from("/a/c/d")
        );
    }
}
