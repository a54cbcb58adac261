//! Experimental flags: `[experimental] <flag id> = bool` in config.toml, the per-flag
//! `KIMI_CODE_EXPERIMENTAL_<ID>` variables and the master switch `KIMI_CODE_EXPERIMENTAL_FLAG`
//! (surface.md §4.4; precedence: master variable > per-flag variable > `[experimental]` >
//! default). Every flag of the reference is listed; those kimi-rs does not act on say why, and
//! setting one is reported as a warning rather than accepted and ignored.

use std::collections::BTreeMap;

/// One experimental flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flag {
    pub id: &'static str,
    pub env: &'static str,
    pub default: bool,
    pub description: &'static str,
    /// `Some(why)` when kimi-rs does not act on the flag.
    pub unsupported: Option<&'static str>,
}

/// The reference's flags, in its order.
pub const FLAGS: &[Flag] = &[
    Flag {
        id: "tool-select",
        env: "KIMI_CODE_EXPERIMENTAL_TOOL_SELECT",
        default: false,
        description: "announce deferred MCP tool schemas and let the model load them with select_tools",
        unsupported: None,
    },
    Flag {
        id: "wait_for",
        env: "KIMI_CODE_EXPERIMENTAL_WAIT_FOR",
        default: true,
        description: "the WaitFor tool: block the turn until a background task finishes",
        unsupported: None,
    },
    Flag {
        id: "tower",
        env: "KIMI_CODE_EXPERIMENTAL_TOWER",
        default: false,
        description: "multi-agent tower mode (/tower and the Tower tools)",
        unsupported: Some("there is no tower mode"),
    },
    Flag {
        id: "auto_session_title",
        env: "KIMI_CODE_EXPERIMENTAL_AUTO_SESSION_TITLE",
        default: false,
        description: "after the first turn, one short tool-less model request titles the session",
        unsupported: None,
    },
    Flag {
        id: "secondary-model",
        env: "KIMI_CODE_EXPERIMENTAL_SECONDARY_MODEL",
        default: false,
        description: "a cheaper default model for subagents ([secondary_model])",
        unsupported: Some("subagent models come from [subagent] models"),
    },
    Flag {
        id: "subagent_fork",
        env: "KIMI_CODE_EXPERIMENTAL_SUBAGENT_FORK",
        default: false,
        description: "Agent's fork parameter: a subagent starting from a copy of the conversation",
        unsupported: Some("fork is always available to the Agent tool"),
    },
    Flag {
        id: "persistence_minidb_readmodel",
        env: "KIMI_CODE_EXPERIMENTAL_PERSISTENCE_MINIDB_READMODEL",
        default: true,
        description: "the reference's session read model store",
        unsupported: Some("sessions are read from their journals and the session index"),
    },
];

pub const MASTER_ENV: &str = "KIMI_CODE_EXPERIMENTAL_FLAG";

/// The flag with this id.
pub fn flag(id: &str) -> Option<&'static Flag> {
    FLAGS.iter().find(|f| f.id == id)
}

/// Where a flag's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagSource {
    Default,
    Config,
    /// Its own `KIMI_CODE_EXPERIMENTAL_<ID>` variable (locks it: config.toml does not win).
    Env,
    /// `KIMI_CODE_EXPERIMENTAL_FLAG` (locks every flag on).
    MasterEnv,
}

impl FlagSource {
    pub fn describe(self, flag: &Flag) -> String {
        match self {
            FlagSource::Default => "default".to_owned(),
            FlagSource::Config => "config.toml".to_owned(),
            FlagSource::Env => format!("set by {} (config.toml cannot change it)", flag.env),
            FlagSource::MasterEnv => {
                format!("set by {MASTER_ENV} (config.toml cannot change it)")
            }
        }
    }

    /// Whether config.toml can change the flag.
    pub fn locked(self) -> bool {
        matches!(self, FlagSource::Env | FlagSource::MasterEnv)
    }
}

/// A flag and its resolved value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlagState {
    pub flag: &'static Flag,
    pub enabled: bool,
    pub source: FlagSource,
}

/// Flags set by environment variables: flag id → (value, which variable set it).
pub type EnvOverrides = BTreeMap<String, (bool, FlagSource)>;

/// Resolves every flag from the file's `[experimental]` and the environment overrides.
pub fn resolve(file: &BTreeMap<String, bool>, env: &EnvOverrides) -> Vec<FlagState> {
    FLAGS
        .iter()
        .map(|flag| {
            let (enabled, source) = match (env.get(flag.id), file.get(flag.id)) {
                (Some(&(on, source)), _) => (on, source),
                (None, Some(&on)) => (on, FlagSource::Config),
                (None, None) => (flag.default, FlagSource::Default),
            };
            FlagState {
                flag,
                enabled,
                source,
            }
        })
        .collect()
}

/// The environment's overrides: the master switch (when on) over each flag's own variable.
/// Values that are not booleans are returned as errors `(variable, value)`.
pub fn env_overrides(
    env: &dyn Fn(&str) -> Option<String>,
) -> (EnvOverrides, Vec<(String, String)>) {
    let mut out = BTreeMap::new();
    let mut bad = Vec::new();
    let mut read = |var: &str| {
        let text = env(var)?;
        let on = crate::env::truthy(&text);
        if on.is_none() {
            bad.push((var.to_owned(), text));
        }
        on
    };
    let master = read(MASTER_ENV).filter(|on| *on);
    for flag in FLAGS {
        let value = match master {
            Some(on) => Some((on, FlagSource::MasterEnv)),
            None => read(flag.env).map(|on| (on, FlagSource::Env)),
        };
        if let Some(value) = value {
            out.insert(flag.id.to_owned(), value);
        }
    }
    (out, bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_schema_accepts_exactly_the_flag_ids() {
        let ids: Vec<&str> = FLAGS.iter().map(|f| f.id).collect();
        assert_eq!(ids, crate::schema::EXPERIMENTAL_IDS);
    }

    #[test]
    fn master_env_beats_flag_env_beats_config_beats_default() {
        let file = BTreeMap::from([
            ("auto_session_title".to_owned(), true),
            ("wait_for".to_owned(), false),
        ]);
        let state = |env: &dyn Fn(&str) -> Option<String>, id: &str| {
            let (overrides, bad) = env_overrides(env);
            assert_eq!(bad, vec![]);
            let s = resolve(&file, &overrides)
                .into_iter()
                .find(|s| s.flag.id == id)
                .unwrap();
            (s.enabled, s.source)
        };
        let none = env_of(&[]);
        assert_eq!(state(&none, "wait_for"), (false, FlagSource::Config));
        assert_eq!(state(&none, "tower"), (false, FlagSource::Default));
        let per_flag = env_of(&[("KIMI_CODE_EXPERIMENTAL_AUTO_SESSION_TITLE", "0")]);
        assert_eq!(
            state(&per_flag, "auto_session_title"),
            (false, FlagSource::Env)
        );
        let master = env_of(&[
            ("KIMI_CODE_EXPERIMENTAL_FLAG", "1"),
            ("KIMI_CODE_EXPERIMENTAL_WAIT_FOR", "0"),
        ]);
        assert_eq!(state(&master, "wait_for"), (true, FlagSource::MasterEnv));
        // The master switch off forces nothing.
        let master_off = env_of(&[("KIMI_CODE_EXPERIMENTAL_FLAG", "0")]);
        assert_eq!(state(&master_off, "wait_for"), (false, FlagSource::Config));
    }
}
