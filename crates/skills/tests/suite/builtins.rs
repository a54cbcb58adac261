//! Built-in skills and plugin skills in the precedence chain Project > User > Extra > Plugin >
//! Built-in, and the plugin's `skillInstructions` around a loaded skill.

use kimi_skills::{BuiltinSkills, PluginSkill, SkillSource, discover, discover_path, parse_slash};

use super::{Fixture, dir_skill};

fn source_of(catalog: &kimi_skills::SkillCatalog, name: &str) -> SkillSource {
    catalog.get(name).unwrap().source
}

#[test]
fn builtins_are_listed_and_a_user_skill_overrides_one() {
    let fx = Fixture::new();
    dir_skill(&fx.user_root(), "mine", "update-config", "my own", "mine");
    let mut opts = fx.options();
    opts.builtins = BuiltinSkills::All;
    let (catalog, warnings) = discover(&opts);
    assert_eq!(warnings, Vec::<String>::new());
    for name in [
        "mcp-config",
        "check-kimi-code-docs",
        "import-from-cc-codex",
        "custom-theme",
        "write-goal",
        "sub-skill",
        "sub-skill.review",
        "sub-skill.consolidate",
    ] {
        assert_eq!(source_of(&catalog, name), SkillSource::Builtin, "{name}");
    }
    assert_eq!(source_of(&catalog, "update-config"), SkillSource::User);
    assert_eq!(catalog.get("update-config").unwrap().content, "mine");
    // The listing groups them under their scope; sub-skills stay out of it.
    let listing = catalog.prompt_listing();
    assert!(
        listing.contains("### Built-in\n- check-kimi-code-docs:"),
        "{listing}"
    );
    assert!(!listing.contains("sub-skill.review"), "{listing}");
    // `/mcp-config login <server>` runs the built-in with its arguments.
    let slash = parse_slash("/mcp-config login github", &catalog, "s1").unwrap();
    assert_eq!(slash.skill_name, "mcp-config");
    assert!(slash.text.contains("`login github`"), "{}", slash.text);
    assert!(slash.text.contains("mcp__<server>__authenticate"));

    opts.builtins = BuiltinSkills::NoProduct;
    let (catalog, _) = discover(&opts);
    assert!(catalog.get("mcp-config").is_none());
    assert_eq!(source_of(&catalog, "write-goal"), SkillSource::Builtin);
}

#[test]
fn plugin_skills_rank_below_extra_and_above_builtins_and_carry_instructions() {
    let fx = Fixture::new();
    let plugin = fx.project.join("plugin");
    dir_skill(
        &plugin,
        "greet",
        "greet",
        "from the plugin",
        "Hello $ARGUMENTS",
    );
    dir_skill(&plugin, "goal", "write-goal", "plugin goal", "plugin body");
    dir_skill(&plugin, "shadowed", "extra-one", "plugin", "x");
    let extra = fx.project.join("extra");
    dir_skill(&extra, "e", "extra-one", "extra", "x");
    let (mut found, warnings) = discover_path(&plugin, SkillSource::Plugin);
    assert_eq!(warnings, Vec::<String>::new());
    for skill in &mut found {
        skill.plugin = Some(PluginSkill {
            id: "demo".into(),
            instructions: Some("Be brief.".into()),
        });
    }
    let mut opts = fx.options();
    opts.builtins = BuiltinSkills::All;
    opts.extra_dirs = vec![extra];
    opts.plugin_skills = found;
    let (catalog, _) = discover(&opts);
    assert_eq!(source_of(&catalog, "greet"), SkillSource::Plugin);
    assert_eq!(source_of(&catalog, "write-goal"), SkillSource::Plugin);
    assert_eq!(source_of(&catalog, "extra-one"), SkillSource::Extra);
    let slash = parse_slash("/greet Bob", &catalog, "s1").unwrap();
    assert!(
        slash.text.contains(
            "<plugin-instructions plugin=\"demo\">\nBe brief.\n</plugin-instructions>\n\nHello Bob"
        ),
        "{}",
        slash.text
    );
    // A folder holding SKILL.md is one skill.
    let (single, _) = discover_path(&plugin.join("greet"), SkillSource::Plugin);
    assert_eq!(single.len(), 1);
    assert_eq!(single[0].name, "greet");
}
