//! Placeholder expansion: table tests and a never-panics property.

use std::path::Path;

use pretty_assertions::assert_eq;
use proptest::prelude::*;

use kimi_skills::{SkillError, expand_body};

use super::catalog_with;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn expansion_table() {
    let dir = Path::new("/skills/demo");
    let cases: &[(&str, &str, &[&str], &str)] = &[
        // (body, args, declared names, expected)
        ("Do $ARGUMENTS now", "a b", &[], "Do a b now"),
        (
            "first=$0 second=$1",
            r#"one "two words""#,
            &[],
            "first=one second=two words",
        ),
        ("$ARGUMENTS[1]|$ARGUMENTS[0]", "x 'y z'", &[], "y z|x"),
        ("missing=[$5] [$ARGUMENTS[9]]", "only", &[], "missing=[] []"),
        ("huge=[$99999999999999999999999]", "a", &[], "huge=[]"),
        (
            "file=$file mode=$mode",
            "a.txt fast",
            &["file", "mode"],
            "file=a.txt mode=fast",
        ),
        (
            "$filename stays, $file[0] stays",
            "x",
            &["file"],
            "$filename stays, $file[0] stays\n\nARGUMENTS: x",
        ),
        ("$mode empty", "one", &["file", "mode"], " empty"),
        ("$1st and $1", "a b", &[], "$1st and b"),
        (
            "dir=${KIMI_SKILL_DIR} sid=${KIMI_SESSION_ID}",
            "",
            &[],
            "dir=/skills/demo sid=sess-1",
        ),
        (
            "No placeholders",
            "some args",
            &[],
            "No placeholders\n\nARGUMENTS: some args",
        ),
        ("No placeholders", "", &[], "No placeholders"),
        (
            "In ${KIMI_SKILL_DIR}",
            "x",
            &[],
            "In /skills/demo\n\nARGUMENTS: x",
        ),
        ("tags: $ARGUMENTS", "<b>&", &[], "tags: &lt;b&gt;&"),
        (
            "Plain",
            "<script>",
            &[],
            "Plain\n\nARGUMENTS: &lt;script&gt;",
        ),
        ("cost $ 5 and $", "x", &[], "cost $ 5 and $\n\nARGUMENTS: x"),
    ];
    for (body, args, declared, expected) in cases {
        assert_eq!(
            expand_body(body, args, &names(declared), dir, "sess-1"),
            *expected,
            "body {body:?} args {args:?}"
        );
    }
}

#[test]
fn catalog_expand_uses_the_skill_folder_and_declared_arguments() {
    let (fx, catalog) = catalog_with(
        "arguments: [target]\n",
        "Deploy $target from ${KIMI_SKILL_DIR} in ${KIMI_SESSION_ID}",
    );
    let expanded = catalog.expand("DEMO", "prod", "s-42").unwrap();
    let dir = fx.user_root().join("demo");
    assert_eq!(
        expanded,
        format!("Deploy prod from {} in s-42", dir.display())
    );
    assert_eq!(
        catalog.expand("nope", "", "s"),
        Err(SkillError::NotFound {
            name: "nope".to_owned()
        })
    );
}

proptest! {
    #[test]
    fn expansion_never_panics(
        body in "[$A-Z\\[\\]0-9a-z {}_\"']{0,40}",
        args in "\\PC{0,40}",
    ) {
        let out = expand_body(&body, &args, &names(&["a", "ARGUMENTS"]), Path::new("/d"), "s");
        if args.is_empty() {
            prop_assert!(!out.contains("ARGUMENTS: "));
        }
    }
}
