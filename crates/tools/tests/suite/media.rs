//! ReadMediaFile on generated images: budget downscaling, region crops, full resolution, refusals.

use kimi_protocol::ContentPart;
use kimi_tools::ToolResult;
use kimi_tools::builtin::ReadMediaFileTool;
use kimi_tools::result::ToolOutput;
use serde_json::json;

use super::common::{Workspace, text};

/// A patterned RGB image (kept cheap: image code is slow in debug builds).
fn noisy_png(ws: &Workspace, name: &str, w: u32, h: u32) -> std::path::PathBuf {
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([(x / 8) as u8, (y / 8) as u8, ((x ^ y) & 0x3f) as u8])
    });
    let path = ws.path(name);
    img.save(&path).unwrap();
    path
}

/// The caption and decoded image of a media result.
fn image_of(r: &ToolResult) -> (String, image::DynamicImage, usize) {
    let ToolOutput::Parts(parts) = &r.output else {
        panic!("parts expected: {r:?}")
    };
    let [ContentPart::Text { text }, ContentPart::Image(media)] = parts.as_slice() else {
        panic!("{parts:?}")
    };
    let b64 = media.url.split_once("base64,").unwrap().1;
    let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, b64).unwrap();
    (
        text.clone(),
        image::load_from_memory(&bytes).unwrap(),
        bytes.len(),
    )
}

#[tokio::test]
async fn large_images_are_downscaled_to_the_budget() {
    let ws = Workspace::new();
    noisy_png(&ws, "big.png", 2200, 400);
    let r = ws.run(&ReadMediaFileTool, json!({"path": "big.png"})).await;
    assert!(!r.is_error, "{r:?}");
    let (caption, img, len) = image_of(&r);
    assert!(caption.contains("(2200x400)"), "{caption}");
    assert!(
        img.width() <= 2000 && img.height() <= 400,
        "{}x{}",
        img.width(),
        img.height()
    );
    assert!(len <= 256 * 1024, "{len}");
}

#[tokio::test]
async fn small_images_pass_unchanged_and_regions_crop() {
    let ws = Workspace::new();
    let path = noisy_png(&ws, "small.png", 40, 30);
    let r = ws
        .run(&ReadMediaFileTool, json!({"path": "small.png"}))
        .await;
    let (_, img, len) = image_of(&r);
    assert_eq!(
        (img.width(), img.height(), len),
        (40, 30, std::fs::metadata(&path).unwrap().len() as usize)
    );
    let r = ws
        .run(
            &ReadMediaFileTool,
            json!({"path": "small.png", "region": {"x": 5, "y": 5, "width": 10, "height": 8}}),
        )
        .await;
    let (caption, img, _) = image_of(&r);
    assert_eq!((img.width(), img.height()), (10, 8));
    assert!(caption.contains("region 10x8 at (5, 5)"), "{caption}");
    let r = ws
        .run(
            &ReadMediaFileTool,
            json!({"path": "small.png", "region": {"x": 35, "y": 0, "width": 10, "height": 8}}),
        )
        .await;
    assert!(r.is_error && text(&r).contains("does not fit inside the 40x30 image"));
    let r = ws
        .run(
            &ReadMediaFileTool,
            json!({"path": "small.png", "full_resolution": true}),
        )
        .await;
    assert!(image_of(&r).0.contains("full resolution"));
}

#[tokio::test]
async fn refusals_and_videos() {
    let ws = Workspace::new();
    ws.write("notes.txt", "hello");
    let r = ws
        .run(&ReadMediaFileTool, json!({"path": "notes.txt"}))
        .await;
    assert!(r.is_error && text(&r).contains("Use Read for text files"));
    ws.write("id_rsa", "x");
    assert!(
        text(&ws.run(&ReadMediaFileTool, json!({"path": "id_rsa"})).await).contains("sensitive")
    );
    ws.write("clip.mp4", b"\0\0\0\x18ftypmp42");
    let r = ws
        .run(&ReadMediaFileTool, json!({"path": "clip.mp4"}))
        .await;
    let ToolOutput::Parts(parts) = &r.output else {
        panic!("{r:?}")
    };
    assert!(
        matches!(&parts[1], ContentPart::Video(m) if m.url.starts_with("data:video/mp4;base64,"))
    );
}
