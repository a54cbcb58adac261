//! Tools by name, in registration order, with their schemas for the model request.

use std::sync::Arc;

use kimi_protocol::ToolSchema;

use crate::tool::Tool;

#[derive(Default, Clone)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|t| t.name()))
            .finish()
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

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name).cloned()
    }

    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.name().to_owned()).collect()
    }

    pub fn schemas(&self) -> Vec<ToolSchema> {
        self.tools.iter().map(|t| t.schema()).collect()
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
