//! Tools that join a session after it opened: MCP servers connect in the background, and each
//! one's tools are added here when it is ready. A [`ToolRegistry`](crate::ToolRegistry) with a
//! late set attached offers them from its next request on; nothing waits for a slow source
//! unless the model actually calls one of the tools it is about to provide.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::watch;

use crate::tool::Tool;

/// A shared, growing set of tools (cheap to clone: every clone sees the same set).
#[derive(Clone)]
pub struct LateTools {
    inner: Arc<Inner>,
}

struct Inner {
    state: RwLock<State>,
    /// Bumped on every change; readers compare it to know when to rebuild their view.
    version: watch::Sender<u64>,
}

#[derive(Default)]
struct State {
    tools: Vec<Arc<dyn Tool>>,
    /// Sources still loading: (id, the name prefix of the tools they will add).
    pending: Vec<(u64, String)>,
    next_id: u64,
    /// The first request's short wait has been spent (later requests never wait).
    grace_used: bool,
}

impl Default for LateTools {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for LateTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.read();
        f.debug_struct("LateTools")
            .field(
                "tools",
                &state.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .field("pending", &state.pending)
            .finish()
    }
}

/// A source that promised tools; dropping it unsupplied (a failed or abandoned start) simply
/// withdraws the promise.
#[must_use = "a pending source is withdrawn when dropped"]
pub struct PendingSource {
    set: LateTools,
    id: u64,
}

impl PendingSource {
    /// Add the source's tools (replacing same-named ones) and end its pending state.
    pub fn supply(self, tools: Vec<Arc<dyn Tool>>) {
        self.set.resolve(self.id, tools);
    }
}

impl Drop for PendingSource {
    fn drop(&mut self) {
        // After `supply` the id is gone already; resolving it again changes nothing.
        self.set.resolve(self.id, Vec::new());
    }
}

impl LateTools {
    pub fn new() -> Self {
        LateTools {
            inner: Arc::new(Inner {
                state: RwLock::new(State::default()),
                version: watch::Sender::new(0),
            }),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.inner
            .state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn change(&self, f: impl FnOnce(&mut State) -> bool) {
        let changed = {
            let mut state = self
                .inner
                .state
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            f(&mut state)
        };
        if changed {
            self.inner.version.send_modify(|v| *v += 1);
        }
    }

    /// Announce a source whose tools will be named `prefix…` (e.g. `mcp__github__`).
    pub fn expect(&self, prefix: impl Into<String>) -> PendingSource {
        let prefix = prefix.into();
        let mut id = 0;
        self.change(|state| {
            id = state.next_id;
            state.next_id += 1;
            state.pending.push((id, prefix));
            true
        });
        PendingSource {
            set: self.clone(),
            id,
        }
    }

    fn resolve(&self, id: u64, tools: Vec<Arc<dyn Tool>>) {
        self.change(|state| {
            let Some(at) = state.pending.iter().position(|(p, _)| *p == id) else {
                return false;
            };
            state.pending.remove(at);
            for tool in tools {
                match state.tools.iter_mut().find(|t| t.name() == tool.name()) {
                    Some(slot) => *slot = tool,
                    None => state.tools.push(tool),
                }
            }
            true
        });
    }

    /// Withdraw a tool (an MCP server's sign-in tool once the server is connected).
    pub fn remove(&self, name: &str) {
        self.change(|state| {
            let before = state.tools.len();
            state.tools.retain(|t| t.name() != name);
            state.tools.len() != before
        });
    }

    /// Changes with every addition or resolved source.
    pub fn version(&self) -> u64 {
        *self.inner.version.borrow()
    }

    /// The tools added so far, in arrival order.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.read().tools.clone()
    }

    /// Whether a source still loading may provide `name` (its prefix matches).
    pub fn may_provide(&self, name: &str) -> bool {
        self.read()
            .pending
            .iter()
            .any(|(_, prefix)| name.starts_with(prefix.as_str()))
    }

    /// Sources still loading.
    pub fn pending(&self) -> usize {
        self.read().pending.len()
    }

    /// Wait until `cond` holds for the state, re-checking on every change.
    async fn wait_until(&self, cond: impl Fn(&State) -> bool) {
        let mut changes = self.inner.version.subscribe();
        loop {
            if cond(&self.read()) {
                return;
            }
            // The sender lives in `self`, so this only returns after a change.
            if changes.changed().await.is_err() {
                return;
            }
        }
    }

    /// Wait for `name` when a source still loading may provide it; returns at once when the
    /// tool is here or no pending source's prefix matches.
    pub async fn wait_for(&self, name: &str) {
        self.wait_until(|state| {
            state.tools.iter().any(|t| t.name() == name)
                || !state
                    .pending
                    .iter()
                    .any(|(_, p)| name.starts_with(p.as_str()))
        })
        .await;
    }

    /// The first request of a launch waits up to `limit` for sources still loading, so tools
    /// that are ready within moments are in it; every later call returns at once.
    pub async fn first_request_grace(&self, limit: Duration) {
        let mut first = false;
        {
            let mut state = self
                .inner
                .state
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !state.grace_used {
                state.grace_used = true;
                first = !state.pending.is_empty();
            }
        }
        if first {
            let _ = tokio::time::timeout(limit, self.wait_until(|s| s.pending.is_empty())).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::default_registry;

    fn tool(name: &str) -> Arc<dyn Tool> {
        // Any built-in under another name would do; the registry only needs names here.
        let registry = default_registry();
        let read = registry.get("Read").expect("Read is built in");
        Arc::new(Renamed(name.to_owned(), read))
    }

    struct Renamed(String, Arc<dyn Tool>);

    impl Tool for Renamed {
        fn name(&self) -> &str {
            &self.0
        }
        fn description(&self) -> String {
            self.1.description()
        }
        fn parameters(&self) -> serde_json::Value {
            self.1.parameters()
        }
        fn resolve(
            &self,
            args: serde_json::Value,
            ctx: &crate::ToolContext,
        ) -> Result<crate::Resolution, crate::ToolError> {
            self.1.resolve(args, ctx)
        }
    }

    #[tokio::test]
    async fn tools_arrive_and_waits_end_when_their_source_resolves() {
        let late = LateTools::new();
        let slow = late.expect("mcp__slow__");
        let gone = late.expect("mcp__gone__");
        assert_eq!(late.pending(), 2);
        let v0 = late.version();

        // Not provided by any pending source: no wait.
        late.wait_for("mcp__other__x").await;

        let waiter = {
            let late = late.clone();
            tokio::spawn(async move { late.wait_for("mcp__slow__echo").await })
        };
        drop(gone);
        assert_eq!(late.pending(), 1);
        assert!(!waiter.is_finished());
        slow.supply(vec![tool("mcp__slow__echo")]);
        waiter
            .await
            .expect("the waiter ends once the tool is there");
        assert_eq!(late.pending(), 0);
        assert!(late.version() > v0);
        let names: Vec<String> = late.tools().iter().map(|t| t.name().to_owned()).collect();
        assert_eq!(names, vec!["mcp__slow__echo".to_owned()]);
    }

    #[tokio::test]
    async fn only_the_first_request_gets_the_grace_wait() {
        const HOUR: Duration = Duration::from_secs(3600);
        let late = LateTools::new();
        let quick = late.expect("mcp__quick__");
        let supplier = tokio::spawn(async move { quick.supply(vec![tool("mcp__quick__a")]) });
        // Ends when the quick source resolves, long before its limit.
        late.first_request_grace(HOUR).await;
        supplier.await.expect("supplier task");
        assert_eq!(late.tools().len(), 1);
        // A hanging source does not hold up a later request at all (else this never returns).
        let _hanging = late.expect("mcp__hang__");
        late.first_request_grace(HOUR).await;
    }

    #[test]
    fn a_registry_offers_the_late_tools_its_filter_admits_as_they_arrive() {
        let late = LateTools::new();
        let mut registry = default_registry();
        let before = registry.schemas().len();
        registry.attach_late(
            late.clone(),
            Arc::new(|name: &str| !name.starts_with("mcp__hidden__")),
        );
        assert_eq!(registry.schemas().len(), before);
        let source = late.expect("mcp__");
        source.supply(vec![
            tool("mcp__srv__echo"),
            tool("mcp__hidden__x"),
            // A late tool never replaces a registered one.
            tool("Read"),
        ]);
        let names = registry.names();
        assert!(names.contains(&"mcp__srv__echo".to_owned()));
        assert!(!names.contains(&"mcp__hidden__x".to_owned()));
        assert_eq!(names.iter().filter(|n| *n == "Read").count(), 1);
        assert_eq!(registry.schemas().len(), before + 1);
        assert!(registry.get("mcp__srv__echo").is_some());
        assert!(registry.get("mcp__hidden__x").is_none());
        // Clones share the set: a tool added later reaches them too.
        let copy = registry.clone();
        late.expect("mcp__more__")
            .supply(vec![tool("mcp__more__a")]);
        assert!(copy.get("mcp__more__a").is_some());
    }
}
