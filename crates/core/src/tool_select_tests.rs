use super::*;
use pretty_assertions::assert_eq;

fn schema(name: &str) -> ToolSchema {
    ToolSchema {
        name: name.to_owned(),
        description: format!("{name} does things"),
        parameters: json!({"type": "object"}),
    }
}

fn announcement(text: &str) -> Message {
    let mut m = Message::new(Role::User, vec![ContentPart::text(text)]);
    m.origin = Some(Origin::injection(ANNOUNCEMENT_VARIANT));
    m
}

fn declaration(names: &[&str]) -> Message {
    let mut m = Message::new(Role::User, Vec::new());
    m.tools = Some(names.iter().map(|n| schema(n)).collect());
    m
}

fn none(_: &str) -> bool {
    false
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn announcements_fold_in_order_and_only_changes_are_announced() {
    let loadable = names(&["mcp__a__one", "mcp__a__two"]);
    let first = ToolSelect::announcement(&loadable, &[], &none).expect("everything is new");
    assert!(
        first.starts_with(
            "<tools_added>\nmcp__a__one\nmcp__a__two\n</tools_added>\n\nUse the select_tools tool"
        ),
        "{first}"
    );
    let history = vec![announcement(&first)];
    assert_eq!(ToolSelect::announcement(&loadable, &history, &none), None);

    // A server went away and another came.
    let now = names(&["mcp__b__three"]);
    let change = ToolSelect::announcement(&now, &history, &none).expect("a change");
    assert!(change.starts_with(
        "<tools_added>\nmcp__b__three\n</tools_added>\n\n<tools_removed>\nmcp__a__one\nmcp__a__two\n</tools_removed>"
    ));
    let history = vec![announcement(&first), announcement(&change)];
    assert_eq!(
        announced_names(&history),
        BTreeSet::from(["mcp__b__three".to_owned()])
    );
    assert_eq!(ToolSelect::announcement(&now, &history, &none), None);
}

#[test]
fn loading_sorts_names_into_loaded_already_and_unknown_with_close_matches() {
    let state = ToolSelect::new();
    let mut messages = vec![declaration(&["mcp__srv__echo"])];
    let history = messages.clone();
    let tools = state.shape(
        vec![
            schema("Read"),
            schema("mcp__srv__echo"),
            schema("mcp__srv__add"),
        ],
        &history,
        &mut messages,
        &none,
    );
    assert_eq!(
        tools,
        vec![schema("Read")],
        "deferred schemas leave the list"
    );
    assert!(state.veto("mcp__srv__add").is_some());
    assert_eq!(state.veto("mcp__srv__echo"), None, "loaded in the history");
    assert_eq!(state.veto("Read"), None);

    let loading = state.load(&names(&[
        "mcp__srv__add",
        "mcp__srv__echo",
        "mcp__srv__ad",
        "mcp__srv__add",
    ]));
    assert_eq!(
        loading,
        Loading {
            loaded: vec![schema("mcp__srv__add")],
            already: names(&["mcp__srv__echo"]),
            unknown: names(&["mcp__srv__ad"]),
        }
    );
    assert_eq!(
        state.close_matches("mcp__srv__ad"),
        names(&["mcp__srv__add"])
    );
    assert_eq!(state.close_matches("echo"), names(&["mcp__srv__echo"]));
    assert_eq!(state.veto("mcp__srv__add"), None, "loaded by the call");
}

#[test]
fn declarations_keep_only_tools_that_still_exist_with_their_current_schema() {
    let state = ToolSelect::new();
    let mut stale = declaration(&["mcp__gone__x", "mcp__srv__echo"]);
    stale.tools.as_mut().unwrap()[1].description = "old".to_owned();
    let mut messages = vec![stale, declaration(&["mcp__gone__y"])];
    let history = messages.clone();
    state.shape(
        vec![schema("mcp__srv__echo")],
        &history,
        &mut messages,
        &none,
    );
    assert_eq!(messages, vec![declaration(&["mcp__srv__echo"])]);
}

#[test]
fn without_disclosure_takes_out_announcements_and_declarations() {
    let user = Message::new(Role::User, vec![ContentPart::text("hi")]);
    assert_eq!(without_disclosure(std::slice::from_ref(&user)), None);
    let history = vec![
        user.clone(),
        announcement("<tools_added>\nmcp__a__b\n</tools_added>"),
        declaration(&["mcp__a__b"]),
    ];
    assert_eq!(without_disclosure(&history), Some(vec![user]));
}

#[test]
fn a_server_still_connecting_keeps_its_loaded_tools_and_is_not_announced_removed() {
    let connecting = |name: &str| name.starts_with("mcp__slow__");
    let history = vec![
        announcement("<tools_added>\nmcp__slow__x\n</tools_added>"),
        declaration(&["mcp__slow__x"]),
    ];
    assert_eq!(ToolSelect::announcement(&[], &history, &connecting), None);
    let state = ToolSelect::new();
    let mut messages = vec![declaration(&["mcp__slow__x"])];
    state.shape(Vec::new(), &history, &mut messages, &connecting);
    assert_eq!(messages, vec![declaration(&["mcp__slow__x"])]);
}
