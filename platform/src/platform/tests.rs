//! Unit tests of the kernel's route counters, on text captured from `/proc/net`.

use super::{rt6_entries, triestat_prefixes};

/// `/proc/net/fib_triestat` of a namespace with 600k IPv4 routes and no rules: the local
/// and main tables share one trie, so the kernel prints the same statistics twice.
const MERGED: &str = "Basic info: size of leaf: 48 bytes, size of tnode: 40 bytes.
Main:
\tAver depth:     2.00
\tMax depth:      3
\tLeaves:         600006
\tPrefixes:       600006
\tInternal nodes: 6
\t  1: 2  2: 2  3: 1  20: 1
\tPointers: 1048596
Null ptrs: 448585
Total size: 69756  kB
Local:
\tAver depth:     2.00
\tMax depth:      3
\tLeaves:         600006
\tPrefixes:       600006
\tInternal nodes: 6
\t  1: 2  2: 2  3: 1  20: 1
\tPointers: 1048596
Null ptrs: 448585
Total size: 69756  kB
";

#[test]
fn merged_tables_count_once() {
    assert_eq!(triestat_prefixes(MERGED), 600_006);
}

#[test]
fn separate_tables_add_up() {
    let text = "Basic info: size of leaf: 48 bytes, size of tnode: 40 bytes.
Id 100:
\tAver depth:     1.00
\tPrefixes:       3
Null ptrs: 0
Main:
\tAver depth:     1.50
\tPrefixes:       7
Null ptrs: 1
Local:
\tAver depth:     1.00
\tPrefixes:       4
Null ptrs: 0
";
    assert_eq!(triestat_prefixes(text), 14);
}

#[test]
fn rt6_stats_fourth_field_in_hex() {
    assert_eq!(
        rt6_entries("30d4a 186a7 001e 186a9 0000 0000 0000\n"),
        Some(100_009)
    );
    assert_eq!(rt6_entries("0001 0002\n"), None);
    assert_eq!(triestat_prefixes(""), 0);
}
