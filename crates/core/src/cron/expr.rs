//! Five-field cron expressions (surface.md §9.3): parsing with readable errors, the next fire
//! time in a given time zone, and a plain-English rendering for tool output.
//!
//! Fields are `minute hour day-of-month month day-of-week`; each takes `*`, numbers, `a-b`
//! ranges, `/step` and comma lists, digits only. Day-of-week 7 is Sunday. When both day fields
//! are restricted a day matches if either does (the Vixie "either" rule); a field counts as
//! unrestricted only when it is exactly `*`.

use chrono::{DateTime, Datelike, Duration, LocalResult, NaiveDateTime, TimeZone, Timelike};

/// How far ahead the next fire is searched (5 leap years, in minutes).
pub const SEARCH_WINDOW_MINUTES: i64 = 5 * 366 * 24 * 60;

const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAY_NAMES: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// Why an expression was refused; the text is shown to the model after "Invalid cron
/// expression: ".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronExprError {
    #[error("cron expression is empty")]
    Empty,
    #[error(
        "cron expression must have exactly 5 fields (minute hour day-of-month month day-of-week); got {0}"
    )]
    FieldCount(usize),
    #[error("cron {field} field has an empty term in its list")]
    EmptyTerm { field: &'static str },
    #[error("cron {field} {role} must be a non-negative integer with digits only (got {got:?})")]
    NotDigits {
        field: &'static str,
        role: &'static str,
        got: String,
    },
    #[error("cron {field} step must be a positive integer (got {got:?})")]
    BadStep { field: &'static str, got: String },
    #[error("cron {field} step needs a range or \"*\" before \"/\" in {term:?}")]
    StepWithoutRange { field: &'static str, term: String },
    #[error("cron {field} value {value} out of range {min}..{max}")]
    OutOfRange {
        field: &'static str,
        value: u32,
        min: u32,
        max: u32,
    },
    #[error("cron {field} range {lo}-{hi} out of bounds (must be {min}..{max}, ascending)")]
    BadRange {
        field: &'static str,
        lo: u32,
        hi: u32,
        min: u32,
        max: u32,
    },
}

/// A parsed expression. Each field is a bit set (bit n = value n).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronExpr {
    raw: String,
    minutes: u64,
    hours: u64,
    days_of_month: u64,
    months: u64,
    /// 0 = Sunday … 6 = Saturday (7 folded into 0).
    days_of_week: u64,
    dom_star: bool,
    dow_star: bool,
}

struct Field {
    name: &'static str,
    min: u32,
    max: u32,
}

const MINUTE: Field = Field {
    name: "minute",
    min: 0,
    max: 59,
};
const HOUR: Field = Field {
    name: "hour",
    min: 0,
    max: 23,
};
const DOM: Field = Field {
    name: "day-of-month",
    min: 1,
    max: 31,
};
const MONTH: Field = Field {
    name: "month",
    min: 1,
    max: 12,
};
const DOW: Field = Field {
    name: "day-of-week",
    min: 0,
    max: 7,
};

impl CronExpr {
    /// Parse `text` (surrounding and repeated whitespace is ignored).
    pub fn parse(text: &str) -> Result<CronExpr, CronExprError> {
        let fields: Vec<&str> = text.split_whitespace().collect();
        if fields.is_empty() {
            return Err(CronExprError::Empty);
        }
        let [minute, hour, dom, month, dow] = fields.as_slice() else {
            return Err(CronExprError::FieldCount(fields.len()));
        };
        let mut days_of_week = parse_field(dow, &DOW)?;
        if days_of_week & (1 << 7) != 0 {
            days_of_week = (days_of_week & !(1 << 7)) | 1;
        }
        Ok(CronExpr {
            raw: fields.join(" "),
            minutes: parse_field(minute, &MINUTE)?,
            hours: parse_field(hour, &HOUR)?,
            days_of_month: parse_field(dom, &DOM)?,
            months: parse_field(month, &MONTH)?,
            days_of_week,
            dom_star: *dom == "*",
            dow_star: *dow == "*",
        })
    }

    /// The normalised text (fields separated by single spaces).
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// Whether the expression matches a local date and time.
    pub fn matches(&self, t: &NaiveDateTime) -> bool {
        has(self.months, t.month())
            && self.day_matches(t)
            && has(self.hours, t.hour())
            && has(self.minutes, t.minute())
    }

    fn day_matches(&self, t: &NaiveDateTime) -> bool {
        let dom = has(self.days_of_month, t.day());
        let dow = has(self.days_of_week, t.weekday().num_days_from_sunday());
        match (self.dom_star, self.dow_star) {
            (true, true) => true,
            (true, false) => dow,
            (false, true) => dom,
            (false, false) => dom || dow,
        }
    }

    /// The first fire strictly after `from_ms`, searched over [`SEARCH_WINDOW_MINUTES`].
    pub fn next_after<Tz: TimeZone>(&self, from_ms: i64, tz: &Tz) -> Option<i64> {
        self.next_within(from_ms, tz, SEARCH_WINDOW_MINUTES)
    }

    /// The first fire strictly after `from_ms` and at most `window_minutes` later. Local times
    /// skipped by a DST change never fire; repeated ones fire at their first occurrence.
    pub fn next_within<Tz: TimeZone>(
        &self,
        from_ms: i64,
        tz: &Tz,
        window_minutes: i64,
    ) -> Option<i64> {
        let from: DateTime<Tz> = tz.timestamp_millis_opt(from_ms).single()?;
        let start = from.naive_local();
        let deadline = start + Duration::minutes(window_minutes);
        let mut t = start.with_second(0)?.with_nanosecond(0)? + Duration::minutes(1);
        while t <= deadline {
            if !has(self.months, t.month()) {
                let (y, m) = if t.month() == 12 {
                    (t.year() + 1, 1)
                } else {
                    (t.year(), t.month() + 1)
                };
                t = chrono::NaiveDate::from_ymd_opt(y, m, 1)?.and_hms_opt(0, 0, 0)?;
                continue;
            }
            if !self.day_matches(&t) {
                t = t.date().succ_opt()?.and_hms_opt(0, 0, 0)?;
                continue;
            }
            if !has(self.hours, t.hour()) {
                t = t.with_minute(0)? + Duration::hours(1);
                continue;
            }
            if !has(self.minutes, t.minute()) {
                t += Duration::minutes(1);
                continue;
            }
            match tz.from_local_datetime(&t) {
                LocalResult::Single(d) | LocalResult::Ambiguous(d, _) => {
                    let ms = d.timestamp_millis();
                    if ms > from_ms {
                        return Some(ms);
                    }
                }
                LocalResult::None => {}
            }
            t += Duration::minutes(1);
        }
        None
    }

    /// A plain-English rendering ("every 5 minutes", "at 09:00 on weekdays"); the expression
    /// itself when no simple phrase fits.
    pub fn to_human(&self) -> String {
        let all_min = self.minutes == full(0, 59);
        let all_hour = self.hours == full(0, 23);
        let all_month = self.months == full(1, 12);
        let days_any = self.dom_star && self.dow_star;
        if all_hour && days_any && all_month {
            if let Some(step) = uniform_step(self.minutes, 0, 59).filter(|s| *s > 1) {
                return format!("every {step} minutes");
            }
            if all_min {
                return "every minute".to_owned();
            }
            if let Some(m) = single(self.minutes) {
                return format!("at minute {m} of every hour");
            }
        }
        if let Some(m) = single(self.minutes)
            && days_any
            && all_month
            && let Some(step) = uniform_step(self.hours, 0, 23).filter(|s| *s > 1)
        {
            return format!("every {step} hours at minute {m:02}");
        }
        if let (Some(m), Some(h)) = (single(self.minutes), single(self.hours)) {
            if self.dom_star && all_month {
                if self.dow_star {
                    return format!("at {h:02}:{m:02} every day");
                }
                return format!("at {h:02}:{m:02} on {}", days_text(self.days_of_week));
            }
            if self.dow_star
                && let (Some(d), Some(mo)) = (single(self.days_of_month), single(self.months))
            {
                let month = MONTH_NAMES
                    .get(mo.saturating_sub(1) as usize)
                    .copied()
                    .unwrap_or("?");
                return format!("at {h:02}:{m:02} on day {d} of {month}");
            }
        }
        self.raw.clone()
    }
}

fn has(set: u64, value: u32) -> bool {
    value < 64 && set & (1 << value) != 0
}

fn full(min: u32, max: u32) -> u64 {
    (min..=max).fold(0, |acc, v| acc | (1 << v))
}

fn values(set: u64) -> Vec<u32> {
    (0..64).filter(|v| has(set, *v)).collect()
}

fn single(set: u64) -> Option<u32> {
    (set.count_ones() == 1).then(|| set.trailing_zeros())
}

/// `Some(step)` when the set is `min, min+step, min+2·step, …` up to the field's end.
fn uniform_step(set: u64, min: u32, max: u32) -> Option<u32> {
    let v = values(set);
    let (first, second) = (*v.first()?, *v.get(1)?);
    if first != min {
        return None;
    }
    let step = second - first;
    let expected: Vec<u32> = (min..=max).step_by(step as usize).collect();
    (v == expected).then_some(step)
}

fn days_text(set: u64) -> String {
    let v = values(set);
    if v == [1, 2, 3, 4, 5] {
        return "weekdays".to_owned();
    }
    if v == [0, 6] {
        return "weekends".to_owned();
    }
    v.iter()
        .filter_map(|d| DAY_NAMES.get(*d as usize).copied())
        .collect::<Vec<_>>()
        .join(", ")
}

fn parse_field(text: &str, field: &Field) -> Result<u64, CronExprError> {
    let mut set = 0u64;
    for term in text.split(',') {
        if term.is_empty() {
            return Err(CronExprError::EmptyTerm { field: field.name });
        }
        set |= parse_term(term, field)?;
    }
    Ok(set)
}

fn number(text: &str, field: &Field, role: &'static str) -> Result<u32, CronExprError> {
    let not_digits = || CronExprError::NotDigits {
        field: field.name,
        role,
        got: text.to_owned(),
    };
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(not_digits());
    }
    // Longer than any field allows: report it as out of range rather than overflow.
    text.parse::<u32>().or(Ok(u32::MAX))
}

fn parse_term(term: &str, field: &Field) -> Result<u64, CronExprError> {
    let (range, step) = match term.split_once('/') {
        Some((range, step)) => {
            if step.is_empty() {
                return Err(CronExprError::BadStep {
                    field: field.name,
                    got: String::new(),
                });
            }
            let n = number(step, field, "step")?;
            if n == 0 {
                return Err(CronExprError::BadStep {
                    field: field.name,
                    got: step.to_owned(),
                });
            }
            if range.is_empty() {
                return Err(CronExprError::StepWithoutRange {
                    field: field.name,
                    term: term.to_owned(),
                });
            }
            (range, Some(n))
        }
        None => (term, None),
    };
    let (lo, hi) = if range == "*" {
        (field.min, field.max)
    } else if let Some((lo, hi)) = range.split_once('-') {
        let lo = number(lo, field, "range lower bound")?;
        let hi = number(hi, field, "range upper bound")?;
        if lo < field.min || hi > field.max || lo > hi {
            return Err(CronExprError::BadRange {
                field: field.name,
                lo,
                hi,
                min: field.min,
                max: field.max,
            });
        }
        (lo, hi)
    } else {
        let value = number(range, field, "value")?;
        if value < field.min || value > field.max {
            return Err(CronExprError::OutOfRange {
                field: field.name,
                value,
                min: field.min,
                max: field.max,
            });
        }
        // `5/15` means "from 5 to the end, every 15".
        if step.is_some() {
            (value, field.max)
        } else {
            (value, value)
        }
    };
    let step = step.unwrap_or(1) as usize;
    Ok((lo..=hi).step_by(step).fold(0, |acc, v| acc | (1 << v)))
}
