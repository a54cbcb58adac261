//! The launch's configuration: `config.toml` read once (environment overrides applied) and
//! checked. Errors refuse the start with every problem listed; warnings (unknown, deprecated
//! and unsupported keys) go to the front end, which shows them once at start-up.

use std::path::Path;
use std::sync::Arc;

use kimi_config::Config;

/// `$home/config.toml`, or why kimi-rs cannot start with it.
pub fn load(home: &Path) -> anyhow::Result<Arc<Config>> {
    let config = Config::load_home(home);
    config.check()?;
    Ok(Arc::new(config))
}

/// The config's warnings as the lines a front end shows.
pub fn warnings(config: &Config) -> Vec<String> {
    config.warnings().map(ToString::to_string).collect()
}
