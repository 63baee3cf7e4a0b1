//! Compile tests of the declaration macro with trybuild: declarations that must compile, and
//! declarations that must not (a Rust type that disagrees with its signature, a duplicate or
//! unsorted name, a target on a non-path property), each with its `.stderr` snapshot.

#[test]
fn declarations_compile_or_fail_as_expected() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}
