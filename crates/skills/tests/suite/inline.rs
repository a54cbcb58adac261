//! Inline multi-skill mentions: which tokens load skills, and the message they make.

use pretty_assertions::assert_eq;

use kimi_skills::{SkillTrigger, parse_inline};

use super::{Fixture, dir_skill, write};

fn fixture() -> (Fixture, kimi_skills::SkillCatalog) {
    let fx = Fixture::new();
    let root = fx.user_root();
    dir_skill(
        &root,
        "review",
        "review",
        "Review code",
        "REVIEW-BODY $ARGUMENTS",
    );
    dir_skill(
        &root,
        "security",
        "security",
        "Security pass",
        "SECURITY-BODY",
    );
    write(&root.join("flowy.md"), "---\ntype: flow\n---\nsteps");
    write(&root.join("ref.md"), "---\ntype: reference\n---\nfacts");
    let (catalog, _) = fx.discover();
    (fx, catalog)
}

#[test]
fn which_prompts_mention_skills_inline() {
    let (_fx, catalog) = fixture();
    // (input, skills loaded in order; None = not an inline mention)
    let cases: &[(&str, Option<&[&str]>)] = &[
        ("use /skill:review on this", Some(&["review"])),
        (
            "check /review and /SECURITY then /review again",
            Some(&["review", "security"]),
        ),
        // A leading skill command followed by another skill: one bundle, no arguments.
        ("/review /skill:security now", Some(&["review", "security"])),
        // A lone leading command is a plain slash command (with arguments).
        ("/review src/lib.rs", None),
        // A built-in command owns its input.
        ("/compact /review", None),
        ("see /tmp/review and https://x.io/review and 1/2", None),
        ("and/review", None),
        ("hello /unknown", None),
        // Flow skills run on their own; reference skills cannot run.
        ("please /flowy", None),
        ("please /ref", None),
        ("", None),
    ];
    for (input, expected) in cases {
        let got = parse_inline(input, &catalog, "sess").map(|i| {
            i.activations
                .iter()
                .map(|a| a.skill_name.clone())
                .collect::<Vec<_>>()
        });
        let expected = expected.map(|names| names.iter().map(|n| (*n).to_owned()).collect());
        assert_eq!(got, expected, "{input:?}");
    }
}

#[test]
fn each_mentioned_skill_is_loaded_once_in_mention_order() {
    let (_fx, catalog) = fixture();
    // A token runs to the next whitespace: `/security,` would name no skill.
    let prompt = "check /review and /security then /review";
    let inline = parse_inline(prompt, &catalog, "sess").unwrap();
    assert_eq!(inline.blocks.len(), 2);
    assert!(
        inline.blocks[0].contains("REVIEW-BODY"),
        "{:?}",
        inline.blocks
    );
    assert!(
        inline.blocks[1].contains("SECURITY-BODY"),
        "{:?}",
        inline.blocks
    );
    // No arguments: the `$ARGUMENTS` placeholder expands to nothing.
    assert!(
        !inline.blocks[0].contains("$ARGUMENTS"),
        "{:?}",
        inline.blocks
    );
    let origin = inline.origin_activations();
    assert_eq!(origin.len(), 2);
    assert_eq!(origin[0]["skillName"], "review");
    assert_eq!(origin[1]["skillName"], "security");
    assert!(
        inline
            .activations
            .iter()
            .all(|a| a.skill_args.is_none() && a.trigger == SkillTrigger::UserSlash)
    );
}
