//! The `Skill` tool (surface.md §2.5): the model loads an inline skill by name; the expanded
//! body is steered into the running turn as a user message with a `skill_activation` origin.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use kimi_tools::tool::parse_args;
use kimi_tools::{
    Execution, ProgressSink, Resolution, RuleSubject, Tool, ToolContext, ToolDisplay, ToolError,
    ToolPlan, ToolResult,
};

use crate::activation::SkillActivation;
use crate::catalog::SkillCatalog;
use crate::prompt::SkillTrigger;
use crate::skill::SkillType;

/// How many Skill calls may nest (a skill whose agent loads another skill, …).
pub const MAX_SKILL_QUERY_DEPTH: usize = 3;

const DESCRIPTION: &str = "Invoke a registered skill from the current skill listing. BLOCKING REQUIREMENT: when a skill from the listing matches the user's request, you MUST call this tool (not free-form text). Do not re-invoke a skill to repeat work already done: if a `<kimi-skill-loaded>` block for it with the same `args` is already present in the conversation, follow those instructions directly instead of calling the tool again. Do call the tool again when you need the skill with different arguments — the loaded block was expanded with the earlier `args` and will not reflect new inputs. Do NOT call the same skill repeatedly inside one turn — recursive depth is capped at 3.";

/// The message the tool wants in the conversation right after its result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillSteer {
    /// User-role text: preamble plus the `<kimi-skill-loaded>` block.
    pub text: String,
    pub activation: SkillActivation,
}

/// Where the engine receives [`SkillSteer`]s. Return `false` when the message could not be
/// queued; the tool then puts the skill text into the result's model note instead, so the
/// model still receives the instructions.
pub trait SkillDelivery: Send + Sync {
    fn deliver(&self, steer: SkillSteer) -> bool;
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    skill: String,
    #[serde(default)]
    args: Option<String>,
}

/// The Skill tool of one agent.
#[derive(Clone)]
pub struct SkillTool {
    catalog: Arc<SkillCatalog>,
    session_id: String,
    depth: usize,
    delivery: Option<Arc<dyn SkillDelivery>>,
}

impl std::fmt::Debug for SkillTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillTool")
            .field("session_id", &self.session_id)
            .field("depth", &self.depth)
            .field("delivery", &self.delivery.is_some())
            .finish_non_exhaustive()
    }
}

impl SkillTool {
    pub fn new(catalog: Arc<SkillCatalog>, session_id: String) -> Self {
        Self {
            catalog,
            session_id,
            depth: 0,
            delivery: None,
        }
    }

    /// The nesting depth of the agent this tool belongs to (0 = not inside a skill). An agent
    /// started on behalf of a skill gets a tool with its parent's depth + 1.
    pub fn with_depth(mut self, depth: usize) -> Self {
        self.depth = depth;
        self
    }

    /// Steer loaded skills into the running turn through `delivery`.
    pub fn with_delivery(mut self, delivery: Arc<dyn SkillDelivery>) -> Self {
        self.delivery = Some(delivery);
        self
    }

    /// Check the call and build what it will deliver, or the error the model gets.
    fn prepare(&self, params: &Params) -> Result<SkillSteer, String> {
        if self.depth >= MAX_SKILL_QUERY_DEPTH {
            return Err(format!(
                "Nested skill invocation \"{}\" exceeded the maximum depth of {MAX_SKILL_QUERY_DEPTH} — refusing to recurse further.",
                params.skill
            ));
        }
        let Some(skill) = self.catalog.get(&params.skill) else {
            return Err(format!(
                "Skill \"{}\" not found in the current skill listing. Use a name exactly as listed.",
                params.skill
            ));
        };
        if skill.disable_model_invocation {
            return Err(format!(
                "Skill \"{}\" can only be triggered by the user (model invocation is disabled). Ask the user to run /skill:{} if it is needed.",
                skill.name, skill.name
            ));
        }
        match skill.kind() {
            SkillType::Prompt | SkillType::Inline => {}
            SkillType::Flow => {
                return Err(format!(
                    "Skill \"{}\" is a flow skill and cannot be invoked by the model; only the user can start it with /skill:{}.",
                    skill.name, skill.name
                ));
            }
            SkillType::Reference => {
                return Err(format!(
                    "Skill \"{}\" is a reference skill and cannot be invoked; read {} directly if you need its content.",
                    skill.name,
                    skill.path.display()
                ));
            }
        }
        let args = params.args.as_deref().unwrap_or_default();
        let trigger = if self.depth > 0 {
            SkillTrigger::NestedSkill
        } else {
            SkillTrigger::ModelTool
        };
        Ok(SkillSteer {
            text: self
                .catalog
                .tool_message(skill, args, &self.session_id, trigger),
            activation: SkillActivation::new(skill, args, trigger),
        })
    }
}

#[async_trait]
impl Tool for SkillTool {
    fn name(&self) -> &str {
        "Skill"
    }

    fn description(&self) -> String {
        DESCRIPTION.to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "skill": {
                    "type": "string",
                    "description": "The exact name of the skill to invoke, spelled as it appears in the current skill listing (e.g. \"commit\", \"pdf\")."
                },
                "args": {
                    "type": "string",
                    "description": "Optional argument string for the skill, written like a command line (e.g. `-m \"fix bug\"`, `123`, a file path). It is split on whitespace (quotes group a token) and expanded into the skill's placeholders ($NAME, $1, $ARGUMENTS); if the skill body has no placeholders, the whole string is still appended as a trailing `ARGUMENTS:` line. Omit it only when there is nothing to pass."
                }
            },
            "required": ["skill"],
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let params: Params = parse_args(args)?;
        // Refusals are answered without running (and without asking the user to approve a
        // call that cannot succeed).
        let steer = match self.prepare(&params) {
            Ok(steer) => steer,
            Err(message) => return Ok(Resolution::Result(ToolResult::error(message))),
        };
        let name = steer.activation.skill_name.clone();
        let detail = params.args.filter(|a| !a.is_empty());
        Ok(Resolution::Run(Box::new(SkillExecution {
            plan: ToolPlan {
                // Loading instructions changes what every later call means: run alone.
                accesses: None,
                approval_rule: format!("Skill({name})"),
                subject: RuleSubject::Text(name.clone()),
                display: ToolDisplay {
                    kind: "skill".to_owned(),
                    summary: name.clone(),
                    detail,
                    diff: None,
                },
                description: format!("Invoke skill {name}"),
                stop_batch_after_this: false,
            },
            steer,
            delivery: self.delivery.clone(),
        })))
    }
}

struct SkillExecution {
    plan: ToolPlan,
    steer: SkillSteer,
    delivery: Option<Arc<dyn SkillDelivery>>,
}

#[async_trait]
impl Execution for SkillExecution {
    fn plan(&self) -> &ToolPlan {
        &self.plan
    }

    async fn execute(
        self: Box<Self>,
        _ctx: &ToolContext,
        _cancel: CancellationToken,
        _progress: ProgressSink,
    ) -> ToolResult {
        let output = format!(
            "Skill \"{}\" loaded inline. Follow its instructions.",
            self.steer.activation.skill_name
        );
        let SkillExecution {
            steer, delivery, ..
        } = *self;
        let text = steer.text.clone();
        let delivered = delivery.is_some_and(|d| d.deliver(steer));
        if delivered {
            ToolResult::ok(output)
        } else {
            ToolResult::ok(output).with_note(text)
        }
    }
}
