//! `netmirror`: a fast nmcli- and ip-style view of this host's network state.

fn main() -> anyhow::Result<()> {
    // Until the platform crate lands, the overview is the list of this host's links.
    let mut names: Vec<String> = std::fs::read_dir("/sys/class/net")?
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut out = std::io::stdout().lock();
    for name in names {
        use std::io::Write;
        writeln!(out, "{name}")?;
    }
    Ok(())
}
