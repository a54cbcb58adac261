//! Integration tests on real files and processes in temporary directories.

mod bash;
mod common;
mod edit;
mod fetch;
mod framework;
mod glob;
mod grep;
mod interact;
mod media;
mod read;
mod special_files;
mod write;
