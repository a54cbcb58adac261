//! Plan quotas of a Kimi Code login (`GET <base>/usages`), shown by `/usage` and `/status`:
//! the weekly summary and each rolling window (`5h limit`), as used / limit with a reset hint.
//! Numbers arrive as decimal strings and windows as proto-style units; both are normalised.

use serde_json::Value;

use crate::error::AuthError;
use crate::http::get_bearer;

/// One quota line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageRow {
    pub label: String,
    pub used: i64,
    pub limit: i64,
    /// RFC 3339 time the window resets.
    pub reset_at: Option<String>,
}

/// The quotas of the plan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanUsage {
    pub rows: Vec<UsageRow>,
}

fn int(value: Option<&Value>) -> Option<i64> {
    match value? {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Value::String(s) => s.trim().parse::<f64>().ok().map(|f| f as i64),
        _ => None,
    }
}

fn window_label(window: Option<&Value>) -> Option<String> {
    let window = window?;
    let mut duration = int(window.get("duration"))?;
    let mut unit = match window.get("timeUnit")?.as_str()? {
        "TIME_UNIT_MINUTE" => 'm',
        "TIME_UNIT_HOUR" => 'h',
        "TIME_UNIT_DAY" => 'd',
        "TIME_UNIT_WEEK" => 'w',
        _ => return None,
    };
    // The 5-hour window arrives as 300 minutes.
    if unit == 'm' && duration >= 60 && duration % 60 == 0 {
        duration /= 60;
        unit = 'h';
    }
    Some(if unit == 'w' && duration == 1 {
        "Weekly limit".to_owned()
    } else {
        format!("{duration}{unit} limit")
    })
}

fn row(detail: Option<&Value>, label: String) -> Option<UsageRow> {
    let detail = detail?;
    let used = int(detail.get("used"));
    let limit = int(detail.get("limit"));
    if used.is_none() && limit.is_none() {
        return None;
    }
    Some(UsageRow {
        label,
        used: used.unwrap_or(0),
        limit: limit.unwrap_or(0),
        reset_at: detail
            .get("resetTime")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
    })
}

/// Parses the `/usages` answer.
pub fn parse(payload: &Value) -> PlanUsage {
    let mut rows = Vec::new();
    // The summary is the plan's weekly limit; the server leaves its window out.
    if let Some(summary) = row(payload.get("usage"), "Weekly limit".to_owned()) {
        rows.push(summary);
    }
    for item in payload
        .get("limits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let label = window_label(item.get("window"))
            .or_else(|| item.get("name").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_else(|| "Limit".to_owned());
        if let Some(r) = row(item.get("detail"), label) {
            rows.push(r);
        }
    }
    PlanUsage { rows }
}

/// `3d 4h`, `2h 5m`, `40s`.
pub fn format_duration(seconds: i64) -> String {
    if seconds <= 0 {
        return "0s".to_owned();
    }
    let (d, h, m, s) = (
        seconds / 86_400,
        seconds % 86_400 / 3600,
        seconds % 3600 / 60,
        seconds % 60,
    );
    let mut parts = Vec::new();
    for (n, unit) in [(d, 'd'), (h, 'h'), (m, 'm')] {
        if n > 0 {
            parts.push(format!("{n}{unit}"));
        }
    }
    if parts.is_empty() {
        parts.push(format!("{s}s"));
    }
    parts.join(" ")
}

impl PlanUsage {
    /// Text lines: a heading, then `  <label>  <used>/<limit> (<pct>%)  resets in …`.
    pub fn render(&self, now: chrono::DateTime<chrono::Utc>) -> Vec<String> {
        let mut out = vec!["Plan usage".to_owned()];
        if self.rows.is_empty() {
            out.push("  No usage data available.".to_owned());
            return out;
        }
        let width = self
            .rows
            .iter()
            .map(|r| r.label.len())
            .max()
            .unwrap_or(0)
            .max(10);
        for row in &self.rows {
            let pct = if row.limit > 0 {
                (row.used as f64 / row.limit as f64 * 100.0).clamp(0.0, 100.0)
            } else {
                0.0
            };
            let reset = row
                .reset_at
                .as_deref()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .map(|t| {
                    let left = (t.with_timezone(&chrono::Utc) - now).num_seconds();
                    if left <= 0 {
                        "  reset".to_owned()
                    } else {
                        format!("  resets in {}", format_duration(left))
                    }
                })
                .unwrap_or_default();
            out.push(format!(
                "  {:<width$}  {}/{} used ({pct:.0}%){reset}",
                row.label, row.used, row.limit
            ));
        }
        out
    }
}

/// `GET <base>/usages` with the access token.
pub async fn fetch(base_url: &str, token: &str) -> Result<PlanUsage, AuthError> {
    let url = format!("{base_url}/usages");
    let (status, body) = get_bearer(&url, token, &[]).await?;
    if status != 200 {
        let hint = match status {
            401 => "the login was refused; run `kimi-rs login`".to_owned(),
            404 => "this endpoint has no usage data".to_owned(),
            _ => body.chars().take(300).collect(),
        };
        return Err(AuthError::Http {
            url,
            status,
            detail: hint,
        });
    }
    let json: Value = serde_json::from_str(&body).map_err(|err| AuthError::Protocol {
        url,
        detail: format!("not JSON: {err}"),
    })?;
    Ok(parse(&json))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_and_windows_render_with_reset_hints() {
        let usage = parse(&serde_json::json!({
            "usage": {"used": "40", "limit": "1000", "resetTime": "2026-08-03T05:20:51Z"},
            "limits": [{"window": {"duration": 300, "timeUnit": "TIME_UNIT_MINUTE"},
                        "detail": {"used": "50", "limit": "100", "resetTime": "2026-08-01T03:00:00Z"}}]
        }));
        let now = chrono::DateTime::parse_from_rfc3339("2026-08-01T00:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        assert_eq!(
            usage.render(now),
            [
                "Plan usage",
                "  Weekly limit  40/1000 used (4%)  resets in 2d 5h 20m",
                "  5h limit      50/100 used (50%)  resets in 3h",
            ]
        );
    }
}
