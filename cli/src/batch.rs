//! `batch FILE|-`: `ip -batch`-like lines applied through the platform's pipelined batch.
//!
//! The platform reads each line ([`platform::ipbatch::parse_line`]) into a batch item, with the
//! names `ip` accepts and the defaults `ip` picks, and sends them many per `sendmsg`, reporting
//! each refusal. This module reads the input, resolves device names from a link dump and
//! reports.
//!
//! The input is read as a stream, one line at a time, and no line may be longer than
//! [`MAX_LINE`] bytes: an endless line (`/dev/zero`) stops the reading with an error naming
//! it, after 64 KiB. Without `--continue` every line is read first and a malformed one stops
//! everything before anything is sent; then the batch stops exactly at the first line the
//! kernel refuses, as `ip -batch` does, yet the lines are still pipelined (256 per send): what
//! the kernel applied after the refused line in the same send is undone
//! ([`platform::Batch::undo_past_failure`]). With `--continue` the malformed lines are reported
//! and skipped, and the rest is applied [`CHUNK_LINES`] at a time while the input is read, with
//! every refusal reported, so memory stays bounded whatever the input's length.
//!
//! SIGINT and SIGTERM stop the batch between two sends: the send in flight is finished (and
//! with stop-at-first-failure, what followed a refused line in it undone), then the summary
//! says what was applied and from which line on nothing was sent; the state is what a batch
//! ending just before that line leaves. Diagnostics quote lines escaped and cut to
//! [`QUOTE_CHARS`] characters; JSON has them exact.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use anyhow::Context;
use netmirror_platform::{self as platform, Item, Platform};
use serde_json::{Map, Value};

use crate::args::{BatchArgs, KernelArgs};
use crate::failure::{self, Failure};
use crate::kernel;
use crate::render::{Mode, Printer, escape};
use crate::signals::{Interrupt, Signal};

/// `EPERM`, the kernel's answer to a change without CAP_NET_ADMIN.
const EPERM: i32 = 1;

/// The longest line read, in bytes (an `ip` command line is far shorter): a longer one is an
/// error naming it, so an endless line costs bounded memory.
const MAX_LINE: usize = 64 * 1024;

/// With `--continue`, lines are applied this many at a time while the input is read.
const CHUNK_LINES: usize = 16 * 1024;

/// How many characters of a line (escaped) a diagnostic quotes.
const QUOTE_CHARS: usize = 120;

/// A line of the batch file that becomes an item.
#[derive(Debug)]
struct Line {
    /// The line number, from 1.
    number: usize,
    /// The line as written, trimmed.
    text: Box<str>,
    /// What it asks for.
    item: Item,
}

/// What a command read from the input is (a line, or lines joined by a trailing `\`).
enum RawLine {
    /// A command that is not blank or a comment, trimmed, with the number of its first line.
    Text(usize, String),
    /// A command that cannot be read: not UTF-8 (shown with replacement characters), or cut
    /// short by the end of the input after a trailing `\`; with why.
    Malformed(usize, String, String),
    /// A command longer than [`MAX_LINE`]: reading stops there.
    TooLong(usize),
}

/// The batch input, read one line at a time.
struct Input {
    /// The name lines are reported with (`-` for stdin).
    name: String,
    reader: Box<dyn BufRead>,
    /// The number of the last line read.
    number: usize,
    /// Whether the end was reached.
    eof: bool,
    buf: Vec<u8>,
}

impl Input {
    /// Opens the file, or stdin for `-`.
    fn open(path: &Path) -> anyhow::Result<Input> {
        let (name, reader): (String, Box<dyn BufRead>) = if path.as_os_str() == "-" {
            ("-".to_owned(), Box::new(BufReader::new(std::io::stdin())))
        } else {
            let file = std::fs::File::open(path)
                .with_context(|| format!("cannot read batch file {}", path.display()))?;
            (
                path.display().to_string(),
                Box::new(BufReader::with_capacity(64 * 1024, file)),
            )
        };
        Ok(Input {
            name,
            reader,
            number: 0,
            eof: false,
            buf: Vec::new(),
        })
    }

    /// The next command that is not blank or a comment, or `None` at the end. Lines are
    /// read as `ip -batch` reads them ([`platform::ipbatch::continued`]): one ending in `\`
    /// goes on with the next, and the command is numbered by its first line.
    fn next_line(&mut self) -> anyhow::Result<Option<RawLine>> {
        // The command so far, when a line ended in `\`: its first line's number and text.
        let mut pending: Option<(usize, String)> = None;
        loop {
            if self.eof {
                return Ok(pending.map(|(number, text)| {
                    RawLine::Malformed(
                        number,
                        text.trim().to_owned(),
                        platform::ipbatch::ParseError::MissingContinuation.to_string(),
                    )
                }));
            }
            self.buf.clear();
            let so_far = pending.as_ref().map_or(0, |(_, text)| text.len());
            let limit = u64::try_from(MAX_LINE + 1 - so_far.min(MAX_LINE)).unwrap_or(u64::MAX);
            let n = (&mut self.reader)
                .take(limit)
                .read_until(b'\n', &mut self.buf)
                .with_context(|| format!("cannot read the batch from {}", self.name))?;
            if n == 0 {
                self.eof = true;
                continue;
            }
            self.number += 1;
            let first = pending.as_ref().map_or(self.number, |(number, _)| *number);
            if self.buf.last() != Some(&b'\n') {
                if so_far + self.buf.len() > MAX_LINE {
                    return Ok(Some(RawLine::TooLong(first)));
                }
                self.eof = true;
            }
            let Ok(text) = std::str::from_utf8(&self.buf) else {
                let text = String::from_utf8_lossy(&self.buf).trim().to_owned();
                return Ok(Some(RawLine::Malformed(
                    first,
                    text,
                    "not UTF-8".to_owned(),
                )));
            };
            let mut command = match pending.take() {
                Some((_, mut command)) => {
                    command.push_str(text);
                    command
                }
                None => text.to_owned(),
            };
            if let Some(head) = platform::ipbatch::continued(&command) {
                let head = head.len();
                command.truncate(head);
                pending = Some((first, command));
                continue;
            }
            if matches!(platform::ipbatch::split_words(&command).as_deref(), Ok([])) {
                continue;
            }
            // Trimmed of the white space `ip` knows (other characters are words' own).
            let command = command.trim_matches([' ', '\t', '\r', '\n']);
            return Ok(Some(RawLine::Text(first, command.to_owned())));
        }
    }
}

/// What the batch did, over all its sends.
#[derive(Debug, Default)]
struct Totals {
    /// Lines read that are not blank or comments.
    n_lines: usize,
    /// Lines applied.
    n_ok: usize,
    /// Malformed lines (skipped with `--continue`).
    n_malformed: usize,
    /// Lines not applied after the first failure.
    n_skipped: usize,
    /// Lines applied after the first failure whose undo the kernel refused (still applied).
    n_not_undone: usize,
    /// Lines refused, and undos refused.
    n_failed: usize,
    /// Whether every refusal was EPERM.
    all_eperm: bool,
    /// The refusals, as JSON objects.
    failures: Vec<Value>,
    /// The first line not applied because a signal stopped the batch.
    stopped_at: Option<usize>,
    /// Whether the input was read to its end.
    read_all: bool,
}

/// Runs `batch`.
pub(crate) fn run(
    printer: &mut Printer,
    kernel_args: &KernelArgs,
    args: &BatchArgs,
) -> anyhow::Result<()> {
    let interrupt = Interrupt::install()?;
    let mut input = Input::open(&args.file)?;
    tracing::debug!(file = %input.name, "reading the batch");
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
    // `netmirror -6 batch` is `ip -6 -batch`: the family of every line.
    let family = kernel::family(kernel_args);
    let mut totals = Totals {
        all_eperm: true,
        ..Totals::default()
    };
    let mut applier = Applier {
        platform: &platform,
        interrupt: &interrupt,
        keep_going: args.keep_going,
        file: input.name.clone(),
    };
    let mut too_long = None;
    let mut lines: Vec<Line> = Vec::new();
    loop {
        if interrupt.received().is_some() {
            // The lines read and not sent yet are not applied: the first of them, or the
            // next line, is where the batch stopped.
            // (Unless a send stopped earlier already.)
            if totals.stopped_at.is_none() {
                match lines.first() {
                    Some(line) => totals.stopped_at = Some(line.number),
                    None if !input.eof => totals.stopped_at = Some(input.number + 1),
                    None => {}
                }
            }
            break;
        }
        let Some(raw) = input.next_line()? else {
            break;
        };
        let (number, text, item) = match raw {
            RawLine::TooLong(number) => {
                too_long = Some(number);
                break;
            }
            RawLine::Malformed(number, text, why) => (number, text, Err(why)),
            RawLine::Text(number, text) => {
                let item = platform::ipbatch::parse_line_in(&text, family, &resolve)
                    .map_err(|reason| reason.to_string());
                (number, text, item)
            }
        };
        totals.n_lines += 1;
        match item {
            Ok(item) => lines.push(Line {
                number,
                text: text.into_boxed_str(),
                item,
            }),
            Err(reason) if !args.keep_going => {
                return Err(Failure::BatchMalformed {
                    file: input.name,
                    line: number,
                    text: quote(&text),
                    reason: quote(&reason),
                }
                .into());
            }
            Err(reason) => {
                totals.n_malformed += 1;
                failure::warn(format_args!(
                    "{}:{number}: malformed line `{}`: {}; skipped",
                    input.name,
                    quote(&text),
                    quote(&reason)
                ));
            }
        }
        if args.keep_going && lines.len() >= CHUNK_LINES {
            applier.apply(&lines, &mut totals)?;
            lines.clear();
        }
    }
    if let Some(number) = too_long
        && !args.keep_going
    {
        return Err(Failure::BatchLineTooLong {
            file: input.name,
            line: number,
            limit: MAX_LINE,
            what: "nothing was applied".to_owned(),
        }
        .into());
    }
    totals.read_all = input.eof;
    let progress = crate::progress::Progress::start("applying batch");
    applier.apply(&lines, &mut totals)?;
    drop(progress);

    let printed = print_summary(printer, &totals, interrupt.received(), &input.name);
    let failed = totals.n_failed + totals.n_malformed;
    if let Some(number) = too_long {
        return Err(Failure::BatchLineTooLong {
            file: input.name,
            line: number,
            limit: MAX_LINE,
            what: format!(
                "reading stopped there; {} of {} lines before it applied",
                totals.n_ok, totals.n_lines
            ),
        }
        .into());
    }
    if let Some(signal) = interrupt.received()
        && let Some(number) = totals.stopped_at
    {
        return Err(Failure::Interrupted {
            signal,
            what: format!(
                "{} of {} lines{} applied; nothing from {}:{number} on was applied",
                totals.n_ok,
                totals.n_lines,
                if totals.read_all { "" } else { " read" },
                input.name
            ),
        }
        .into());
    }
    if totals.n_failed > 0 && totals.all_eperm && totals.n_ok == 0 {
        return Err(Failure::PermissionDenied {
            what: "change routes and addresses".to_owned(),
            hint: crate::failure::KERNEL_HINT,
        }
        .into());
    }
    if failed > 0 {
        return Err(Failure::BatchFailed {
            failed,
            total: totals.n_lines,
        }
        .into());
    }
    printed
}

/// Sends lines and reports what the kernel said about them.
struct Applier<'a> {
    platform: &'a Platform,
    interrupt: &'a Interrupt,
    keep_going: bool,
    file: String,
}

impl Applier<'_> {
    /// Applies `lines` as one batch (stopping at the first refusal unless `--continue`, and
    /// before the next send once a signal came) and adds what happened to `totals`.
    fn apply(&mut self, lines: &[Line], totals: &mut Totals) -> anyhow::Result<()> {
        if lines.is_empty() {
            return Ok(());
        }
        if totals.n_skipped > 0 || totals.stopped_at.is_some() {
            // Stopped already: nothing more is sent.
            return Ok(());
        }
        let mut batch = self
            .platform
            .batch()
            .extend(lines.iter().map(|line| line.item.clone()))
            .cancel_on(self.interrupt.flag());
        if !self.keep_going {
            batch = batch.stop_on_error(true).undo_past_failure(true);
        }
        tracing::debug!(n_lines = lines.len(), "sending batch");
        let report = batch
            .execute()
            .map_err(|err| kernel::explain(err, "apply the batch"))?;
        let refused = report.failures.iter().map(|failure| (failure, false));
        let not_undone = report.undo_failures.iter().map(|failure| (failure, true));
        for (failure, undo) in refused.chain(not_undone) {
            let Some(line) = lines.get(failure.index) else {
                continue;
            };
            let what = match &failure.item {
                _ if !undo => "",
                Item::Route(platform::Op::Delete, _) => {
                    "applied after the first failure, and undoing it failed \
                     (the route it deleted stays deleted): "
                }
                _ => "applied after the first failure, and undoing it failed (it stays applied): ",
            };
            let error = failure.error.to_string();
            failure::warn(format_args!(
                "{}:{}: `{}`: {what}{}",
                self.file,
                line.number,
                quote(&line.text),
                escape(&error)
            ));
            let mut object = Map::new();
            object.insert("line".to_owned(), Value::from(line.number));
            object.insert("text".to_owned(), Value::from(&*line.text));
            object.insert("error".to_owned(), Value::from(error));
            if undo {
                object.insert("undo".to_owned(), Value::from(true));
            }
            totals.failures.push(Value::Object(object));
            totals.all_eperm &= failure.error.errno == EPERM;
        }
        totals.n_ok += report.n_ok;
        totals.n_skipped += report.n_skipped;
        totals.n_not_undone += report.undo_failures.len();
        totals.n_failed += report.failures.len() + report.undo_failures.len();
        if report.n_cancelled > 0 {
            let first = lines.len() - report.n_cancelled;
            totals.stopped_at = Some(lines[first].number);
        }
        Ok(())
    }
}

/// Prints the summary: `N of M lines applied, ...` for people, one object in JSON.
fn print_summary(
    printer: &mut Printer,
    totals: &Totals,
    signal: Option<Signal>,
    file: &str,
) -> anyhow::Result<()> {
    let interrupted = signal.filter(|_| totals.stopped_at.is_some());
    match printer.mode() {
        Mode::Json => {
            let mut object = Map::new();
            object.insert("applied".to_owned(), Value::from(totals.n_ok));
            object.insert("failed".to_owned(), Value::Array(totals.failures.clone()));
            object.insert("malformed".to_owned(), Value::from(totals.n_malformed));
            object.insert("skipped".to_owned(), Value::from(totals.n_skipped));
            // Applied after the first failure and still applied: the undo was refused.
            object.insert("not_undone".to_owned(), Value::from(totals.n_not_undone));
            object.insert(
                "interrupted".to_owned(),
                interrupted.map_or(Value::Null, |signal| Value::from(signal.name())),
            );
            object.insert(
                "not_applied_from_line".to_owned(),
                interrupted
                    .and(totals.stopped_at)
                    .map_or(Value::Null, Value::from),
            );
            printer.json(&Value::Object(object))?;
        }
        Mode::Human | Mode::Terse => {
            let read = if totals.read_all { "" } else { " read" };
            let mut summary = format!("{} of {} lines{read} applied", totals.n_ok, totals.n_lines);
            if totals.n_skipped > 0 {
                summary.push_str(&format!(
                    ", {} not applied after the first failure",
                    totals.n_skipped
                ));
            }
            if totals.n_not_undone > 0 {
                summary.push_str(&format!(
                    ", {} applied after the first failure and not undone",
                    totals.n_not_undone
                ));
            }
            if let (Some(signal), Some(number)) = (interrupted, totals.stopped_at) {
                summary.push_str(&format!(
                    "; interrupted by {}: nothing from {file}:{number} on was applied",
                    signal.name()
                ));
            }
            printer.note(&summary)?;
        }
    }
    printer.flush()
}

/// A line (or a message quoting one) for a diagnostic: escaped for the terminal and cut to
/// [`QUOTE_CHARS`] characters, with its length when cut.
fn quote(text: &str) -> String {
    let escaped = escape(text);
    match escaped.char_indices().nth(QUOTE_CHARS) {
        None => escaped.into_owned(),
        Some((cut, _)) => format!("{}... ({} bytes)", &escaped[..cut], text.len()),
    }
}
