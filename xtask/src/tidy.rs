//! `cargo xtask tidy`: repository rules written as checks. Every `.rs` file opens with a `//!`
//! line, and the crate dependency graph follows the layering of DESIGN.md.

use std::path::{Path, PathBuf};

use anyhow::bail;

/// The allowed edges between the workspace's own packages (normal and build dependencies).
/// Adding one is a design change: update ARCHITECTURE.md in the same change.
const ALLOWED_EDGES: &[(&str, &[&str])] = &[
    ("netmirror-dedup-index", &[]),
    ("netmirror-dbus-meta", &[]),
    (
        "netmirror-client-cache",
        &["netmirror-dbus-meta", "netmirror-dedup-index"],
    ),
    ("netmirror-platform", &["netmirror-dedup-index"]),
    (
        "netmirror",
        &[
            "netmirror-client-cache",
            "netmirror-platform",
            "netmirror-dbus-meta",
        ],
    ),
    ("xtask", &[]),
];

pub(crate) fn run(root: &Path) -> anyhow::Result<()> {
    let mut problems = Vec::new();
    check_headers(root, &mut problems)?;
    check_layering(root, &mut problems)?;
    if !problems.is_empty() {
        bail!(
            "tidy found {} problem(s):\n  {}",
            problems.len(),
            problems.join("\n  ")
        );
    }
    eprintln!("xtask: tidy passed");
    Ok(())
}

fn check_headers(root: &Path, problems: &mut Vec<String>) -> anyhow::Result<()> {
    let mut files = Vec::new();
    collect_rs_files(root, &mut files)?;
    for file in files {
        let text = std::fs::read_to_string(&file)?;
        let first = text
            .lines()
            .find(|line| !line.trim().is_empty())
            .unwrap_or("");
        if !first.starts_with("//!") {
            let shown = file
                .strip_prefix(root)
                .unwrap_or(&file)
                .display()
                .to_string();
            problems.push(format!("{shown}: does not open with a `//!` line"));
        }
    }
    Ok(())
}

fn collect_rs_files(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if entry.file_type()?.is_dir() {
            // Build output, VCS data, and trybuild's expected-failure inputs (which are
            // compiled as their own crates) are not ours to check.
            if name == "target" || name.starts_with('.') || name == "ui" {
                continue;
            }
            collect_rs_files(&path, out)?;
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// Reads each member's `Cargo.toml` and checks its `netmirror*` dependencies against
/// [`ALLOWED_EDGES`]. Dev-dependencies may reach anything below the crate itself.
fn check_layering(root: &Path, problems: &mut Vec<String>) -> anyhow::Result<()> {
    for folder in [
        "dedup-index",
        "dbus-meta",
        "client-cache",
        "platform",
        "cli",
        "xtask",
    ] {
        let manifest = std::fs::read_to_string(root.join(folder).join("Cargo.toml"))?;
        let package = package_name(&manifest).unwrap_or_default();
        let Some((_, allowed)) = ALLOWED_EDGES.iter().find(|(name, _)| *name == package) else {
            problems.push(format!(
                "{folder}/Cargo.toml: package `{package}` is not in the layering"
            ));
            continue;
        };
        let mut section = String::new();
        for line in manifest.lines() {
            let line = line.trim();
            if line.starts_with('[') {
                section = line.trim_matches(['[', ']']).to_string();
                continue;
            }
            let is_normal = section == "dependencies" || section == "build-dependencies";
            let is_dev = section == "dev-dependencies";
            if !is_normal && !is_dev {
                continue;
            }
            let dep = line.split(['=', '.', ' ']).next().unwrap_or("");
            if !dep.starts_with("netmirror") {
                continue;
            }
            let ok = allowed.contains(&dep) || (is_dev && dep == package);
            if !ok {
                problems.push(format!(
                    "{folder}/Cargo.toml: `{package}` may not depend on `{dep}` ({section}); \
                     see the layering in ARCHITECTURE.md"
                ));
            }
        }
    }
    Ok(())
}

fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package && line.starts_with("name") {
            return line.split('"').nth(1).map(str::to_string);
        }
    }
    None
}
