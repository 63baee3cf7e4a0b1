//! Tests of the output formats: alignment, terse escaping, JSON shape, field selection, events.

use expect_test::{Expect, expect};

use super::*;

const FIELDS: &[Field] = &[
    Field::common("DEVICE", "device"),
    Field::common("TYPE", "type"),
    Field::common("STATE", "state"),
    Field::extra("ADDRESSES", "addresses"),
];

fn sample() -> Table {
    let mut table = Table::new(FIELDS);
    table.push(vec![
        "eth0".into(),
        "ethernet".into(),
        "connected".into(),
        Cell::List(vec!["10.0.0.1/24".into(), "fe80::1/64".into()]),
    ]);
    table.push(vec![
        "bond-with:colon\\".into(),
        "bond".into(),
        Cell::Null,
        Cell::List(vec![]),
    ]);
    table
}

fn render(table: &Table, mode: Mode, fields: &[&str], details: bool) -> String {
    let selection = Selection::from_args(&fields.iter().map(|f| f.to_string()).collect::<Vec<_>>());
    let chosen = selection.resolve(table.fields, mode == Mode::Json).unwrap();
    let mut out = Vec::new();
    write_table(&mut out, false, mode, table, &chosen, details).unwrap();
    String::from_utf8(out).unwrap()
}

#[track_caller]
fn check(mode: Mode, fields: &[&str], details: bool, expect: Expect) {
    expect.assert_eq(&render(&sample(), mode, fields, details));
}

#[test]
fn human_table_is_aligned_with_common_fields() {
    check(
        Mode::Human,
        &[],
        false,
        expect![[r#"
        DEVICE            TYPE      STATE
        eth0              ethernet  connected
        bond-with:colon\  bond      --
    "#]],
    );
}

#[test]
fn fields_pick_and_order_columns_case_insensitively() {
    check(
        Mode::Human,
        &["state", "ADDRESSES", "device"],
        false,
        expect![[r#"
        STATE      ADDRESSES               DEVICE
        connected  10.0.0.1/24,fe80::1/64  eth0
        --         --                      bond-with:colon\
    "#]],
    );
}

#[test]
fn terse_escapes_colon_and_backslash() {
    check(
        Mode::Terse,
        &[],
        false,
        expect![[r#"
        eth0:ethernet:connected
        bond-with\:colon\\:bond:
    "#]],
    );
}

#[test]
fn json_has_every_field_in_column_order() {
    check(
        Mode::Json,
        &[],
        false,
        expect![[r#"
        [
          {
            "device": "eth0",
            "type": "ethernet",
            "state": "connected",
            "addresses": [
              "10.0.0.1/24",
              "fe80::1/64"
            ]
          },
          {
            "device": "bond-with:colon\\",
            "type": "bond",
            "state": null,
            "addresses": []
          }
        ]
    "#]],
    );
}

#[test]
fn json_with_fields() {
    check(
        Mode::Json,
        &["device"],
        false,
        expect![[r#"
        [
          {
            "device": "eth0"
          },
          {
            "device": "bond-with:colon\\"
          }
        ]
    "#]],
    );
}

#[test]
fn details_like_nmcli_show() {
    check(
        Mode::Human,
        &["all"],
        true,
        expect![[r#"
        DEVICE:        eth0
        TYPE:          ethernet
        STATE:         connected
        ADDRESSES[1]:  10.0.0.1/24
        ADDRESSES[2]:  fe80::1/64

        DEVICE:        bond-with:colon\
        TYPE:          bond
        STATE:         --
        ADDRESSES:     --
    "#]],
    );
    check(
        Mode::Terse,
        &["all"],
        true,
        expect![[r#"
        DEVICE:eth0
        TYPE:ethernet
        STATE:connected
        ADDRESSES[1]:10.0.0.1/24
        ADDRESSES[2]:fe80\:\:1/64
        DEVICE:bond-with\:colon\\
        TYPE:bond
        STATE:
    "#]],
    );
}

#[test]
fn unknown_field_is_a_usage_error() {
    let err = Selection::Names(vec!["nope".into()])
        .resolve(FIELDS, false)
        .unwrap_err();
    assert_eq!(err.kind(), clap::error::ErrorKind::InvalidValue);
    assert!(
        err.to_string()
            .contains("allowed fields: DEVICE,TYPE,STATE,ADDRESSES"),
        "{err}"
    );
}

fn event(kind: EventKind, old: Option<Vec<Cell>>, new: Option<Vec<Cell>>) -> Event<'static> {
    Event {
        object: "device",
        kind,
        fields: FIELDS,
        old,
        new,
    }
}

#[track_caller]
fn check_event(mode: Mode, event: &Event<'_>, expect: Expect) {
    let mut out = Vec::new();
    write_event(&mut out, false, mode, &Selection::Default, event).unwrap();
    expect.assert_eq(&String::from_utf8(out).unwrap());
}

#[test]
fn events() {
    let old = vec![
        "eth0".into(),
        "ethernet".into(),
        "disconnected".into(),
        Cell::List(vec![]),
    ];
    let new = vec![
        "eth0".into(),
        "ethernet".into(),
        "connected".into(),
        Cell::List(vec!["10.0.0.1/24".into()]),
    ];
    let changed = event(EventKind::Changed, Some(old.clone()), Some(new.clone()));
    check_event(
        Mode::Human,
        &changed,
        expect![[r#"
            [DEVICE] changed device eth0 type ethernet: state disconnected → connected, addresses -- → 10.0.0.1/24
        "#]],
    );
    check_event(
        Mode::Json,
        &changed,
        expect![[r#"
        {"object":"device","event":"changed","old":{"device":"eth0","type":"ethernet","state":"disconnected","addresses":[]},"new":{"device":"eth0","type":"ethernet","state":"connected","addresses":["10.0.0.1/24"]}}
    "#]],
    );
    check_event(
        Mode::Terse,
        &event(EventKind::Removed, Some(old), None),
        expect![[r#"
        device:removed:eth0:ethernet:disconnected
    "#]],
    );
    check_event(
        Mode::Human,
        &event(EventKind::Added, None, Some(new)),
        expect![[r#"
        [DEVICE] added device eth0 type ethernet state connected
    "#]],
    );
}

#[test]
fn terse_escape() {
    assert_eq!(escape_terse(r"a:b\c"), r"a\:b\\c");
    assert_eq!(escape_terse("plain"), "plain");
}

/// Rows with every kind of cell: numbers of every width and sign, shared and non-ASCII text,
/// lists, nulls, booleans and typed values.
fn varied_rows() -> Vec<Vec<Cell>> {
    let shared: std::sync::Arc<str> = std::sync::Arc::from("veth-ü0");
    [0i64, 7, -7, 10, 99, 100, -1000, i64::MAX, i64::MIN]
        .into_iter()
        .enumerate()
        .map(|(idx, number)| {
            vec![
                Cell::Shared(shared.clone()),
                Cell::Int(number),
                if idx % 2 == 0 {
                    Cell::Null
                } else {
                    Cell::Bool(idx % 3 == 0)
                },
                match idx % 3 {
                    0 => Cell::List(Vec::new()),
                    1 => Cell::List(vec!["a:b".into()]),
                    _ => Cell::List(vec!["10.0.0.1/24".into(), "fe80::1/64".into()]),
                },
            ]
        })
        .chain([vec![
            // What a hostile kernel name or service string may hold.
            Cell::Shared(std::sync::Arc::from("\u{1b}[31mE\u{7}")),
            Cell::Text("a\nb:c\\".into()),
            Cell::from(TypedCell {
                text: "\u{1b}]0;title\u{7}\u{9b}\u{202e}".into(),
                json: Value::from("x"),
            }),
            Cell::List(vec!["\r\t".into(), "\u{7f}".into()]),
        ]])
        .chain([vec![
            Cell::Prefix("2001:db8::".parse().unwrap(), 48),
            Cell::Prefix("10.0.0.0".parse().unwrap(), 8),
            Cell::Prefix("192.0.2.1".parse().unwrap(), 32),
            Cell::Prefix("::".parse().unwrap(), 0),
        ]])
        .chain([vec![
            "connected".into(),
            Cell::from(TypedCell {
                text: String::new(),
                json: Value::Null,
            }),
            Cell::from(TypedCell {
                text: "yes".into(),
                json: Value::Bool(true),
            }),
            "x\\y".into(),
        ]])
        .collect()
}

/// What a [`RowStream`] of `rows` writes, through a printer in `mode` with `--fields`.
fn streamed(rows: &[Vec<Cell>], mode: Mode, color: bool, fields: &[&str]) -> String {
    let (mut printer, buffer) =
        printer_with(mode == Mode::Json, mode == Mode::Terse, fields, color);
    let mut stream = printer.rows(FIELDS, &[]).unwrap();
    for row in rows {
        stream.row(row).unwrap();
    }
    stream.finish().unwrap();
    let bytes = buffer.lock().unwrap().clone();
    String::from_utf8(bytes).unwrap()
}

#[test]
fn stream_writes_what_a_table_would() {
    let mut rows = varied_rows();
    // Fewer rows than the look-ahead, and none: the stream is byte for byte the table.
    for rows in [rows.clone(), Vec::new(), {
        rows.truncate(1);
        rows
    }] {
        let mut table = Table::new(FIELDS);
        for row in &rows {
            table.push(row.clone());
        }
        for mode in [Mode::Human, Mode::Terse, Mode::Json] {
            for color in [false, true] {
                for fields in [&[][..], &["all"][..], &["addresses", "TYPE"][..]] {
                    let selection = Selection::from_args(
                        &fields.iter().map(|f| f.to_string()).collect::<Vec<_>>(),
                    );
                    let chosen = selection.resolve(FIELDS, mode == Mode::Json).unwrap();
                    let mut expected = Vec::new();
                    write_table(&mut expected, color, mode, &table, &chosen, false).unwrap();
                    assert_eq!(
                        streamed(&rows, mode, color, fields),
                        String::from_utf8(expected).unwrap(),
                        "{mode:?} color={color} fields={fields:?} rows={}",
                        rows.len()
                    );
                }
            }
        }
    }
}

#[test]
fn a_stream_past_its_lookahead_widens_bounded_columns_and_stays_aligned() {
    // DEVICE has a bound of 12 (beyond any value held), TYPE none: a value wider than the
    // look-ahead's after it pushes the rest of its own row only.
    let row = |idx: usize| -> Vec<Cell> {
        let device = if idx < LOOKAHEAD_ROWS {
            "eth0".to_owned()
        } else {
            format!("eth{idx}")
        };
        let kind = if idx == LOOKAHEAD_ROWS + 5 {
            "a-much-wider-type"
        } else {
            "veth"
        };
        vec![
            device.into(),
            kind.into(),
            Cell::Int(idx as i64),
            Cell::Null,
        ]
    };
    let rows: Vec<Vec<Cell>> = (0..LOOKAHEAD_ROWS * 3).map(row).collect();
    let (mut printer, buffer) = printer_with(false, false, &[], false);
    let mut stream = printer.rows(FIELDS, &[Some(12), None]).unwrap();
    for row in &rows {
        stream.row(row).unwrap();
    }
    stream.finish().unwrap();
    let text = String::from_utf8(buffer.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), rows.len() + 1);
    assert_eq!(lines[0], "DEVICE        TYPE  STATE");
    for (idx, line) in lines.iter().enumerate().skip(1) {
        let type_at = line.find("veth").or_else(|| line.find("a-much"));
        assert_eq!(type_at, Some(14), "line {idx}: {line}");
        let state_at = line.rfind(' ').unwrap() + 1;
        if idx - 1 == LOOKAHEAD_ROWS + 5 {
            assert_eq!(&line[state_at..], (idx - 1).to_string(), "{line}");
            assert_eq!(state_at, 14 + "a-much-wider-type".len() + 2, "{line}");
        } else {
            assert_eq!(state_at, 20, "line {idx}: {line}");
        }
    }
    // The same rows in a table that held them all: the same values in the same order.
    let mut table = Table::new(FIELDS);
    for row in &rows {
        table.push(row.clone());
    }
    let chosen = Selection::Default.resolve(FIELDS, false).unwrap();
    let mut whole = Vec::new();
    write_table(&mut whole, false, Mode::Human, &table, &chosen, false).unwrap();
    let words =
        |text: &str| -> Vec<String> { text.split_whitespace().map(str::to_owned).collect() };
    assert_eq!(words(&text), words(&String::from_utf8(whole).unwrap()));
}

#[test]
fn a_stream_takes_back_an_interrupted_dump_only_while_it_holds_it() {
    let rows = varied_rows();
    for mode in [Mode::Human, Mode::Terse, Mode::Json] {
        let (mut printer, buffer) =
            printer_with(mode == Mode::Json, mode == Mode::Terse, &[], false);
        let mut stream = printer.rows(FIELDS, &[]).unwrap();
        stream.row(&rows[0]).unwrap();
        let mark = stream.mark();
        for row in &rows[1..] {
            stream.row(row).unwrap();
        }
        assert!(stream.retract(mark), "{mode:?}");
        for row in &rows[1..] {
            stream.row(row).unwrap();
        }
        stream.finish().unwrap();
        let text = String::from_utf8(buffer.lock().unwrap().clone()).unwrap();
        assert_eq!(text, streamed(&rows, mode, false, &[]), "{mode:?}");
    }
    // Once part of the dump has been handed on, it stays.
    let (mut printer, _buffer) = printer_with(false, true, &[], false);
    let mut stream = printer.rows(FIELDS, &[]).unwrap();
    let mark = stream.mark();
    let long = vec![
        Cell::from("x".repeat(1000)),
        Cell::Null,
        Cell::Null,
        Cell::Null,
    ];
    for _ in 0..100 {
        stream.row(&long).unwrap();
    }
    assert!(!stream.retract(mark));
}

#[test]
fn width_and_pushed_text_agree_with_text() {
    for cell in varied_rows().into_iter().flatten() {
        let mut pushed = String::from(">");
        cell.push_text(&mut pushed);
        assert_eq!(pushed[1..], *cell.text(), "{cell:?}");
    }
}

#[test]
fn a_prefix_cell_is_the_prefix_ip_prints() {
    let cases: [(IpAddr, u8, &str); 6] = [
        ("10.1.2.0".parse().unwrap(), 24, "10.1.2.0/24"),
        ("192.0.2.1".parse().unwrap(), 32, "192.0.2.1"),
        ("0.0.0.0".parse().unwrap(), 0, "default"),
        ("2001:db8::".parse().unwrap(), 48, "2001:db8::/48"),
        ("fe80::1".parse().unwrap(), 128, "fe80::1"),
        ("::ffff:1.2.3.4".parse().unwrap(), 128, "::ffff:1.2.3.4"),
    ];
    for (addr, len, text) in cases {
        let cell = Cell::Prefix(addr, len);
        assert_eq!(cell.text(), text);
        assert_eq!(cell.json(), Value::from(text));
        assert_eq!(
            serde_json::to_string(&cell).unwrap(),
            serde_json::to_string(text).unwrap()
        );
        let mut json = String::new();
        push_json_cell(&mut json, &cell);
        assert_eq!(json, serde_json::to_string(text).unwrap());
    }
}

#[test]
fn json_strings_are_escaped_as_serde_json_escapes_them() {
    let every: String = (0u32..0x2100).filter_map(char::from_u32).collect();
    for text in [every.as_str(), "plain", "q\"uote\\", ""] {
        let mut ours = String::new();
        push_json_str(&mut ours, text);
        assert_eq!(ours, serde_json::to_string(text).unwrap());
    }
}

#[test]
fn colour_follows_the_option_then_the_clicolor_conventions() {
    use ColorChoice::{Always, Auto, Never};
    // (choice, terminal, NO_COLOR, CLICOLOR, CLICOLOR_FORCE, TERM) -> colour
    let cases = [
        ((Never, true, None, None, Some("1"), None), false),
        (
            (Always, false, Some("1"), Some("0"), None, Some("dumb")),
            true,
        ),
        ((Auto, true, None, None, None, Some("xterm")), true),
        ((Auto, false, None, None, None, None), false),
        ((Auto, false, None, None, Some("1"), None), true),
        // CLICOLOR_FORCE=0 does not force.
        ((Auto, false, None, None, Some("0"), None), false),
        ((Auto, true, None, Some("0"), None, None), false),
        ((Auto, true, Some("1"), None, None, None), false),
        ((Auto, true, Some(""), None, None, None), true),
        ((Auto, true, None, None, None, Some("dumb")), false),
    ];
    for ((choice, terminal, no_color, clicolor, force, term), want) in cases {
        assert_eq!(
            color_wanted(choice, terminal, no_color, clicolor, force, term),
            want,
            "{choice:?} terminal={terminal} NO_COLOR={no_color:?} CLICOLOR={clicolor:?} \
             CLICOLOR_FORCE={force:?} TERM={term:?}"
        );
    }
}
/// Strings as a hostile kernel or service sends them: a link named `$'\e[31mE\a'`, an alias
/// with an OSC title sequence and a newline, C1 and bidirectional controls.
fn hostile() -> Table {
    let mut table = Table::new(FIELDS);
    table.push(vec![
        "\u{1b}[31mE\u{7}".into(),
        Cell::Shared(std::sync::Arc::from("osc\u{1b}]0;owned\u{7}")),
        Cell::from(TypedCell {
            text: "line\nforged:record\r".into(),
            json: Value::from("line\nforged:record\r"),
        }),
        Cell::List(vec![
            "\u{9b}31m".into(),
            "rtl\u{202e}txt".into(),
            "del\u{7f}".into(),
        ]),
    ]);
    table
}

/// No control character (other than the line ends the writer puts) may reach the output.
#[track_caller]
fn assert_terminal_safe(text: &str) {
    for line in text.lines() {
        assert!(
            !line.chars().any(|ch| ch.is_control() || ch == '\u{202e}'),
            "unescaped control character in {line:?}"
        );
    }
}

#[test]
fn hostile_strings_are_escaped_for_people_and_scripts() {
    let table = hostile();
    let all = ["all"];
    let human = render(&table, Mode::Human, &all, false);
    assert_terminal_safe(&human);
    expect![[r#"
        DEVICE     TYPE             STATE                  ADDRESSES
        \e[31mE\a  osc\e]0;owned\a  line\nforged:record\r  \xc2\x9b31m,rtl\xe2\x80\xaetxt,del\x7f
    "#]]
    .assert_eq(&human);
    let terse = render(&table, Mode::Terse, &all, false);
    assert_terminal_safe(&terse);
    assert_eq!(
        terse.lines().count(),
        1,
        "a newline forged a record: {terse:?}"
    );
    expect![[r#"
        \e[31mE\a:osc\e]0;owned\a:line\nforged\:record\r:\xc2\x9b31m,rtl\xe2\x80\xaetxt,del\x7f
    "#]]
    .assert_eq(&terse);
    for terse in [false, true] {
        let mode = if terse { Mode::Terse } else { Mode::Human };
        let details = render(&table, mode, &all, true);
        assert_terminal_safe(&details);
        assert_eq!(details.lines().count(), 6, "{details}");
    }
    // JSON keeps every string exact.
    let json: Value = serde_json::from_str(&render(&table, Mode::Json, &all, false)).unwrap();
    assert_eq!(json[0]["device"], "\u{1b}[31mE\u{7}");
    assert_eq!(json[0]["state"], "line\nforged:record\r");
    assert_eq!(json[0]["addresses"][1], "rtl\u{202e}txt");
}

#[test]
fn hostile_strings_are_escaped_in_events() {
    let row = hostile().rows.remove(0);
    let mut old = row.clone();
    old[2] = "up\u{1b}[2J".into();
    for mode in [Mode::Human, Mode::Terse] {
        for kind in [EventKind::Added, EventKind::Changed] {
            let old = (kind == EventKind::Changed).then(|| old.clone());
            let mut out = Vec::new();
            let event = event(kind, old, Some(row.clone()));
            write_event(&mut out, false, mode, &Selection::All, &event).unwrap();
            let text = String::from_utf8(out).unwrap();
            assert_terminal_safe(&text);
            assert_eq!(text.lines().count(), 1, "{text}");
        }
    }
}

/// A printer writing into a shared buffer.
fn printer(json: bool, terse: bool) -> (Printer, std::sync::Arc<std::sync::Mutex<Vec<u8>>>) {
    printer_with(json, terse, &[], false)
}

/// A printer writing into a shared buffer, with `--fields` and colour.
pub(crate) fn printer_with(
    json: bool,
    terse: bool,
    fields: &[&str],
    color: bool,
) -> (Printer, std::sync::Arc<std::sync::Mutex<Vec<u8>>>) {
    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let buffer = std::sync::Arc::default();
    let args = OutputArgs {
        json,
        terse,
        fields: fields.iter().map(|field| field.to_string()).collect(),
        color: ColorChoice::Never,
    };
    let printer = Printer::with_writer(
        &args,
        color,
        Box::new(Shared(std::sync::Arc::clone(&buffer))),
    );
    (printer, buffer)
}

#[test]
fn hostile_service_strings_are_escaped_in_properties_and_lines() {
    // A D-Bus service names its settings and values as it likes: `nm connection ID` and
    // `nm device IFACE` print them one per line; monitors print status lines quoting them.
    let props = vec![
        Prop::common("connection.id", Cell::from("evil\n\u{1b}]8;;http://x\u{7}")),
        Prop::common(
            "bad\u{1b}[1mkey",
            Cell::List(vec!["a\rb".into(), "c".into()]),
        ),
    ];
    for (json, terse) in [(false, false), (false, true), (true, false)] {
        let (mut printer, buffer) = printer(json, terse);
        printer.props(&props).unwrap();
        printer.line("[SERVICE] \u{1b}[2Jgone\nforged").unwrap();
        printer.note("note \u{7}").unwrap();
        printer.heading("head\u{1b}").unwrap();
        printer
            .status(
                &serde_json::json!({"object": "o\n", "event": "e\u{1b}"}),
                "t\u{1b}",
            )
            .unwrap();
        printer.flush().unwrap();
        let text = String::from_utf8(buffer.lock().unwrap().clone()).unwrap();
        if json {
            // The properties as one exact object; the plain lines are for people only.
            let value: Value = serde_json::from_str(text.split("\n[SERVICE]").next().unwrap())
                .unwrap_or_else(|err| panic!("{err}: {text}"));
            assert_eq!(value["connection.id"], "evil\n\u{1b}]8;;http://x\u{7}");
            continue;
        }
        assert_terminal_safe(&text);
        assert!(text.contains(r"evil\n\e]8;;http://x\a"), "{text}");
        assert!(text.contains(r"bad\e[1mkey[1]"), "{text}");
        assert!(text.contains(r"[SERVICE] \e[2Jgone\nforged"), "{text}");
    }
}

#[test]
fn escape_is_borrowed_when_clean() {
    assert!(matches!(escape("veth0 ü 10.0.0.1/24"), Cow::Borrowed(_)));
    assert_eq!(escape("a\u{0}b\u{1}"), r"a\x00b\x01");
    assert_eq!(
        escape("\u{1b}\u{7}\u{8}\t\n\u{b}\u{c}\r"),
        r"\e\a\b\t\n\v\f\r"
    );
    assert_eq!(escape_terse("a:\\\u{1b}"), r"a\:\\\e");
    assert_eq!(escape("\u{200b}\u{feff}"), r"\xe2\x80\x8b\xef\xbb\xbf");
}

/// A monitor's JSON line, written by hand, is byte for byte what `serde_json` writes for the
/// same object built as `Map`s of [`Cell::json`] values.
#[test]
fn json_events_are_written_as_serde_json_writes_them() {
    let rows = [
        hostile().rows.remove(0),
        vec![
            Cell::Int(-42),
            Cell::Prefix("2001:db8::".parse().unwrap(), 64),
            Cell::from(ModalCell {
                text: "{ ip = 10.0.0.0/8 }".into(),
                terse: "10.0.0.0/8".into(),
                json: serde_json::json!({"dest": "10.0.0.0", "prefix": 8, "attrs": [1, "a\"b"]}),
            }),
            Cell::Null,
        ],
        vec![
            Cell::Bool(true),
            Cell::Prefix("0.0.0.0".parse().unwrap(), 0),
            Cell::Bool(false),
            Cell::List(Vec::new()),
        ],
    ];
    let chosen = Selection::All.resolve(FIELDS, true).unwrap();
    let row_json = |row: &Option<Vec<Cell>>| match row {
        Some(row) => Value::Object(
            chosen
                .iter()
                .map(|&idx| (FIELDS[idx].key.to_owned(), row[idx].json()))
                .collect(),
        ),
        None => Value::Null,
    };
    for row in rows {
        for kind in [EventKind::Added, EventKind::Changed, EventKind::Removed] {
            let old = (kind != EventKind::Added).then(|| row.clone());
            let new = (kind != EventKind::Removed).then(|| row.clone());
            let event = event(kind, old, new);
            let mut object = Map::new();
            object.insert("object".to_owned(), Value::from(event.object));
            object.insert("event".to_owned(), Value::from(kind.as_str()));
            object.insert("old".to_owned(), row_json(&event.old));
            object.insert("new".to_owned(), row_json(&event.new));
            let expected = serde_json::to_string(&Value::Object(object)).unwrap() + "\n";
            let mut out = Vec::new();
            write_event(&mut out, false, Mode::Json, &Selection::All, &event).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), expected);
            // The printer's path, keys kept between events, writes the same.
            let (mut printer, buffer) = printer(true, false);
            printer.event(&event).unwrap();
            printer.event(&event).unwrap();
            assert_eq!(
                String::from_utf8(buffer.lock().unwrap().clone()).unwrap(),
                expected.repeat(2)
            );
        }
    }
}

#[test]
fn push_int_writes_what_display_writes() {
    for value in [
        0,
        1,
        -1,
        9,
        10,
        1024,
        -4096,
        4_294_967_295,
        i64::MAX,
        i64::MIN,
    ] {
        let mut line = String::from("x");
        push_int(&mut line, value);
        assert_eq!(line, format!("x{value}"));
    }
}

/// `route show -d --json`'s `nh_info`: a key after the row's fields, in JSON only, on the rows
/// given one; the rows are otherwise what they are without it.
#[test]
fn an_extra_key_ends_its_json_row_only() {
    let rows = varied_rows();
    let extra =
        serde_json::to_string_pretty(&serde_json::json!({"id": 5, "group": [{"id": 1}]})).unwrap();
    for fields in [&[][..], &["all"][..], &["addresses", "TYPE"][..]] {
        let (mut printer, buffer) = printer_with(true, false, fields, false);
        let mut stream = printer.rows(FIELDS, &[]).unwrap();
        for (n, row) in rows.iter().enumerate() {
            let with = (n % 3 != 1).then_some(("nh_info", extra.as_str()));
            stream.lazy_row_with(&mut CellRow(row), with).unwrap();
        }
        stream.finish().unwrap();
        let text = String::from_utf8(buffer.lock().unwrap().clone()).unwrap();
        let with: Value = serde_json::from_str(&text).expect("JSON");
        let without: Value =
            serde_json::from_str(&streamed(&rows, Mode::Json, false, fields)).unwrap();
        let (with, without) = (with.as_array().unwrap(), without.as_array().unwrap());
        assert_eq!(with.len(), rows.len());
        for (n, (with, without)) in with.iter().zip(without).enumerate() {
            let mut expected = without.clone();
            if n % 3 != 1 {
                expected["nh_info"] = serde_json::from_str(&extra).unwrap();
            }
            assert_eq!(with, &expected, "row {n}, fields {fields:?}");
            // The key comes last, indented as a nested value.
            assert_eq!(
                with.as_object()
                    .unwrap()
                    .keys()
                    .next_back()
                    .map(String::as_str)
                    == Some("nh_info"),
                n % 3 != 1
            );
        }
        assert!(
            text.contains(",\n    \"nh_info\": {\n      \"id\": 5,"),
            "{text}"
        );
    }
    // Other modes leave it out.
    let (mut printer, buffer) = printer_with(false, true, &[], false);
    let mut stream = printer.rows(FIELDS, &[]).unwrap();
    stream
        .lazy_row_with(&mut CellRow(&rows[0]), Some(("nh_info", "{}")))
        .unwrap();
    stream.finish().unwrap();
    assert!(
        !String::from_utf8(buffer.lock().unwrap().clone())
            .unwrap()
            .contains("nh_info")
    );
}

#[test]
fn properties_start_their_values_at_nmclis_column() {
    let props = vec![
        Prop::common("connection.id", Cell::from("st")),
        Prop::common("802-3-ethernet.generate-mac-address-mask", Cell::from("--")),
        Prop::common("802-1x.ca-cert-password-flags", Cell::from("0 (none)")),
    ];
    let (mut printer, buffer) = printer(false, false);
    printer.props(&props).unwrap();
    printer.flush().unwrap();
    let text = String::from_utf8(buffer.lock().unwrap().clone()).unwrap();
    // As `nmcli connection show` prints them: values at column 40, and a name of 40 columns
    // or more followed by its value with no space.
    assert_eq!(
        text,
        format!(
            "{:<40}st\n802-3-ethernet.generate-mac-address-mask:--\n{:<40}0 (none)\n",
            "connection.id:", "802-1x.ca-cert-password-flags:"
        )
    );
}

/// A row of cells whose [`LazyRow::same_tail`] says that its last `same` fields show what the
/// line before showed.
struct ClaimsSame<'a> {
    cells: &'a [Cell],
    same: usize,
}

impl LazyRow for ClaimsSame<'_> {
    fn with_cell<R>(&mut self, idx: usize, then: impl FnOnce(&Cell) -> R) -> R {
        then(&self.cells[idx])
    }

    fn same_tail(&mut self, fields: &[usize]) -> usize {
        self.same.min(fields.len())
    }
}

/// The added object of an event, as [`EventRows`].
struct Added<'a>(ClaimsSame<'a>);

impl EventRows for Added<'_> {
    type Row<'r>
        = ClaimsSame<'r>
    where
        Self: 'r;

    fn old_row(&mut self) -> Option<ClaimsSame<'_>> {
        None
    }

    fn new_row(&mut self) -> Option<ClaimsSame<'_>> {
        Some(ClaimsSame {
            cells: self.0.cells,
            same: self.0.same,
        })
    }
}

/// A monitor's event line copies the end of the line before only from a line of the same
/// fields: an event of another object in between (here with as many fields) is never copied
/// from, whatever the next row says of its values.
#[test]
fn an_event_line_copies_nothing_from_another_objects_line() {
    static FIRST: [Field; 2] = [Field::common("A", "a"), Field::common("B", "b")];
    static OTHER: [Field; 2] = [Field::common("C", "c"), Field::common("D", "d")];
    let (mut printer, buffer) = printer_with(false, false, &[], false);
    let mut event = |object, fields: &'static [Field], cells: &[Cell], same| {
        let mut rows = Added(ClaimsSame { cells, same });
        printer
            .event_rows(object, EventKind::Added, fields, &mut rows, [None, None])
            .unwrap();
    };
    event("one", &FIRST, &["x".into(), "y".into()], 0);
    event("two", &OTHER, &["p".into(), "q".into()], 0);
    event("one", &FIRST, &["z".into(), "y".into()], 1);
    event("one", &FIRST, &["w".into(), "y".into()], 1);
    printer.flush().unwrap();
    let text = String::from_utf8(buffer.lock().unwrap().clone()).unwrap();
    expect![[r#"
        [ONE] added a x b y
        [TWO] added c p d q
        [ONE] added a z b y
        [ONE] added a w b y
    "#]]
    .assert_eq(&text);
}
