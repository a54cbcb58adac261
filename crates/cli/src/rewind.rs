//! `kimi-rs rewind --session ID [--turns N] [--files | --conversation] [--force]`: undo the
//! last turns of a stored session — the files its agent changed (from their checkpoints) and
//! the conversation (the same branch-switch undo as `/undo`), by default both. Files changed
//! outside the agent since are conflicts: named, and nothing changes unless `--force`.

use anyhow::{Context, bail};
use kimi_core::checkpoint::blobs::BlobStore;
use kimi_core::engine::log::AgentLog;
use kimi_core::engine::rewind::RewindRequest;
use kimi_protocol::checkpoint::{RewindReport, RewindScope};
use kimi_store::{Home, JournalOptions, MAIN_AGENT, SessionStore, home_from_env};

/// What the command line asked for.
#[derive(Debug, Clone)]
pub struct RewindArgs {
    pub session_id: String,
    pub turns: u64,
    pub scope: RewindScope,
    pub force: bool,
}

/// Run the rewind; exit code 1 when conflicts stopped it.
pub fn run(args: &RewindArgs) -> anyhow::Result<u8> {
    if args.turns == 0 {
        bail!("--turns must be at least 1");
    }
    let home = home_from_env()?;
    let store = SessionStore::new(Home::new(&home));
    let Some(key) = store.locate(&args.session_id) else {
        bail!(
            "no session {} under {}; list sessions with `kimi-rs -S`",
            args.session_id,
            home.join("sessions").display()
        );
    };
    let session = store
        .open(&key, &args.session_id)
        .with_context(|| format!("opening session {}", args.session_id))?;
    let journal = session.journal_path(MAIN_AGENT);
    // Opening takes the journal's lock: a session another kimi-rs has open is refused.
    let (mut log, _) = AgentLog::open(&journal, MAIN_AGENT, JournalOptions::default())
        .with_context(|| format!("opening the journal {}", journal.display()))?;
    let request = RewindRequest {
        turns: args.turns,
        scope: args.scope,
        force: args.force,
    };
    let report = log
        .rewind(request, &BlobStore::for_session(&session.dir))
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("rewinding session {}", args.session_id))?;
    tracing::info!(
        session_id = %args.session_id,
        turns = args.turns,
        applied = report.applied,
        restored = report.restored.len(),
        conflicts = report.conflicts.len(),
        "rewind"
    );
    print_report(&report, &args.session_id);
    Ok(if report.applied { 0 } else { 1 })
}

fn print_report(report: &RewindReport, session_id: &str) {
    if !report.applied {
        eprintln!(
            "kimi-rs: nothing was rewound: these files changed outside the agent since its checkpoint:"
        );
        for c in &report.conflicts {
            eprintln!("  {}: {}", c.path, c.reason);
        }
        eprintln!("Run again with --force to overwrite them with their checkpoint.");
        return;
    }
    if report.scope.files() {
        println!("Restored {} file(s):", report.restored.len());
        for path in &report.restored {
            let forced = if report.forced.contains(path) {
                " (overwritten: it had changed outside the agent)"
            } else {
                ""
            };
            println!("  {path}{forced}");
        }
    }
    for u in &report.unrestorable {
        let path = if u.path.is_empty() {
            "(workspace)"
        } else {
            &u.path
        };
        println!("Not restored: {path}: {}", u.reason);
    }
    if report.conversation_undone {
        println!(
            "Undid {} turn(s) of the conversation; resume with: kimi-rs -S {session_id}",
            report.turns
        );
    }
}
