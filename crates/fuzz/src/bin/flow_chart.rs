//! Fuzz target `flow_chart`: see [`kimi_fuzz::targets::flow_chart`].

fn main() {
    kimi_fuzz::run(kimi_fuzz::targets::flow_chart);
}
