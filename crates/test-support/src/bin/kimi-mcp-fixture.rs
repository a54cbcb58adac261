//! A small MCP server over stdio for kimi-mcp's and kimi-cli's tests (not shipped to users).
//!
//! Flags: `--stderr-noise` writes a few lines to stderr at start-up; `--fail-startup <msg>`
//! prints `<msg>` to stderr and exits 2 before reading anything; `--hang` reads its input but
//! never answers (start-up timeouts); `--wait-for <path>` reads nothing until `<path>` exists
//! (a server that becomes ready when a test says so). Tools: see `proto::tool_list`.

use kimi_test_support::mcp_fixture::proto;

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(pos) = args.iter().position(|a| a == "--fail-startup") {
        let msg = args.get(pos + 1).cloned().unwrap_or_default();
        eprintln!("{msg}");
        std::process::exit(2);
    }
    if args.iter().any(|a| a == "--stderr-noise") {
        for i in 0..3 {
            eprintln!("fixture noise line {i}");
        }
    }
    let hang = args.iter().any(|a| a == "--hang");
    if let Some(pos) = args.iter().position(|a| a == "--wait-for") {
        let path = std::path::PathBuf::from(args.get(pos + 1).cloned().unwrap_or_default());
        while !path.exists() {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    let session = Arc::new(proto::Session::default());
    let stdout = Arc::new(Mutex::new(std::io::stdout()));
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if hang || line.trim().is_empty() {
            continue;
        }
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(&line) else {
            eprintln!("fixture: unparsable line: {line}");
            continue;
        };
        let session = Arc::clone(&session);
        let stdout = Arc::clone(&stdout);
        // One thread per message so a `slow` call never blocks the others.
        std::thread::spawn(move || match proto::handle(&session, &msg) {
            proto::Reply::Message(reply) => {
                let mut out = stdout
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                // A closed stdout means the client is gone; nothing left to do.
                let _ = writeln!(out, "{reply}");
                let _ = out.flush();
            }
            proto::Reply::None => {}
            proto::Reply::Exit(code) => std::process::exit(code),
        });
    }
    // Stdin closed: the client shut us down. Exit even if slow calls are still sleeping.
    std::process::exit(0);
}
