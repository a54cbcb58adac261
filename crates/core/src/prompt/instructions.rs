//! AGENTS.md kept current while a session runs (surface.md §9.5). Two jobs, both cheap enough
//! for the step gate (a few `stat` calls, no watcher threads):
//!
//! * **Change notice.** At the start of each turn the places an AGENTS.md may be are
//!   stat-ed; when one was created, edited or deleted since the system prompt was rendered,
//!   the prompt is rendered again (journaled as a new `profile.bind`, so a resume uses it)
//!   and a `<system-reminder>` (injection `agents_md_change`) names the files that changed.
//! * **Discovery reminder.** A tool call that touches a directory (Read/Edit/Write: the file's
//!   directory; Glob/Grep: the search root; Bash: its `cwd`) whose chain from the project root
//!   holds an AGENTS.md the prompt does not carry queues that file; the next step's gate tells
//!   the model to read it (injection `agents_md`). Each file is suggested once per agent.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use kimi_protocol::ops::Event;
use kimi_protocol::origin::KnownOrigin;
use kimi_protocol::{ContentPart, Message, Origin, Role};
use kimi_tools::{Access, ToolPlan};

use super::agents_md::{AgentsMd, candidates, dir_candidates, project_root, read_candidates};
use crate::engine::records as rec;
use crate::engine::runtime::Runtime;

/// Renders the agent's system prompt again from the files as they are now.
pub type Render = Box<dyn Fn() -> Result<String, String> + Send + Sync>;

/// What identifies a file's content without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    Some(Stamp {
        len: meta.len(),
        modified: meta.modified().ok(),
        inode,
    })
}

/// One AGENTS.md whose content changed since the prompt was rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: PathBuf,
    pub deleted: bool,
}

struct State {
    /// The files the system prompt carries.
    loaded: AgentsMd,
    /// Every candidate place with its stamp when `loaded` was read.
    stamps: Vec<(PathBuf, Option<Stamp>)>,
    /// Files already suggested to the model (never again for this agent).
    suggested: HashSet<PathBuf>,
    /// Files found by tool calls since the last gate.
    queued: Vec<PathBuf>,
}

/// The AGENTS.md state of one agent.
pub struct Instructions {
    kimi_home: PathBuf,
    user_home: Option<PathBuf>,
    cwd: PathBuf,
    /// Roots besides the project's (`--add-dir`): their chains are searched from them.
    additional_dirs: Vec<PathBuf>,
    profile: String,
    profile_file: Option<PathBuf>,
    render: Render,
    state: Mutex<State>,
}

impl Instructions {
    /// Watch the AGENTS.md files of `cwd` as they are now.
    pub fn new(
        kimi_home: &Path,
        user_home: Option<&Path>,
        cwd: &Path,
        additional_dirs: &[PathBuf],
        profile: (&str, Option<&Path>),
        render: Render,
    ) -> Instructions {
        let watch = Instructions {
            kimi_home: kimi_home.to_owned(),
            user_home: user_home.map(Path::to_owned),
            cwd: cwd.to_owned(),
            additional_dirs: additional_dirs.to_vec(),
            profile: profile.0.to_owned(),
            profile_file: profile.1.map(Path::to_owned),
            render,
            state: Mutex::new(State {
                loaded: AgentsMd::default(),
                stamps: Vec::new(),
                suggested: HashSet::new(),
                queued: Vec::new(),
            }),
        };
        let (loaded, stamps) = watch.read();
        {
            let mut state = watch.lock();
            state.loaded = loaded;
            state.stamps = stamps;
        }
        watch
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn candidates(&self) -> Vec<Vec<PathBuf>> {
        candidates(&self.kimi_home, self.user_home.as_deref(), &self.cwd)
    }

    fn read(&self) -> (AgentsMd, Vec<(PathBuf, Option<Stamp>)>) {
        let candidates = self.candidates();
        let stamps = candidates
            .iter()
            .flatten()
            .map(|p| (p.clone(), stamp(p)))
            .collect();
        (read_candidates(candidates), stamps)
    }

    /// The files that changed since the last look (stat first; read only when a stamp moved).
    pub fn changes(&self) -> Vec<Change> {
        let moved = {
            let state = self.lock();
            state.stamps.iter().any(|(path, old)| stamp(path) != *old)
        };
        if !moved {
            return Vec::new();
        }
        let (now, stamps) = self.read();
        let mut state = self.lock();
        let mut changes = Vec::new();
        for file in &now.files {
            let before = state.loaded.files.iter().find(|f| f.path == file.path);
            if before.is_none_or(|b| b.content != file.content) {
                changes.push(Change {
                    path: file.path.clone(),
                    deleted: false,
                });
            }
        }
        for file in &state.loaded.files {
            if !now.files.iter().any(|f| f.path == file.path) {
                changes.push(Change {
                    path: file.path.clone(),
                    deleted: true,
                });
            }
        }
        state.loaded = now;
        state.stamps = stamps;
        changes
    }

    /// A tool call is about to run: queue the AGENTS.md files of the directories it touches
    /// that the prompt does not carry.
    pub fn touched(&self, tool: &str, arguments: Option<&str>, plan: &ToolPlan) {
        let mut dirs: Vec<PathBuf> = Vec::new();
        let mut reading_itself = Vec::new();
        match tool {
            "Read" | "Edit" | "Write" | "Glob" | "Grep" => {
                let file_tool = matches!(tool, "Read" | "Edit" | "Write");
                for access in plan.accesses.iter().flatten() {
                    let Access::File { path, .. } = access else {
                        continue;
                    };
                    let path = PathBuf::from(path);
                    if file_tool {
                        if is_agents_md(&path) {
                            reading_itself.push(path.clone());
                        }
                        if let Some(parent) = path.parent() {
                            dirs.push(parent.to_owned());
                        }
                    } else {
                        dirs.push(path);
                    }
                }
            }
            "Bash" => {
                let cwd = arguments
                    .and_then(|a| serde_json::from_str::<serde_json::Value>(a).ok())
                    .and_then(|v| v.get("cwd").and_then(|c| c.as_str()).map(PathBuf::from));
                if let Some(cwd) = cwd {
                    dirs.push(self.cwd.join(cwd));
                }
            }
            _ => return,
        }
        if dirs.is_empty() {
            return;
        }
        let found: Vec<PathBuf> = dirs.iter().flat_map(|d| self.chain_files(d)).collect();
        let mut state = self.lock();
        // The model opening an AGENTS.md itself needs no reminder about it.
        state.queued.retain(|p| !reading_itself.contains(p));
        for path in found {
            let known = state.loaded.files.iter().any(|f| f.path == path);
            if !known
                && !reading_itself.contains(&path)
                && !state.suggested.contains(&path)
                && !state.queued.contains(&path)
            {
                state.queued.push(path);
            }
        }
    }

    /// The non-empty AGENTS.md files from the root `dir` belongs to down to `dir`.
    fn chain_files(&self, dir: &Path) -> Vec<PathBuf> {
        let project = project_root(&self.cwd);
        let root = std::iter::once(&project)
            .chain(&self.additional_dirs)
            .filter(|r| dir.starts_with(r))
            .max_by_key(|r| r.components().count());
        let chain: Vec<&Path> = match root {
            Some(root) => {
                let mut chain: Vec<&Path> = dir
                    .ancestors()
                    .take_while(|d| d.starts_with(root))
                    .collect();
                chain.reverse();
                chain
            }
            None => vec![dir],
        };
        let groups: Vec<Vec<PathBuf>> = chain.into_iter().flat_map(dir_candidates).collect();
        read_candidates(groups)
            .files
            .into_iter()
            .map(|f| f.path)
            .collect()
    }

    /// Take the queued files as suggested.
    fn take_queued(&self) -> Vec<PathBuf> {
        let mut state = self.lock();
        let queued = std::mem::take(&mut state.queued);
        state.suggested.extend(queued.iter().cloned());
        queued
    }
}

fn is_agents_md(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n == "AGENTS.md" || n == "agents.md")
}

fn reminder(text: String, variant: &str, owner: &str, disclosure: Option<&[PathBuf]>) -> Message {
    let mut message = Message::new(
        Role::User,
        vec![ContentPart::text(format!(
            "<system-reminder>\n{text}\n</system-reminder>"
        ))],
    );
    message.origin = Some(Origin::Known(KnownOrigin::Injection {
        variant: variant.to_owned(),
        owner_prompt_id: Some(owner.to_owned()),
        disclosure: disclosure.map(|paths| {
            serde_json::Value::from(
                paths
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>(),
            )
        }),
    }));
    message
}

/// The change notice's text.
pub fn change_text(changes: &[Change]) -> String {
    let list: Vec<String> = changes
        .iter()
        .map(|c| {
            format!(
                "- {}{}",
                c.path.display(),
                if c.deleted { " (deleted)" } else { "" }
            )
        })
        .collect();
    format!(
        "These AGENTS.md instruction files changed on disk since your system prompt was written:\n{}\n\
         Your system prompt has been rebuilt with their current contents; follow those, not what \
         earlier messages quoted.",
        list.join("\n")
    )
}

/// The discovery reminder's text.
pub fn discovery_text(paths: &[PathBuf]) -> String {
    let list: Vec<String> = paths.iter().map(|p| format!("- {}", p.display())).collect();
    format!(
        "These AGENTS.md files apply to paths your recent tool calls touched, but your system \
         prompt does not include them:\n{}\nRead them before you change anything in those directories.",
        list.join("\n")
    )
}

/// The turn's first gate: rebuild the system prompt when an AGENTS.md changed.
pub fn turn_start(rt: &Runtime, prompt_id: &str) {
    let Some(watch) = &rt.config.instructions else {
        return;
    };
    let changes = watch.changes();
    if changes.is_empty() {
        return;
    }
    let paths: Vec<String> = changes
        .iter()
        .map(|c| c.path.display().to_string())
        .collect();
    match (watch.render)() {
        Ok(prompt) => {
            tracing::info!(files = ?paths, "AGENTS.md changed; system prompt rebuilt");
            rt.config.system_prompt.set(prompt.clone());
            rt.commit(vec![
                rec::profile_bind(&watch.profile, watch.profile_file.as_deref(), &prompt),
                rec::message(reminder(
                    change_text(&changes),
                    "agents_md_change",
                    prompt_id,
                    None,
                )),
            ]);
            rt.emit(Event::Warning {
                message: format!(
                    "AGENTS.md changed ({}); the agent's instructions were reloaded",
                    paths.join(", ")
                ),
            });
        }
        Err(err) => rt.emit(Event::Warning {
            message: format!(
                "AGENTS.md changed ({}) but the system prompt could not be rendered again: {err}; \
                 the agent keeps the previous instructions",
                paths.join(", ")
            ),
        }),
    }
}

/// Every gate: tell the model about AGENTS.md files its tool calls came across.
pub fn step_head(rt: &Runtime, prompt_id: &str) {
    let Some(watch) = &rt.config.instructions else {
        return;
    };
    let queued = watch.take_queued();
    if queued.is_empty() {
        return;
    }
    rt.commit(vec![rec::message(reminder(
        discovery_text(&queued),
        "agents_md",
        prompt_id,
        Some(&queued),
    ))]);
}

/// The agent's system prompt, which AGENTS.md changes can replace between turns.
#[derive(Debug, Default)]
pub struct SystemPrompt(Mutex<String>);

impl SystemPrompt {
    pub fn new(text: String) -> SystemPrompt {
        SystemPrompt(Mutex::new(text))
    }

    pub fn get(&self) -> String {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn set(&self, text: String) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = text;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn watch(root: &Path) -> Instructions {
        Instructions::new(
            &root.join("home"),
            None,
            &root.join("repo"),
            &[],
            ("default", None),
            Box::new(|| Ok("prompt".to_owned())),
        )
    }

    fn plan(path: &Path) -> ToolPlan {
        ToolPlan::search("Grep", "x", path, "search")
    }

    #[test]
    fn edits_creations_and_deletions_are_changes_and_only_once() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(tmp.path().join("home")).unwrap();
        std::fs::write(repo.join("AGENTS.md"), "one").unwrap();
        let w = watch(tmp.path());
        assert_eq!(w.changes(), vec![]);
        std::fs::write(repo.join("AGENTS.md"), "two, longer").unwrap();
        std::fs::write(tmp.path().join("home/AGENTS.md"), "home").unwrap();
        assert_eq!(
            w.changes(),
            vec![
                Change {
                    path: tmp.path().join("home/AGENTS.md"),
                    deleted: false
                },
                Change {
                    path: repo.join("AGENTS.md"),
                    deleted: false
                },
            ]
        );
        assert_eq!(w.changes(), vec![]);
        std::fs::remove_file(repo.join("AGENTS.md")).unwrap();
        assert_eq!(
            w.changes(),
            vec![Change {
                path: repo.join("AGENTS.md"),
                deleted: true
            }]
        );
    }

    #[test]
    fn a_touched_directory_with_an_unloaded_agents_md_is_suggested_once() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        let sub = repo.join("crates/a");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(repo.join("AGENTS.md"), "root").unwrap();
        std::fs::write(repo.join("crates/AGENTS.md"), "crates").unwrap();
        std::fs::write(sub.join("agents.md"), "a").unwrap();
        let w = watch(tmp.path());
        w.touched("Read", None, &plan(&sub.join("lib.rs")));
        assert_eq!(
            w.take_queued(),
            vec![repo.join("crates/AGENTS.md"), sub.join("agents.md")]
        );
        w.touched("Grep", None, &plan(&sub));
        assert_eq!(w.take_queued(), Vec::<PathBuf>::new());
        // Reading the file itself is not reminded about.
        std::fs::create_dir_all(repo.join("b")).unwrap();
        std::fs::write(repo.join("b/AGENTS.md"), "b").unwrap();
        w.touched("Read", None, &plan(&repo.join("b/AGENTS.md")));
        assert_eq!(w.take_queued(), Vec::<PathBuf>::new());
        assert!(discovery_text(&[sub.join("agents.md")]).contains("agents.md"));
    }
}
