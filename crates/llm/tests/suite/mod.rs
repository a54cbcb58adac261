//! Test modules: per-wire-format streaming behaviour, request bodies, retries and errors.

mod common;
mod limits;
mod requests;
mod retry_errors;
mod robustness;
mod streaming;
