//! Fuzz target `config_toml`: see [`kimi_fuzz::targets::config_toml`].

fn main() {
    kimi_fuzz::run(kimi_fuzz::targets::config_toml);
}
