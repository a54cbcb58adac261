//! The system prompt's `skills` listing, as an exact string.

use pretty_assertions::assert_eq;

use kimi_skills::discover;

use super::{Fixture, dir_skill, write};

#[test]
fn prompt_listing_is_grouped_by_scope() {
    let fx = Fixture::new();
    let extra = fx.user_home.join("extra");
    let user = fx.user_root();
    let project = fx.project_root();
    dir_skill(&extra, "e", "lint", "Run linters", "x");
    write(
        &user.join("commit/SKILL.md"),
        "---\nname: commit\ndescription: Write a commit message\nwhenToUse: When the user asks to commit\n---\nx",
    );
    write(&user.join("notes.md"), "Keeps notes");
    // Not listed: user-only, flow, reference, and sub-skills.
    write(
        &user.join("secret/SKILL.md"),
        "---\nname: secret\ndescription: d\ndisable-model-invocation: true\n---\nx",
    );
    write(&user.join("flow.md"), "---\ntype: flow\n---\nx");
    write(&user.join("ref.md"), "---\ntype: reference\n---\nx");
    write(
        &project.join("kit/SKILL.md"),
        "---\nname: kit\ndescription: Toolkit\nhas-sub-skill: true\n---\nx",
    );
    dir_skill(&project.join("kit"), "part", "part", "A part", "x");
    let long = "d".repeat(260);
    dir_skill(&project, "long", "long", &long, "x");

    let mut opts = fx.options();
    opts.extra_dirs = vec![extra.clone()];
    let (catalog, warnings) = discover(&opts);
    assert_eq!(warnings, Vec::<String>::new());
    let expected = format!(
        "DISREGARD any earlier skill listings. Current available skills:
### Project
- kit: Toolkit
  Path: {project}/kit/SKILL.md
- long: {cut}...
  Path: {project}/long/SKILL.md
### User
- commit: Write a commit message
  When to use: When the user asks to commit
  Path: {user}/commit/SKILL.md
- notes: Keeps notes
  Path: {user}/notes.md
### Extra
- lint: Run linters
  Path: {extra}/e/SKILL.md",
        project = project.display(),
        user = user.display(),
        extra = extra.display(),
        cut = "d".repeat(247),
    );
    assert_eq!(catalog.prompt_listing(), expected);
}

#[test]
fn listing_is_empty_when_nothing_is_model_invocable() {
    let fx = Fixture::new();
    write(&fx.user_root().join("flow.md"), "---\ntype: flow\n---\nx");
    let (catalog, _) = fx.discover();
    assert_eq!(catalog.list().len(), 1);
    assert_eq!(catalog.prompt_listing(), "");
}
