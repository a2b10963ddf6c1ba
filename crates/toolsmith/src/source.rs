//! Reading catalogs from disk: the filesystem side of `toolsmith_core::CatalogSource`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use toolsmith_core::{Catalog, CatalogSource, catalog};

/// Files under one folder (the entry catalog's), and the process environment.
pub struct FsSource {
    root: PathBuf,
}

impl CatalogSource for FsSource {
    fn read(&self, path: &str) -> Result<String, String> {
        let full = self.root.join(path);
        // The loader refuses `..` and absolute paths; a symlink could still point outside.
        let real = full
            .canonicalize()
            .map_err(|e| format!("{}: {e}", full.display()))?;
        if !real.starts_with(&self.root) {
            return Err(format!(
                "{} resolves to {}, outside the catalog's folder {}",
                full.display(),
                real.display(),
                self.root.display()
            ));
        }
        std::fs::read_to_string(&real).map_err(|e| format!("{}: {e}", full.display()))
    }

    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

/// Loads the catalog at `path`; on problems the error lists every one.
pub fn load_catalog(path: &Path) -> Result<Catalog> {
    let full = path
        .canonicalize()
        .with_context(|| format!("cannot open catalog {}", path.display()))?;
    if full.is_dir() {
        bail!(
            "{} is a directory; give the catalog file (for example {}/catalog.yaml)",
            path.display(),
            path.display()
        );
    }
    let root = full
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    let entry = full
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let src = FsSource { root };
    catalog::load(&entry, &src)
        .map_err(|errors| anyhow::anyhow!("{}", errors.to_string().trim_end()))
}

/// The process environment and no files: for definitions made in memory (an OpenAPI import).
pub struct EnvSource;

impl CatalogSource for EnvSource {
    fn read(&self, path: &str) -> Result<String, String> {
        Err(format!("this definition reads no files ({path})"))
    }

    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}
