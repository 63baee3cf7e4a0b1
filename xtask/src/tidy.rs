//! `cargo xtask tidy`: repository rules written as checks. Every `.rs` file opens with a `//!`
//! line (or a crate's included README), the crate dependency graph follows the layering of
//! DESIGN.md, no dependency is declared that nothing uses, and the NetworkManager views name no
//! property by a string (they read through dbus-meta's generated keys).

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
    check_unused_dependencies(root, &mut problems)?;
    check_nm_property_literals(root, &mut problems)?;
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
        // Crate docs may open with the README they include.
        if !first.starts_with("//!") && !first.starts_with("#![doc = include_str!") {
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

/// The workspace's members, by folder.
const MEMBERS: &[&str] = &[
    "dedup-index",
    "dbus-meta",
    "client-cache",
    "platform",
    "cli",
    "xtask",
];

/// Reads each member's `Cargo.toml` and checks its `netmirror*` dependencies against
/// [`ALLOWED_EDGES`]. Dev-dependencies may reach anything below the crate itself.
fn check_layering(root: &Path, problems: &mut Vec<String>) -> anyhow::Result<()> {
    for folder in MEMBERS {
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

/// Dependencies no source names that are needed all the same, and why.
const USED_WITHOUT_NAMING: &[(&str, &str)] = &[(
    "tracing-subscriber",
    "test-log's `trace` feature expands to it in the crate that uses `#[test_log::test]`",
)];

/// The cargo-udeps job without a nightly build: every dependency a member declares must be named
/// in one of its Rust files (as `crate_name::` or `use crate_name`, or in a `features` entry of
/// its manifest for optional ones), and every workspace dependency must be used by a member. A
/// dependency used only through a feature of another (`dep/feature`) counts as used.
fn check_unused_dependencies(root: &Path, problems: &mut Vec<String>) -> anyhow::Result<()> {
    let workspace = std::fs::read_to_string(root.join("Cargo.toml"))?;
    let mut used_from_workspace = Vec::new();
    for folder in MEMBERS {
        let dir = root.join(folder);
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml"))?;
        let package = package_name(&manifest).unwrap_or_default();
        let mut files = Vec::new();
        collect_rs_files(&dir, &mut files)?;
        let mut sources = String::new();
        for file in &files {
            sources.push_str(&std::fs::read_to_string(file)?);
            sources.push('\n');
        }
        let features = section_lines(&manifest, "features").join("\n");
        for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
            for line in section_lines(&manifest, section) {
                let Some(dep) = dependency_name(line) else {
                    continue;
                };
                if line.contains("workspace = true") || line.contains(".workspace") {
                    used_from_workspace.push(dep.to_string());
                }
                // A self dev-dependency only turns features on for the tests.
                if dep == package {
                    continue;
                }
                let ident = dep.replace('-', "_");
                let exempt = USED_WITHOUT_NAMING.iter().any(|(name, _)| *name == dep);
                let named = exempt
                    || mentions_crate(&sources, &ident)
                    || features.contains(&format!("\"{dep}/"))
                    || features.contains(&format!("\"dep:{dep}\""));
                if !named {
                    problems.push(format!(
                        "{folder}/Cargo.toml: `{dep}` ({section}) is never used: remove it"
                    ));
                }
            }
        }
    }
    for line in section_lines(&workspace, "workspace.dependencies") {
        let Some(dep) = dependency_name(line) else {
            continue;
        };
        if !used_from_workspace.iter().any(|used| used == dep) {
            problems.push(format!(
                "Cargo.toml: workspace dependency `{dep}` is used by no member: remove it"
            ));
        }
    }
    Ok(())
}

/// The non-empty, non-comment lines of one `[section]` of a manifest.
fn section_lines<'a>(manifest: &'a str, wanted: &str) -> Vec<&'a str> {
    let mut inside = false;
    let mut lines = Vec::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line.trim_matches(['[', ']']) == wanted;
        } else if inside && !line.is_empty() && !line.starts_with('#') {
            lines.push(line);
        }
    }
    lines
}

/// The dependency a manifest line declares (`name = ...` or `name.workspace = true`).
fn dependency_name(line: &str) -> Option<&str> {
    let name = line.split(['=', '.', ' ']).next()?.trim();
    let valid = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    valid.then_some(name)
}

/// Whether Rust source names a crate: a path through it (`name::`) or a `use name` / `extern
/// crate name`, at a word boundary.
fn mentions_crate(sources: &str, ident: &str) -> bool {
    sources.match_indices(ident).any(|(at, _)| {
        let before = sources[..at].chars().next_back();
        let boundary = before.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        let after = &sources[at + ident.len()..];
        boundary
            && (after.starts_with("::")
                || after.starts_with(';')
                || after.starts_with(" as ")
                || after.starts_with('!'))
    })
}

/// The files that read NetworkManager's properties through dbus-meta's generated
/// `PropertyKey` constants and must not name one by a string.
const TYPED_NM_FILES: &[&str] = &[
    "client-cache/src/nm/views.rs",
    "client-cache/src/nm/mod.rs",
    "cli/src/nm.rs",
];

/// The generated declarations the property names come from.
const NM_DECLARATIONS: &str = "dbus-meta/src/nm.rs";

/// Fails where a file of [`TYPED_NM_FILES`] quotes a declared NetworkManager property name
/// (`"State"`, `"RadioFlags"`) outside a comment: such a read compiles even when misspelt.
fn check_nm_property_literals(root: &Path, problems: &mut Vec<String>) -> anyhow::Result<()> {
    let declarations = std::fs::read_to_string(root.join(NM_DECLARATIONS))?;
    let names = declared_properties(&declarations);
    if names.is_empty() {
        problems.push(format!("{NM_DECLARATIONS}: no property declaration found"));
        return Ok(());
    }
    for file in TYPED_NM_FILES {
        let text = std::fs::read_to_string(root.join(file))?;
        for (line, literal) in quoted_property_names(&text, &names) {
            problems.push(format!(
                "{file}:{line}: NetworkManager property \"{literal}\" named by a string; read it \
                 through its generated key (netmirror_dbus_meta::nm::...)"
            ));
        }
    }
    Ok(())
}

/// The property names of the generated declarations: `CONST "Name": Type = "sig";` lines
/// inside `properties { ... }` blocks.
fn declared_properties(declarations: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    let mut in_properties = false;
    for line in declarations.lines() {
        let line = line.trim();
        if line == "properties {" {
            in_properties = true;
        } else if line == "}" {
            in_properties = false;
        } else if in_properties
            && let Some((_, rest)) = line.split_once(" \"")
            && let Some((name, _)) = rest.split_once("\":")
        {
            names.insert(name.to_owned());
        }
    }
    names
}

/// `(line number, name)` for each string literal in `text`, outside `//` comments, that is
/// exactly one of `names`.
fn quoted_property_names(
    text: &str,
    names: &std::collections::BTreeSet<String>,
) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (idx, line) in text.lines().enumerate() {
        let code = match line.find("//") {
            // A `//` inside a string (a URL) does not start a comment; NM's names have none.
            Some(at) if line[..at].matches('"').count() % 2 == 0 => &line[..at],
            _ => line,
        };
        let mut parts = code.split('"');
        parts.next();
        while let Some(literal) = parts.next() {
            if names.contains(literal) {
                found.push((idx + 1, literal.to_owned()));
            }
            // Skip the code between this literal and the next one.
            parts.next();
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependency_lines() {
        assert_eq!(dependency_name("zbus.workspace = true"), Some("zbus"));
        assert_eq!(
            dependency_name("netmirror-platform = { path = \".\" }"),
            Some("netmirror-platform")
        );
        assert_eq!(dependency_name("# a comment"), None);
    }

    #[test]
    fn crate_mentions_need_a_path_or_use() {
        assert!(mentions_crate("use zbus::Connection;", "zbus"));
        assert!(mentions_crate("let x = zbus::x();", "zbus"));
        assert!(mentions_crate("extern crate libc;", "libc"));
        assert!(!mentions_crate("// zbus_names are nice", "zbus"));
        assert!(!mentions_crate("my_zbus::x()", "zbus"));
        assert!(!mentions_crate("the zbus crate", "zbus"));
    }

    #[test]
    fn quoted_nm_property_names_are_found_outside_comments() {
        let declarations = "crate::interface! {\n    pub mod device = \"x\" {\n        \
                            properties {\n            STATE \"State\": DeviceState = \"u\";\n\
                            \x20           MTU \"Mtu\": u32 = \"u\";\n        }\n        \
                            methods {\n            DELETE \"Delete\"(\"\") -> \"\";\n\
                            \x20       }\n    }\n}\n";
        let names = declared_properties(declarations);
        assert_eq!(
            names.iter().map(String::as_str).collect::<Vec<_>>(),
            ["Mtu", "State"]
        );
        let code = "let a = x.prop(IFACE, \"State\");\n\
                    // reads \"Mtu\" in a comment\n\
                    let b = (\"STATE\", \"state\", \"Delete\");\n\
                    let c = f(\"a\", \"Mtu\"); // \"State\"\n";
        assert_eq!(
            quoted_property_names(code, &names),
            [(1, "State".to_owned()), (4, "Mtu".to_owned())]
        );
    }
}
