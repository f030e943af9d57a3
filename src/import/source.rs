//! Where a model's `config.json` is: a file, a model directory (with its
//! `model.safetensors.index.json` when present), or a Hub id (`org/name`) looked up **offline** in
//! the local Hugging Face cache (`huggingface_hub`'s layout: `$HF_HUB_CACHE`, else `$HF_HOME/hub`,
//! else `~/.cache/huggingface/hub`; `models--org--name/snapshots/<revision>/`, the revision named by
//! `refs/main` when present, else the newest snapshot). Nothing is fetched.

use std::path::{Path, PathBuf};

use super::ImportError;
use crate::presets::text::escape_controls;

/// The environment the Hub cache is found from (passed in, so tests build their own).
#[derive(Clone, Debug, Default)]
pub struct HubEnv {
    pub hf_hub_cache: Option<PathBuf>,
    pub hf_home: Option<PathBuf>,
    pub home: Option<PathBuf>,
}

impl HubEnv {
    /// From the process environment (`HF_HUB_CACHE`, `HF_HOME`, `HOME`).
    pub fn from_env() -> Self {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        HubEnv {
            hf_hub_cache: var("HF_HUB_CACHE"),
            hf_home: var("HF_HOME"),
            home: var("HOME"),
        }
    }

    /// The cache's root directory.
    pub fn hub_root(&self) -> Option<PathBuf> {
        self.hf_hub_cache
            .clone()
            .or_else(|| self.hf_home.as_ref().map(|h| h.join("hub")))
            .or_else(|| {
                self.home
                    .as_ref()
                    .map(|h| h.join(".cache").join("huggingface").join("hub"))
            })
    }
}

/// A located model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    pub config: PathBuf,
    /// `model.safetensors.index.json` beside the config, when there is one.
    pub index: Option<PathBuf>,
}

fn shown(p: &Path) -> String {
    escape_controls(&p.display().to_string()).into_owned()
}

/// Finds the config of `arg`: an existing file, an existing directory, or a Hub id in the cache.
pub fn locate(arg: &str, env: &HubEnv) -> Result<Located, ImportError> {
    let path = Path::new(arg);
    if path.is_dir() {
        return in_dir(path);
    }
    // Anything else that exists is read as the config (a FIFO or device is then refused by the
    // reader, naming it).
    if path.symlink_metadata().is_ok() {
        return Ok(Located {
            config: path.to_path_buf(),
            index: None,
        });
    }
    if !is_hub_id(arg) {
        return Err(ImportError::new(format!(
            "no such file or directory, and not a Hub id (org/name): {}",
            escape_controls(arg)
        )));
    }
    let Some(root) = env.hub_root() else {
        return Err(ImportError::new(
            "no Hugging Face cache directory (set HF_HUB_CACHE, HF_HOME or HOME)",
        ));
    };
    let repo = root.join(format!("models--{}", arg.replace('/', "--")));
    if !repo.is_dir() {
        return Err(ImportError::new(format!(
            "{} is not in the local Hugging Face cache (offline: nothing is downloaded): {}",
            escape_controls(arg),
            shown(&repo)
        )));
    }
    in_dir(&snapshot(&repo)?)
}

fn in_dir(dir: &Path) -> Result<Located, ImportError> {
    let config = dir.join("config.json");
    if !config.is_file() {
        return Err(ImportError::new(format!(
            "the model directory has no config.json: {}",
            shown(dir)
        )));
    }
    let index = dir.join("model.safetensors.index.json");
    Ok(Located {
        config,
        index: index.is_file().then_some(index),
    })
}

/// `org/name` with the Hub's characters (letters, digits, `-`, `_`, `.`), no `..`.
pub fn is_hub_id(s: &str) -> bool {
    let mut parts = s.split('/');
    let (Some(org), Some(name), None) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let ok = |p: &str| {
        !p.is_empty()
            && p.len() <= 96
            && !p.starts_with('.')
            && !p.contains("..")
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    ok(org) && ok(name)
}

/// The snapshot `refs/main` names, else the most recently modified one.
fn snapshot(repo: &Path) -> Result<PathBuf, ImportError> {
    let snapshots = repo.join("snapshots");
    let main = std::fs::read_to_string(repo.join("refs").join("main")).ok();
    if let Some(rev) = main.map(|m| m.trim().to_owned()) {
        let valid =
            !rev.is_empty() && rev.len() <= 64 && rev.chars().all(|c| c.is_ascii_hexdigit());
        let dir = snapshots.join(&rev);
        if valid && dir.is_dir() {
            return Ok(dir);
        }
    }
    let entries = std::fs::read_dir(&snapshots).map_err(|e| {
        ImportError::new(format!(
            "cannot list the cache's snapshots ({e}): {}",
            shown(&snapshots)
        ))
    })?;
    let newest = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .max_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    newest.map(|(_, p)| p).ok_or_else(|| {
        ImportError::new(format!(
            "the cache holds no snapshot: {}",
            shown(&snapshots)
        ))
    })
}
