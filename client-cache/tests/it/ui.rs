//! Compile tests of the typed NetworkManager views with trybuild: typed reads that compile,
//! and a misspelt property key or a wrong Rust type through the views that do not, each with
//! its `.stderr` snapshot.

#[test]
fn nm_views_are_typed_at_compile_time() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}
