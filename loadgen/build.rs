//! Builds every scenario in `scenarios/` into the library: `$OUT_DIR/scenarios.rs` lists each
//! `*.toml` by name (its file stem) with its text, so an installed `loadgen` needs no source
//! tree and a new scenario file is picked up without a hand-kept list.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR")?;
    let dir = Path::new(&manifest_dir).join("scenarios");
    // On a directory Cargo watches every file in it, so an added scenario rebuilds too.
    println!("cargo::rerun-if-changed={}", dir.display());
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "toml")
            && let Some(stem) = path.file_stem().and_then(|s| s.to_str())
        {
            files.push((stem.to_string(), path.clone()));
        }
    }
    files.sort();
    let mut out = String::from(
        "/// Every shipped scenario, by name: its name (the file's stem) and its TOML text.\n\
         pub static SHIPPED: &[(&str, &str)] = &[\n",
    );
    for (name, path) in &files {
        writeln!(
            out,
            "    ({name:?}, include_str!({:?})),",
            path.display().to_string()
        )?;
    }
    out.push_str("];\n");
    let out_dir = std::env::var("OUT_DIR")?;
    std::fs::write(Path::new(&out_dir).join("scenarios.rs"), out)?;
    Ok(())
}
