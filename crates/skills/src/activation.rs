//! The record of one skill activation: the data of the `skill_activation` message origin that
//! marks the message loading a skill (for undo, compaction and the UI).

use kimi_protocol::Origin;
use kimi_protocol::origin::KnownOrigin;

use crate::prompt::SkillTrigger;
use crate::skill::Skill;

/// Everything a `skill_activation` origin carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillActivation {
    /// A fresh UUID per activation.
    pub activation_id: String,
    pub skill_name: String,
    /// `None` when no arguments were given.
    pub skill_args: Option<String>,
    pub trigger: SkillTrigger,
    /// The declared `type`, if any.
    pub skill_type: Option<String>,
    pub skill_path: String,
    /// `project`, `user`, `extra` or `builtin`.
    pub skill_source: String,
}

impl SkillActivation {
    pub(crate) fn new(skill: &Skill, args: &str, trigger: SkillTrigger) -> Self {
        Self {
            activation_id: uuid::Uuid::new_v4().to_string(),
            skill_name: skill.name.clone(),
            skill_args: (!args.is_empty()).then(|| args.to_owned()),
            trigger,
            skill_type: skill.skill_type.map(|t| t.as_str().to_owned()),
            skill_path: skill.path.display().to_string(),
            skill_source: skill.source.as_str().to_owned(),
        }
    }

    /// The message origin to attach to the message carrying the skill.
    pub fn to_origin(&self) -> Origin {
        Origin::Known(KnownOrigin::SkillActivation {
            activation_id: self.activation_id.clone(),
            skill_name: self.skill_name.clone(),
            skill_args: self.skill_args.clone(),
            trigger: self.trigger.as_str().to_owned(),
            skill_type: self.skill_type.clone(),
            skill_path: Some(self.skill_path.clone()),
            skill_source: Some(self.skill_source.clone()),
        })
    }
}
