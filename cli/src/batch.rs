//! `batch FILE|-`: `ip -batch`-like lines applied through the platform's pipelined batch.
//!
//! The platform reads the lines ([`platform::ipbatch::parse`]) into batch items, with the names
//! `ip` accepts and the defaults `ip` picks, and sends them many per `sendmsg`, reporting each
//! refusal. This module resolves device names from a link dump and reports.
//!
//! Without `--continue` every line is read first and a malformed one stops everything before
//! anything is sent; then the batch stops exactly at the first line the kernel refuses, as
//! `ip -batch` does, yet the lines are still pipelined (256 per send): what the kernel applied
//! after the refused line in the same send is undone ([`platform::Batch::undo_past_failure`]).
//! With `--continue` the malformed lines are reported and skipped, and the rest is pipelined
//! with every refusal reported.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use anyhow::Context;
use netmirror_platform::{self as platform, Item};
use serde_json::{Map, Value};

use crate::args::{BatchArgs, KernelArgs};
use crate::failure::Failure;
use crate::kernel;
use crate::render::{Mode, Printer};

/// `EPERM`, the kernel's answer to a change without CAP_NET_ADMIN.
const EPERM: i32 = 1;

/// A line of the batch file that becomes an item.
#[derive(Debug)]
struct Line {
    /// The line number, from 1.
    number: usize,
    /// The line as written.
    text: String,
    /// What it asks for.
    item: Item,
}

/// Runs `batch`.
pub(crate) fn run(
    printer: &mut Printer,
    kernel_args: &KernelArgs,
    args: &BatchArgs,
) -> anyhow::Result<()> {
    let (file_name, text) = read_input(&args.file)?;
    let platform = kernel::open(kernel_args)?;
    let links = platform
        .links()
        .execute()
        .map_err(|err| kernel::explain(err, "dump links"))?;
    let ifindexes: HashMap<String, netmirror_platform::Ifindex> = links
        .items
        .iter()
        .map(|link| (link.name().to_owned(), link.ifindex()))
        .collect();
    let resolve = |name: &str| ifindexes.get(name).copied();

    let mut lines = Vec::new();
    let mut n_malformed = 0;
    for line in platform::ipbatch::parse(&text, &resolve) {
        let (number, trimmed) = (line.number, line.text);
        match line.item {
            Ok(item) => lines.push(Line {
                number,
                text: trimmed.to_owned(),
                item,
            }),
            Err(reason) if !args.keep_going => {
                return Err(Failure::BatchMalformed {
                    file: file_name,
                    line: number,
                    text: trimmed.to_owned(),
                    reason: reason.to_string(),
                }
                .into());
            }
            Err(reason) => {
                n_malformed += 1;
                eprintln!(
                    "netmirror: {file_name}:{number}: malformed line `{trimmed}`: {reason}; skipped"
                );
            }
        }
    }

    let mut batch = platform
        .batch()
        .extend(lines.iter().map(|line| line.item.clone()));
    if !args.keep_going {
        batch = batch.stop_on_error(true).undo_past_failure(true);
    }
    let progress = crate::progress::Progress::start("applying batch");
    let report = batch
        .execute()
        .map_err(|err| kernel::explain(err, "apply the batch"))?;
    drop(progress);

    let mut failures = Vec::new();
    let refused = report.failures.iter().map(|failure| (failure, false));
    let not_undone = report.undo_failures.iter().map(|failure| (failure, true));
    for (failure, undo) in refused.chain(not_undone) {
        let Some(line) = lines.get(failure.index) else {
            continue;
        };
        let what = if undo {
            "applied after the first failure, and undoing it failed: "
        } else {
            ""
        };
        eprintln!(
            "netmirror: {file_name}:{}: `{}`: {what}{}",
            line.number, line.text, failure.error
        );
        let mut object = Map::new();
        object.insert("line".to_owned(), Value::from(line.number));
        object.insert("text".to_owned(), Value::from(line.text.as_str()));
        object.insert("error".to_owned(), Value::from(failure.error.to_string()));
        if undo {
            object.insert("undo".to_owned(), Value::from(true));
        }
        failures.push(Value::Object(object));
    }
    match printer.mode() {
        Mode::Json => {
            let mut object = Map::new();
            object.insert("applied".to_owned(), Value::from(report.n_ok));
            object.insert("failed".to_owned(), Value::Array(failures));
            object.insert("malformed".to_owned(), Value::from(n_malformed));
            object.insert("skipped".to_owned(), Value::from(report.n_skipped));
            // Applied after the first failure and still applied: the undo was refused.
            object.insert(
                "not_undone".to_owned(),
                Value::from(report.undo_failures.len()),
            );
            printer.json(&Value::Object(object))?;
        }
        Mode::Human | Mode::Terse => {
            let mut summary = format!(
                "{} of {} lines applied",
                report.n_ok,
                lines.len() + n_malformed
            );
            if report.n_skipped > 0 {
                summary.push_str(&format!(
                    ", {} not applied after the first failure",
                    report.n_skipped
                ));
            }
            if !report.undo_failures.is_empty() {
                summary.push_str(&format!(
                    ", {} applied after the first failure and not undone",
                    report.undo_failures.len()
                ));
            }
            printer.note(&summary)?;
        }
    }
    let failed = report.failures.len() + report.undo_failures.len() + n_malformed;
    let all_refused_for_permission = !report.failures.is_empty()
        && report
            .failures
            .iter()
            .all(|failure| failure.error.errno == EPERM);
    if all_refused_for_permission && report.n_ok == 0 {
        printer.flush()?;
        return Err(Failure::PermissionDenied {
            what: "change routes and addresses".to_owned(),
        }
        .into());
    }
    if failed > 0 {
        printer.flush()?;
        return Err(Failure::BatchFailed {
            failed,
            total: lines.len() + n_malformed,
        }
        .into());
    }
    Ok(())
}

/// Reads the batch file, or stdin for `-`; returns the name to report lines with.
fn read_input(path: &Path) -> anyhow::Result<(String, String)> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the batch from stdin")?;
        return Ok(("-".to_owned(), text));
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read batch file {}", path.display()))?;
    Ok((path.display().to_string(), text))
}
