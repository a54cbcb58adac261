//! Placing subagents on declared execution environments: `Agent`'s `environment` (one id) and
//! `AgentSwarm`'s `environments` (ids and globs over the declared ids, spread over the items
//! in turn), checked before anything starts, and the connect itself (blocking, so it runs off
//! the async workers). A subagent placed elsewhere works in that environment's `defaultCwd`;
//! its binding is journaled, so resuming it reconnects to the same target.
//!
//! `local` (reserved, never declared) places a subagent on this machine, in the directory the
//! session was started in, even when the session's own tools run on a remote environment.

use globset::Glob;
use serde::Deserialize;

use super::{SubagentError, SubagentHost};
use crate::session::{EnvironmentBinding, LOCAL_ENVIRONMENT};

/// `AgentSwarm`'s `environments`: one glob, or a list of ids and globs.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum EnvironmentsParam {
    One(String),
    Many(Vec<String>),
}

fn declared(host: &SubagentHost) -> Result<Vec<String>, String> {
    let ids = host
        .environments
        .as_ref()
        .map(|catalog| catalog.ids())
        .unwrap_or_default();
    if ids.is_empty() {
        return Err(
            "no execution environment is declared, so subagents can only run where you run; declare them under [environments] in config.toml or .kimi-code/environments.toml, or drop the environment argument".to_owned(),
        );
    }
    Ok(ids)
}

/// The tool description's line naming the environments a call may place subagents on.
pub(super) fn describe(host: &SubagentHost, param: &str) -> String {
    let ids = host
        .environments
        .as_ref()
        .map(|catalog| catalog.ids())
        .unwrap_or_default();
    if ids.is_empty() {
        String::new()
    } else {
        format!(
            "\n\nDeclared execution environments (`{param}`): {}; `{LOCAL_ENVIRONMENT}` is this machine (the directory the session started in).",
            ids.join(", ")
        )
    }
}

/// `Agent`'s `environment`: a declared id.
pub(super) fn check_id(host: &SubagentHost, id: &str) -> Result<String, String> {
    let id = id.trim();
    if id == LOCAL_ENVIRONMENT {
        return Ok(id.to_owned());
    }
    let ids = declared(host)?;
    if ids.iter().any(|known| known == id) {
        Ok(id.to_owned())
    } else {
        Err(format!(
            "environment `{id}` is not declared; declared: {}",
            ids.join(", ")
        ))
    }
}

/// `AgentSwarm`'s `environments`, expanded in the order given (a glob adds its matches in
/// declared order), each id once.
pub(super) fn expand(
    host: &SubagentHost,
    param: &EnvironmentsParam,
) -> Result<Vec<String>, String> {
    let only_local = match param {
        EnvironmentsParam::One(one) => one.trim() == LOCAL_ENVIRONMENT,
        EnvironmentsParam::Many(many) => many.iter().all(|id| id.trim() == LOCAL_ENVIRONMENT),
    };
    let ids = if only_local {
        Vec::new()
    } else {
        declared(host)?
    };
    expand_ids(&ids, param)
}

fn expand_ids(ids: &[String], param: &EnvironmentsParam) -> Result<Vec<String>, String> {
    let patterns: Vec<&str> = match param {
        EnvironmentsParam::One(one) => vec![one.as_str()],
        EnvironmentsParam::Many(many) => many.iter().map(String::as_str).collect(),
    };
    let mut out: Vec<String> = Vec::new();
    for pattern in patterns.iter().map(|p| p.trim()) {
        if pattern.is_empty() {
            return Err(
                "`environments` holds an empty entry; give declared ids or globs such as \"pod-*\""
                    .to_owned(),
            );
        }
        if pattern == LOCAL_ENVIRONMENT {
            // Named only, never matched by a glob: this machine is not one of the targets.
            if !out.iter().any(|id| id == LOCAL_ENVIRONMENT) {
                out.push(LOCAL_ENVIRONMENT.to_owned());
            }
            continue;
        }
        let matched: Vec<&String> = if pattern.contains(['*', '?', '[', '{']) {
            let glob = Glob::new(pattern)
                .map_err(|e| format!("`{pattern}` in `environments` is not a valid glob: {e}"))?
                .compile_matcher();
            ids.iter().filter(|id| glob.is_match(id.as_str())).collect()
        } else {
            ids.iter().filter(|id| *id == pattern).collect()
        };
        if matched.is_empty() {
            return Err(format!(
                "`{pattern}` in `environments` matches no declared environment; declared: {}",
                ids.join(", ")
            ));
        }
        for id in matched {
            if !out.contains(id) {
                out.push(id.clone());
            }
        }
    }
    Ok(out)
}

/// Connects `id` for a subagent.
pub(super) async fn bind(
    host: &SubagentHost,
    id: &str,
) -> Result<EnvironmentBinding, SubagentError> {
    if id == LOCAL_ENVIRONMENT {
        let cwd = host.session.state.cwd.clone().ok_or_else(|| {
            SubagentError::Environment(
                "this session has no directory on this machine, so nothing was started on `local`; use a declared environment".to_owned(),
            )
        })?;
        return Ok(EnvironmentBinding {
            environment: kimi_tools::environment::Local::shared(),
            cwd: std::path::PathBuf::from(cwd),
        });
    }
    let Some(catalog) = host.environments.clone() else {
        return Err(SubagentError::Environment(format!(
            "this front end cannot connect execution environments, so nothing was started on `{id}`"
        )));
    };
    let owned = id.to_owned();
    match tokio::task::spawn_blocking(move || catalog.bind(&owned)).await {
        Ok(Ok(binding)) => Ok(binding),
        Ok(Err(message)) => Err(SubagentError::Environment(format!(
            "the subagent was not started: {message}"
        ))),
        Err(join) => Err(SubagentError::Environment(format!(
            "connecting environment `{id}` failed: {join}"
        ))),
    }
}

/// Reconnects the environment a resumed subagent's journal names, at its journaled cwd.
pub(super) async fn reconnect(
    host: &SubagentHost,
    record: &kimi_protocol::record::EnvironmentBind,
) -> Result<EnvironmentBinding, SubagentError> {
    let mut binding = bind(host, &record.id).await?;
    binding.cwd = std::path::PathBuf::from(&record.cwd);
    Ok(binding)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spread(ids: &[&str], param: EnvironmentsParam) -> Result<Vec<String>, String> {
        let ids: Vec<String> = ids.iter().map(|s| (*s).to_owned()).collect();
        expand_ids(&ids, &param)
    }

    #[test]
    fn globs_and_lists_expand_over_declared_ids() {
        let ids = ["build-01", "build-02", "pod-0", "pod-1", "pod-2"];
        assert_eq!(
            spread(&ids, EnvironmentsParam::One("pod-*".into())).unwrap(),
            ["pod-0", "pod-1", "pod-2"]
        );
        assert_eq!(
            spread(
                &ids,
                EnvironmentsParam::Many(vec!["pod-2".into(), "build-*".into(), "pod-2".into()])
            )
            .unwrap(),
            ["pod-2", "build-01", "build-02"]
        );
        let none = spread(&ids, EnvironmentsParam::One("gpu-*".into())).unwrap_err();
        assert!(none.contains("matches no declared environment"), "{none}");
        let unknown = spread(&ids, EnvironmentsParam::Many(vec!["pod-9".into()])).unwrap_err();
        assert!(
            unknown.contains("pod-9") && unknown.contains("pod-0"),
            "{unknown}"
        );
        let empty = spread(&ids, EnvironmentsParam::Many(vec![" ".into()])).unwrap_err();
        assert!(empty.contains("empty entry"), "{empty}");
        assert_eq!(
            spread(
                &ids,
                EnvironmentsParam::Many(vec!["local".into(), "pod-*".into(), "local".into()])
            )
            .unwrap(),
            ["local", "pod-0", "pod-1", "pod-2"]
        );
        // A glob never takes in this machine.
        assert_eq!(
            spread(&ids, EnvironmentsParam::One("*".into())).unwrap(),
            ids
        );
        assert_eq!(
            spread(&[], EnvironmentsParam::One("local".into())).unwrap(),
            ["local"]
        );
    }
}
