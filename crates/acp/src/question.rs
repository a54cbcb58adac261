//! AskUserQuestion over ACP: ACP has no question method, so each question becomes one
//! `session/request_permission` call whose options are the question's choices (`allow_once`,
//! ids `q<i>_opt_<j>`) plus a "Skip" (`reject_once`, id `q<i>_skip`). The answers are collected
//! and sent to the engine as one `Op::Answer`; when every question was skipped (or the editor
//! cancelled), the questions count as dismissed. A multi-select question takes one choice here.

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, TextContent, ToolCallContent, ToolCallUpdate, ToolCallUpdateFields,
};
use kimi_core::engine::agent::AgentHandle;
use std::collections::BTreeMap;

use kimi_protocol::ops::Op;
use kimi_protocol::question::{Answers, QuestionAnswer, QuestionSet};

/// One question as the engine announced it.
struct Asked {
    text: String,
    labels: Vec<String>,
    descriptions: Vec<String>,
}

fn read(questions: &QuestionSet) -> Vec<Asked> {
    questions
        .questions
        .iter()
        .map(|q| Asked {
            text: q.question.clone(),
            labels: q.options.iter().map(|o| o.label.clone()).collect(),
            descriptions: q.options.iter().map(|o| o.description.clone()).collect(),
        })
        .collect()
}

/// The permission options for question `index`.
pub fn options(index: usize, labels: &[String]) -> Vec<PermissionOption> {
    let mut options: Vec<PermissionOption> = labels
        .iter()
        .enumerate()
        .map(|(j, label)| {
            PermissionOption::new(
                format!("q{index}_opt_{j}"),
                label.clone(),
                PermissionOptionKind::AllowOnce,
            )
        })
        .collect();
    options.push(PermissionOption::new(
        format!("q{index}_skip"),
        "Skip",
        PermissionOptionKind::RejectOnce,
    ));
    options
}

/// The label an option id picks for question `index`; `None` for skip or an unknown id.
pub fn label_for(index: usize, labels: &[String], option_id: &str) -> Option<String> {
    let n: usize = option_id
        .strip_prefix(&format!("q{index}_opt_"))?
        .parse()
        .ok()?;
    labels.get(n).cloned()
}

/// Ask the editor each question in turn and send the engine one `Op::Answer`.
pub async fn ask(
    cx: ConnectionTo<Client>,
    session_id: String,
    handle: AgentHandle,
    tool_call_id: String,
    request_id: String,
    questions: QuestionSet,
) {
    let mut answers = BTreeMap::new();
    for (i, q) in read(&questions).iter().enumerate() {
        let mut fields = ToolCallUpdateFields::new().title(q.text.clone());
        let described: Vec<String> = q
            .labels
            .iter()
            .zip(&q.descriptions)
            .filter(|(_, d)| !d.is_empty())
            .map(|(l, d)| format!("- {l}: {d}"))
            .collect();
        if !described.is_empty() {
            fields = fields.content(vec![ToolCallContent::from(ContentBlock::Text(
                TextContent::new(described.join("\n")),
            ))]);
        }
        let request = RequestPermissionRequest::new(
            session_id.clone(),
            ToolCallUpdate::new(tool_call_id.clone(), fields),
            options(i, &q.labels),
        );
        let picked = match cx
            .send_request(request)
            .block_task()
            .await
            .map(|r| r.outcome)
        {
            Ok(RequestPermissionOutcome::Selected(selected)) => {
                label_for(i, &q.labels, &selected.option_id.0)
            }
            Ok(_) => break, // cancelled: the turn is ending, stop asking
            Err(err) => {
                tracing::warn!("question request failed, treating it as skipped: {err}");
                None
            }
        };
        answers.insert(
            q.text.clone(),
            match picked {
                Some(label) => QuestionAnswer::Label(label),
                None => QuestionAnswer::Skipped,
            },
        );
    }
    handle.send(Op::Answer {
        request_id,
        answers: Answers::Given(answers),
    });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn option_ids_round_trip_to_labels() {
        let labels = vec!["SQLite".to_owned(), "Postgres".to_owned()];
        let opts = options(1, &labels);
        assert_eq!(opts.len(), 3);
        assert_eq!(opts[1].option_id.0.as_ref(), "q1_opt_1");
        assert_eq!(opts[2].name, "Skip");
        assert_eq!(
            label_for(1, &labels, "q1_opt_1").as_deref(),
            Some("Postgres")
        );
        assert_eq!(label_for(1, &labels, "q1_skip"), None);
        assert_eq!(label_for(1, &labels, "q0_opt_1"), None);
        assert_eq!(label_for(1, &labels, "q1_opt_9"), None);
    }
}
