//! Workspace confinement: every path a file built-in touches is resolved here, and refused
//! with the rule that refused it.
//!
//! Rules, in order: no NUL; no `..` component; an absolute path must lie inside the root;
//! the canonical path (every symlink followed) must lie inside the root. For paths that do
//! not exist yet, the nearest existing ancestor is canonicalised instead.

use std::path::{Component, Path, PathBuf};

/// The folder file built-ins are confined to.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// `root` must exist; it is canonicalised once.
    pub fn new(root: &Path) -> Result<Self, String> {
        let root = root
            .canonicalize()
            .map_err(|e| format!("workspace {}: {e}", root.display()))?;
        if !root.is_dir() {
            return Err(format!("workspace {} is not a directory", root.display()));
        }
        Ok(Self { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The path relative to the root, for results shown to models.
    pub fn relative(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => path.to_string_lossy().into_owned(),
        }
    }

    /// Resolves `path` (relative to the root, or absolute inside it) to a canonical path
    /// inside the workspace. `must_exist: false` allows a path whose last components do not
    /// exist yet (for writing).
    pub fn resolve(&self, path: &str, must_exist: bool) -> Result<PathBuf, String> {
        if path.contains('\0') {
            return Err(format!("{path:?} refused: paths cannot contain NUL bytes"));
        }
        let p = Path::new(path);
        if p.components().any(|c| c == Component::ParentDir) {
            return Err(format!(
                "{path:?} refused: `..` is not allowed in paths (rule: no parent references)"
            ));
        }
        let joined = if p.is_absolute() {
            if !p.starts_with(&self.root) {
                return Err(format!(
                    "{path:?} refused: absolute path outside the workspace {} (rule: absolute paths must be inside the workspace)",
                    self.root.display()
                ));
            }
            p.to_path_buf()
        } else {
            self.root.join(p)
        };
        // Canonicalise the longest existing prefix; the rest must not exist yet.
        let mut existing = joined.as_path();
        let mut rest = Vec::new();
        let canonical = loop {
            match existing.canonicalize() {
                Ok(c) => break c,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    if must_exist {
                        return Err(format!("{path:?} does not exist in the workspace"));
                    }
                    match (existing.parent(), existing.file_name()) {
                        (Some(parent), Some(name)) => {
                            rest.push(name.to_owned());
                            existing = parent;
                        }
                        _ => return Err(format!("{path:?} does not exist in the workspace")),
                    }
                }
                Err(e) => return Err(format!("{path:?}: {e}")),
            }
        };
        if !canonical.starts_with(&self.root) {
            return Err(format!(
                "{path:?} refused: it resolves through a symlink to {}, outside the workspace (rule: symlinks may not leave the workspace)",
                canonical.display()
            ));
        }
        let mut full = canonical;
        for name in rest.into_iter().rev() {
            full.push(name);
        }
        Ok(full)
    }
}
