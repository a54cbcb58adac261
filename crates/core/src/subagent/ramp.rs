//! The launch ramp of an `AgentSwarm` (surface.md §2.5): a burst of agents starts at once,
//! then one more per interval, never more running than an optional cap
//! (`KIMI_CODE_AGENT_SWARM_MAX_CONCURRENCY`). The schedule is a pure state machine over
//! instants the caller supplies, so it is tested without clocks; the swarm driver feeds it
//! tokio time and sleeps until the instant it asks to be polled again.

use std::time::Duration;

use tokio::time::Instant;

/// Agents started at once when a swarm begins.
pub const BURST: usize = 5;
/// Delay between later launches.
pub const INTERVAL: Duration = Duration::from_millis(700);
/// Environment variable that caps how many swarm agents run at the same time.
pub const MAX_CONCURRENCY_ENV: &str = "KIMI_CODE_AGENT_SWARM_MAX_CONCURRENCY";

/// An unusable `KIMI_CODE_AGENT_SWARM_MAX_CONCURRENCY`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{MAX_CONCURRENCY_ENV} is set to `{0}`, which is not a positive whole number; fix or unset it and call AgentSwarm again"
)]
pub struct BadConcurrency(pub String);

/// The cap from the environment variable's value: unset or blank = none.
pub fn parse_max_concurrency(value: Option<&str>) -> Result<Option<usize>, BadConcurrency> {
    let Some(raw) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    match raw.parse::<usize>() {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(BadConcurrency(raw.to_owned())),
    }
}

/// When the next agents of a swarm may start.
#[derive(Debug, Clone)]
pub struct Ramp {
    burst: usize,
    interval: Duration,
    cap: Option<usize>,
    total: usize,
    launched: usize,
    /// The instant the next paced launch is due, once armed.
    due: Option<Instant>,
}

/// What [`Ramp::poll`] allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// Agents to start now.
    pub launch: usize,
    /// Poll again at this instant (or earlier, when a running agent ends).
    pub wake_at: Option<Instant>,
}

impl Ramp {
    pub fn new(total: usize, cap: Option<usize>) -> Ramp {
        Ramp::with_pacing(total, cap, BURST, INTERVAL)
    }

    pub fn with_pacing(total: usize, cap: Option<usize>, burst: usize, interval: Duration) -> Ramp {
        Ramp {
            burst,
            interval,
            cap,
            total,
            launched: 0,
            due: None,
        }
    }

    fn has_room(&self, active: usize) -> bool {
        self.cap.is_none_or(|cap| active < cap)
    }

    fn take(&mut self, active: usize, launch: &mut usize) -> bool {
        if self.launched < self.total && self.has_room(active + *launch) {
            self.launched += 1;
            *launch += 1;
            true
        } else {
            false
        }
    }

    /// Agents that may start at `now` while `active` are running, and when to ask next.
    /// The burst starts at once; after it one agent per interval; a paced launch that finds
    /// the cap reached is dropped and the interval restarts once an agent has ended.
    pub fn poll(&mut self, now: Instant, active: usize) -> Step {
        let mut launch = 0;
        while self.launched < self.burst && self.take(active, &mut launch) {}
        if let Some(due) = self.due
            && due <= now
        {
            self.due = None;
            self.take(active, &mut launch);
        }
        if self.due.is_none() && self.launched < self.total && self.has_room(active + launch) {
            self.due = Some(now + self.interval);
        }
        Step {
            launch,
            wake_at: self.due,
        }
    }

    /// Every agent has been started.
    #[cfg(test)]
    pub fn done(&self) -> bool {
        self.launched >= self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn five_start_at_once_then_one_per_interval() {
        let t0 = Instant::now();
        let mut ramp = Ramp::new(8, None);
        assert_eq!(
            ramp.poll(t0, 0),
            Step {
                launch: 5,
                wake_at: Some(t0 + ms(700))
            }
        );
        // Polling early (an agent ended) starts nothing and keeps the due time.
        assert_eq!(
            ramp.poll(t0 + ms(300), 4),
            Step {
                launch: 0,
                wake_at: Some(t0 + ms(700))
            }
        );
        assert_eq!(
            ramp.poll(t0 + ms(700), 4),
            Step {
                launch: 1,
                wake_at: Some(t0 + ms(1400))
            }
        );
        assert_eq!(ramp.poll(t0 + ms(1400), 5).launch, 1);
        let last = ramp.poll(t0 + ms(2100), 6);
        assert_eq!(
            last,
            Step {
                launch: 1,
                wake_at: None
            }
        );
        assert!(ramp.done());
        assert_eq!(ramp.poll(t0 + ms(9000), 0).launch, 0);
    }

    #[test]
    fn small_swarms_start_entirely_at_once() {
        let t0 = Instant::now();
        let mut ramp = Ramp::new(3, None);
        assert_eq!(
            ramp.poll(t0, 0),
            Step {
                launch: 3,
                wake_at: None
            }
        );
        assert!(ramp.done());
    }

    #[test]
    fn the_cap_limits_running_agents_and_restarts_the_interval() {
        let t0 = Instant::now();
        let mut ramp = Ramp::new(4, Some(2));
        // Only two fit; no timer while full.
        assert_eq!(
            ramp.poll(t0, 0),
            Step {
                launch: 2,
                wake_at: None
            }
        );
        // One ended: the burst allowance is not used up, so the next starts at once.
        assert_eq!(
            ramp.poll(t0 + ms(50), 1),
            Step {
                launch: 1,
                wake_at: None
            }
        );
        assert_eq!(ramp.poll(t0 + ms(60), 1).launch, 1);
        assert!(ramp.done());
    }

    #[test]
    fn after_the_burst_a_full_swarm_waits_an_interval_after_a_slot_frees() {
        let t0 = Instant::now();
        let mut ramp = Ramp::with_pacing(7, Some(5), 5, ms(700));
        assert_eq!(
            ramp.poll(t0, 0),
            Step {
                launch: 5,
                wake_at: None
            }
        );
        let freed = ramp.poll(t0 + ms(2000), 4);
        assert_eq!(
            freed,
            Step {
                launch: 0,
                wake_at: Some(t0 + ms(2700))
            }
        );
        // Due, but full again: dropped, re-armed once a slot frees.
        assert_eq!(
            ramp.poll(t0 + ms(2700), 5),
            Step {
                launch: 0,
                wake_at: None
            }
        );
        assert_eq!(
            ramp.poll(t0 + ms(3000), 4),
            Step {
                launch: 0,
                wake_at: Some(t0 + ms(3700))
            }
        );
        assert_eq!(ramp.poll(t0 + ms(3700), 4).launch, 1);
    }

    #[test]
    fn the_cap_value_must_be_a_positive_number() {
        assert_eq!(parse_max_concurrency(None), Ok(None));
        assert_eq!(parse_max_concurrency(Some("  ")), Ok(None));
        assert_eq!(parse_max_concurrency(Some(" 3 ")), Ok(Some(3)));
        for bad in ["0", "-2", "two", "1.5"] {
            let err = parse_max_concurrency(Some(bad)).unwrap_err();
            assert_eq!(err, BadConcurrency(bad.to_owned()));
            assert!(err.to_string().contains(MAX_CONCURRENCY_ENV));
        }
    }
}
