//! What `kimi-rs vis` draws, folded from a session's journals: per agent (the main one and each
//! subagent) its turns, model steps with their token use, tool calls with their durations and
//! compactions, plus session totals and a per-tool breakdown. Durations come from the records'
//! own `time` stamps (a tool call lasts from its `tool.call` to its `tool.result`), so any
//! journal — also one from an older kimi-rs or a crashed run — can be drawn. Lines that are not
//! JSON are counted and reported, never silently dropped.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

/// The whole page's data (`GET /api/session`).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    pub session_id: String,
    pub title: Option<String>,
    pub cwd: Option<String>,
    /// Earliest and latest record time over all agents (epoch ms).
    pub start_ms: Option<u64>,
    pub end_ms: Option<u64>,
    pub agents: Vec<AgentView>,
    pub totals: Totals,
    /// Per tool name, sorted by total time, longest first.
    pub tools: Vec<ToolStats>,
    /// Journal lines that could not be read (torn or not JSON), per agent.
    pub unreadable_lines: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AgentView {
    pub id: String,
    /// `main`, `sub` or `independent` (from `state.json`; `sub` when unknown).
    pub kind: String,
    pub parent: Option<String>,
    pub turns: Vec<TurnView>,
    pub steps: Vec<StepView>,
    pub tool_calls: Vec<ToolCallView>,
    pub compactions: Vec<CompactionView>,
    /// Undo/rewind branch switches: when, and how many turns were withdrawn.
    pub undos: Vec<UndoView>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TurnView {
    pub turn_id: u64,
    pub start_ms: u64,
    pub end_ms: Option<u64>,
    pub duration_ms: Option<u64>,
    /// `completed`, `cancelled`, `failed`, … (absent while running or after a crash).
    pub reason: Option<String>,
    /// The prompt's text, shortened.
    pub prompt: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StepView {
    pub turn_id: Option<u64>,
    pub step: Option<u64>,
    pub start_ms: u64,
    /// When the model's response had arrived: the step's first tool call, else its end. The
    /// step itself ends after its tool calls ran.
    pub response_ms: Option<u64>,
    pub end_ms: Option<u64>,
    pub finish_reason: Option<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    /// Tokens of the context after this step (input of every kind plus output): what the
    /// next request starts from.
    pub context_tokens: Option<u64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallView {
    pub id: String,
    pub name: String,
    pub turn_id: Option<u64>,
    pub step: Option<u64>,
    pub start_ms: u64,
    pub end_ms: Option<u64>,
    pub duration_ms: Option<u64>,
    pub is_error: bool,
    /// A short view of the arguments (a path, a command, …).
    pub summary: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CompactionView {
    pub start_ms: u64,
    pub end_ms: Option<u64>,
    pub tokens_before: Option<u64>,
    pub tokens_after: Option<u64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct UndoView {
    pub time_ms: u64,
    pub turns: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    pub agents: u64,
    pub turns: u64,
    pub steps: u64,
    pub tool_calls: u64,
    pub tool_errors: u64,
    /// Sum of the tool calls' durations (parallel calls count each).
    pub tool_ms: u64,
    /// Time spent waiting for the model: each step from its start until its response arrived.
    pub model_ms: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub peak_context_tokens: u64,
    pub compactions: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ToolStats {
    pub name: String,
    pub calls: u64,
    pub errors: u64,
    pub total_ms: u64,
    pub max_ms: u64,
}

/// Reads the session directory: `state.json` and every `agents/<id>/wire.jsonl`.
pub fn load(session_dir: &Path, session_id: &str) -> std::io::Result<SessionView> {
    let state: Value = std::fs::read(session_dir.join("state.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or(Value::Null);
    let mut agents = Vec::new();
    let mut unreadable = 0;
    let agents_dir = session_dir.join("agents");
    let mut ids: Vec<String> = std::fs::read_dir(&agents_dir)?
        .filter_map(Result::ok)
        .filter(|e| e.path().join("wire.jsonl").is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    // The main agent first, then subagents in name order.
    ids.sort_by_key(|id| (id != kimi_store::MAIN_AGENT, id.clone()));
    for id in ids {
        let text = std::fs::read_to_string(agents_dir.join(&id).join("wire.jsonl"))?;
        let entry = &state["agents"][&id];
        let fallback = if id == kimi_store::MAIN_AGENT {
            "main"
        } else {
            "sub"
        };
        let kind = entry["type"].as_str().unwrap_or(fallback);
        // Subagents are started by the main agent (they cannot start their own), and
        // `state.json` names their parent only after a recovery.
        let parent = entry["parentAgentId"]
            .as_str()
            .map(str::to_owned)
            .or_else(|| (id != kimi_store::MAIN_AGENT).then(|| kimi_store::MAIN_AGENT.to_owned()));
        let (agent, bad) = fold_agent(&id, kind, parent, &text);
        unreadable += bad;
        agents.push(agent);
    }
    Ok(summarise(
        session_id,
        state["title"].as_str().map(str::to_owned),
        state["cwd"].as_str().map(str::to_owned),
        agents,
        unreadable,
    ))
}

fn num(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn shorten(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    if line.chars().count() <= max && !text.trim().contains('\n') {
        return line.to_owned();
    }
    let cut: String = line.chars().take(max).collect();
    format!("{cut}…")
}

/// The text of a prompt's content parts.
fn prompt_text(input: &Value) -> String {
    match input {
        Value::String(s) => shorten(s, 160),
        Value::Array(parts) => {
            let text: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
            shorten(&text.join(" "), 160)
        }
        _ => String::new(),
    }
}

/// A one-line view of a tool call's arguments: the field that says what it acts on.
fn args_summary(args: &Value) -> String {
    for key in [
        "command",
        "path",
        "file_path",
        "pattern",
        "url",
        "query",
        "description",
        "prompt",
    ] {
        if let Some(s) = args[key].as_str() {
            return shorten(s, 120);
        }
    }
    match args {
        Value::Null => String::new(),
        other => shorten(&other.to_string(), 120),
    }
}

/// Folds one agent's journal; returns the agent and how many lines could not be read.
pub fn fold_agent(id: &str, kind: &str, parent: Option<String>, text: &str) -> (AgentView, u64) {
    let mut agent = AgentView {
        id: id.to_owned(),
        kind: kind.to_owned(),
        parent,
        turns: Vec::new(),
        steps: Vec::new(),
        tool_calls: Vec::new(),
        compactions: Vec::new(),
        undos: Vec::new(),
    };
    let mut bad = 0;
    let mut steps: HashMap<String, usize> = HashMap::new();
    let mut tools: HashMap<String, usize> = HashMap::new();
    let mut last_time = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(record) = serde_json::from_str::<Value>(line) else {
            bad += 1;
            continue;
        };
        // Records without a time (the metadata line) take the last one seen.
        let time = record["time"].as_u64().unwrap_or(last_time);
        last_time = time;
        match record["type"].as_str().unwrap_or_default() {
            "turn.prompt" => agent.turns.push(TurnView {
                turn_id: num(&record["turnId"]).unwrap_or(agent.turns.len() as u64 + 1),
                start_ms: time,
                end_ms: None,
                duration_ms: None,
                reason: None,
                prompt: prompt_text(&record["input"]),
            }),
            "turn.ended" => {
                let turn_id = num(&record["turnId"]);
                if let Some(turn) = agent
                    .turns
                    .iter_mut()
                    .rev()
                    .find(|t| Some(t.turn_id) == turn_id && t.end_ms.is_none())
                {
                    turn.end_ms = Some(time);
                    turn.duration_ms =
                        Some(num(&record["durationMs"]).unwrap_or(time - turn.start_ms));
                    turn.reason = record["reason"].as_str().map(str::to_owned);
                }
            }
            "context.append_loop_event" => {
                fold_event(&record["event"], time, &mut agent, &mut steps, &mut tools);
            }
            "full_compaction.begin" => agent.compactions.push(CompactionView {
                start_ms: time,
                end_ms: None,
                tokens_before: None,
                tokens_after: None,
            }),
            "context.apply_compaction" => {
                let open = agent.compactions.last_mut().filter(|c| c.end_ms.is_none());
                let compaction = match open {
                    Some(c) => c,
                    None => {
                        agent.compactions.push(CompactionView {
                            start_ms: time,
                            end_ms: None,
                            tokens_before: None,
                            tokens_after: None,
                        });
                        let last = agent.compactions.len() - 1;
                        &mut agent.compactions[last]
                    }
                };
                compaction.end_ms = Some(time);
                compaction.tokens_before = num(&record["tokensBefore"]);
                compaction.tokens_after = num(&record["tokensAfter"]);
            }
            "agent.switched" | "context.undo" => agent.undos.push(UndoView {
                time_ms: time,
                turns: num(&record["turns"]),
            }),
            _ => {}
        }
    }
    (agent, bad)
}

fn fold_event(
    event: &Value,
    time: u64,
    agent: &mut AgentView,
    steps: &mut HashMap<String, usize>,
    tools: &mut HashMap<String, usize>,
) {
    match event["type"].as_str().unwrap_or_default() {
        "step.begin" => {
            steps.insert(
                event["uuid"].as_str().unwrap_or_default().to_owned(),
                agent.steps.len(),
            );
            agent.steps.push(StepView {
                turn_id: num(&event["turnId"]),
                step: num(&event["step"]),
                start_ms: time,
                response_ms: None,
                end_ms: None,
                finish_reason: None,
                input_tokens: 0,
                output_tokens: 0,
                cache_read_tokens: 0,
                context_tokens: None,
            });
        }
        "step.end" => {
            let Some(&i) = steps.get(event["uuid"].as_str().unwrap_or_default()) else {
                return;
            };
            let step = &mut agent.steps[i];
            step.end_ms = Some(time);
            step.response_ms.get_or_insert(time);
            step.finish_reason = event["finishReason"].as_str().map(str::to_owned);
            let usage = &event["usage"];
            if usage.is_object() {
                let field = |k: &str| usage[k].as_u64().unwrap_or(0);
                let cache_read = field("inputCacheRead");
                step.input_tokens = field("inputOther") + cache_read + field("inputCacheCreation");
                step.output_tokens = field("output");
                step.cache_read_tokens = cache_read;
                step.context_tokens = Some(step.input_tokens + step.output_tokens);
            }
        }
        "tool.call" => {
            if let Some(&i) = steps.get(event["stepUuid"].as_str().unwrap_or_default()) {
                agent.steps[i].response_ms.get_or_insert(time);
            }
            let id = event["toolCallId"].as_str().unwrap_or_default().to_owned();
            tools.insert(id.clone(), agent.tool_calls.len());
            agent.tool_calls.push(ToolCallView {
                id,
                name: event["name"].as_str().unwrap_or("?").to_owned(),
                turn_id: num(&event["turnId"]),
                step: num(&event["step"]),
                start_ms: time,
                end_ms: None,
                duration_ms: None,
                is_error: false,
                summary: args_summary(&event["args"]),
            });
        }
        "tool.result" => {
            let Some(&i) = tools.get(event["toolCallId"].as_str().unwrap_or_default()) else {
                return;
            };
            let call = &mut agent.tool_calls[i];
            let result = &event["result"];
            call.end_ms = Some(time);
            call.duration_ms =
                Some(num(&result["durationMs"]).unwrap_or(time.saturating_sub(call.start_ms)));
            call.is_error = result["isError"].as_bool().unwrap_or(false);
        }
        _ => {}
    }
}

fn summarise(
    session_id: &str,
    title: Option<String>,
    cwd: Option<String>,
    agents: Vec<AgentView>,
    unreadable_lines: u64,
) -> SessionView {
    let mut totals = Totals {
        agents: agents.len() as u64,
        ..Totals::default()
    };
    let mut by_tool: BTreeMap<String, ToolStats> = BTreeMap::new();
    let mut start: Option<u64> = None;
    let mut end: Option<u64> = None;
    let mut seen = |t: u64| {
        start = Some(start.map_or(t, |s| s.min(t)));
        end = Some(end.map_or(t, |e| e.max(t)));
    };
    for agent in &agents {
        totals.turns += agent.turns.len() as u64;
        totals.steps += agent.steps.len() as u64;
        totals.tool_calls += agent.tool_calls.len() as u64;
        totals.compactions += agent.compactions.len() as u64;
        for turn in &agent.turns {
            seen(turn.start_ms);
            turn.end_ms.into_iter().for_each(&mut seen);
        }
        for step in &agent.steps {
            seen(step.start_ms);
            if let Some(end) = step.end_ms {
                seen(end);
            }
            if let Some(response) = step.response_ms {
                totals.model_ms += response.saturating_sub(step.start_ms);
            }
            totals.input_tokens += step.input_tokens;
            totals.output_tokens += step.output_tokens;
            totals.cache_read_tokens += step.cache_read_tokens;
            totals.peak_context_tokens = totals
                .peak_context_tokens
                .max(step.context_tokens.unwrap_or(0));
        }
        for call in &agent.tool_calls {
            seen(call.start_ms);
            call.end_ms.into_iter().for_each(&mut seen);
            let ms = call.duration_ms.unwrap_or(0);
            totals.tool_ms += ms;
            totals.tool_errors += u64::from(call.is_error);
            let stats = by_tool.entry(call.name.clone()).or_insert(ToolStats {
                name: call.name.clone(),
                calls: 0,
                errors: 0,
                total_ms: 0,
                max_ms: 0,
            });
            stats.calls += 1;
            stats.errors += u64::from(call.is_error);
            stats.total_ms += ms;
            stats.max_ms = stats.max_ms.max(ms);
        }
    }
    let mut tools: Vec<ToolStats> = by_tool.into_values().collect();
    tools.sort_by(|a, b| b.total_ms.cmp(&a.total_ms).then(a.name.cmp(&b.name)));
    SessionView {
        session_id: session_id.to_owned(),
        title,
        cwd,
        start_ms: start,
        end_ms: end,
        agents,
        totals,
        tools,
        unreadable_lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn folds_turns_steps_tools_and_compactions_from_record_times() {
        let journal = [
            r#"{"type":"metadata","protocolVersion":"1.5","createdAt":1}"#,
            r#"{"type":"turn.prompt","input":[{"type":"text","text":"fix it\nplease"}],"turnId":1,"time":1000}"#,
            r#"{"type":"context.append_loop_event","event":{"type":"step.begin","uuid":"s1","turnId":"1","step":1},"time":1010}"#,
            r#"{"type":"context.append_loop_event","event":{"type":"tool.call","stepUuid":"s1","toolCallId":"c1","name":"Bash","args":{"command":"make test"},"turnId":"1","step":1},"time":1500}"#,
            r#"{"type":"context.append_loop_event","event":{"type":"step.end","uuid":"s1","finishReason":"tool_calls","usage":{"inputOther":100,"output":20,"inputCacheRead":50,"inputCacheCreation":0}},"time":1500}"#,
            "{torn",
            r#"{"type":"context.append_loop_event","event":{"type":"tool.result","toolCallId":"c1","result":{"output":"ok","isError":true}},"time":3500}"#,
            r#"{"type":"full_compaction.begin","source":"auto","time":3600}"#,
            r#"{"type":"context.apply_compaction","tokensBefore":170,"tokensAfter":40,"time":3900}"#,
            r#"{"type":"turn.ended","turnId":1,"reason":"completed","durationMs":2950,"time":3950}"#,
        ]
        .join("\n");
        let (agent, bad) = fold_agent("main", "main", None, &journal);
        assert_eq!(bad, 1);
        let view = summarise("s", None, None, vec![agent], bad);
        assert_eq!(
            view.agents[0].tool_calls,
            vec![ToolCallView {
                id: "c1".into(),
                name: "Bash".into(),
                turn_id: Some(1),
                step: Some(1),
                start_ms: 1500,
                end_ms: Some(3500),
                duration_ms: Some(2000),
                is_error: true,
                summary: "make test".into(),
            }]
        );
        assert_eq!(view.agents[0].turns[0].prompt, "fix it…");
        assert_eq!(view.agents[0].turns[0].duration_ms, Some(2950));
        assert_eq!(
            view.agents[0].compactions,
            vec![CompactionView {
                start_ms: 3600,
                end_ms: Some(3900),
                tokens_before: Some(170),
                tokens_after: Some(40),
            }]
        );
        assert_eq!(
            view.totals,
            Totals {
                agents: 1,
                turns: 1,
                steps: 1,
                tool_calls: 1,
                tool_errors: 1,
                tool_ms: 2000,
                model_ms: 490,
                input_tokens: 150,
                output_tokens: 20,
                cache_read_tokens: 50,
                peak_context_tokens: 170,
                compactions: 1,
            }
        );
        assert_eq!((view.start_ms, view.end_ms), (Some(1000), Some(3950)));
    }
}
