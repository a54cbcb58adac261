//! Runs the repository's copy of the conformance cases through the real code, one test per
//! area that is built, so a regression names its area.
#![allow(clippy::unwrap_used, clippy::expect_used)] // helpers outside #[test] fns count as tests here

use std::path::PathBuf;

use kimi_cli::conformance::run_dir;

fn cases_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance")
}

fn assert_area_passes(area: &str) {
    let report = run_dir(&cases_dir(), Some(area)).expect("case directory readable");
    let mut text = Vec::new();
    report.write(&mut text).expect("write report");
    let text = String::from_utf8_lossy(&text);
    assert!(
        report.passed() > 0,
        "area {area} has no passing cases:\n{text}"
    );
    assert_eq!(report.failed(), 0, "area {area}:\n{text}");
}

macro_rules! areas {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                assert_area_passes(stringify!($name));
            }
        )*
    };
}

areas!(
    accumulator,
    compaction_handoff,
    compaction_split,
    compaction_trigger,
    fold,
    projection,
    scheduler,
    token_estimate,
    tool_args,
    tool_call_ids,
    tool_result,
    undo,
    wire_restore,
);
