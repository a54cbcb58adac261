//! `kimi-rs sessions recover <id>`: rebuild a session's `state.json` and index entry from its
//! journal, so a session whose metadata was deleted or damaged can be resumed again.

use anyhow::{Context, bail};
use kimi_store::{Home, SessionStore, home_from_env};

/// Find the session's directory by scanning `$KIMI_RS_HOME/sessions/*/<id>/`, rebuild what is
/// missing and say what was done.
pub fn recover(session_id: &str) -> anyhow::Result<()> {
    let home = home_from_env()?;
    let store = SessionStore::new(Home::new(&home));
    let Some(key) = store.locate(session_id) else {
        bail!(
            "no directory for session {session_id} under {}; check the id (the directory names \
             there are session ids) or start a new session",
            home.join("sessions").display()
        );
    };
    let (session, kept, rebuilt) = store
        .recover(&key, session_id)
        .with_context(|| format!("recovering session {session_id}"))?;
    let state = session.dir.join("state.json");
    if rebuilt {
        tracing::warn!(session_id, "state.json rebuilt from the journal");
        println!("Rebuilt {} from its journal:", state.display());
        println!(
            "  agents: {}",
            session
                .state
                .agents
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        );
        if let Some(title) = &session.state.title {
            println!("  title: {title}");
        }
        if let Some(kept) = kept {
            println!("  the unreadable file was kept in {}", kept.display());
        }
    } else {
        println!("{} is readable; it was kept as it is.", state.display());
    }
    println!("Recorded session {session_id} in the session index.");
    println!("Resume it with: kimi-rs -S {session_id}");
    Ok(())
}
