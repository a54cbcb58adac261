//! Discovery on real files: layouts, precedence, case, invalid files, `--skills-dir`.

use pretty_assertions::assert_eq;
use serde_json::json;

use kimi_skills::{SkillSource, SkillType, discover, project_root};

use super::{Fixture, dir_skill, write};

fn names(catalog: &kimi_skills::SkillCatalog) -> Vec<(String, SkillSource)> {
    catalog
        .list()
        .into_iter()
        .map(|s| (s.name.clone(), s.source))
        .collect()
}

#[test]
fn directory_and_flat_layouts() {
    let fx = Fixture::new();
    let root = fx.user_root();
    let skill_md = dir_skill(
        &root,
        "review",
        "review",
        "Review code",
        "Review $ARGUMENTS",
    );
    write(
        &root.join("commit.md"),
        "---\ndescription: Write a commit\n---\nBody text",
    );
    write(
        &root.join("notes.md"),
        "\n\n  First line is the description  \nmore",
    );
    write(&root.join("empty.md"), "");
    write(&root.join("named.md"), "---\nname: Renamed\n---\nx");
    write(&root.join("readme.txt"), "not a skill");

    let (catalog, warnings) = fx.discover();
    assert_eq!(warnings, Vec::<String>::new());
    let described: Vec<(&str, &str)> = catalog
        .list()
        .into_iter()
        .map(|s| (s.name.as_str(), s.description.as_str()))
        .collect();
    assert_eq!(
        described,
        vec![
            ("commit", "Write a commit"),
            ("empty", "No description provided."),
            ("notes", "First line is the description"),
            ("Renamed", "x"),
            ("review", "Review code"),
        ]
    );
    let review = catalog.get("review").unwrap();
    assert_eq!(review.path, skill_md);
    assert_eq!(review.dir, root.join("review"));
    assert_eq!(review.content, "Review $ARGUMENTS");
    assert_eq!(review.source, SkillSource::User);
    assert_eq!(catalog.get("commit").unwrap().dir, root);
}

#[test]
fn directory_skill_wins_over_flat_file_of_the_same_name() {
    let fx = Fixture::new();
    let root = fx.user_root();
    dir_skill(&root, "deploy", "deploy", "From the folder", "folder");
    write(&root.join("deploy.md"), "From the flat file");
    write(&root.join("Deploy2.md"), "flat only");

    let (catalog, warnings) = fx.discover();
    assert_eq!(warnings, Vec::<String>::new());
    assert_eq!(catalog.get("deploy").unwrap().content, "folder");
    assert_eq!(catalog.list().len(), 2);
}

#[test]
fn names_are_case_insensitive_and_the_more_specific_scope_wins() {
    let fx = Fixture::new();
    let extra = fx.project.join("extra-skills");
    dir_skill(&extra, "a", "shared", "extra", "x");
    dir_skill(&extra, "b", "extra-only", "extra", "x");
    dir_skill(&fx.user_root(), "s", "Shared", "user", "x");
    dir_skill(&fx.user_root(), "u", "user-only", "user", "x");
    dir_skill(&fx.project_root(), "s", "SHARED", "project", "x");

    let mut opts = fx.options();
    opts.extra_dirs = vec!["extra-skills".into()];
    let (catalog, warnings) = discover(&opts);
    assert_eq!(warnings, Vec::<String>::new());
    assert_eq!(
        names(&catalog),
        vec![
            ("extra-only".to_owned(), SkillSource::Extra),
            ("SHARED".to_owned(), SkillSource::Project),
            ("user-only".to_owned(), SkillSource::User),
        ]
    );
    assert_eq!(catalog.get("shared").unwrap().description, "project");
    assert_eq!(catalog.get("sHaReD").unwrap().description, "project");
    assert_eq!(
        catalog.roots(),
        vec![extra, fx.user_root(), fx.project_root(),]
    );
}

#[test]
fn user_over_extra_and_brand_folders_over_generic_ones() {
    let fx = Fixture::new();
    let extra = fx.user_home.join("more");
    dir_skill(&extra, "x", "tool", "extra", "x");
    dir_skill(&fx.user_root(), "x", "tool", "kimi home", "x");
    dir_skill(
        &fx.user_home.join(".agents/skills"),
        "x",
        "tool",
        "agents",
        "x",
    );
    dir_skill(
        &fx.user_home.join(".agents/skills"),
        "y",
        "agents-only",
        "agents",
        "x",
    );
    dir_skill(&fx.project_root(), "p", "proj", "kimi-code", "x");
    dir_skill(
        &fx.project.join(".agents/skills"),
        "p",
        "proj",
        "generic",
        "x",
    );

    let mut opts = fx.options();
    opts.extra_dirs = vec!["~/more".into()];
    let (catalog, warnings) = discover(&opts);
    assert_eq!(warnings, Vec::<String>::new());
    assert_eq!(catalog.get("tool").unwrap().description, "kimi home");
    assert_eq!(
        catalog.get("agents-only").unwrap().source,
        SkillSource::User
    );
    assert_eq!(catalog.get("proj").unwrap().description, "kimi-code");
    assert_eq!(catalog.roots().len(), 5);
}

#[test]
fn invalid_files_are_skipped_with_a_warning_naming_them() {
    let fx = Fixture::new();
    let root = fx.user_root();
    dir_skill(&root, "good", "good", "fine", "x");
    let no_fm = write(&root.join("no-fm/SKILL.md"), "# Title\nno frontmatter");
    let no_name = write(
        &root.join("no-name/SKILL.md"),
        "---\ndescription: d\n---\nx",
    );
    let no_desc = write(&root.join("no-desc/SKILL.md"), "---\nname: n\n---\nx");
    let bad_yaml = write(
        &root.join("bad-yaml/SKILL.md"),
        "---\nname: [unclosed\n---\nx",
    );
    let unclosed = write(&root.join("unclosed.md"), "---\nname: x\nbody");
    let list_fm = write(&root.join("list.md"), "---\n- a\n- b\n---\nx");
    let bad_type = write(
        &root.join("typed/SKILL.md"),
        "---\nname: t\ndescription: d\ntype: agent\n---\nx",
    );

    let (catalog, warnings) = fx.discover();
    assert_eq!(
        names(&catalog),
        vec![("good".to_owned(), SkillSource::User)]
    );
    assert_eq!(warnings.len(), 7, "{warnings:#?}");
    for (path, fragment) in [
        (&no_fm, "Missing frontmatter"),
        (&no_name, "Missing required frontmatter field \"name\""),
        (
            &no_desc,
            "Missing required frontmatter field \"description\"",
        ),
        (&bad_yaml, "Invalid frontmatter"),
        (&unclosed, "Missing closing frontmatter fence"),
        (&list_fm, "must be a mapping"),
        (&bad_type, "Skill type \"agent\""),
    ] {
        let shown = path.display().to_string();
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(&shown) && w.contains(fragment)),
            "no warning for {shown} containing {fragment:?}: {warnings:#?}"
        );
    }
}

#[test]
fn frontmatter_keys_aliases_and_metadata() {
    let fx = Fixture::new();
    write(
        &fx.user_root().join("k/SKILL.md"),
        "---\nname: k\ndescription: d\ntype: flow\nwhen-to-use: On Fridays\ndisable_model_invocation: true\narguments: file 2 mode\nowner: team-a\n---\n```mermaid\ngraph TD\n```\n",
    );
    write(
        &fx.user_root().join("r.md"),
        "---\ntype: reference\nwhen_to_use: never\narguments: [a, '3', b]\ndisableModelInvocation: yes\n---\nbody",
    );
    let (catalog, warnings) = fx.discover();
    assert_eq!(warnings, Vec::<String>::new());
    let k = catalog.get("k").unwrap();
    assert_eq!(k.skill_type, Some(SkillType::Flow));
    assert_eq!(k.when_to_use.as_deref(), Some("On Fridays"));
    assert!(k.disable_model_invocation);
    assert_eq!(k.arguments, vec!["file", "mode"]);
    assert_eq!(k.metadata.get("owner"), Some(&json!("team-a")));
    assert_eq!(k.metadata.get("whenToUse"), Some(&json!("On Fridays")));
    assert_eq!(k.mermaid.as_deref(), Some("graph TD"));
    let r = catalog.get("r").unwrap();
    assert_eq!(r.skill_type, Some(SkillType::Reference));
    assert_eq!(r.when_to_use.as_deref(), Some("never"));
    assert_eq!(r.arguments, vec!["a", "b"]);
    // Only a real `true` disables model invocation (`yes` is a string in YAML 1.2).
    assert!(!r.disable_model_invocation);
}

#[test]
fn nested_folders_and_sub_skills() {
    let fx = Fixture::new();
    let root = fx.user_root();
    // A grouping folder without SKILL.md is walked into.
    dir_skill(&root.join("group"), "inner", "inner", "nested", "x");
    // Flat files below the top level are not skills.
    write(&root.join("group/loose.md"), "not a skill");
    // A plain skill's subfolders are not walked.
    dir_skill(&root.join("plain"), "child", "hidden-child", "no", "x");
    dir_skill(&root, "plain", "plain", "plain", "x");
    // A bundle declares sub-skills.
    write(
        &root.join("bundle/SKILL.md"),
        "---\nname: bundle\ndescription: parent\nhas-sub-skill: true\n---\nx",
    );
    dir_skill(&root.join("bundle"), "review", "review", "child", "x");
    dir_skill(
        &root.join("bundle"),
        "pre",
        "bundle.pre",
        "already qualified",
        "x",
    );
    // Hidden folders and node_modules are never walked.
    dir_skill(&root.join("node_modules"), "dep", "dep", "no", "x");
    dir_skill(&root.join(".cache"), "c", "cached", "no", "x");

    let (catalog, warnings) = fx.discover();
    assert_eq!(warnings, Vec::<String>::new());
    let listed: Vec<(String, bool)> = catalog
        .list()
        .into_iter()
        .map(|s| (s.name.clone(), s.is_sub_skill))
        .collect();
    assert_eq!(
        listed,
        vec![
            ("bundle".to_owned(), false),
            ("bundle.pre".to_owned(), true),
            ("bundle.review".to_owned(), true),
            ("inner".to_owned(), false),
            ("plain".to_owned(), false),
        ]
    );
}

#[test]
fn skills_dir_replaces_user_and_project_roots() {
    let fx = Fixture::new();
    dir_skill(&fx.user_root(), "u", "user-skill", "user", "x");
    dir_skill(&fx.project_root(), "p", "project-skill", "project", "x");
    let explicit = fx.project.join("my-skills");
    dir_skill(&explicit, "m", "mine", "explicit", "x");
    let extra = fx.user_home.join("extra");
    dir_skill(&extra, "e", "extra-skill", "extra", "x");

    let mut opts = fx.options();
    // Relative to the project root, not the cwd.
    opts.skills_dirs = vec!["my-skills".into(), fx.project.join("missing")];
    opts.extra_dirs = vec![extra.clone()];
    let (catalog, warnings) = discover(&opts);
    assert_eq!(
        names(&catalog),
        vec![
            ("extra-skill".to_owned(), SkillSource::Extra),
            ("mine".to_owned(), SkillSource::User),
        ]
    );
    assert_eq!(catalog.roots(), vec![extra, explicit]);
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("missing") && warnings[0].contains("--skills-dir"));
}

#[test]
fn project_root_is_the_nearest_git_ancestor() {
    let fx = Fixture::new();
    assert_eq!(project_root(&fx.cwd), fx.project);
    let bare = fx.user_home.join("no-git/deeper");
    std::fs::create_dir_all(&bare).unwrap();
    // Without a `.git` of its own the answer is the nearest ancestor that has one, or the
    // directory itself (the temp dir might sit inside some checkout, so compute it).
    let expected = bare
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(&bare)
        .to_path_buf();
    assert_eq!(project_root(&bare), expected);
}

#[test]
fn no_roots_means_an_empty_catalog() {
    let fx = Fixture::new();
    let (catalog, warnings) = fx.discover();
    assert!(catalog.is_empty());
    assert!(catalog.roots().is_empty());
    assert_eq!(catalog.prompt_listing(), "");
    assert_eq!(warnings, Vec::<String>::new());
}
