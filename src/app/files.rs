//! File dialogs and the typed-path fallback. rfd returns `None` both when the user cancels and when
//! no dialog backend exists (no xdg portal): a `None` that comes back almost at once is taken as "no
//! dialog", and the app asks for a typed path instead (never a dead end).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A person cannot cancel a dialog this fast; a backend without a portal returns in ~3 ms.
const NO_DIALOG: Duration = Duration::from_millis(250);

/// What a dialog produced.
pub enum Picked {
    Path(PathBuf),
    Cancelled,
    /// No native dialog is available here.
    Unavailable,
}

fn outcome(path: Option<PathBuf>, started: Instant) -> Picked {
    match path {
        Some(p) => Picked::Path(p),
        None if started.elapsed() < NO_DIALOG => Picked::Unavailable,
        None => Picked::Cancelled,
    }
}

fn start_dir(current: Option<&Path>) -> Option<PathBuf> {
    current.and_then(Path::parent).map(Path::to_path_buf)
}

pub fn pick_open(current: Option<&Path>) -> Picked {
    pick_file(current, "Open scenario", "Scenario (RON)", &["ron"])
}

/// A native open dialog with one filter.
pub fn pick_file(current: Option<&Path>, title: &str, filter: &str, exts: &[&str]) -> Picked {
    let started = Instant::now();
    let mut dialog = rfd::FileDialog::new()
        .set_title(title)
        .add_filter(filter, exts);
    if let Some(dir) = start_dir(current) {
        dialog = dialog.set_directory(dir);
    }
    outcome(dialog.pick_file(), started)
}

pub fn pick_save(current: Option<&Path>, file_name: &str, ext: &str, filter: &str) -> Picked {
    let started = Instant::now();
    let mut dialog = rfd::FileDialog::new()
        .set_title("Save")
        .add_filter(filter, &[ext])
        .set_file_name(file_name);
    if let Some(dir) = start_dir(current) {
        dialog = dialog.set_directory(dir);
    }
    outcome(dialog.save_file(), started)
}

/// A file name for a scenario: its name, lowercased, with dashes.
pub fn suggested_name(scenario_name: &str, ext: &str) -> String {
    let stem: String = scenario_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let stem = stem.trim_matches('-');
    let stem = if stem.is_empty() { "scenario" } else { stem };
    format!("{stem}.{ext}")
}

/// Adds `.ron` when a typed path has no extension.
pub fn with_extension(path: PathBuf, ext: &str) -> PathBuf {
    if path.extension().is_some() {
        path
    } else {
        path.with_extension(ext)
    }
}

/// An RGBA image encoded as PNG.
pub fn png_bytes(image: &egui::ColorImage) -> Result<Vec<u8>, String> {
    use image::ImageEncoder;
    let [w, h] = image.size;
    let bytes: Vec<u8> = image.pixels.iter().flat_map(|c| c.to_array()).collect();
    let (Ok(w), Ok(h)) = (u32::try_from(w), u32::try_from(h)) else {
        return Err("image too large".to_owned());
    };
    let mut out = Vec::new();
    image::codecs::png::PngEncoder::new(&mut out)
        .write_image(&bytes, w, h, image::ExtendedColorType::Rgba8)
        .map_err(|e| format!("Could not encode the PNG ({e})"))?;
    Ok(out)
}

/// Writes `bytes` to `path` (atomically), the error naming the file last.
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    crate::presets::write_atomically(path, bytes)
        .map_err(|e| format!("Could not write the file ({e}): {}", path.display()))
}

/// Saves an RGBA image as PNG; returns its bytes.
pub fn save_png(path: &Path, image: &egui::ColorImage) -> Result<Vec<u8>, String> {
    let bytes = png_bytes(image)?;
    write(path, &bytes)?;
    Ok(bytes)
}
