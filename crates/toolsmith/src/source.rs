//! Reading catalogs from disk: the filesystem side of `toolsmith_core::CatalogSource`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use toolsmith_core::catalog::ReadError;
use toolsmith_core::{Catalog, CatalogSource, catalog};

/// Files under one folder (the entry catalog's), and the process environment.
pub struct FsSource {
    root: PathBuf,
}

impl CatalogSource for FsSource {
    fn read(&self, path: &str) -> Result<String, ReadError> {
        let full = self.root.join(path);
        let io = |e: std::io::Error| ReadError::Io {
            path: full.display().to_string(),
            error: e.to_string(),
        };
        // The loader refuses `..` and absolute paths; a symlink could still point outside.
        let real = full.canonicalize().map_err(io)?;
        if !real.starts_with(&self.root) {
            return Err(ReadError::Outside {
                path: full.display().to_string(),
                real: real.display().to_string(),
                root: self.root.display().to_string(),
            });
        }
        std::fs::read_to_string(&real).map_err(io)
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
    fn read(&self, path: &str) -> Result<String, toolsmith_core::catalog::ReadError> {
        Err(ReadError::NoFiles {
            path: path.to_owned(),
            why: "this definition reads no files",
        })
    }

    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}
