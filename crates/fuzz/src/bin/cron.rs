//! Fuzz target `cron`: see [`kimi_fuzz::targets::cron`].

fn main() {
    kimi_fuzz::run(kimi_fuzz::targets::cron);
}
