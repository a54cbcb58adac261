//! Checkpoints on real files: a scan around a "command" finds what it created, changed and
//! deleted; the restore puts it back; a conflict is found; a failure midway rolls back; and
//! ignored or excluded files are not scanned.

use std::path::Path;

use kimi_protocol::checkpoint::{CheckpointMethod, RewindReport};
use pretty_assertions::assert_eq;

use super::blobs::sha256_hex;
use super::restore::{apply, plan};
use super::*;

fn checkpoints(root: &Path, data: &Path) -> Checkpoints {
    Checkpoints::new(
        CheckpointSettings::default(),
        &data.join("session"),
        vec![root.to_path_buf()],
        data,
    )
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_scan_finds_created_changed_and_deleted_files_and_restore_puts_them_back() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let r = root.path();
    write(&r.join("keep.txt"), "keep\n");
    write(&r.join("change.txt"), "before\n");
    write(&r.join("delete.txt"), "doomed\n");
    let cp = checkpoints(r, data.path());
    let ticket = cp.before(&CaptureKind::Scan).unwrap();
    write(&r.join("change.txt"), "after\n");
    std::fs::remove_file(r.join("delete.txt")).unwrap();
    write(&r.join("new/dir/made.txt"), "made\n");
    let step = cp.after(ticket, 1, "c1", "Bash").unwrap();
    assert_eq!(step.method, CheckpointMethod::Scan);
    let mut paths: Vec<&str> = step.changes.iter().map(|c| c.path.as_str()).collect();
    paths.sort_unstable();
    let want: Vec<String> = ["change.txt", "delete.txt", "new/dir/made.txt"]
        .iter()
        .map(|p| r.join(p).display().to_string())
        .collect();
    assert_eq!(paths, want.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(
        step.created_dirs,
        vec![
            r.join("new").display().to_string(),
            r.join("new/dir").display().to_string()
        ]
    );

    let restore = plan(std::slice::from_ref(&step), cp.blobs());
    assert!(restore.conflicts.is_empty(), "{:?}", restore.conflicts);
    let mut report = RewindReport::default();
    apply(&restore, cp.blobs(), &mut report).unwrap();
    assert_eq!(
        std::fs::read_to_string(r.join("change.txt")).unwrap(),
        "before\n"
    );
    assert_eq!(
        std::fs::read_to_string(r.join("delete.txt")).unwrap(),
        "doomed\n"
    );
    assert!(!r.join("new").exists());
    assert_eq!(
        std::fs::read_to_string(r.join("keep.txt")).unwrap(),
        "keep\n"
    );
    assert_eq!(report.restored.len(), 3);
}

#[test]
fn a_file_changed_since_is_a_conflict() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let r = root.path();
    let file = r.join("a.txt");
    write(&file, "one\n");
    let cp = checkpoints(r, data.path());
    let ticket = cp
        .before(&CaptureKind::Declared(vec![file.clone()]))
        .unwrap();
    write(&file, "two\n");
    let step = cp.after(ticket, 1, "c1", "Write").unwrap();
    write(&file, "user\n");
    let restore = plan(&[step], cp.blobs());
    assert_eq!(restore.conflicts.len(), 1);
    assert_eq!(restore.conflicts[0].path, file.display().to_string());
}

#[test]
fn a_failure_midway_rolls_back_what_was_restored() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let r = root.path();
    let a = r.join("a.txt");
    let b = r.join("x/b.txt");
    write(&a, "A0\n");
    write(&b, "B0\n");
    let cp = checkpoints(r, data.path());
    let ticket = cp
        .before(&CaptureKind::Declared(vec![a.clone(), b.clone()]))
        .unwrap();
    write(&a, "A1\n");
    std::fs::remove_file(&b).unwrap();
    let step = cp.after(ticket, 1, "c1", "Bash").unwrap();
    // `x` becomes a file: b.txt cannot be written back, after a.txt (sorted first) was.
    std::fs::remove_dir(r.join("x")).unwrap();
    write(&r.join("x"), "in the way\n");
    let restore = plan(&[step], cp.blobs());
    assert!(restore.conflicts.is_empty(), "{:?}", restore.conflicts);
    let mut report = RewindReport::default();
    let err = apply(&restore, cp.blobs(), &mut report).unwrap_err();
    assert!(err.to_string().contains("put back"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&a).unwrap(),
        "A1\n",
        "a.txt rolled back"
    );
    assert!(report.restored.is_empty());
}

#[test]
fn scans_skip_git_ignored_and_build_output_directories() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let r = root.path();
    write(&r.join(".gitignore"), "*.log\n");
    write(&r.join("src/a.rs"), "fn a() {}\n");
    let cp = checkpoints(r, data.path());
    let ticket = cp.before(&CaptureKind::Scan).unwrap();
    write(&r.join("build.log"), "noise\n");
    write(&r.join("target/debug/out"), "bin\n");
    write(&r.join("node_modules/x/index.js"), "js\n");
    write(&r.join(".git/HEAD"), "ref\n");
    write(&r.join("src/a.rs"), "fn a() { 1 }\n");
    let step = cp.after(ticket, 1, "c1", "Bash").unwrap();
    let paths: Vec<&str> = step.changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(
        paths,
        vec![r.join("src/a.rs").display().to_string().as_str()]
    );
}

#[test]
fn tools_without_file_effects_take_no_checkpoint() {
    let plan = |accesses| ToolPlan {
        accesses,
        approval_rule: String::new(),
        subject: kimi_tools::RuleSubject::NameOnly,
        display: kimi_tools::ToolDisplay::default(),
        description: String::new(),
        stop_batch_after_this: false,
    };
    assert_eq!(capture_kind("Bash", &plan(None)), CaptureKind::Scan);
    assert_eq!(capture_kind("TodoList", &plan(None)), CaptureKind::None);
    let read = vec![Access::file(kimi_tools::access::FileOperation::Read, "/x")];
    assert_eq!(capture_kind("Read", &plan(Some(read))), CaptureKind::None);
    let write = vec![Access::file(kimi_tools::access::FileOperation::Write, "/x")];
    assert_eq!(
        capture_kind("Write", &plan(Some(write))),
        CaptureKind::Declared(vec![PathBuf::from("/x")])
    );
}

#[test]
fn closing_the_session_releases_snapshot_only_content_and_keeps_what_steps_name() {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let r = root.path();
    write(&r.join("untouched.txt"), "only in the snapshot\n");
    write(&r.join("change.txt"), "before\n");
    let cp = checkpoints(r, data.path());
    let ticket = cp.before(&CaptureKind::Scan).unwrap();
    write(&r.join("change.txt"), "after\n");
    let step = cp.after(ticket, 1, "c1", "Bash").unwrap();
    let untouched = sha256_hex(b"only in the snapshot\n");
    assert!(cp.blobs().contains(&untouched), "the snapshot holds it");
    drop(cp);

    let reopened = checkpoints(r, data.path());
    assert!(
        !reopened.blobs().contains(&untouched),
        "a closed session keeps no copy of files no checkpoint names"
    );
    for sha in [sha256_hex(b"before\n"), sha256_hex(b"after\n")] {
        assert!(
            reopened.blobs().contains(&sha),
            "the step's content is kept"
        );
    }
    let restore = plan(std::slice::from_ref(&step), reopened.blobs());
    assert!(restore.conflicts.is_empty(), "{:?}", restore.conflicts);
    let mut report = RewindReport::default();
    apply(&restore, reopened.blobs(), &mut report).unwrap();
    assert_eq!(
        std::fs::read_to_string(r.join("change.txt")).unwrap(),
        "before\n"
    );
}
