//! Modal panels drawn in place of the prompt: approval, AskUserQuestion, list pickers
//! (sessions, model, permission mode, undo, tasks) and help. Each turns keys into a
//! [`DialogResult`]; the app turns results into ops and host requests.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::BTreeMap;

use kimi_protocol::ops::{ApprovalDecision, ApprovalRequest};
use kimi_protocol::question::{Answers, QuestionAnswer, QuestionSet};
use ratatui::text::{Line, Span};

use crate::cells::diff_style;
use crate::commands::COMMANDS;
use crate::editor::Editor;
use crate::theme::Theme;
use crate::wrap::{str_width, truncate, wrap_line};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickerKind {
    Session,
    Model,
    /// `/effort`: the thinking effort.
    Effort,
    Permission,
    Undo,
    /// After the undo picker: conversation, files or both (value `<scope>:<turns>`).
    UndoScope,
    /// A rewind met files changed outside the agent: restore anyway? (value `<scope>:<turns>`
    /// or empty to cancel).
    RewindForce,
    Task,
    /// `/swarm` in manual mode: switch to auto or yolo first?
    SwarmPermission,
    /// The permission mode a goal started with `/goal` runs in (manual and yolo only).
    GoalMode,
    /// A host's `Choose`: the picked value becomes the prompt text.
    Prefill,
    /// `/add-dir <path>`: for this session, remembered, or not (value `<choice>\n<path>`).
    AddDirScope,
    /// `/editor`: the Ctrl-G editor (value: the command, empty for `$VISUAL`/`$EDITOR`).
    Editor,
    /// `/theme`: the colour theme (value: `auto`, `dark`, `light` or a custom name).
    Theme,
    /// `/web`: a running server's page URL, or `start`.
    Web,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickerItem {
    pub label: String,
    pub detail: String,
    pub value: String,
    /// For sessions: belongs to the current directory.
    pub this_dir: bool,
}

#[derive(Debug, Clone)]
pub struct Picker {
    pub kind: PickerKind,
    pub title: String,
    pub items: Vec<PickerItem>,
    pub query: String,
    pub selected: usize,
    /// Sessions only: show every directory (Ctrl-A).
    pub all_dirs: bool,
    pub empty_text: String,
}

impl Picker {
    pub fn new(kind: PickerKind, title: &str, items: Vec<PickerItem>) -> Self {
        Picker {
            kind,
            title: title.to_owned(),
            items,
            query: String::new(),
            selected: 0,
            all_dirs: false,
            empty_text: "nothing to show".to_owned(),
        }
    }

    pub fn visible(&self) -> Vec<&PickerItem> {
        let q = self.query.to_lowercase();
        self.items
            .iter()
            .filter(|i| self.kind != PickerKind::Session || self.all_dirs || i.this_dir)
            .filter(|i| {
                q.is_empty()
                    || i.label.to_lowercase().contains(&q)
                    || i.detail.to_lowercase().contains(&q)
            })
            .collect()
    }
}

#[derive(Debug, Clone)]
pub struct ApprovalDialog {
    pub request: ApprovalRequest,
    pub selected: usize,
    /// Some while typing the feedback of "reject with feedback".
    pub feedback: Option<Editor>,
    pub expanded: bool,
}

const APPROVAL_OPTIONS: [&str; 4] = [
    "Approve once",
    "Approve for this session",
    "Reject",
    "Reject with feedback…",
];

/// What one row of the approval panel does.
#[derive(Debug, Clone, PartialEq)]
enum Choice {
    Decide(ApprovalDecision),
    /// Open the feedback editor (reject with feedback / revise).
    Feedback,
}

/// An `ExitPlanMode` review: the panel shows the plan and offers its approaches.
fn is_plan_review(r: &ApprovalRequest) -> bool {
    r.tool_name == "ExitPlanMode"
}

/// The rows of the approval panel: the usual four, or for a plan review one "approve" row per
/// offered approach (or a single one), "reject" and "revise with feedback".
fn approval_choices(r: &ApprovalRequest) -> Vec<(String, Choice)> {
    if !is_plan_review(r) {
        let decisions = [
            Choice::Decide(ApprovalDecision::ApproveOnce),
            Choice::Decide(ApprovalDecision::ApproveForSession),
            Choice::Decide(ApprovalDecision::Reject),
            Choice::Feedback,
        ];
        return APPROVAL_OPTIONS
            .iter()
            .map(|l| (*l).to_owned())
            .zip(decisions)
            .collect();
    }
    let mut rows: Vec<(String, Choice)> = if r.options.is_empty() {
        vec![(
            "Approve the plan".to_owned(),
            Choice::Decide(ApprovalDecision::ApproveOnce),
        )]
    } else {
        r.options
            .iter()
            .map(|o| {
                let label = if o.description.is_empty() {
                    format!("Approve: {}", o.label)
                } else {
                    format!("Approve: {} — {}", o.label, o.description)
                };
                let decision = ApprovalDecision::ApproveOption {
                    label: o.label.clone(),
                };
                (label, Choice::Decide(decision))
            })
            .collect()
    };
    rows.push((
        "Reject (stay in plan mode)".to_owned(),
        Choice::Decide(ApprovalDecision::Reject),
    ));
    rows.push(("Revise with feedback…".to_owned(), Choice::Feedback));
    rows
}

#[derive(Debug, Clone)]
pub struct Question {
    pub text: String,
    pub options: Vec<String>,
    pub multi: bool,
}

#[derive(Debug, Clone)]
pub struct QuestionDialog {
    pub request_id: String,
    pub questions: Vec<Question>,
    pub current: usize,
    pub selected: usize,
    pub checked: Vec<bool>,
    /// Some while typing a free-form "Other" answer.
    pub other: Option<Editor>,
    pub answers: BTreeMap<String, QuestionAnswer>,
}

impl QuestionDialog {
    /// The dialog for the questions an agent asked; an empty set becomes one free-form
    /// question, so the user can still reply.
    pub fn new(request_id: String, questions: &QuestionSet) -> Self {
        let mut parsed: Vec<Question> = questions
            .questions
            .iter()
            .map(|q| Question {
                text: q.question.clone(),
                options: q.options.iter().map(|o| o.label.clone()).collect(),
                multi: q.multi_select,
            })
            .collect();
        if parsed.is_empty() {
            parsed.push(Question {
                text: "?".to_owned(),
                options: Vec::new(),
                multi: false,
            });
        }
        let n = parsed.first().map_or(0, |q| q.options.len());
        QuestionDialog {
            request_id,
            questions: parsed,
            current: 0,
            selected: 0,
            checked: vec![false; n],
            other: None,
            answers: BTreeMap::new(),
        }
    }

    fn question(&self) -> Option<&Question> {
        self.questions.get(self.current)
    }
}

#[derive(Debug, Clone)]
pub enum Dialog {
    Approval(ApprovalDialog),
    Question(QuestionDialog),
    Picker(Picker),
    Help,
}

/// What a key did to a dialog.
#[derive(Debug, Clone, PartialEq)]
pub enum DialogResult {
    Keep,
    Close,
    Approve {
        request_id: String,
        decision: ApprovalDecision,
    },
    Answer {
        request_id: String,
        answers: Answers,
    },
    Picked {
        kind: PickerKind,
        value: String,
    },
    /// Sessions picker switched between this directory and all.
    ToggleScope {
        all: bool,
    },
    StopTask {
        id: String,
    },
}

fn digit(key: &KeyEvent) -> Option<usize> {
    match key.code {
        KeyCode::Char(c) if c.is_ascii_digit() && c != '0' => Some(c as usize - '1' as usize),
        _ => None,
    }
}

/// Minimal line editing shared by the feedback and "Other" inputs.
fn edit(editor: &mut Editor, key: &KeyEvent) {
    match key.code {
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => editor.insert_char(c),
        KeyCode::Backspace => editor.backspace(),
        KeyCode::Left => editor.left(),
        KeyCode::Right => editor.right(),
        _ => {}
    }
}

impl Dialog {
    pub fn handle_key(&mut self, key: KeyEvent) -> DialogResult {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        // Ctrl-C leaves a picker or question like Esc does (approval: Ctrl-C rejects, below).
        let key = match (&*self, key.code) {
            (Dialog::Picker(_) | Dialog::Question(_), KeyCode::Char('c')) if ctrl => {
                KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)
            }
            _ => key,
        };
        match self {
            Dialog::Help => DialogResult::Close,
            Dialog::Approval(d) => approval_key(d, key, ctrl),
            Dialog::Question(d) => question_key(d, key),
            Dialog::Picker(p) => picker_key(p, key, ctrl),
        }
    }

    pub fn lines(&self, theme: &Theme, width: usize) -> Vec<Line<'static>> {
        let mut out = vec![Line::styled("─".repeat(width), theme.border_focus)];
        match self {
            Dialog::Help => help_lines(theme, &mut out),
            Dialog::Approval(d) => approval_lines(d, theme, width, &mut out),
            Dialog::Question(d) => question_lines(d, theme, &mut out),
            Dialog::Picker(p) => picker_lines(p, theme, width, &mut out),
        }
        out.into_iter()
            .flat_map(|l| wrap_line(&l, width, &[Span::raw("  ")]))
            .collect()
    }
}

fn approval_key(d: &mut ApprovalDialog, key: KeyEvent, ctrl: bool) -> DialogResult {
    let id = d.request.request_id.clone();
    let decide = |decision| DialogResult::Approve {
        request_id: id.clone(),
        decision,
    };
    if let Some(editor) = d.feedback.as_mut() {
        return match key.code {
            KeyCode::Enter => decide(ApprovalDecision::RejectWithFeedback {
                feedback: editor.text().to_owned(),
            }),
            KeyCode::Esc => {
                d.feedback = None;
                DialogResult::Keep
            }
            _ => {
                edit(editor, &key);
                DialogResult::Keep
            }
        };
    }
    let choices = approval_choices(&d.request);
    let choose = |d: &mut ApprovalDialog, i: usize| match choices.get(i).map(|c| &c.1) {
        Some(Choice::Decide(decision)) => decide(decision.clone()),
        Some(Choice::Feedback) => {
            d.feedback = Some(Editor::new(false));
            DialogResult::Keep
        }
        None => DialogResult::Keep,
    };
    match key.code {
        KeyCode::Esc => decide(ApprovalDecision::Reject),
        KeyCode::Char('c' | 'd') if ctrl => decide(ApprovalDecision::Reject),
        KeyCode::Char('e') if ctrl => {
            d.expanded = !d.expanded;
            DialogResult::Keep
        }
        KeyCode::Up => {
            d.selected = d.selected.saturating_sub(1);
            DialogResult::Keep
        }
        KeyCode::Down => {
            d.selected = (d.selected + 1).min(choices.len().saturating_sub(1));
            DialogResult::Keep
        }
        KeyCode::Enter => {
            let i = d.selected;
            choose(d, i)
        }
        _ => match digit(&key) {
            Some(i) if i < choices.len() => choose(d, i),
            _ => DialogResult::Keep,
        },
    }
}

fn question_key(d: &mut QuestionDialog, key: KeyEvent) -> DialogResult {
    let Some(q) = d.question().cloned() else {
        return DialogResult::Close;
    };
    let n_rows = q.options.len() + 1; // + "Other"
    let mut answer: Option<QuestionAnswer> = None;
    if let Some(editor) = d.other.as_mut() {
        match key.code {
            KeyCode::Enter => answer = Some(QuestionAnswer::Label(editor.text().to_owned())),
            KeyCode::Esc => d.other = None,
            _ => edit(editor, &key),
        }
    } else {
        match key.code {
            KeyCode::Esc => {
                return DialogResult::Answer {
                    request_id: d.request_id.clone(),
                    answers: Answers::Dismissed,
                };
            }
            KeyCode::Up => d.selected = d.selected.saturating_sub(1),
            KeyCode::Down => d.selected = (d.selected + 1).min(n_rows - 1),
            KeyCode::Char(' ') if q.multi && d.selected < q.options.len() => {
                if let Some(c) = d.checked.get_mut(d.selected) {
                    *c = !*c;
                }
            }
            KeyCode::Enter if d.selected == q.options.len() => d.other = Some(Editor::new(false)),
            KeyCode::Enter if q.multi => {
                let picked: Vec<String> = q
                    .options
                    .iter()
                    .zip(&d.checked)
                    .filter(|(_, c)| **c)
                    .map(|(o, _)| o.clone())
                    .collect();
                answer = Some(QuestionAnswer::Labels(picked));
            }
            KeyCode::Enter => {
                answer = q
                    .options
                    .get(d.selected)
                    .cloned()
                    .map(QuestionAnswer::Label);
            }
            _ => {
                if let Some(i) = digit(&key).filter(|i| *i < q.options.len()) {
                    answer = Some(QuestionAnswer::Label(q.options[i].clone()));
                }
            }
        }
    }
    let Some(answer) = answer else {
        return DialogResult::Keep;
    };
    d.answers.insert(q.text, answer);
    d.current += 1;
    d.selected = 0;
    d.other = None;
    d.checked = vec![false; d.question().map_or(0, |q| q.options.len())];
    if d.current >= d.questions.len() {
        DialogResult::Answer {
            request_id: d.request_id.clone(),
            answers: Answers::Given(d.answers.clone()),
        }
    } else {
        DialogResult::Keep
    }
}

fn picker_key(p: &mut Picker, key: KeyEvent, ctrl: bool) -> DialogResult {
    let count = p.visible().len();
    match key.code {
        KeyCode::Esc => DialogResult::Close,
        KeyCode::Char('a') if ctrl && p.kind == PickerKind::Session => {
            p.all_dirs = !p.all_dirs;
            p.selected = 0;
            DialogResult::ToggleScope { all: p.all_dirs }
        }
        KeyCode::Char('x') if ctrl && p.kind == PickerKind::Task => {
            match p.visible().get(p.selected) {
                Some(item) => DialogResult::StopTask {
                    id: item.value.clone(),
                },
                None => DialogResult::Keep,
            }
        }
        KeyCode::Up => {
            p.selected = p.selected.saturating_sub(1);
            DialogResult::Keep
        }
        KeyCode::Down => {
            p.selected = (p.selected + 1).min(count.saturating_sub(1));
            DialogResult::Keep
        }
        KeyCode::Enter => match p.visible().get(p.selected) {
            Some(item) => DialogResult::Picked {
                kind: p.kind,
                value: item.value.clone(),
            },
            None => DialogResult::Keep,
        },
        KeyCode::Backspace => {
            p.query.pop();
            p.selected = 0;
            DialogResult::Keep
        }
        KeyCode::Char(c) if !ctrl => {
            p.query.push(c);
            p.selected = 0;
            DialogResult::Keep
        }
        _ => DialogResult::Keep,
    }
}

fn option_line(i: usize, label: &str, selected: bool, theme: &Theme) -> Line<'static> {
    let (mark, style) = if selected {
        ("› ", theme.selected)
    } else {
        ("  ", theme.text)
    };
    Line::from(vec![
        Span::styled(mark, theme.primary),
        Span::styled(format!("{}. {label}", i + 1), style),
    ])
}

/// A plan review: the plan text (20 lines, all with ctrl-e) above the choices.
fn plan_review_lines(d: &ApprovalDialog, t: &Theme, width: usize, out: &mut Vec<Line<'static>>) {
    let r = &d.request;
    out.push(Line::styled("Review the plan", t.text_strong));
    out.push(Line::styled(format!("  {}", r.summary), t.text_dim));
    let plan = r.detail.as_deref().unwrap_or_default();
    let lines: Vec<&str> = plan.lines().collect();
    let max = if d.expanded { lines.len() } else { 20 };
    for l in lines.iter().take(max) {
        out.push(Line::from(vec![
            Span::styled("  │ ", t.border),
            Span::styled(truncate(l, width.saturating_sub(4)), t.text),
        ]));
    }
    if lines.len() > max {
        out.push(Line::styled(
            format!("  … {} more lines (ctrl-e to expand)", lines.len() - max),
            t.text_dim,
        ));
    }
}

fn approval_lines(d: &ApprovalDialog, t: &Theme, width: usize, out: &mut Vec<Line<'static>>) {
    let r = &d.request;
    let choices = approval_choices(r);
    if is_plan_review(r) {
        plan_review_lines(d, t, width, out);
    } else {
        request_lines(d, t, width, out);
    }
    for (i, (label, _)) in choices.iter().enumerate() {
        out.push(option_line(i, label, i == d.selected, t));
    }
    if let Some(editor) = &d.feedback {
        out.push(Line::from(vec![
            Span::styled("  feedback: ", t.accent),
            Span::styled(editor.text().to_owned(), t.text),
            Span::styled("▏", t.accent),
        ]));
    }
    out.push(Line::styled(
        format!(
            "  policy: {} · 1-{} or ↑↓ enter · esc rejects",
            r.policy,
            choices.len()
        ),
        t.text_dim,
    ));
}

fn request_lines(d: &ApprovalDialog, t: &Theme, width: usize, out: &mut Vec<Line<'static>>) {
    let r = &d.request;
    out.push(Line::from(vec![
        Span::styled("Allow ", t.text_strong),
        Span::styled(r.tool_name.clone(), t.primary),
        Span::styled(format!(" to {}?", r.action), t.text_strong),
    ]));
    out.push(Line::styled(format!("  {}", r.summary), t.text));
    if let Some(danger) = &r.danger {
        out.push(Line::styled(format!("  ⚠ Dangerous: {danger}"), t.error));
    }
    if let Some(detail) = &r.detail {
        for l in detail.lines().take(4) {
            out.push(Line::styled(format!("  {l}"), t.text_dim));
        }
    }
    if let Some(diff) = &r.diff {
        let lines: Vec<&str> = diff.lines().collect();
        let max = if d.expanded { lines.len() } else { 10 };
        for l in lines.iter().take(max) {
            out.push(Line::from(vec![
                Span::styled("  │ ", t.border),
                Span::styled(truncate(l, width.saturating_sub(4)), diff_style(l, t)),
            ]));
        }
        if lines.len() > max {
            out.push(Line::styled(
                format!("  … {} more lines (ctrl-e to expand)", lines.len() - max),
                t.text_dim,
            ));
        }
    }
}

fn question_lines(d: &QuestionDialog, t: &Theme, out: &mut Vec<Line<'static>>) {
    let Some(q) = d.question() else {
        return;
    };
    let progress = if d.questions.len() > 1 {
        format!(" ({}/{})", d.current + 1, d.questions.len())
    } else {
        String::new()
    };
    out.push(Line::styled(format!("{}{progress}", q.text), t.text_strong));
    for (i, o) in q.options.iter().enumerate() {
        let label = if q.multi {
            let mark = if d.checked.get(i).copied().unwrap_or(false) {
                "[x]"
            } else {
                "[ ]"
            };
            format!("{mark} {o}")
        } else {
            o.clone()
        };
        out.push(option_line(i, &label, i == d.selected, t));
    }
    out.push(option_line(
        q.options.len(),
        "Other (type an answer)",
        d.selected == q.options.len(),
        t,
    ));
    if let Some(editor) = &d.other {
        out.push(Line::from(vec![
            Span::styled("  answer: ", t.accent),
            Span::styled(editor.text().to_owned(), t.text),
            Span::styled("▏", t.accent),
        ]));
    }
    let hint = if q.multi {
        "space toggles · enter confirms · esc dismisses"
    } else {
        "enter chooses · esc dismisses"
    };
    out.push(Line::styled(format!("  {hint}"), t.text_dim));
}

/// Rows of a picker shown at once.
const PICKER_ROWS: usize = 8;

fn picker_lines(p: &Picker, t: &Theme, width: usize, out: &mut Vec<Line<'static>>) {
    let mut title = vec![Span::styled(p.title.clone(), t.text_strong)];
    if p.kind == PickerKind::Session {
        let scope = if p.all_dirs {
            "all directories"
        } else {
            "this directory"
        };
        title.push(Span::styled(format!(" · {scope} (ctrl-a)"), t.text_dim));
    }
    out.push(Line::from(title));
    out.push(Line::from(vec![
        Span::styled("  search: ", t.text_dim),
        Span::styled(p.query.clone(), t.text),
        Span::styled("▏", t.accent),
    ]));
    let visible = p.visible();
    if visible.is_empty() {
        out.push(Line::styled(format!("  {}", p.empty_text), t.text_dim));
    }
    let start = p.selected.saturating_sub(PICKER_ROWS - 1);
    for (i, item) in visible.iter().enumerate().skip(start).take(PICKER_ROWS) {
        let selected = i == p.selected;
        let (mark, style) = if selected {
            ("› ", t.selected)
        } else {
            ("  ", t.text)
        };
        let label_w = str_width(&item.label).min(width / 2);
        let label = truncate(&item.label, width / 2);
        let detail_room = width.saturating_sub(label_w + 5);
        out.push(Line::from(vec![
            Span::styled(mark, t.primary),
            Span::styled(label, style),
            Span::styled(
                format!("  {}", truncate(&item.detail, detail_room)),
                t.text_dim,
            ),
        ]));
    }
    let hint = match p.kind {
        PickerKind::Task => "enter shows output · ctrl-x stops · esc closes",
        PickerKind::Session
        | PickerKind::Model
        | PickerKind::Effort
        | PickerKind::Permission
        | PickerKind::Undo
        | PickerKind::SwarmPermission
        | PickerKind::GoalMode
        | PickerKind::Prefill
        | PickerKind::UndoScope
        | PickerKind::RewindForce
        | PickerKind::AddDirScope
        | PickerKind::Editor
        | PickerKind::Theme
        | PickerKind::Web => "type to search · ↑↓ enter · esc closes",
    };
    out.push(Line::styled(format!("  {hint}"), t.text_dim));
}

fn help_lines(t: &Theme, out: &mut Vec<Line<'static>>) {
    out.push(Line::styled("Keys", t.text_strong));
    for (k, what) in [
        ("enter / shift-enter, ctrl-j", "submit / new line"),
        ("esc, ctrl-c", "interrupt the running turn"),
        ("ctrl-s", "steer: send the typed text into the running turn"),
        ("ctrl-o", "expand tool output and thinking"),
        ("ctrl-t", "show the whole todo list"),
        ("shift-tab", "toggle plan mode"),
        ("ctrl-g", "edit the prompt in an external editor"),
        ("! on empty input", "shell mode (ctrl-b: to the background)"),
        ("@path", "attach a file path"),
        ("esc esc", "undo selector"),
        ("ctrl-c twice, ctrl-d", "exit"),
    ] {
        out.push(Line::from(vec![
            Span::styled(format!("  {k:<28}"), t.primary),
            Span::styled(what, t.text),
        ]));
    }
    out.push(Line::styled("Commands", t.text_strong));
    for c in COMMANDS {
        out.push(Line::from(vec![
            Span::styled(format!("  /{:<27}", c.name), t.primary),
            Span::styled(c.description, t.text),
        ]));
    }
    out.push(Line::styled("  any key closes", t.text_dim));
}
