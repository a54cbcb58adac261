//! The `kimi-rs` binary: parses the command line and dispatches.

use std::process::ExitCode;

fn main() -> ExitCode {
    kimi_cli::cli::main()
}
