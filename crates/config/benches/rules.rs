//! Prints how long `config.toml` with 10,000 and 40,000 `[[permission.rules]]` entries takes to
//! parse (each entry's line is looked up for diagnostics). Loading must grow linearly: four
//! times the rules should take about four times as long, not sixteen.
//!
//! Run: `cargo bench -p kimi-config --bench rules`

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

fn config_with_rules(count: usize) -> String {
    let mut text =
        String::from("default_model = \"k2\"\n\n[loop_control]\nmax_steps_per_turn = 50\n");
    for i in 0..count {
        text.push_str(&format!(
            "\n[[permission.rules]]\ndecision = \"allow\"\ntool = \"Bash\"\npattern = \"cargo test -p crate{i} *\"\n"
        ));
    }
    text
}

fn best_of(runs: usize, text: &str) -> Duration {
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            let config = kimi_config::Config::parse(black_box(text), Path::new("config.toml"));
            let elapsed = start.elapsed();
            assert!(config.permission.rules.len() > 1000);
            black_box(config);
            elapsed
        })
        .min()
        .unwrap_or_default()
}

fn main() {
    let mut previous: Option<(usize, Duration)> = None;
    for count in [10_000, 40_000] {
        let text = config_with_rules(count);
        let took = best_of(3, &text);
        let per_rule = took.as_secs_f64() * 1e6 / count as f64;
        print!(
            "config.toml with {count:>6} permission rules ({:.1} MB): {:>8.1} ms ({per_rule:.2} µs/rule)",
            text.len() as f64 / 1e6,
            took.as_secs_f64() * 1e3
        );
        if let Some((n, t)) = previous {
            print!(
                "; {:.1}× the time for {:.0}× the rules",
                took.as_secs_f64() / t.as_secs_f64(),
                count as f64 / n as f64
            );
        }
        println!();
        previous = Some((count, took));
    }
}
