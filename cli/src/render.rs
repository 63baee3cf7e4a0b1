//! Output: aligned tables for people, JSON for scripts, and nmcli-style terse lines.
//!
//! Every command turns what the libraries return into a [`Table`]: a fixed list of [`Field`]s
//! (the column names `nmcli` and `ip` users expect) and rows of [`Cell`]s. This module is the
//! only place that decides how a table looks, so every command prints the same way:
//!
//! - people: columns aligned, separated by two spaces, the header in bold and states in colour
//!   when stdout is a terminal (`--color`, `NO_COLOR`, `CLICOLOR` and `CLICOLOR_FORCE` are
//!   honoured); a missing value
//!   is `--`, as in nmcli;
//! - `--json`: an array with one object per row, keys in column order (see the README for the
//!   shape of each command); monitors print one object per line;
//! - `--terse`: no header, values joined by `:`, with `:` and `\` escaped by `\`, as `nmcli -t`.
//!
//! `--fields` picks columns by name (case-insensitive), `all` or `common`.

use std::borrow::Cow;
use std::io::{self, Write};
use std::net::IpAddr;
use std::sync::Arc;

use std::io::{BufWriter, IsTerminal};

use anstyle::{AnsiColor, Style};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};

use crate::args::{ColorChoice, OutputArgs, usage_error};

/// One `NAME: value` line of a properties view.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Prop {
    /// The name, `SECTION.FIELD`.
    pub(crate) name: String,
    /// The value.
    pub(crate) cell: Cell,
    /// Whether it is shown without `--fields`.
    pub(crate) common: bool,
    /// Whether `--fields all` shows it (nmcli's `connection show -f all` is the profile's
    /// settings only, without the active connection's sections).
    pub(crate) in_all: bool,
    /// The group `--fields` may name to select it with others (`profile`, `active`).
    pub(crate) group: Option<&'static str>,
}

impl Prop {
    /// A line shown by default.
    pub(crate) fn common(name: impl Into<String>, cell: Cell) -> Prop {
        Prop {
            name: name.into(),
            cell,
            common: true,
            in_all: true,
            group: None,
        }
    }

    /// A line shown with `--fields all` or when asked.
    pub(crate) fn extra(name: impl Into<String>, cell: Cell) -> Prop {
        Prop {
            name: name.into(),
            cell,
            common: false,
            in_all: true,
            group: None,
        }
    }

    /// The line in group `group`, which `--fields` may name.
    pub(crate) fn in_group(self, group: &'static str) -> Prop {
        Prop {
            group: Some(group),
            ..self
        }
    }

    /// The line left out of `--fields all` (shown by default or when asked).
    pub(crate) fn not_in_all(self) -> Prop {
        Prop {
            in_all: false,
            ..self
        }
    }
}

/// One value in a table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cell {
    /// No value: `--` in tables, empty in terse output, `null` in JSON.
    Null,
    /// `yes`/`no` in text, `true`/`false` in JSON.
    Bool(bool),
    /// A number.
    Int(i64),
    /// Text (a borrowed name such as `main` costs no allocation).
    Text(Cow<'static, str>),
    /// Text shared by many rows, such as an interface name (a clone costs no allocation).
    Shared(Arc<str>),
    /// Several values: joined by `,` in text, an array in JSON.
    List(Vec<String>),
    /// An address or prefix as `ip` prints a route's (`default`, the bare address at full
    /// length, `ADDR/LEN`): written where it is printed, without a string of its own.
    Prefix(IpAddr, u8),
    /// A value with its own text and JSON (a D-Bus value: `yes` and `true`). Boxed, as
    /// [`Cell::Modal`]: the rare big variants would otherwise make every cell of a table four
    /// times its size (120 bytes instead of 32).
    Typed(Box<TypedCell>),
    /// A value that nmcli writes differently in terse output (a route is `{ ip = ... }` for
    /// people, `198.51.100.0/24 192.0.2.254 50` with `-t`).
    Modal(Box<ModalCell>),
}

/// The value of a [`Cell::Typed`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TypedCell {
    /// The text for people.
    pub(crate) text: String,
    /// The value for scripts.
    pub(crate) json: Value,
}

/// The value of a [`Cell::Modal`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ModalCell {
    /// The text for people.
    pub(crate) text: String,
    /// The text in terse output.
    pub(crate) terse: String,
    /// The value for scripts.
    pub(crate) json: Value,
}

impl From<TypedCell> for Cell {
    fn from(value: TypedCell) -> Self {
        Cell::Typed(Box::new(value))
    }
}

impl From<ModalCell> for Cell {
    fn from(value: ModalCell) -> Self {
        Cell::Modal(Box::new(value))
    }
}

impl Cell {
    /// Text, or [`Cell::Null`] when `value` is `None`.
    pub(crate) fn opt_text(value: Option<impl ToString>) -> Cell {
        value.map_or(Cell::Null, |value| {
            Cell::Text(Cow::Owned(value.to_string()))
        })
    }

    /// A number, or [`Cell::Null`] when `value` is `None`.
    pub(crate) fn opt_int(value: Option<impl Into<i64>>) -> Cell {
        value.map_or(Cell::Null, |value| Cell::Int(value.into()))
    }

    /// The value as people read it in a table, escaped for a terminal ([`escape`]).
    pub(crate) fn text(&self) -> Cow<'_, str> {
        match self.raw_text() {
            Cow::Borrowed(text) => escape(text),
            Cow::Owned(text) => match escape(&text) {
                Cow::Borrowed(_) => Cow::Owned(text),
                Cow::Owned(escaped) => Cow::Owned(escaped),
            },
        }
    }

    /// The value as people read it, as the source sent it (not escaped: never write it to a
    /// terminal as it is).
    fn raw_text(&self) -> Cow<'_, str> {
        match self {
            Cell::Null => Cow::Borrowed("--"),
            Cell::Bool(true) => Cow::Borrowed("yes"),
            Cell::Bool(false) => Cow::Borrowed("no"),
            Cell::Int(value) => Cow::Owned(value.to_string()),
            Cell::Text(text) => Cow::Borrowed(text),
            Cell::Shared(text) => Cow::Borrowed(text),
            Cell::List(items) if items.is_empty() => Cow::Borrowed("--"),
            Cell::List(items) => Cow::Owned(items.join(",")),
            Cell::Prefix(addr, len) => {
                Cow::Owned(netmirror_platform::names::route_prefix(*addr, *len))
            }
            Cell::Typed(typed) if typed.text.is_empty() => Cow::Borrowed("--"),
            Cell::Modal(modal) if modal.text.is_empty() => Cow::Borrowed("--"),
            Cell::Typed(typed) => Cow::Borrowed(&typed.text),
            Cell::Modal(modal) => Cow::Borrowed(&modal.text),
        }
    }

    /// Appends [`Cell::text`] to `line` without allocating for numbers and lists.
    pub(crate) fn push_text(&self, line: &mut String) {
        match self {
            Cell::Int(value) => push_int(line, *value),
            Cell::List(items) if !items.is_empty() => {
                for (idx, item) in items.iter().enumerate() {
                    if idx > 0 {
                        line.push(',');
                    }
                    push_escaped(line, item, false);
                }
            }
            Cell::Text(text) => push_escaped(line, text, false),
            Cell::Shared(text) => push_escaped(line, text, false),
            // An address never needs escaping.
            Cell::Prefix(addr, len) => {
                netmirror_platform::names::push_route_prefix(line, *addr, *len)
            }
            other => line.push_str(&other.text()),
        }
    }

    /// The value in terse output, not escaped yet ([`escape_terse`] does it): like
    /// [`Cell::text`] but empty when missing.
    fn terse(&self) -> Cow<'_, str> {
        match self {
            Cell::Null => Cow::Borrowed(""),
            Cell::Typed(typed) => Cow::Borrowed(&typed.text),
            Cell::Modal(modal) => Cow::Borrowed(&modal.terse),
            Cell::List(items) => Cow::Owned(items.join(",")),
            other => other.raw_text(),
        }
    }

    /// The value in JSON.
    pub(crate) fn json(&self) -> Value {
        match self {
            Cell::Null => Value::Null,
            Cell::Bool(value) => Value::Bool(*value),
            Cell::Int(value) => Value::from(*value),
            Cell::Text(text) => Value::String(text.to_string()),
            Cell::Shared(text) => Value::String(text.to_string()),
            Cell::List(items) => Value::Array(items.iter().cloned().map(Value::String).collect()),
            Cell::Prefix(addr, len) => {
                Value::String(netmirror_platform::names::route_prefix(*addr, *len))
            }
            Cell::Typed(typed) => typed.json.clone(),
            Cell::Modal(modal) => modal.json.clone(),
        }
    }
}

/// A row whose cells are asked for one at a time, as a [`RowStream`] writes them: a cell
/// that is not printed is never made, and a row that knows how can write a cell's text or
/// JSON without making it (a route's address, name or number straight into the output).
/// What [`LazyRow::push_text`] and [`LazyRow::push_json`] write must be what the cell of
/// [`LazyRow::with_cell`] writes.
pub(crate) trait LazyRow {
    /// Calls `then` with field `idx`'s cell.
    fn with_cell<R>(&mut self, idx: usize, then: impl FnOnce(&Cell) -> R) -> R;

    /// Appends field `idx`'s text for people ([`Cell::push_text`]).
    fn push_text(&mut self, idx: usize, out: &mut String) {
        self.with_cell(idx, |cell| cell.push_text(out));
    }

    /// Appends field `idx`'s text for people as [`LazyRow::push_text`] does when an event
    /// line shows the field ([`shown`]: its cell is neither null nor an empty list); appends
    /// nothing and returns false when it does not.
    fn push_shown_text(&mut self, idx: usize, out: &mut String) -> bool {
        self.with_cell(idx, |cell| {
            let shown = shown(cell);
            if shown {
                cell.push_text(out);
            }
            shown
        })
    }

    /// How many of the last of `fields` (field indexes, in the order written) have for
    /// certain the text for people that [`LazyRow::push_text`] (or, on an event line,
    /// [`LazyRow::push_shown_text`]) last appended for each (rows that share what they
    /// remember, such as a route's [`NameMemo`](crate::kernel::NameMemo), written one after
    /// the other): an aligned [`RowStream`], or a monitor's next event line, then copies that
    /// part of the line before instead of writing it again. 0 when not known.
    fn same_tail(&mut self, fields: &[usize]) -> usize {
        let _ = fields;
        0
    }

    /// [`LazyRow::same_tail`] for the JSON that [`LazyRow::push_json`] appends.
    fn same_json_tail(&mut self, fields: &[usize]) -> usize {
        let _ = fields;
        0
    }

    /// Appends field `idx`'s JSON value (as [`RowStream`] writes a cell's).
    fn push_json(&mut self, idx: usize, out: &mut String) {
        self.with_cell(idx, |cell| push_json_cell(out, cell));
    }

    /// Appends field `idx`'s JSON value on one line, as `serde_json::to_writer` writes
    /// [`Cell::json`] (a monitor's events: [`push_json_cell_compact`]).
    fn push_json_compact(&mut self, idx: usize, out: &mut String) {
        self.with_cell(idx, |cell| push_json_cell_compact(out, cell));
    }

    /// A key for the row's fixed values: every row with the same key has the same
    /// [`LazyRow::json_fixed`] for every field. `None`, the default: the row has none.
    ///
    /// A monitor's JSON event writes a row's fixed values together with their keys, as
    /// pieces of text kept while the next rows have the same key (in a burst of routes,
    /// mostly every row).
    fn json_shape(&mut self) -> Option<u64> {
        None
    }

    /// Field `idx`'s compact JSON when it is fixed at compile time (`null`, `[]`, a name),
    /// which only [`LazyRow::json_shape`] decides: exactly what
    /// [`LazyRow::push_json_compact`] writes for it. `None`, the default: the value is
    /// written by [`LazyRow::push_json_compact`].
    fn json_fixed(&mut self, idx: usize) -> Option<&'static str> {
        let _ = idx;
        None
    }
}

/// The rows of one change a monitor prints with [`Printer::event_rows`]: the object before
/// and after it, each as a [`LazyRow`] (written one after the other, so both may share a
/// memo of names).
pub(crate) trait EventRows {
    /// A row of the change's object.
    type Row<'r>: LazyRow
    where
        Self: 'r;

    /// The object before the change (none for `added`).
    fn old_row(&mut self) -> Option<Self::Row<'_>>;

    /// The object after the change (none for `removed`).
    fn new_row(&mut self) -> Option<Self::Row<'_>>;
}

/// A row made whole beforehand.
struct CellRow<'a>(&'a [Cell]);

impl LazyRow for CellRow<'_> {
    fn with_cell<R>(&mut self, idx: usize, then: impl FnOnce(&Cell) -> R) -> R {
        then(&self.0[idx])
    }
}

impl From<&'static str> for Cell {
    fn from(text: &'static str) -> Self {
        Cell::Text(Cow::Borrowed(text))
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Self {
        Cell::Text(Cow::Owned(text))
    }
}

impl From<Cow<'static, str>> for Cell {
    fn from(text: Cow<'static, str>) -> Self {
        Cell::Text(text)
    }
}

impl From<bool> for Cell {
    fn from(value: bool) -> Self {
        Cell::Bool(value)
    }
}

impl From<u32> for Cell {
    fn from(value: u32) -> Self {
        Cell::Int(value.into())
    }
}

impl From<netmirror_platform::Ifindex> for Cell {
    fn from(value: netmirror_platform::Ifindex) -> Self {
        Cell::Int(value.get().into())
    }
}

impl From<u8> for Cell {
    fn from(value: u8) -> Self {
        Cell::Int(value.into())
    }
}

impl From<i64> for Cell {
    fn from(value: i64) -> Self {
        Cell::Int(value)
    }
}

impl From<usize> for Cell {
    fn from(value: usize) -> Self {
        Cell::Int(i64::try_from(value).unwrap_or(i64::MAX))
    }
}

impl From<Vec<String>> for Cell {
    fn from(items: Vec<String>) -> Self {
        Cell::List(items)
    }
}

/// A column: its header in tables and `--fields`, and its key in JSON.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Field {
    /// The header, such as `DEVICE`; `--fields` matches it case-insensitively.
    pub(crate) header: &'static str,
    /// The JSON key, such as `device` (the `ip -j` key where `ip` has one).
    pub(crate) key: &'static str,
    /// Shown without `--fields`; JSON always has every field unless `--fields` is given.
    pub(crate) common: bool,
}

impl Field {
    /// A column shown by default.
    pub(crate) const fn common(header: &'static str, key: &'static str) -> Field {
        Field {
            header,
            key,
            common: true,
        }
    }

    /// A column shown only when asked for with `--fields` (and always in JSON).
    pub(crate) const fn extra(header: &'static str, key: &'static str) -> Field {
        Field {
            header,
            key,
            common: false,
        }
    }
}

/// Rows of cells under fixed columns.
#[derive(Debug, Clone)]
pub(crate) struct Table {
    fields: &'static [Field],
    rows: Vec<Vec<Cell>>,
}

impl Table {
    /// An empty table with these columns.
    pub(crate) fn new(fields: &'static [Field]) -> Table {
        Table {
            fields,
            rows: Vec::new(),
        }
    }

    /// Adds a row; it must have one cell per field.
    pub(crate) fn push(&mut self, row: Vec<Cell>) {
        debug_assert_eq!(row.len(), self.fields.len(), "one cell per field");
        self.rows.push(row);
    }

    /// Number of rows.
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// One row as a JSON object with the chosen fields, in column order.
    fn row_json(&self, row: &[Cell], chosen: &[usize]) -> Value {
        let mut object = Map::new();
        for &idx in chosen {
            object.insert(self.fields[idx].key.to_owned(), row[idx].json());
        }
        Value::Object(object)
    }
}

/// A table as a JSON array of objects, serialized row by row without building a `Value`.
struct TableView<'a> {
    table: &'a Table,
    chosen: &'a [usize],
}

impl Serialize for TableView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.table.rows.len()))?;
        for row in &self.table.rows {
            seq.serialize_element(&RowView {
                fields: self.table.fields,
                row,
                chosen: self.chosen,
            })?;
        }
        seq.end()
    }
}

/// One row as a JSON object with the chosen fields, in column order.
struct RowView<'a> {
    fields: &'a [Field],
    row: &'a [Cell],
    chosen: &'a [usize],
}

impl Serialize for RowView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.chosen.len()))?;
        for &idx in self.chosen {
            map.serialize_entry(self.fields[idx].key, &self.row[idx])?;
        }
        map.end()
    }
}

impl Serialize for Cell {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Cell::Null => serializer.serialize_none(),
            Cell::Bool(value) => serializer.serialize_bool(*value),
            Cell::Int(value) => serializer.serialize_i64(*value),
            Cell::Text(text) => serializer.serialize_str(text),
            Cell::Shared(text) => serializer.serialize_str(text),
            Cell::List(items) => items.serialize(serializer),
            Cell::Prefix(addr, len) => {
                serializer.serialize_str(&netmirror_platform::names::route_prefix(*addr, *len))
            }
            Cell::Typed(typed) => typed.json.serialize(serializer),
            Cell::Modal(modal) => modal.json.serialize(serializer),
        }
    }
}

/// Which of a table's fields to print, from `--fields`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Selection {
    /// Without `--fields`: the common fields in text, all in JSON.
    Default,
    /// `--fields all`.
    All,
    /// `--fields common`.
    Common,
    /// These names, in this order.
    Names(Vec<String>),
}

impl Selection {
    fn from_args(fields: &[String]) -> Selection {
        match fields {
            [] => Selection::Default,
            [one] if one.eq_ignore_ascii_case("all") => Selection::All,
            [one] if one.eq_ignore_ascii_case("common") => Selection::Common,
            names => Selection::Names(names.iter().map(|name| name.trim().to_owned()).collect()),
        }
    }

    /// Indices of the chosen fields; an unknown name is a usage error that lists the valid ones.
    pub(crate) fn resolve(&self, fields: &[Field], json: bool) -> Result<Vec<usize>, clap::Error> {
        let all = || (0..fields.len()).collect();
        let common = || {
            (0..fields.len())
                .filter(|&idx| fields[idx].common)
                .collect()
        };
        match self {
            Selection::Default if json => Ok(all()),
            Selection::Default | Selection::Common => Ok(common()),
            Selection::All => Ok(all()),
            Selection::Names(names) => names
                .iter()
                .map(|name| {
                    fields
                        .iter()
                        .position(|field| {
                            field.header.eq_ignore_ascii_case(name)
                                || field.key.eq_ignore_ascii_case(name)
                        })
                        .ok_or_else(|| {
                            let valid: Vec<&str> =
                                fields.iter().map(|field| field.header).collect();
                            usage_error(format!(
                                "'{name}' field is not valid; allowed fields: {}",
                                valid.join(",")
                            ))
                        })
                })
                .collect::<Result<Vec<usize>, clap::Error>>()
                .map(|mut chosen| {
                    // A field named twice is printed once.
                    let mut seen = Vec::with_capacity(chosen.len());
                    chosen.retain(|idx| {
                        let first = !seen.contains(idx);
                        seen.push(*idx);
                        first
                    });
                    chosen
                }),
        }
    }
}

/// The output mode chosen on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Aligned tables.
    Human,
    /// `--json`.
    Json,
    /// `--terse`.
    Terse,
}

/// Writes tables, details and events to stdout in the chosen mode.
pub(crate) struct Printer {
    mode: Mode,
    selection: Selection,
    color: bool,
    out: BufWriter<Box<dyn Write + Send>>,
    /// JSON monitors: the keys of the fields of the last event printed.
    event_keys: Option<JsonEventKeys>,
    /// JSON monitors: the line being written.
    event_line: String,
    /// Monitors for people: the fields of the last event printed and those of them chosen.
    event_chosen: Option<(&'static [Field], Vec<usize>)>,
    /// Monitors for people: the fields' part of the last line [`Printer::event_row_text`]
    /// wrote (each field's text with its leading space), of the fields of `event_chosen`: the
    /// next line of the same fields copies the part whose values have not changed, as
    /// [`RowStream`] copies a table row's.
    event_tail: LastRow,
}

impl Printer {
    /// A printer on stdout; colour only when stdout is a terminal.
    pub(crate) fn new(args: &OutputArgs) -> Printer {
        Printer::with_writer(args, use_color(args.color), Box::new(io::stdout()))
    }

    /// A printer on `out` (tests print into a buffer).
    pub(crate) fn with_writer(
        args: &OutputArgs,
        color: bool,
        out: Box<dyn Write + Send>,
    ) -> Printer {
        let mode = if args.json {
            Mode::Json
        } else if args.terse {
            Mode::Terse
        } else {
            Mode::Human
        };
        Printer {
            mode,
            selection: Selection::from_args(&args.fields),
            color,
            out: BufWriter::with_capacity(64 * 1024, out),
            event_keys: None,
            event_line: String::new(),
            event_chosen: None,
            event_tail: LastRow::default(),
        }
    }

    /// The output mode.
    pub(crate) fn mode(&self) -> Mode {
        self.mode
    }

    /// The fields `--fields` chose for this table.
    fn chosen(&self, table: &Table) -> Result<Vec<usize>, clap::Error> {
        self.selection
            .resolve(table.fields, self.mode == Mode::Json)
    }

    /// A table as JSON (an array of objects), for commands that compose several tables.
    pub(crate) fn table_json(&self, table: &Table) -> anyhow::Result<Value> {
        let chosen = self.chosen(table)?;
        Ok(Value::Array(
            table
                .rows
                .iter()
                .map(|row| table.row_json(row, &chosen))
                .collect(),
        ))
    }

    /// Prints a list.
    pub(crate) fn table(&mut self, table: &Table) -> anyhow::Result<()> {
        let chosen = self.chosen(table)?;
        write_table(&mut self.out, self.color, self.mode, table, &chosen, false)
    }

    /// Prints one object's properties, one per line, as `nmcli device show` and `nmcli
    /// connection show ID` do: `NAME:  value` for people (lists as `NAME[1]`, `NAME[2]`),
    /// `NAME:value` terse (unescaped, as nmcli does in this layout), one JSON object in JSON.
    /// Without `--fields` the common ones (all of them in JSON); `--fields all` shows all;
    /// `--fields` names keep the properties named, or whole sections (`-f GENERAL,IP4`),
    /// case-insensitively, in the order asked.
    pub(crate) fn props(&mut self, props: &[Prop]) -> anyhow::Result<()> {
        let wanted = |name: &str, wanted: &str| {
            name.eq_ignore_ascii_case(wanted)
                || name
                    .split_once('.')
                    .is_some_and(|(section, _)| section.eq_ignore_ascii_case(wanted))
                || name
                    .split_once('[')
                    .is_some_and(|(base, _)| base.eq_ignore_ascii_case(wanted))
        };
        let props: Vec<(&String, &Cell)> = match &self.selection {
            Selection::Names(names) => names
                .iter()
                .flat_map(|want| {
                    props.iter().filter(move |p| {
                        wanted(&p.name, want)
                            || p.group
                                .is_some_and(|group| group.eq_ignore_ascii_case(want))
                    })
                })
                .map(|p| (&p.name, &p.cell))
                .collect(),
            Selection::All => props
                .iter()
                .filter(|p| p.in_all)
                .map(|p| (&p.name, &p.cell))
                .collect(),
            Selection::Default if self.mode == Mode::Json => {
                props.iter().map(|p| (&p.name, &p.cell)).collect()
            }
            Selection::Default | Selection::Common => props
                .iter()
                .filter(|p| p.common)
                .map(|p| (&p.name, &p.cell))
                .collect(),
        };
        if self.mode == Mode::Json {
            let object: Map<String, Value> = props
                .iter()
                .map(|(name, cell)| ((*name).clone(), cell.json()))
                .collect();
            return self.json(&Value::Object(object));
        }
        let terse = self.mode == Mode::Terse;
        // Names and values come from the service: escaped here, where they are written (in
        // both layouts with `escape`: nmcli escapes nothing in this one, but a control
        // character or a newline must never reach the terminal or forge a line).
        let mut lines: Vec<(String, String)> = Vec::new();
        for (name, cell) in props {
            let name = escape(name);
            match cell {
                Cell::List(items) if !items.is_empty() && (items.len() > 1 || terse) => {
                    for (idx, item) in items.iter().enumerate() {
                        lines.push((format!("{name}[{}]", idx + 1), escape(item).into_owned()));
                    }
                }
                Cell::List(items) if items.is_empty() && terse => {}
                cell if terse => {
                    lines.push((name.into_owned(), escape(&cell.terse()).into_owned()))
                }
                cell => lines.push((name.into_owned(), cell.text().into_owned())),
            }
        }
        for (name, value) in lines {
            if terse {
                // One property per line: nmcli leaves the value unescaped, since the first
                // `:` already ends the name.
                writeln!(self.out, "{name}:{value}")?;
            } else {
                // nmcli's layout: `NAME:` padded to 40 columns, the value right after (no
                // space after a name of 40 columns or more).
                let label = format!("{name}:");
                let pad = NMCLI_VALUE_INDENT.saturating_sub(width_of(&label));
                let style = value_style(self.color, &value);
                writeln!(self.out, "{label}{:pad$}{style}{value}{style:#}", "")?;
            }
        }
        Ok(())
    }

    /// Prints a JSON value on one line (monitors) or pretty (everything else).
    pub(crate) fn json(&mut self, value: &Value) -> anyhow::Result<()> {
        serde_json::to_writer_pretty(&mut self.out, value)?;
        writeln!(self.out)?;
        Ok(())
    }

    /// Prints a JSON value on one line and flushes it: one event of a monitor.
    pub(crate) fn json_line(&mut self, value: &Value) -> anyhow::Result<()> {
        serde_json::to_writer(&mut self.out, value)?;
        writeln!(self.out)?;
        self.out.flush()?;
        Ok(())
    }

    /// Prints a heading line (human mode only) such as the overview's section titles.
    pub(crate) fn heading(&mut self, title: &str) -> anyhow::Result<()> {
        if self.mode == Mode::Human {
            let style = paint(self.color, Style::new().bold().underline());
            writeln!(self.out, "{style}{}{style:#}", escape(title))?;
        }
        Ok(())
    }

    /// Prints one plain line (escaped: callers may quote what a source sent) and flushes it
    /// (monitors, notes in the overview).
    pub(crate) fn line(&mut self, text: &str) -> anyhow::Result<()> {
        writeln!(self.out, "{}", escape(text))?;
        self.out.flush()?;
        Ok(())
    }

    /// Prints an empty line between sections (people only).
    pub(crate) fn blank(&mut self) -> anyhow::Result<()> {
        if self.mode == Mode::Human {
            writeln!(self.out)?;
        }
        Ok(())
    }

    /// Prints a remark such as "no default route" (people only; scripts read JSON).
    pub(crate) fn note(&mut self, text: &str) -> anyhow::Result<()> {
        if self.mode == Mode::Human {
            let style = paint(self.color, Style::new().italic());
            writeln!(self.out, "{style}{}{style:#}", escape(text))?;
        }
        Ok(())
    }

    /// Prints a monitor's line about itself: `json` with `--json`, `object:event` with
    /// `--terse`, `text` for people; flushed at once.
    pub(crate) fn status(&mut self, json: &Value, text: &str) -> anyhow::Result<()> {
        match self.mode {
            Mode::Json => self.json_line(json),
            Mode::Terse => {
                let field = |key: &str| json.get(key).and_then(Value::as_str).unwrap_or("");
                let line = format!(
                    "{}:{}",
                    escape_terse(field("object")),
                    escape_terse(field("event"))
                );
                writeln!(self.out, "{line}")?;
                self.out.flush()?;
                Ok(())
            }
            Mode::Human => self.line(text),
        }
    }

    /// Prints a change event of a monitor (see [`write_event`]) and flushes it.
    pub(crate) fn event(&mut self, event: &Event<'_>) -> anyhow::Result<()> {
        self.event_buffered(event)?;
        self.out.flush()?;
        Ok(())
    }

    /// Prints a change event of a monitor (see [`write_event`]) into the output buffer,
    /// without flushing it: a monitor that has more events waiting flushes once they are
    /// all printed ([`Printer::flush`]).
    pub(crate) fn event_buffered(&mut self, event: &Event<'_>) -> anyhow::Result<()> {
        if self.mode != Mode::Json {
            return write_event(&mut self.out, self.color, self.mode, &self.selection, event);
        }
        // JSON: the keys of the last fields printed are kept, and one line buffer.
        let keys = self.event_keys(event.fields)?;
        self.event_line.clear();
        keys.push_event(&mut self.event_line, event);
        self.event_keys = Some(keys);
        self.out.write_all(self.event_line.as_bytes())?;
        Ok(())
    }

    /// Prints a change event of a monitor as [`Printer::event_buffered`] prints its
    /// [`Event`], the rows asked for field by field: JSON is written straight from them,
    /// without making their cells. `extra` is one more key in JSON after the fields of the old
    /// and of the new object (`extra[0]`, `extra[1]`): its key and its value, already JSON
    /// (`monitor -d --json`'s `nh_info`). The other modes leave it out.
    pub(crate) fn event_rows(
        &mut self,
        object: &str,
        kind: EventKind,
        fields: &'static [Field],
        rows: &mut impl EventRows,
        extra: [Option<(&str, &str)>; 2],
    ) -> anyhow::Result<()> {
        if self.mode != Mode::Json {
            // An object added or removed: its one row written field by field.
            if rows.old_row().is_none() {
                if let Some(row) = rows.new_row() {
                    return self.event_row_text(object, kind, fields, row);
                }
            } else if rows.new_row().is_none()
                && let Some(row) = rows.old_row()
            {
                return self.event_row_text(object, kind, fields, row);
            }
            fn cells(fields: &[Field], mut row: impl LazyRow) -> Vec<Cell> {
                (0..fields.len())
                    .map(|idx| row.with_cell(idx, Cell::clone))
                    .collect()
            }
            let old = rows.old_row().map(|row| cells(fields, row));
            let new = rows.new_row().map(|row| cells(fields, row));
            return self.event_buffered(&Event {
                object,
                kind,
                fields,
                old,
                new,
            });
        }
        let mut keys = self.event_keys(fields)?;
        self.event_line.clear();
        keys.push_head(&mut self.event_line, object, kind);
        keys.push_lazy_row(&mut self.event_line, rows.old_row());
        push_extra(&mut self.event_line, extra[0]);
        self.event_line.push_str(",\"new\":");
        keys.push_lazy_row(&mut self.event_line, rows.new_row());
        push_extra(&mut self.event_line, extra[1]);
        self.event_line.push_str("}\n");
        self.event_keys = Some(keys);
        self.out.write_all(self.event_line.as_bytes())?;
        Ok(())
    }

    /// Prints, for people or `--terse`, an event of one object (added or removed) as
    /// [`write_event`] prints it, its fields written from `row` one by one: no row of cells.
    fn event_row_text(
        &mut self,
        object: &str,
        kind: EventKind,
        fields: &'static [Field],
        mut row: impl LazyRow,
    ) -> anyhow::Result<()> {
        use std::fmt::Write as _;
        let (chosen, same_fields) = match self.event_chosen.take() {
            Some((of, chosen)) if std::ptr::eq(of, fields) => (chosen, true),
            _ => (self.selection.resolve(fields, false)?, false),
        };
        let line = &mut self.event_line;
        line.clear();
        if self.mode == Mode::Terse {
            line.push_str(object);
            line.push(':');
            line.push_str(kind.as_str());
            for &idx in &chosen {
                line.push(':');
                row.with_cell(idx, |cell| push_escaped(line, &cell.terse(), true));
            }
        } else {
            line.push('[');
            line.push_str(object);
            line[1..].make_ascii_uppercase();
            line.push_str("] ");
            if self.color {
                let style = kind_style(kind);
                write!(line, "{style}{}{style:#} ", kind.as_str())?;
            } else {
                line.push_str(kind.as_str());
                line.push(' ');
            }
            // The fields from `reuse` on show what they showed in the line before (a burst
            // of routes mostly differs in the destination only): that part of its line is
            // copied.
            let last = &mut self.event_tail;
            if !same_fields {
                last.known = false;
            }
            let n_fields = chosen.len();
            let mut reuse = last.first_copied(n_fields, || row.same_tail(&chosen));
            // Whether a field before the part to copy was shown in the line before.
            let shown_before = last.starts.get(reuse).is_some_and(|&from| from > 0);
            let row_start = line.len();
            let mut first = true;
            let mut push_field = |col: usize, line: &mut String, first: &mut bool| {
                let idx = chosen[col];
                // The key goes first; taken back when the field is not shown.
                let mark = line.len();
                last.starts[col] = mark - row_start;
                if !*first {
                    line.push(' ');
                }
                line.push_str(fields[idx].key);
                line.push(' ');
                if row.push_shown_text(idx, line) {
                    *first = false;
                } else {
                    line.truncate(mark);
                }
            };
            for col in 0..reuse {
                push_field(col, line, &mut first);
            }
            // The copied part starts with a space when a field before it was shown: it
            // fits only when one is here too.
            if reuse < n_fields && shown_before == first {
                for col in reuse..n_fields {
                    push_field(col, line, &mut first);
                }
                reuse = n_fields;
            }
            last.finish(line, row_start, reuse);
        }
        self.event_chosen = Some((fields, chosen));
        line.push('\n');
        self.out.write_all(line.as_bytes())?;
        Ok(())
    }

    /// The JSON keys of `fields`: those of the last event when it had the same.
    fn event_keys(&mut self, fields: &'static [Field]) -> Result<JsonEventKeys, clap::Error> {
        Ok(match self.event_keys.take() {
            Some(keys) if std::ptr::eq(keys.fields, fields) => keys,
            _ => JsonEventKeys::new(fields, self.selection.resolve(fields, true)?),
        })
    }

    /// Writes to `out` instead of stdout from now on (see `crate::pipe`).
    pub(crate) fn redirect(&mut self, out: Box<dyn Write + Send>) -> anyhow::Result<()> {
        self.out.flush()?;
        self.out = BufWriter::with_capacity(64 * 1024, out);
        Ok(())
    }

    /// Flushes stdout.
    pub(crate) fn flush(&mut self) -> anyhow::Result<()> {
        self.out.flush()?;
        Ok(())
    }

    /// Writes a line into the output buffer without flushing it, each part between tabs
    /// escaped (a monitor's `ip -d` lines; see [`Printer::event_buffered`]).
    pub(crate) fn tabbed_line_buffered(&mut self, text: &str) -> anyhow::Result<()> {
        let mut line = String::with_capacity(text.len() + 1);
        push_tabbed_line(&mut line, text);
        self.out.write_all(line.as_bytes())?;
        Ok(())
    }
}

/// Appends `text` and a newline, each part between tabs escaped as [`escape`] does (the tabs
/// stay: `ip -d`'s lines).
fn push_tabbed_line(out: &mut String, text: &str) {
    for (n, part) in text.split('\t').enumerate() {
        if n > 0 {
            out.push('\t');
        }
        push_escaped(out, part, false);
    }
    out.push('\n');
}

/// Adds the key and value `extra` (already JSON) to the JSON object that `line` ends with;
/// nothing without one, or when `line` ends with `null` (no object).
fn push_extra(line: &mut String, extra: Option<(&str, &str)>) {
    let Some((key, value)) = extra else {
        return;
    };
    if !line.ends_with('}') {
        return;
    }
    line.pop();
    if !line.ends_with('{') {
        line.push(',');
    }
    push_json_str(line, key);
    line.push(':');
    line.push_str(value);
    line.push('}');
}

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventKind {
    /// A new object.
    Added,
    /// An object replaced by a new version (`old` and `new` both set).
    Changed,
    /// An object gone.
    Removed,
    /// An object changed in a way its row does not show (a profile's settings).
    Updated,
}

impl EventKind {
    /// `added`, `changed` or `removed`: the JSON `event` value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventKind::Added => "added",
            EventKind::Changed => "changed",
            EventKind::Removed => "removed",
            EventKind::Updated => "updated",
        }
    }
}

/// One change seen by a monitor.
#[derive(Debug, Clone)]
pub(crate) struct Event<'a> {
    /// `link`, `addr`, `route`, `rule`, `device`, `object`, ...
    pub(crate) object: &'a str,
    /// What happened.
    pub(crate) kind: EventKind,
    /// The columns of `old` and `new`.
    pub(crate) fields: &'static [Field],
    /// The object before the change (none for `added`).
    pub(crate) old: Option<Vec<Cell>>,
    /// The object after the change (none for `removed`).
    pub(crate) new: Option<Vec<Cell>>,
}

/// Writes a table in `mode`: as a list, or with `details` one property per line like
/// `nmcli device show` (lists as `NAME[1]`, `NAME[2]` ...). JSON is an array of objects either way.
fn write_table(
    out: &mut impl Write,
    color: bool,
    mode: Mode,
    table: &Table,
    chosen: &[usize],
    details: bool,
) -> anyhow::Result<()> {
    match mode {
        Mode::Json => {
            let view = TableView { table, chosen };
            serde_json::to_writer_pretty(&mut *out, &view)?;
            writeln!(out)?;
        }
        Mode::Terse if !details => {
            for row in &table.rows {
                let line: Vec<String> = chosen
                    .iter()
                    .map(|&idx| escape_terse(&row[idx].terse()))
                    .collect();
                writeln!(out, "{}", line.join(":"))?;
            }
        }
        Mode::Human if !details => write_aligned(out, color, table, chosen)?,
        Mode::Terse | Mode::Human => write_details(out, color, mode == Mode::Terse, table, chosen)?,
    }
    Ok(())
}

/// Writes each row one property per line, with a blank line between rows for people.
fn write_details(
    out: &mut impl Write,
    color: bool,
    terse: bool,
    table: &Table,
    chosen: &[usize],
) -> anyhow::Result<()> {
    let mut lines: Vec<Vec<(String, String)>> = Vec::with_capacity(table.rows.len());
    for row in &table.rows {
        let mut row_lines = Vec::new();
        for &idx in chosen {
            let header = table.fields[idx].header;
            // Values as sent here; escaped where they are written below.
            match &row[idx] {
                Cell::List(items) if !items.is_empty() && (items.len() > 1 || terse) => {
                    for (item_idx, item) in items.iter().enumerate() {
                        row_lines.push((format!("{header}[{}]", item_idx + 1), item.clone()));
                    }
                }
                // nmcli -t leaves out empty multi-valued properties.
                Cell::List(items) if items.is_empty() && terse => {}
                cell if terse => row_lines.push((header.to_owned(), cell.terse().into_owned())),
                cell => row_lines.push((header.to_owned(), cell.raw_text().into_owned())),
            }
        }
        lines.push(row_lines);
    }
    let width = lines
        .iter()
        .flatten()
        .map(|(name, _)| width_of(name) + 1)
        .max()
        .unwrap_or(0);
    for (row_idx, row_lines) in lines.iter().enumerate() {
        if row_idx > 0 && !terse {
            writeln!(out)?;
        }
        for (name, value) in row_lines {
            if terse {
                writeln!(out, "{name}:{}", escape_terse(value))?;
            } else {
                let label = format!("{name}:");
                let value = escape(value);
                let style = value_style(color, &value);
                writeln!(out, "{label:width$}  {style}{value}{style:#}")?;
            }
        }
    }
    Ok(())
}

/// Writes one event of a monitor. Text: `[ROUTE] changed dst 10.0.0.0/24 ...: metric 100 → 200`;
/// JSON: one object per line, `{"object":"route","event":"changed","old":{...},"new":{...}}`
/// (`old` is null for `added`, `new` for `removed`); terse: `route:changed:` then the new (or
/// removed) row.
fn write_event(
    out: &mut impl Write,
    color: bool,
    mode: Mode,
    selection: &Selection,
    event: &Event<'_>,
) -> anyhow::Result<()> {
    let chosen = selection.resolve(event.fields, mode == Mode::Json)?;
    match mode {
        Mode::Json => {
            let keys = JsonEventKeys::new(event.fields, chosen);
            let mut line = String::with_capacity(512);
            keys.push_event(&mut line, event);
            out.write_all(line.as_bytes())?;
        }
        Mode::Terse => {
            let mut line = format!("{}:{}", event.object, event.kind.as_str());
            if let Some(row) = event.new.as_ref().or(event.old.as_ref()) {
                for &idx in &chosen {
                    line.push(':');
                    line.push_str(&escape_terse(&row[idx].terse()));
                }
            }
            writeln!(out, "{line}")?;
        }
        Mode::Human => {
            // Without --fields, a change is looked for in every field, so that a change of
            // one not shown by default (a hop's weight, a metric, a flag) is still printed.
            let compared: Vec<usize> = match selection {
                Selection::Default => (0..event.fields.len()).collect(),
                _ => chosen.clone(),
            };
            let text = event_text(event, &chosen, &compared);
            let style = paint(color, kind_style(event.kind));
            let tag = format!("[{}]", event.object.to_uppercase());
            writeln!(out, "{tag} {style}{}{style:#} {text}", event.kind.as_str())?;
        }
    }
    Ok(())
}

/// The colour of an event's kind for people: green `added`, red `removed`, yellow the rest.
fn kind_style(kind: EventKind) -> Style {
    match kind {
        EventKind::Added => Style::new().fg_color(Some(AnsiColor::Green.into())),
        EventKind::Removed => Style::new().fg_color(Some(AnsiColor::Red.into())),
        EventKind::Changed | EventKind::Updated => {
            Style::new().fg_color(Some(AnsiColor::Yellow.into()))
        }
    }
}

/// Whether an event for people names a field of this value (not when it is missing).
pub(crate) fn shown(cell: &Cell) -> bool {
    !matches!(cell, Cell::Null) && !matches!(cell, Cell::List(items) if items.is_empty())
}

/// The text of an event for people: the object's fields, then what changed as `old -> new`
/// among the `compared` fields.
fn event_text(event: &Event<'_>, chosen: &[usize], compared: &[usize]) -> String {
    let shown = |row: &[Cell], idx: usize| shown(&row[idx]);
    let describe = |row: &[Cell], skip: &dyn Fn(usize) -> bool| {
        chosen
            .iter()
            .filter(|&&idx| shown(row, idx) && !skip(idx))
            .map(|&idx| format!("{} {}", event.fields[idx].key, row[idx].text()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    match (&event.old, &event.new) {
        (Some(old), Some(new)) => {
            let differs = |idx: usize| old[idx] != new[idx];
            // A change in a column not compared is still shown: a `changed` line never reads
            // as if nothing changed.
            let all: Vec<usize> = (0..event.fields.len().min(old.len()).min(new.len())).collect();
            let changed_cols = if compared.iter().any(|&idx| differs(idx)) {
                compared
            } else {
                &all[..]
            };
            let changes: Vec<String> = changed_cols
                .iter()
                .filter(|&&idx| differs(idx))
                .map(|&idx| {
                    format!(
                        "{} {} \u{2192} {}",
                        event.fields[idx].key,
                        old[idx].text(),
                        new[idx].text()
                    )
                })
                .collect();
            // What stayed the same says which object it is; then what changed.
            let same = describe(new, &differs);
            match (same.is_empty(), changes.is_empty()) {
                // Nothing the columns show differs: say so rather than print an unchanged
                // object as a change.
                (_, true) => format!("{same}: attributes without a column changed"),
                (true, false) => changes.join(", "),
                (false, false) => format!("{same}: {}", changes.join(", ")),
            }
        }
        (None, Some(row)) | (Some(row), None) => describe(row, &|_| false),
        (None, None) => String::new(),
    }
}

/// Escapes `\` and `:` with `\`, as `nmcli --terse` does, and what [`escape`] escapes, so a
/// value can neither end its field nor its record.
pub(crate) fn escape_terse(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    push_escaped(&mut escaped, text, true);
    escaped
}

/// `text` made safe for a terminal: control characters (newlines and tabs included) and
/// characters that change how text is laid out (bidirectional overrides, zero-width marks)
/// are written as C escapes (`\e` for ESC, `\n`, `\t`, `\r`, `\a`, `\b`, `\v`, `\f`) and
/// `\xNN` for each byte of the others, as `ls -b` and systemd's `cescape` do. A backslash is
/// left as it is (tables print names as `ip` and `nmcli` do). Borrowed when nothing needs
/// escaping, the usual case.
pub(crate) fn escape(text: &str) -> Cow<'_, str> {
    if is_clean(text) {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    push_escaped(&mut escaped, text, false);
    Cow::Owned(escaped)
}

/// Appends `text` to `out` escaped as [`escape`] does; `terse` also escapes `\` and `:` with a
/// `\`, as [`escape_terse`] does.
pub(crate) fn push_escaped(out: &mut String, text: &str, terse: bool) {
    if !terse && is_clean(text) {
        out.push_str(text);
        return;
    }
    for ch in text.chars() {
        match ch {
            '\\' | ':' if terse => {
                out.push('\\');
                out.push(ch);
            }
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\x0b' => out.push_str("\\v"),
            '\x0c' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            '\x1b' => out.push_str("\\e"),
            ch if needs_escape(ch) => {
                let mut bytes = [0u8; 4];
                for byte in ch.encode_utf8(&mut bytes).bytes() {
                    push_hex(out, byte);
                }
            }
            ch => out.push(ch),
        }
    }
}

/// Appends `\xNN`.
fn push_hex(out: &mut String, byte: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push_str("\\x");
    out.push(char::from(HEX[usize::from(byte >> 4)]));
    out.push(char::from(HEX[usize::from(byte & 0xf)]));
}

/// Whether nothing in `text` needs escaping: a byte scan for printable ASCII (names,
/// addresses: the usual case, a million times for a routing table), chars otherwise.
fn is_clean(text: &str) -> bool {
    text.bytes().all(|byte| (0x20..0x7f).contains(&byte)) || !text.chars().any(needs_escape)
}

/// Whether a character must not reach a terminal as it is: C0 and C1 control characters,
/// DEL, and the invisible characters that reorder or hide text (bidirectional embeddings,
/// overrides and isolates, zero-width marks, line and paragraph separators, the BOM).
fn needs_escape(ch: char) -> bool {
    ch.is_control()
        || matches!(
            ch,
            '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}'
                | '\u{feff}'
                | '\u{fff9}'..='\u{fffb}'
        )
}

/// Appends a number in decimal (as `Display` writes it, without the formatting machinery).
pub(crate) fn push_int(line: &mut String, value: i64) {
    // `itoa` writes the digits into a buffer on the stack and hands them over as one `&str`
    // (no `fmt`, no per-character push).
    line.push_str(itoa::Buffer::new().format(value));
}

/// Appends `count` spaces.
fn push_spaces(line: &mut String, count: usize) {
    const SPACES: &str = "                                                                ";
    let mut rest = count;
    while rest > 0 {
        let chunk = rest.min(SPACES.len());
        line.push_str(&SPACES[..chunk]);
        rest -= chunk;
    }
}

/// The column where nmcli's one-property-per-line output (`nmcli device show`, `nmcli
/// connection show ID`) starts the values (its `ML_VALUE_INDENT`).
const NMCLI_VALUE_INDENT: usize = 40;

/// The width of text on a terminal, counting characters (the values printed are ASCII or
/// names in which a character is one column).
fn width_of(text: &str) -> usize {
    if text.is_ascii() {
        text.len()
    } else {
        text.chars().count()
    }
}

/// Writes a table with aligned columns separated by two spaces; the last column is not padded.
fn write_aligned(
    out: &mut impl Write,
    color: bool,
    table: &Table,
    chosen: &[usize],
) -> anyhow::Result<()> {
    let headers: Vec<&str> = chosen.iter().map(|&idx| table.fields[idx].header).collect();
    let texts: Vec<Vec<Cow<'_, str>>> = table
        .rows
        .iter()
        .map(|row| chosen.iter().map(|&idx| row[idx].text()).collect())
        .collect();
    write_aligned_texts(out, color, &headers, &texts)
}

/// Writes headers and rows of texts aligned in columns.
fn write_aligned_texts(
    out: &mut impl Write,
    color: bool,
    headers: &[&str],
    texts: &[Vec<impl AsRef<str>>],
) -> anyhow::Result<()> {
    let mut widths: Vec<usize> = headers.iter().map(|header| width_of(header)).collect();
    for row in texts {
        for (col, text) in row.iter().enumerate() {
            widths[col] = widths[col].max(width_of(text.as_ref()));
        }
    }
    write_header(out, color, headers, &widths)?;
    let mut line = String::new();
    for row in texts {
        write_row(
            out,
            color,
            &mut line,
            row.iter().map(AsRef::as_ref),
            &widths,
        )?;
    }
    Ok(())
}

/// Writes the header line of an aligned table (bold on a terminal).
fn write_header(
    out: &mut impl Write,
    color: bool,
    headers: &[&str],
    widths: &[usize],
) -> anyhow::Result<()> {
    let last = headers.len().saturating_sub(1);
    let header_style = paint(color, Style::new().bold());
    let mut line = String::new();
    for (col, header) in headers.iter().enumerate() {
        line.push_str(&format!("{header_style}{header}{header_style:#}"));
        if col != last {
            line.extend(std::iter::repeat_n(' ', widths[col] - width_of(header) + 2));
        }
    }
    writeln!(out, "{line}")?;
    Ok(())
}

/// Writes one row of an aligned table: columns padded to `widths`, two spaces apart, the last
/// one not padded; state words coloured on a terminal.
fn write_row<S: AsRef<str>>(
    out: &mut impl Write,
    color: bool,
    line: &mut String,
    texts: impl Iterator<Item = S>,
    widths: &[usize],
) -> anyhow::Result<()> {
    let last = widths.len().saturating_sub(1);
    line.clear();
    for (col, text) in texts.enumerate() {
        let text = text.as_ref();
        if color {
            let style = value_style(color, text);
            line.push_str(&format!("{style}{text}{style:#}"));
        } else {
            line.push_str(text);
        }
        if col != last {
            line.extend(std::iter::repeat_n(' ', widths[col] - width_of(text) + 2));
        }
    }
    writeln!(out, "{}", line.trim_end())?;
    Ok(())
}

/// Whether stdout gets colour: on a terminal, unless `NO_COLOR` is set; or when
/// `CLICOLOR_FORCE` is set.
fn use_color(choice: ColorChoice) -> bool {
    let var = |name: &str| std::env::var(name).ok();
    color_wanted(
        choice,
        io::stdout().is_terminal(),
        var("NO_COLOR").as_deref(),
        var("CLICOLOR").as_deref(),
        var("CLICOLOR_FORCE").as_deref(),
        var("TERM").as_deref(),
    )
}

/// Whether to colour, from `--color` and the environment: `never` and `always` win; in `auto`,
/// `CLICOLOR_FORCE` set to anything but `0` forces colour, `NO_COLOR` (non-empty) or `CLICOLOR=0`
/// turns it off, and otherwise a terminal that is not `dumb` gets it.
fn color_wanted(
    choice: ColorChoice,
    terminal: bool,
    no_color: Option<&str>,
    clicolor: Option<&str>,
    clicolor_force: Option<&str>,
    term: Option<&str>,
) -> bool {
    let set = |value: Option<&str>| value.is_some_and(|value| !value.is_empty());
    match choice {
        ColorChoice::Never => false,
        ColorChoice::Always => true,
        ColorChoice::Auto if set(clicolor_force) && clicolor_force != Some("0") => true,
        ColorChoice::Auto => {
            terminal && !set(no_color) && clicolor != Some("0") && term != Some("dumb")
        }
    }
}

/// `style`, or no style at all when colour is off.
fn paint(color: bool, style: Style) -> Style {
    if color { style } else { Style::new() }
}

/// Colour of a state word, as nmcli colours them (green up, red down, grey unmanaged).
fn value_style(color: bool, text: &str) -> Style {
    if !color {
        return Style::new();
    }
    let color = match text {
        "UP" | "connected" | "activated" | "running" | "full" | "enabled" | "yes" => {
            AnsiColor::Green
        }
        "DOWN" | "disconnected" | "deactivated" | "unavailable" | "disabled" | "none"
        | "asleep" => AnsiColor::Red,
        "connecting" | "activating" | "deactivating" | "LOWERLAYERDOWN" | "limited" | "portal" => {
            AnsiColor::Yellow
        }
        "unmanaged" | "UNKNOWN" | "--" => AnsiColor::BrightBlack,
        _ => return Style::new(),
    };
    Style::new().fg_color(Some(color.into()))
}

#[cfg(test)]
pub(crate) mod tests;

/// How many rows an aligned table holds to measure its columns before it writes any: a dump
/// that ends sooner prints exactly as a table of the whole answer would.
pub(crate) const LOOKAHEAD_ROWS: usize = 1024;

/// How much output a [`RowStream`] gathers before it hands it on: a 64 KiB write at a time.
const PENDING_BYTES: usize = 64 * 1024;

/// Writes a table whose rows arrive one at a time (a dump being read), in `mode`, without
/// keeping them: JSON and terse rows are written as they come; an aligned table holds its
/// first [`LOOKAHEAD_ROWS`] rows to measure the columns, and when more come, widens each column
/// to the widest value its data type allows (the `bounds` given, such as 18 for an IPv4
/// prefix) so later rows stay aligned; a later value wider than that (a column without a
/// bound) pushes the rest of its row right. Output is gathered in one buffer and handed on
/// 64 KiB at a time.
pub(crate) struct RowStream<'p> {
    printer: &'p mut Printer,
    fields: &'static [Field],
    chosen: Vec<usize>,
    bounds: Vec<Option<usize>>,
    pending: String,
    /// Bytes handed on to the printer so far.
    flushed: u64,
    rows: usize,
    /// Human mode: the column widths, once settled.
    widths: Option<Vec<usize>>,
    /// Human mode, before the widths settle: the held rows' texts, and where each cell ends.
    held: String,
    held_ends: Vec<usize>,
    /// The widths measured so far.
    measured: Vec<usize>,
    /// A reused line.
    line: String,
    /// Human mode without color, once the widths are settled: the last row's line as
    /// written (before its trailing spaces are trimmed); JSON: the last row's fields, between
    /// its braces.
    last: LastRow,
    /// JSON: what comes before each chosen field's value (`,\n    "key": `), made once.
    json_keys: Vec<String>,
    /// Only lines ([`Printer::lines`]): no header, no columns.
    raw: bool,
}

/// Where a [`RowStream`] stood when a dump began ([`RowStream::mark`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamMark {
    rows: usize,
    pending: usize,
    flushed: u64,
    held: usize,
    held_ends: usize,
    settled: bool,
}

impl Printer {
    /// A [`RowStream`] of `fields` in this printer's mode, with `--fields` applied; `bounds`
    /// gives, per field, the widest text its values can have, if known.
    pub(crate) fn rows(
        &mut self,
        fields: &'static [Field],
        bounds: &[Option<usize>],
    ) -> anyhow::Result<RowStream<'_>> {
        let chosen = self.selection.resolve(fields, self.mode == Mode::Json)?;
        let measured = chosen
            .iter()
            .map(|&idx| width_of(fields[idx].header))
            .collect();
        let bounds = chosen
            .iter()
            .map(|&idx| bounds.get(idx).copied().flatten())
            .collect();
        let json_keys = json_keys(fields, &chosen, "\n    \"", ",\n    \"", "\": ");
        Ok(RowStream {
            fields,
            chosen,
            bounds,
            measured,
            json_keys,
            ..RowStream::empty(self, false)
        })
    }

    /// A [`RowStream`] of plain lines ([`RowStream::tabbed_line`]), such as `route show -d`'s
    /// for people.
    pub(crate) fn lines(&mut self) -> RowStream<'_> {
        RowStream::empty(self, true)
    }
}

impl<'p> RowStream<'p> {
    /// A stream with no fields and nothing written yet; `raw` for plain lines.
    fn empty(printer: &'p mut Printer, raw: bool) -> Self {
        RowStream {
            printer,
            fields: &[],
            chosen: Vec::new(),
            bounds: Vec::new(),
            pending: String::with_capacity(PENDING_BYTES + 4096),
            flushed: 0,
            rows: 0,
            widths: None,
            held: String::new(),
            held_ends: Vec::new(),
            measured: Vec::new(),
            line: String::new(),
            last: LastRow::default(),
            json_keys: Vec::new(),
            raw,
        }
    }
}

impl RowStream<'_> {
    /// Writes one row: `row` has one cell per field.
    pub(crate) fn row(&mut self, row: &[Cell]) -> anyhow::Result<()> {
        debug_assert_eq!(row.len(), self.fields.len(), "one cell per field");
        self.lazy_row(&mut CellRow(row))
    }

    /// Writes one row whose cells `row` makes or writes as they are needed.
    pub(crate) fn lazy_row(&mut self, row: &mut impl LazyRow) -> anyhow::Result<()> {
        self.lazy_row_with(row, None)
    }

    /// [`lazy_row`](Self::lazy_row), with one more key after the chosen fields in JSON:
    /// `extra` is its key and its value, already JSON (`route show -d`'s `nh_info`, as
    /// `ip -j -d` writes it). The other modes leave it out.
    pub(crate) fn lazy_row_with(
        &mut self,
        row: &mut impl LazyRow,
        extra: Option<(&str, &str)>,
    ) -> anyhow::Result<()> {
        match self.printer.mode {
            Mode::Json => self.json_row(row, extra),
            Mode::Terse => {
                for (col, &idx) in self.chosen.iter().enumerate() {
                    if col > 0 {
                        self.pending.push(':');
                    }
                    let pending = &mut self.pending;
                    row.with_cell(idx, |cell| match cell {
                        Cell::Int(value) => push_int(pending, *value),
                        // An IPv6 address has `:` to escape.
                        cell => push_escaped(pending, &cell.terse(), true),
                    });
                }
                self.pending.push('\n');
            }
            Mode::Human => self.human_row(row)?,
        }
        self.rows += 1;
        self.spill()
    }

    /// Writes a line, escaped whole (as [`Printer::line`] writes it).
    pub(crate) fn line(&mut self, text: &str) -> anyhow::Result<()> {
        push_escaped(&mut self.pending, text, false);
        self.pending.push('\n');
        self.rows += 1;
        self.spill()
    }

    /// Writes a line as it is, each part between tabs escaped (a route's `-d` lines).
    pub(crate) fn tabbed_line(&mut self, text: &str) -> anyhow::Result<()> {
        push_tabbed_line(&mut self.pending, text);
        self.rows += 1;
        self.spill()
    }

    /// Where the stream stands, for [`RowStream::retract`].
    pub(crate) fn mark(&self) -> StreamMark {
        StreamMark {
            rows: self.rows,
            pending: self.pending.len(),
            flushed: self.flushed,
            held: self.held.len(),
            held_ends: self.held_ends.len(),
            settled: self.widths.is_some(),
        }
    }

    /// Takes back what was written since `mark`, if none of it has left yet (a dump that came
    /// back interrupted is then done again); false when it has (it stays, and may be
    /// inconsistent). Column widths measured meanwhile stay: they only ever widen.
    pub(crate) fn retract(&mut self, mark: StreamMark) -> bool {
        if self.flushed != mark.flushed || self.widths.is_some() != mark.settled {
            return false;
        }
        self.rows = mark.rows;
        // The rows remembered may be taken back: the next one is written whole.
        self.last.known = false;
        self.pending.truncate(mark.pending);
        self.held.truncate(mark.held);
        self.held_ends.truncate(mark.held_ends);
        true
    }

    /// Ends the table and flushes it.
    pub(crate) fn finish(mut self) -> anyhow::Result<()> {
        match self.printer.mode {
            _ if self.raw => {}
            Mode::Json if self.rows == 0 => self.pending.push_str("[]\n"),
            Mode::Json => self.pending.push_str("\n]\n"),
            Mode::Terse => {}
            Mode::Human => {
                if self.widths.is_none() {
                    self.settle(false);
                }
            }
        }
        self.printer.out.write_all(self.pending.as_bytes())?;
        self.pending.clear();
        self.printer.out.flush()?;
        Ok(())
    }

    /// Hands the gathered output on once there is enough of it.
    fn spill(&mut self) -> anyhow::Result<()> {
        if self.pending.len() >= PENDING_BYTES {
            self.printer.out.write_all(self.pending.as_bytes())?;
            self.flushed += self.pending.len() as u64;
            self.pending.clear();
        }
        Ok(())
    }

    /// One row as `serde_json`'s pretty printer writes an element of an array of objects.
    /// The fields from `reuse` on have the values they had in the row before: that part of
    /// it is copied (as [`RowStream::human_row`] copies a line's). `extra`, a key and its
    /// value (already JSON), comes after the fields.
    fn json_row(&mut self, row: &mut impl LazyRow, extra: Option<(&str, &str)>) {
        let reuse = self
            .last
            .first_copied(self.chosen.len(), || row.same_json_tail(&self.chosen));
        let out = &mut self.pending;
        out.push_str(if self.rows == 0 { "[\n  {" } else { ",\n  {" });
        let row_start = out.len();
        for (col, (key, &idx)) in self.json_keys.iter().zip(&self.chosen[..reuse]).enumerate() {
            self.last.starts[col] = out.len() - row_start;
            out.push_str(key);
            row.push_json(idx, out);
        }
        self.last.finish(out, row_start, reuse);
        // After the row kept to copy from: it holds the fields only.
        if let Some((key, value)) = extra {
            out.push_str(if self.chosen.is_empty() {
                "\n    "
            } else {
                ",\n    "
            });
            push_json_str(out, key);
            out.push_str(": ");
            push_indented(out, value);
        }
        out.push_str(if self.chosen.is_empty() && extra.is_none() {
            "}"
        } else {
            "\n  }"
        });
    }

    fn human_row(&mut self, row: &mut impl LazyRow) -> anyhow::Result<()> {
        if self.widths.is_none() {
            if self.held_ends.len() / self.chosen.len().max(1) == LOOKAHEAD_ROWS {
                self.settle(true);
            } else {
                for (col, &idx) in self.chosen.iter().enumerate() {
                    let start = self.held.len();
                    row.push_text(idx, &mut self.held);
                    let width = width_of(&self.held[start..]);
                    self.measured[col] = self.measured[col].max(width);
                    self.held_ends.push(self.held.len());
                }
                return Ok(());
            }
        }
        let color = self.printer.color;
        let widths = self.widths.as_deref().unwrap_or(&[]);
        let last = self.chosen.len().saturating_sub(1);
        if !color {
            // Straight into the output: no line of its own to copy. The columns from `reuse`
            // on show what they showed in the row before (a route's gateway, device, table
            // ... mostly do): that part of its line is copied, padding and all (a column's
            // padding follows from its own text only).
            let reuse = self
                .last
                .first_copied(self.chosen.len(), || row.same_tail(&self.chosen));
            let out = &mut self.pending;
            let line_start = out.len();
            for (col, &idx) in self.chosen[..reuse].iter().enumerate() {
                let start = out.len();
                self.last.starts[col] = start - line_start;
                row.push_text(idx, out);
                if col != last {
                    let width = width_of(&out[start..]);
                    push_spaces(out, widths[col].saturating_sub(width) + 2);
                }
            }
            self.last.finish(out, line_start, reuse);
            let kept = out[line_start..].trim_end().len();
            out.truncate(line_start + kept);
            out.push('\n');
            return Ok(());
        }
        self.line.clear();
        for (col, &idx) in self.chosen.iter().enumerate() {
            let start = self.line.len();
            row.push_text(idx, &mut self.line);
            let text = self.line.split_off(start);
            let style = value_style(color, &text);
            self.line.push_str(&format!("{style}{text}{style:#}"));
            if col != last {
                push_spaces(
                    &mut self.line,
                    widths[col].saturating_sub(width_of(&text)) + 2,
                );
            }
        }
        self.pending.push_str(self.line.trim_end());
        self.pending.push('\n');
        Ok(())
    }

    /// Fixes the column widths: those measured, widened to the bounds when rows are still to
    /// come (`more`); writes the header and the held rows.
    fn settle(&mut self, more: bool) {
        let mut widths = self.measured.clone();
        if more {
            for (width, bound) in widths.iter_mut().zip(&self.bounds) {
                if let Some(bound) = bound {
                    *width = (*width).max(*bound);
                }
            }
        }
        let headers: Vec<&str> = self
            .chosen
            .iter()
            .map(|&idx| self.fields[idx].header)
            .collect();
        // Never fails: it writes into a string.
        let mut header = Vec::new();
        let _ = write_header(&mut header, self.printer.color, &headers, &widths);
        self.pending.push_str(&String::from_utf8_lossy(&header));
        let held = std::mem::take(&mut self.held);
        let ends = std::mem::take(&mut self.held_ends);
        let n_cols = self.chosen.len().max(1);
        let last = self.chosen.len().saturating_sub(1);
        let color = self.printer.color;
        let mut start = 0;
        for cells in ends.chunks(n_cols) {
            self.line.clear();
            for (col, &end) in cells.iter().enumerate() {
                let text = &held[start..end];
                start = end;
                if color {
                    let style = value_style(color, text);
                    self.line.push_str(&format!("{style}{text}{style:#}"));
                } else {
                    self.line.push_str(text);
                }
                if col != last {
                    push_spaces(
                        &mut self.line,
                        widths[col].saturating_sub(width_of(text)) + 2,
                    );
                }
            }
            self.pending.push_str(self.line.trim_end());
            self.pending.push('\n');
        }
        self.widths = Some(widths);
    }
}

/// Appends pretty-printed JSON `text` as a value nested in a row: each line after the first
/// indented by the row's two levels.
pub(crate) fn push_indented(out: &mut String, text: &str) {
    for (n, line) in text.split('\n').enumerate() {
        if n > 0 {
            out.push_str("\n    ");
        }
        out.push_str(line);
    }
}

/// Appends a cell's JSON as an object's value at the second level of `serde_json`'s pretty
/// output (the rows of a table): simple values written here, nested ones by `serde_json`.
pub(crate) fn push_json_cell(out: &mut String, cell: &Cell) {
    match cell {
        Cell::Null => out.push_str("null"),
        Cell::Bool(true) => out.push_str("true"),
        Cell::Bool(false) => out.push_str("false"),
        Cell::Int(value) => push_int(out, *value),
        Cell::Text(text) => push_json_str(out, text),
        Cell::Shared(text) => push_json_str(out, text),
        Cell::List(items) if items.is_empty() => out.push_str("[]"),
        Cell::Prefix(addr, len) => {
            out.push('"');
            netmirror_platform::names::push_route_prefix(out, *addr, *len);
            out.push('"');
        }
        Cell::Typed(typed) if typed.json.as_array().is_some_and(Vec::is_empty) => {
            out.push_str("[]")
        }
        Cell::Modal(modal) if modal.json.as_array().is_some_and(Vec::is_empty) => {
            out.push_str("[]")
        }
        other => {
            // serde_json writes no raw newline inside a string, so each newline of its pretty
            // output starts a line to indent by the two levels above.
            let text = serde_json::to_string_pretty(&other.json()).unwrap_or_default();
            push_indented(out, &text);
        }
    }
}

/// The fields a monitor's JSON events show, with each one's key written out once
/// (`"dst":`, then `,"gateway":` ...): a burst prints one line per event.
/// The JSON keys of the `chosen` fields with what surrounds each: `first` (before the first
/// key) or `rest` (before the others) and `after`. A [`RowStream`]'s pretty rows take
/// `"\n    \"", ",\n    \"", "\": "`, a monitor's one-line events `"\"", ",\"", "\":"`.
fn json_keys(
    fields: &[Field],
    chosen: &[usize],
    first: &str,
    rest: &str,
    after: &str,
) -> Vec<String> {
    chosen
        .iter()
        .enumerate()
        .map(|(col, &idx)| {
            let mut key = String::from(if col == 0 { first } else { rest });
            push_json_str_body(&mut key, fields[idx].key);
            key.push_str(after);
            key
        })
        .collect()
}

struct JsonEventKeys {
    fields: &'static [Field],
    chosen: Vec<usize>,
    keys: Vec<String>,
    /// What writes a row of the [`LazyRow::json_shape`] of the last row
    /// [`JsonEventKeys::push_lazy_row`] wrote that had one.
    shaped: Option<Shaped>,
}

/// The pieces that write a row of one [`LazyRow::json_shape`], and the last row written with
/// them, to copy its unchanged tail from (as [`RowStream`] copies a table row's).
struct Shaped {
    shape: u64,
    pieces: Vec<Piece>,
    /// The field of each [`Piece::Field`], in order.
    fields: Vec<usize>,
    /// The last row written with them.
    last: LastRow,
}

/// The last row written, to copy its unchanged tail from ([`LazyRow::same_tail`] and
/// `same_json_tail`): its text from the start of its fields, where each field starts in it,
/// and whether it is there to copy from.
#[derive(Default)]
struct LastRow {
    line: String,
    starts: Vec<usize>,
    known: bool,
}

impl LastRow {
    /// The first of a row's `n_fields` fields to write: those after it have the values they
    /// had in the last row (`same` tells how many, counted from the end) and are copied.
    fn first_copied(&mut self, n_fields: usize, same: impl FnOnce() -> usize) -> usize {
        let mut reuse = n_fields;
        if self.known && self.starts.len() == n_fields {
            reuse -= same().min(n_fields);
        }
        self.starts.resize(n_fields, 0);
        reuse
    }

    /// Ends the row that `out` holds from `row_start`, whose fields before `reuse` are written
    /// (each field's start noted in `starts`): copies the rest from the last row, then keeps
    /// this row as the one to copy from next.
    fn finish(&mut self, out: &mut String, row_start: usize, reuse: usize) {
        if reuse < self.starts.len() {
            let from = self.starts[reuse];
            let to = out.len() - row_start;
            out.push_str(&self.line[from..]);
            for start in &mut self.starts[reuse..] {
                *start = *start - from + to;
            }
        }
        if reuse > 0 {
            self.line.clear();
            self.line.push_str(&out[row_start..]);
        }
        self.known = true;
    }
}

/// A part of a row of JSON written by [`JsonEventKeys::push_lazy_row`].
#[derive(Debug)]
enum Piece {
    /// Text written as it is: keys, fixed values, braces.
    Text(String),
    /// The value of field `idx`, written by the row.
    Field(usize),
}

impl JsonEventKeys {
    fn new(fields: &'static [Field], chosen: Vec<usize>) -> Self {
        let keys = json_keys(fields, &chosen, "\"", ",\"", "\":");
        JsonEventKeys {
            fields,
            chosen,
            keys,
            shaped: None,
        }
    }

    /// What writes `row` and the rows of its shape: the keys, and the fixed values between
    /// the other fields, joined into one text each.
    fn pieces(&self, row: &mut impl LazyRow) -> Vec<Piece> {
        let mut pieces = Vec::new();
        let mut text = String::from("{");
        for (key, &idx) in self.keys.iter().zip(&self.chosen) {
            text.push_str(key);
            match row.json_fixed(idx) {
                Some(value) => text.push_str(value),
                None => {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                    pieces.push(Piece::Field(idx));
                }
            }
        }
        text.push('}');
        pieces.push(Piece::Text(text));
        pieces.retain(|piece| !matches!(piece, Piece::Text(text) if text.is_empty()));
        pieces
    }

    /// Appends `event` as one line: what `serde_json::to_writer` writes for the object
    /// `{"object", "event", "old", "new"}` whose rows are `Map`s of the chosen fields' keys
    /// and [`Cell::json`] values, without building them.
    fn push_event(&self, line: &mut String, event: &Event<'_>) {
        self.push_head(line, event.object, event.kind);
        self.push_row(line, event.old.as_deref());
        line.push_str(",\"new\":");
        self.push_row(line, event.new.as_deref());
        line.push_str("}\n");
    }

    /// Appends the start of an event's line, up to the value of `old`.
    fn push_head(&self, line: &mut String, object: &str, kind: EventKind) {
        line.push_str("{\"object\":");
        push_json_str(line, object);
        line.push_str(",\"event\":\"");
        line.push_str(kind.as_str());
        line.push_str("\",\"old\":");
    }

    /// Appends one row as [`JsonEventKeys::push_row`] does, its values written by the row.
    /// The fixed values of a row with a shape ([`LazyRow::json_shape`]) are written with
    /// their keys as the pieces of text of the last row of that shape.
    fn push_lazy_row(&mut self, out: &mut String, row: Option<impl LazyRow>) {
        let Some(mut row) = row else {
            out.push_str("null");
            return;
        };
        let Some(shape) = row.json_shape() else {
            out.push('{');
            for (key, &idx) in self.keys.iter().zip(&self.chosen) {
                out.push_str(key);
                row.push_json_compact(idx, out);
            }
            out.push('}');
            return;
        };
        if self.shaped.as_ref().is_none_or(|held| held.shape != shape) {
            let pieces = self.pieces(&mut row);
            let fields = pieces
                .iter()
                .filter_map(|piece| match piece {
                    Piece::Field(idx) => Some(*idx),
                    Piece::Text(_) => None,
                })
                .collect();
            self.shaped = Some(Shaped {
                shape,
                pieces,
                fields,
                last: LastRow::default(),
            });
        }
        let Some(shaped) = &mut self.shaped else {
            return;
        };
        // The fields from `reuse` on have the values they had in the row before (a burst of
        // routes mostly differs in the destination only): the rest of that row is copied.
        let fields = &shaped.fields;
        let reuse = shaped
            .last
            .first_copied(fields.len(), || row.same_json_tail(fields));
        let row_start = out.len();
        let mut written = 0;
        for piece in &shaped.pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Field(_) if written == reuse => break,
                Piece::Field(idx) => {
                    shaped.last.starts[written] = out.len() - row_start;
                    row.push_json_compact(*idx, out);
                    written += 1;
                }
            }
        }
        shaped.last.finish(out, row_start, reuse);
    }

    /// Appends one row as a compact JSON object of the chosen fields (`null` without a row).
    fn push_row(&self, out: &mut String, row: Option<&[Cell]>) {
        let Some(row) = row else {
            out.push_str("null");
            return;
        };
        out.push('{');
        for (key, &idx) in self.keys.iter().zip(&self.chosen) {
            out.push_str(key);
            push_json_cell_compact(out, &row[idx]);
        }
        out.push('}');
    }
}

/// Appends a cell's JSON as `serde_json::to_writer` writes [`Cell::json`]: simple values
/// written here, nested ones by `serde_json`.
pub(crate) fn push_json_cell_compact(out: &mut String, cell: &Cell) {
    match cell {
        Cell::Null => out.push_str("null"),
        Cell::Bool(true) => out.push_str("true"),
        Cell::Bool(false) => out.push_str("false"),
        Cell::Int(value) => push_int(out, *value),
        Cell::Text(text) => push_json_str(out, text),
        Cell::Shared(text) => push_json_str(out, text),
        Cell::List(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                push_json_str(out, item);
            }
            out.push(']');
        }
        Cell::Prefix(addr, len) => {
            out.push('"');
            netmirror_platform::names::push_route_prefix(out, *addr, *len);
            out.push('"');
        }
        Cell::Typed(typed) => {
            // Writing into a string cannot fail, and a `Value` always serializes.
            out.push_str(&serde_json::to_string(&typed.json).unwrap_or_default());
        }
        Cell::Modal(modal) => {
            out.push_str(&serde_json::to_string(&modal.json).unwrap_or_default());
        }
    }
}

/// Appends a JSON string as `serde_json` writes it.
pub(crate) fn push_json_str(out: &mut String, text: &str) {
    out.push('"');
    push_json_str_body(out, text);
    out.push('"');
}

/// Appends the inside of a JSON string as `serde_json` escapes it: `"` and `\` with a
/// backslash, the C0 controls as `\b`, `\t`, `\n`, `\f`, `\r` or `\u00XX`; nothing else.
fn push_json_str_body(out: &mut String, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    if !text
        .bytes()
        .any(|byte| byte < 0x20 || byte == b'"' || byte == b'\\')
    {
        out.push_str(text);
        return;
    }
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\x08' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\x0c' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            ch if (ch as u32) < 0x20 => {
                out.push_str("\\u00");
                out.push(char::from(HEX[(ch as usize) >> 4]));
                out.push(char::from(HEX[(ch as usize) & 0xf]));
            }
            ch => out.push(ch),
        }
    }
}
