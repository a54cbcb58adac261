//! Tools by name, in registration order, with their schemas for the model request. A registry
//! may have a [`LateTools`] set attached: tools that arrive after the session opened (MCP
//! servers connecting in the background) follow the registered ones, filtered by the same rule
//! that built the registry (the agent profile).

use std::sync::{Arc, Mutex};

use kimi_protocol::ToolSchema;

use crate::late::LateTools;
use crate::tool::Tool;

/// Decides whether a late tool belongs to this registry (the agent's allowed tools).
pub type LateFilter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

#[derive(Default, Clone)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
    late: Option<Arc<LateView>>,
}

/// The late tools this registry admits, rebuilt only when the set changed: a step reads a
/// version number and clones an `Arc`, whatever the number of tools.
struct LateView {
    set: LateTools,
    allow: LateFilter,
    cache: Mutex<Option<Arc<LateSnapshot>>>,
}

struct LateSnapshot {
    version: u64,
    tools: Vec<Arc<dyn Tool>>,
    schemas: Vec<ToolSchema>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Register a tool, replacing one with the same name.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        if let Some(slot) = self.tools.iter_mut().find(|t| t.name() == tool.name()) {
            *slot = tool;
        } else {
            self.tools.push(tool);
        }
    }

    /// Offer the tools of `set` that `allow` admits, now and as they arrive. A late tool with
    /// the name of a registered one is left out (the registered one wins).
    pub fn attach_late(&mut self, set: LateTools, allow: LateFilter) {
        self.late = Some(Arc::new(LateView {
            set,
            allow,
            cache: Mutex::new(None),
        }));
    }

    /// The attached late set, for waiting on tools that are still on their way.
    pub fn late(&self) -> Option<&LateTools> {
        self.late.as_ref().map(|view| &view.set)
    }

    fn late_snapshot(&self) -> Option<Arc<LateSnapshot>> {
        let view = self.late.as_ref()?;
        let version = view.set.version();
        let mut cache = view
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(snapshot) = cache.as_ref().filter(|s| s.version == version) {
            return Some(Arc::clone(snapshot));
        }
        let tools: Vec<Arc<dyn Tool>> = view
            .set
            .tools()
            .into_iter()
            .filter(|t| (view.allow)(t.name()))
            .filter(|t| !self.tools.iter().any(|r| r.name() == t.name()))
            .collect();
        let schemas = tools.iter().map(|t| t.schema()).collect();
        let snapshot = Arc::new(LateSnapshot {
            version,
            tools,
            schemas,
        });
        *cache = Some(Arc::clone(&snapshot));
        Some(snapshot)
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        if let Some(tool) = self.tools.iter().find(|t| t.name() == name) {
            return Some(Arc::clone(tool));
        }
        let late = self.late_snapshot()?;
        late.tools.iter().find(|t| t.name() == name).cloned()
    }

    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.tools.iter().map(|t| t.name().to_owned()).collect();
        if let Some(late) = self.late_snapshot() {
            names.extend(late.tools.iter().map(|t| t.name().to_owned()));
        }
        names
    }

    pub fn schemas(&self) -> Vec<ToolSchema> {
        let mut schemas: Vec<ToolSchema> = self.tools.iter().map(|t| t.schema()).collect();
        if let Some(late) = self.late_snapshot() {
            schemas.extend(late.schemas.iter().cloned());
        }
        schemas
    }
}

impl ToolRegistry {
    /// Preflight one call against this registry: unknown tool, policy veto (`disabled` returns
    /// the veto message for a name), then schema validation.
    pub fn preflight(
        &self,
        validator: &crate::args::ArgsValidator,
        name: &str,
        raw: crate::args::RawArgs<'_>,
        disabled: impl Fn(&str) -> Option<String>,
    ) -> crate::args::Preflight {
        use crate::args::{ToolLookup, preflight};
        let Some(tool) = self.get(name) else {
            return preflight(validator, name, ToolLookup::Missing, raw);
        };
        if let Some(message) = disabled(name) {
            return preflight(validator, name, ToolLookup::Disabled(&message), raw);
        }
        let parameters = tool.parameters();
        preflight(
            validator,
            name,
            ToolLookup::Found {
                parameters: &parameters,
            },
            raw,
        )
    }
}
