//! `/experiments` (alias `/experimental`): list the experimental flags with their values and
//! where each comes from, and switch one with `/experiments <flag> on|off`, written to
//! `[experimental]` in config.toml (the rest of the file is kept as it is). Flags are read
//! when a session opens: every session opened after the change gets it (the terminal reopens
//! its session at once), without a restart. A flag kimi-rs does not act on, or one an
//! environment variable sets, is refused with the reason, never written and then ignored.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use kimi_config::Config;
use kimi_config::experimental::{FLAGS, FlagState, flag};

/// The flag table, one flag per line.
pub fn list(config: &Config) -> String {
    let mut lines = vec!["Experimental flags ([experimental] in config.toml):".to_owned()];
    for FlagState {
        flag,
        enabled,
        source,
    } in config.flags()
    {
        match flag.unsupported {
            None => lines.push(format!(
                "  {} {:<20} {} [{}]",
                if enabled { "on " } else { "off" },
                flag.id,
                flag.description,
                source.describe(flag)
            )),
            Some(why) => lines.push(format!(
                "  –   {:<20}  not available in kimi-rs: {why}",
                flag.id
            )),
        }
    }
    lines.push(
        "Switch one with /experiments <flag> on|off; sessions opened from then on use it (this one is reopened)."
            .to_owned(),
    );
    lines.join("\n")
}

/// `on`/`off` (and the usual spellings) as a bool.
fn parse_switch(word: &str) -> Option<bool> {
    match word.to_ascii_lowercase().as_str() {
        "on" | "true" | "1" | "yes" | "enable" => Some(true),
        "off" | "false" | "0" | "no" | "disable" => Some(false),
        _ => None,
    }
}

/// Checks `/experiments <flag> [on|off]` against the flags and their sources; without a value
/// the flag is flipped. Returns (flag id, new value).
pub fn plan(config: &Config, args: &str) -> anyhow::Result<(&'static str, bool)> {
    let mut words = args.split_whitespace();
    let id = words.next().unwrap_or_default();
    let Some(flag) = flag(id) else {
        let ids: Vec<&str> = FLAGS.iter().map(|f| f.id).collect();
        bail!(
            "there is no experimental flag `{id}`; the flags are {}",
            ids.join(", ")
        );
    };
    if let Some(why) = flag.unsupported {
        bail!("kimi-rs does not act on `{id}` ({why}), so it is not written");
    }
    let Some(state) = config.flags().into_iter().find(|s| s.flag.id == id) else {
        bail!("the flag `{id}` has no state");
    };
    if state.source.locked() {
        bail!(
            "`{id}` is {}; unset the variable to switch it here",
            state.source.describe(flag)
        );
    }
    let value = match (words.next(), words.next()) {
        (None, _) => !state.enabled,
        (Some(word), None) => parse_switch(word)
            .with_context(|| format!("`{word}` is not on or off; use /experiments {id} on|off"))?,
        (Some(_), Some(extra)) => bail!("unexpected `{extra}`; use /experiments {id} on|off"),
    };
    Ok((flag.id, value))
}

/// Sets `[experimental] <id> = value` in the config file at `path`, creating the file or the
/// table when missing and keeping everything else (comments included).
pub fn write(path: &Path, id: &str, value: bool) -> anyhow::Result<()> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(err).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .with_context(|| format!("{} is not valid TOML; fix it first", path.display()))?;
    let table = doc
        .entry("experimental")
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
        .as_table_like_mut()
        .with_context(|| format!("`experimental` in {} is not a table", path.display()))?;
    table.insert(id, toml_edit::value(value));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    // Written beside and renamed over, so a crash never leaves half a config file.
    let tmp = path.with_extension("toml.tmp");
    std::fs::write(&tmp, doc.to_string())
        .and_then(|()| std::fs::rename(&tmp, path))
        .with_context(|| format!("cannot write {}", path.display()))
}

/// The launch's configuration with `[experimental]` as config.toml holds it now (environment
/// overrides kept), so a flag switched since start-up applies to the sessions opened after.
/// A file that cannot be read or parsed now leaves the launch's values (and says so in the log).
pub fn current(config: &Arc<Config>) -> Arc<Config> {
    if !config.path.is_file() {
        return config.clone();
    }
    let fresh = Config::read(&config.path);
    if fresh.errors().next().is_some() {
        tracing::warn!(
            path = %config.path.display(),
            "config.toml has errors now; sessions keep the experimental flags read at start-up"
        );
        return config.clone();
    }
    if fresh.experimental == config.experimental {
        return config.clone();
    }
    let mut updated = (**config).clone();
    updated.experimental = fresh.experimental;
    Arc::new(updated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn write_keeps_the_rest_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(
            &path,
            "# mine\ndefault_model = \"k\"\n\n[experimental]\ntower = false # keep\n",
        )
        .unwrap();
        write(&path, "wait_for", false).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "# mine\ndefault_model = \"k\"\n\n[experimental]\ntower = false # keep\nwait_for = false\n"
        );
        let fresh = dir.path().join("new/config.toml");
        write(&fresh, "auto_session_title", true).unwrap();
        assert_eq!(
            std::fs::read_to_string(&fresh).unwrap(),
            "[experimental]\nauto_session_title = true\n"
        );
    }

    #[test]
    fn sessions_opened_after_a_switch_see_the_file_as_it_is_now() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "default_model = \"k\"\n").unwrap();
        let launch = Arc::new(Config::read(&path));
        assert!(launch.flag_enabled("wait_for"));
        write(&path, "wait_for", false).unwrap();
        let now = current(&launch);
        assert!(!now.flag_enabled("wait_for"));
        assert_eq!(now.default_model.as_deref(), Some("k"));
        // A file broken since start-up keeps the launch's flags.
        std::fs::write(&path, "[experimental\n").unwrap();
        assert!(current(&launch).flag_enabled("wait_for"));
    }

    #[test]
    fn plan_refuses_unknown_unsupported_and_env_locked_flags() {
        let mut config = Config::default();
        assert_eq!(plan(&config, "wait_for").unwrap(), ("wait_for", false));
        assert_eq!(
            plan(&config, "auto_session_title on").unwrap(),
            ("auto_session_title", true)
        );
        let err = |c: &Config, a: &str| plan(c, a).unwrap_err().to_string();
        assert!(err(&config, "nope").contains("no experimental flag `nope`"));
        assert!(err(&config, "tower on").contains("does not act on `tower`"));
        assert!(err(&config, "wait_for maybe").contains("not on or off"));
        config.experimental_env.insert(
            "wait_for".to_owned(),
            (true, kimi_config::experimental::FlagSource::Env),
        );
        assert!(err(&config, "wait_for off").contains("KIMI_CODE_EXPERIMENTAL_WAIT_FOR"));
    }
}
