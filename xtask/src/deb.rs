//! The Debian package, checked by `cargo xtask ci` (and `cargo xtask deb`): built with `dpkg-deb --build` from a tree
//! staged as `cli/Cargo.toml`'s `[package.metadata.deb]` (cargo-deb's metadata) says, then read
//! back with `dpkg-deb --info` and `--contents` and its binary run from the unpacked package.
//!
//! Why not `cargo deb` itself: installing cargo-deb (`cargo install cargo-deb --locked`, a
//! crates.io build) took 12 minutes here on two shared cores, half of CI's time budget, where
//! staging the same files takes a second. The metadata stays cargo-deb's, so `cargo deb -p
//! netmirror` still builds the release package from it; this step checks that every asset it
//! names exists and lands where it says, with the fields a package needs.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use crate::cmd;

/// Where the CLI's manifest is, relative to the root (asset sources are relative to it).
const CLI_DIR: &str = "cli";

/// One `[source, destination, mode]` of the metadata's `assets`.
#[derive(Debug)]
struct Asset {
    source: String,
    dest: String,
    mode: String,
}

/// The fields of `[package.metadata.deb]` the package is built from.
#[derive(Debug, Default)]
struct Metadata {
    section: String,
    priority: String,
    recommends: String,
    extended_description: String,
    assets: Vec<Asset>,
}

/// Builds `TARGET/deb/netmirror_VERSION_ARCH.deb` from the debug build of the CLI in the
/// target folder `target_dir` (in CI, the one the manual page step ran) and its rendered manual
/// page and completions (`assets`), and checks it.
pub(crate) fn run(
    root: &Path,
    target_dir: &Path,
    assets: &Path,
    version: &str,
) -> anyhow::Result<()> {
    let binary = &target_dir.join("debug/netmirror");
    let workspace = std::fs::read_to_string(root.join("Cargo.toml"))?;
    let field = |name: &str| {
        workspace
            .lines()
            .find_map(|line| line.strip_prefix(name)?.trim().strip_prefix('='))
            .map(|value| value.trim().trim_matches(['[', ']', '"']).to_owned())
            .with_context(|| format!("no {name} in the workspace's manifest"))
    };
    let (maintainer, homepage) = (field("authors")?, field("repository")?);
    let manifest = std::fs::read_to_string(root.join(CLI_DIR).join("Cargo.toml"))?;
    let metadata = parse(&manifest)?;
    let description = manifest
        .lines()
        .find_map(|line| line.strip_prefix("description = "))
        .map(|value| value.trim_matches('"').to_owned())
        .context("no description in cli/Cargo.toml")?;
    let arch = cmd::read(Command::new("dpkg").arg("--print-architecture"))?;
    let arch = arch.trim();
    let work = target_dir.join("deb");
    if work.exists() {
        std::fs::remove_dir_all(&work)?;
    }
    let stage = work.join("netmirror");
    std::fs::create_dir_all(stage.join("DEBIAN"))?;

    // The files, where the metadata puts them.
    let mut expected = Vec::new();
    for asset in &metadata.assets {
        let source = source_path(root, binary, assets, &asset.source)?;
        let name = source
            .file_name()
            .context("an asset without a file name")?
            .to_string_lossy()
            .into_owned();
        let mut dest = if asset.dest.ends_with('/') {
            format!("{}{name}", asset.dest)
        } else {
            asset.dest.clone()
        };
        let target = stage.join(&dest);
        std::fs::create_dir_all(target.parent().context("a destination without a folder")?)?;
        std::fs::copy(&source, &target)
            .with_context(|| format!("asset {} (from {})", asset.source, source.display()))?;
        cmd::run(Command::new("chmod").arg(&asset.mode).arg(&target))?;
        // Binaries are stripped, as cargo-deb does (a debug build's symbols are 100 MB that
        // dpkg-deb would spend minutes compressing).
        if dest.starts_with("usr/bin/") {
            cmd::run(Command::new("strip").arg("--strip-unneeded").arg(&target))?;
        }
        // Debian policy: manual pages are compressed (as cargo-deb does).
        if dest.starts_with("usr/share/man/") {
            cmd::run(Command::new("gzip").args(["-9n"]).arg(&target))?;
            dest.push_str(".gz");
        }
        expected.push(format!("./{dest}"));
    }

    // The control file: the metadata's fields, the dependencies the binary's libraries need.
    let depends = shlib_depends(&work, &stage.join("usr/bin/netmirror"))?;
    let installed_kib = cmd::read(
        Command::new("du")
            .args(["-sk", "--exclude=DEBIAN"])
            .arg(&stage),
    )?;
    let installed_kib = installed_kib.split_whitespace().next().unwrap_or("0");
    let extended: String = metadata
        .extended_description
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let control = format!(
        "Package: netmirror\nVersion: {version}\nArchitecture: {arch}\n\
         Maintainer: {maintainer}\n\
         Installed-Size: {installed_kib}\nDepends: {depends}\nRecommends: {}\n\
         Section: {}\nPriority: {}\nHomepage: {homepage}\n\
         Description: {description}\n {extended}\n",
        metadata.recommends, metadata.section, metadata.priority,
    );
    std::fs::write(stage.join("DEBIAN/control"), control)?;
    let deb = work.join(format!("netmirror_{version}_{arch}.deb"));
    cmd::run(
        Command::new("dpkg-deb")
            .args(["--root-owner-group", "--build"])
            .arg(&stage)
            .arg(&deb),
    )?;

    // Read back as a user's dpkg would.
    let info = cmd::read(Command::new("dpkg-deb").arg("--info").arg(&deb))?;
    eprintln!("{info}");
    for field in [
        "Package: netmirror".to_owned(),
        format!("Version: {version}"),
        format!("Architecture: {arch}"),
        "Depends: libc6".to_owned(),
        format!("Section: {}", metadata.section),
    ] {
        if !info
            .lines()
            .any(|line| line.trim_start().starts_with(&field))
        {
            bail!("dpkg-deb --info shows no `{field}`");
        }
    }
    let contents = cmd::read(Command::new("dpkg-deb").arg("--contents").arg(&deb))?;
    eprintln!("{contents}");
    // `-rwxr-xr-x root/root 123 2026-01-01 00:00 ./usr/bin/netmirror`
    let listed: Vec<(&str, &str)> = contents
        .lines()
        .filter_map(|line| {
            let mode = line.split_whitespace().next()?;
            let path = line.split_whitespace().last()?;
            Some((mode, path))
        })
        .collect();
    for path in [
        "./usr/bin/netmirror",
        "./usr/share/man/man1/netmirror.1.gz",
        "./usr/share/bash-completion/completions/netmirror",
        "./usr/share/zsh/vendor-completions/_netmirror",
        "./usr/share/fish/vendor_completions.d/netmirror.fish",
    ] {
        if !expected.iter().any(|e| e == path) {
            bail!("the metadata's assets no longer put anything at {path}");
        }
        let Some((mode, _)) = listed.iter().find(|(_, p)| *p == path) else {
            bail!("the package holds no {path}");
        };
        let executable = path == "./usr/bin/netmirror";
        if mode.contains('x') != executable {
            bail!("{path} has mode {mode} in the package");
        }
    }
    // The packaged binary and manual page work once unpacked.
    let unpacked = work.join("unpacked");
    cmd::run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&unpacked))?;
    let said = cmd::read(Command::new(unpacked.join("usr/bin/netmirror")).arg("--version"))?;
    if !said.contains(version) {
        bail!("the packaged netmirror says {said:?}, not version {version}");
    }
    let page = cmd::read(
        Command::new("gzip")
            .arg("-dc")
            .arg(unpacked.join("usr/share/man/man1/netmirror.1.gz")),
    )?;
    if !page.contains(".TH netmirror 1") {
        bail!("the packaged manual page is not netmirror(1)");
    }
    eprintln!("xtask: {} built and checked", deb.display());
    Ok(())
}

/// Where an asset of the metadata comes from in CI: the release binary is CI's build, the
/// rendered assets are in CI's assets folder, anything else is relative to `cli/`.
fn source_path(root: &Path, binary: &Path, assets: &Path, source: &str) -> anyhow::Result<PathBuf> {
    let path = if source == "target/release/netmirror" {
        binary.to_path_buf()
    } else if let Some(name) = source.strip_prefix("../target/assets/") {
        assets.join(name)
    } else {
        root.join(CLI_DIR).join(source)
    };
    if !path.exists() {
        bail!("asset {source}: {} does not exist", path.display());
    }
    Ok(path)
}

/// The `Depends` value the binary's shared libraries need (`dpkg-shlibdeps`, as cargo-deb's
/// `$auto` does).
fn shlib_depends(work: &Path, binary: &Path) -> anyhow::Result<String> {
    // dpkg-shlibdeps wants a source package's `debian/control` where it runs.
    std::fs::create_dir_all(work.join("debian"))?;
    std::fs::write(
        work.join("debian/control"),
        "Source: netmirror\n\nPackage: netmirror\nArchitecture: any\n",
    )?;
    let out = cmd::read(
        Command::new("dpkg-shlibdeps")
            .arg("-O")
            .arg(binary)
            .current_dir(work),
    )?;
    out.lines()
        .find_map(|line| line.strip_prefix("shlibs:Depends="))
        .map(str::to_owned)
        .context("dpkg-shlibdeps named no dependency")
}

/// The `[package.metadata.deb]` table: its one-line strings, its `"""` extended description
/// and its `assets` array (one `["source", "dest", "mode"]` a line).
fn parse(manifest: &str) -> anyhow::Result<Metadata> {
    let table = manifest
        .split_once("[package.metadata.deb]")
        .map(|(_, rest)| rest)
        .context("no [package.metadata.deb] in cli/Cargo.toml")?;
    let table = table.split("\n[").next().unwrap_or(table);
    let mut metadata = Metadata::default();
    let mut lines = table.lines();
    while let Some(line) = lines.next() {
        let Some((key, value)) = line.split_once(" = ") else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "section" => metadata.section = value.trim_matches('"').to_owned(),
            "priority" => metadata.priority = value.trim_matches('"').to_owned(),
            "recommends" => metadata.recommends = value.trim_matches('"').to_owned(),
            "extended-description" => {
                let mut text = String::new();
                for line in lines.by_ref() {
                    if let Some(last) = line.trim_end().strip_suffix("\"\"\"") {
                        text.push_str(last);
                        break;
                    }
                    text.push_str(line.trim_end_matches('\\'));
                }
                metadata.extended_description = text;
            }
            "assets" => {
                for line in lines.by_ref() {
                    let line = line.trim();
                    if line == "]" {
                        break;
                    }
                    let fields: Vec<&str> = line
                        .trim_start_matches('[')
                        .trim_end_matches(',')
                        .trim_end_matches(']')
                        .split(',')
                        .map(|field| field.trim().trim_matches('"'))
                        .collect();
                    let [source, dest, mode] = fields[..] else {
                        bail!(
                            "an asset line of cli/Cargo.toml is not [source, dest, mode]: {line}"
                        );
                    };
                    metadata.assets.push(Asset {
                        source: source.to_owned(),
                        dest: dest.to_owned(),
                        mode: mode.to_owned(),
                    });
                }
            }
            _ => {}
        }
    }
    if metadata.assets.is_empty() || metadata.section.is_empty() {
        bail!("cli/Cargo.toml's [package.metadata.deb] has no assets or no section");
    }
    Ok(metadata)
}
