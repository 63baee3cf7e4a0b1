//! Unit tests of the debug flags and of fatal mode.

use super::*;

#[test]
fn parses_comma_lists_like_libnm() {
    let c = DebugConfig::parse("warning,error");
    assert!(c.warning && c.error && !c.trace && !c.fatal);
    assert_eq!(
        DebugConfig::parse(" TRACE , bogus"),
        DebugConfig {
            trace: true,
            ..DebugConfig::default()
        }
    );
    let all = DebugConfig::parse("all");
    assert!(all.trace && all.warning && all.error);
}

#[test]
fn warnings_are_counted_and_kept() {
    let mut r = Reporter::new(DebugConfig::tolerant());
    r.warn(WarningKind::WrongType, "x");
    r.warn(WarningKind::DanglingReference, "y");
    assert_eq!(r.diag.warnings, 2);
    assert_eq!(r.diag.count(WarningKind::WrongType), 1);
    for _ in 0..Diagnostics::KEEP {
        r.warn(WarningKind::Malformed, "z");
    }
    assert_eq!(r.diag.recent.len(), Diagnostics::KEEP);
}

#[test]
#[should_panic(expected = "fatal protocol warning (dangling reference)")]
fn fatal_mode_panics_on_a_warning() {
    let mut r = Reporter::new(DebugConfig {
        fatal: true,
        ..DebugConfig::default()
    });
    r.warn(WarningKind::DanglingReference, "/a references missing /b");
}
