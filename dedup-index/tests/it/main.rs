//! Integration tests of `netmirror-dedup-index`: the public API used from outside the crate,
//! and model tests that check long random operation sequences against a naive `Vec` model.

mod api;
mod model;
