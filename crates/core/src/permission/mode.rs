//! Permission modes (surface.md §3.1): how a session's mode is chosen from flags and config,
//! and what a subagent inherits. Plan mode is an orthogonal flag carried next to the mode.

use kimi_protocol::ops::PermissionMode;

use super::PermissionError;

/// The permission state of one agent: the mode plus the orthogonal plan guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModeState {
    pub mode: PermissionMode,
    pub plan: bool,
}

impl Default for ModeState {
    fn default() -> Self {
        ModeState {
            mode: PermissionMode::Manual,
            plan: false,
        }
    }
}

/// Everything that decides the starting mode of a session, passed in explicitly.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModeInputs {
    /// `-y/--yolo`.
    pub yolo_flag: bool,
    /// `--auto`.
    pub auto_flag: bool,
    /// `--plan`.
    pub plan_flag: bool,
    /// `default_permission_mode` from `config.toml`, as written.
    pub config_default_mode: Option<String>,
    /// `default_plan_mode` from `config.toml`.
    pub config_default_plan: bool,
    /// `kimi -p`: print mode always runs in auto because nobody can answer an approval.
    pub print_mode: bool,
}

/// Parses a mode name as written in config, REST or ACP (`default` is ACP's name for manual).
pub fn parse_mode(text: &str) -> Result<PermissionMode, PermissionError> {
    match text.trim().to_ascii_lowercase().as_str() {
        "manual" | "default" => Ok(PermissionMode::Manual),
        "yolo" => Ok(PermissionMode::Yolo),
        "auto" => Ok(PermissionMode::Auto),
        _ => Err(PermissionError::InvalidMode {
            value: text.to_owned(),
        }),
    }
}

/// The wire name of a mode (`permission.set_mode`).
pub fn mode_name(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::Manual => "manual",
        PermissionMode::Yolo => "yolo",
        PermissionMode::Auto => "auto",
    }
}

/// Resolves the starting mode: print mode forces auto; otherwise a flag beats config, config
/// beats the built-in default (manual). `--yolo` together with `--auto` is refused rather than
/// silently picking one, because the two grant different things.
pub fn resolve_mode(inputs: &ModeInputs) -> Result<ModeState, PermissionError> {
    if inputs.yolo_flag && inputs.auto_flag {
        return Err(PermissionError::ConflictingModeFlags);
    }
    let plan = inputs.plan_flag || inputs.config_default_plan;
    if inputs.print_mode {
        return Ok(ModeState {
            mode: PermissionMode::Auto,
            plan,
        });
    }
    let mode = if inputs.yolo_flag {
        PermissionMode::Yolo
    } else if inputs.auto_flag {
        PermissionMode::Auto
    } else if let Some(text) = &inputs.config_default_mode {
        parse_mode(text)?
    } else {
        PermissionMode::Manual
    };
    Ok(ModeState { mode, plan })
}

/// What a subagent starts with: the caller's permission mode (surface.md §8.3). Plan mode is
/// per agent (its plan file lives under the agent's own folder), so a subagent starts outside it.
pub fn inherit_for_subagent(parent: ModeState) -> ModeState {
    ModeState {
        mode: parent.mode,
        plan: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(f: impl FnOnce(&mut ModeInputs)) -> ModeInputs {
        let mut i = ModeInputs::default();
        f(&mut i);
        i
    }

    #[test]
    fn resolution_table() {
        let cases: Vec<(ModeInputs, PermissionMode, bool)> = vec![
            (ModeInputs::default(), PermissionMode::Manual, false),
            (inputs(|i| i.yolo_flag = true), PermissionMode::Yolo, false),
            (inputs(|i| i.auto_flag = true), PermissionMode::Auto, false),
            (
                inputs(|i| i.config_default_mode = Some("yolo".into())),
                PermissionMode::Yolo,
                false,
            ),
            (
                inputs(|i| {
                    i.config_default_mode = Some("yolo".into());
                    i.auto_flag = true;
                }),
                PermissionMode::Auto,
                false,
            ),
            (
                inputs(|i| {
                    i.print_mode = true;
                    i.config_default_mode = Some("manual".into());
                    i.plan_flag = true;
                }),
                PermissionMode::Auto,
                true,
            ),
            (
                inputs(|i| i.config_default_plan = true),
                PermissionMode::Manual,
                true,
            ),
        ];
        for (input, mode, plan) in cases {
            assert_eq!(
                resolve_mode(&input).unwrap(),
                ModeState { mode, plan },
                "{input:?}"
            );
        }
    }

    #[test]
    fn bad_inputs_are_errors() {
        let both = inputs(|i| {
            i.yolo_flag = true;
            i.auto_flag = true;
        });
        assert_eq!(
            resolve_mode(&both),
            Err(PermissionError::ConflictingModeFlags)
        );
        let bad = inputs(|i| i.config_default_mode = Some("reckless".into()));
        let err = resolve_mode(&bad).unwrap_err();
        assert!(err.to_string().contains("reckless"), "{err}");
    }

    #[test]
    fn subagent_inherits_mode_not_plan() {
        let parent = ModeState {
            mode: PermissionMode::Yolo,
            plan: true,
        };
        assert_eq!(
            inherit_for_subagent(parent),
            ModeState {
                mode: PermissionMode::Yolo,
                plan: false
            }
        );
        assert_eq!(parse_mode("default").unwrap(), PermissionMode::Manual);
        assert_eq!(mode_name(PermissionMode::Auto), "auto");
    }
}
