//! ReadMediaFile: send an image (downscaled to fit the model's budget, optionally cropped) or a
//! video to the model as multimodal content.

use std::io::Cursor;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use base64::Engine as _;
use image::{DynamicImage, GenericImageView, ImageFormat};
use kimi_protocol::{ContentPart, MediaUrl};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::access::{Access, FileOperation};
use crate::context::{ProgressSink, ToolContext};
use crate::error::ToolError;
use crate::path::{PathUse, resolve_path};
use crate::result::ToolResult;
use crate::tool::{Execution, Resolution, RuleSubject, Tool, ToolDisplay, ToolPlan, parse_args};

pub const MAX_FILE_BYTES: u64 = 100 * 1024 * 1024;
/// `[image] max_edge_px`.
pub const MAX_EDGE_PX: u32 = 2000;
/// `[image] read_byte_budget` for default reads.
pub const READ_BYTE_BUDGET: usize = 256 * 1024;
/// Hard limit for one image payload (full-resolution and region reads).
pub const MAX_IMAGE_PAYLOAD: usize = 10 * 1024 * 1024;

const VIDEO_TYPES: [(&str, &str); 6] = [
    ("mp4", "video/mp4"),
    ("m4v", "video/mp4"),
    ("mov", "video/quicktime"),
    ("webm", "video/webm"),
    ("mkv", "video/x-matroska"),
    ("avi", "video/x-msvideo"),
];

/// A crop rectangle in original pixels.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct Region {
    pub x: u32,
    pub y: u32,
    pub width: u32,
    pub height: u32,
}

#[derive(Debug, Deserialize)]
struct Params {
    path: String,
    region: Option<Region>,
    #[serde(default)]
    full_resolution: bool,
}

#[derive(Debug, Default)]
pub struct ReadMediaFileTool;

#[async_trait]
impl Tool for ReadMediaFileTool {
    fn name(&self) -> &str {
        "ReadMediaFile"
    }

    fn description(&self) -> String {
        format!(
            "Show an image or video file to you. Images are downscaled to at most {MAX_EDGE_PX} px per edge and \
             {} KiB; use `region` (original pixels) to look closely at a part, or full_resolution for the original size.",
            READ_BYTE_BUDGET / 1024
        )
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path of the image or video."},
                "region": {
                    "type": "object",
                    "description": "Crop in original pixels (images only).",
                    "properties": {
                        "x": {"type": "integer", "minimum": 0},
                        "y": {"type": "integer", "minimum": 0},
                        "width": {"type": "integer", "minimum": 1},
                        "height": {"type": "integer", "minimum": 1}
                    },
                    "required": ["x", "y", "width", "height"],
                    "additionalProperties": false
                },
                "full_resolution": {"type": "boolean", "description": "Send the image without downscaling."}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let p: Params = parse_args(args)?;
        let path = resolve_path(ctx, &p.path, PathUse::Read)?;
        let shown = path.display().to_string();
        Ok(Resolution::Run(Box::new(MediaExecution {
            plan: ToolPlan {
                accesses: Some(vec![Access::file(FileOperation::Read, shown.clone())]),
                approval_rule: format!("ReadMediaFile({shown})"),
                subject: RuleSubject::Path(shown.clone()),
                display: ToolDisplay {
                    kind: "read".to_owned(),
                    summary: shown.clone(),
                    detail: None,
                    diff: None,
                },
                description: format!("View {shown}"),
                stop_batch_after_this: false,
            },
            path,
            region: p.region,
            full_resolution: p.full_resolution,
        })))
    }
}

struct MediaExecution {
    plan: ToolPlan,
    path: PathBuf,
    region: Option<Region>,
    full_resolution: bool,
}

#[async_trait]
impl Execution for MediaExecution {
    fn plan(&self) -> &ToolPlan {
        &self.plan
    }

    async fn execute(
        self: Box<Self>,
        ctx: &ToolContext,
        _cancel: CancellationToken,
        _progress: ProgressSink,
    ) -> ToolResult {
        if !ctx.environment.is_this_machine() {
            // Never read a same-named file of this machine instead of the target's.
            return ToolResult::error(format!(
                "ReadMediaFile does not work on remote environments yet (this session runs on `{}`). \
                 Use Bash on the target (for example `file` or `identify`) to inspect the media file.",
                ctx.environment.info().label()
            ));
        }
        let this = *self;
        tokio::task::spawn_blocking(move || {
            read_media(&this.path, this.region, this.full_resolution)
        })
        .await
        .unwrap_or_else(|e| ToolResult::error(format!("ReadMediaFile failed: {e}")))
    }
}

fn data_url(mime: &str, bytes: &[u8]) -> String {
    format!(
        "data:{mime};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

fn encode(img: &DynamicImage, format: ImageFormat, quality: u8) -> Option<Vec<u8>> {
    let mut out = Cursor::new(Vec::new());
    match format {
        ImageFormat::Jpeg => {
            let rgb = DynamicImage::ImageRgb8(img.to_rgb8());
            let enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality);
            rgb.write_with_encoder(enc).ok()?;
        }
        _ => img.write_to(&mut out, ImageFormat::Png).ok()?,
    }
    Some(out.into_inner())
}

fn mime_of(format: ImageFormat) -> &'static str {
    match format {
        ImageFormat::Png => "image/png",
        ImageFormat::Jpeg => "image/jpeg",
        ImageFormat::Gif => "image/gif",
        ImageFormat::WebP => "image/webp",
        _ => "application/octet-stream",
    }
}

/// Shrink and re-encode until the payload fits `budget`; `None` if it cannot.
fn fit_budget(img: &DynamicImage, budget: usize) -> Option<(Vec<u8>, &'static str, (u32, u32))> {
    let mut current = img.clone();
    for _ in 0..6 {
        if !current.color().has_alpha()
            || encode(&current, ImageFormat::Png, 0).is_none_or(|png| png.len() > budget)
        {
            for quality in [85u8, 70, 55, 40] {
                if let Some(jpeg) = encode(&current, ImageFormat::Jpeg, quality)
                    && jpeg.len() <= budget
                {
                    return Some((jpeg, "image/jpeg", current.dimensions()));
                }
            }
        } else if let Some(png) = encode(&current, ImageFormat::Png, 0) {
            return Some((png, "image/png", current.dimensions()));
        }
        let (w, h) = current.dimensions();
        if w < 64 || h < 64 {
            return None;
        }
        current = current.resize(w * 3 / 4, h * 3 / 4, image::imageops::FilterType::Triangle);
    }
    None
}

fn media_part(mime: &str, bytes: &[u8]) -> ContentPart {
    let url = MediaUrl {
        url: data_url(mime, bytes),
        id: None,
    };
    if mime.starts_with("video/") {
        ContentPart::Video(url)
    } else {
        ContentPart::Image(url)
    }
}

pub fn read_media(path: &Path, region: Option<Region>, full_resolution: bool) -> ToolResult {
    let shown = path.display();
    // Only regular files: a FIFO would block the open forever, a device never ends.
    let (file, meta) = match super::regular::open_regular(path) {
        Ok(opened) => opened,
        Err(super::regular::NotRegular::Directory(_)) => {
            return ToolResult::error(format!("`{shown}` is a directory, not a media file."));
        }
        Err(err) => return ToolResult::error(err.to_string()),
    };
    if meta.len() > MAX_FILE_BYTES {
        return ToolResult::error(format!(
            "`{shown}` is larger than 100 MB; ReadMediaFile cannot send it."
        ));
    }
    let mut bytes = Vec::new();
    // `take` keeps a file that grows while we read within the limit checked above.
    if let Err(e) = std::io::Read::read_to_end(
        &mut std::io::Read::take(file, MAX_FILE_BYTES + 1),
        &mut bytes,
    ) {
        return ToolResult::error(format!("Cannot read `{shown}`: {e}"));
    }
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if let Some((_, mime)) = VIDEO_TYPES.iter().find(|(e, _)| *e == ext) {
        if region.is_some() {
            return ToolResult::error("region only applies to images, not videos.");
        }
        return ToolResult::parts(vec![
            ContentPart::text(format!("Video {shown} ({} bytes, {mime}).", bytes.len())),
            media_part(mime, &bytes),
        ]);
    }
    let Ok(format) = image::guess_format(&bytes) else {
        return ToolResult::error(format!(
            "`{shown}` is not a supported image (PNG, JPEG, GIF, WebP) or video file. Use Read for text files."
        ));
    };
    let img = match image::load_from_memory_with_format(&bytes, format) {
        Ok(img) => img,
        Err(e) => {
            return ToolResult::error(format!("`{shown}` could not be decoded as an image: {e}"));
        }
    };
    let (w, h) = img.dimensions();
    let original = format!("{w}x{h}");
    if let Some(r) = region {
        if r.x >= w
            || r.y >= h
            || r.width == 0
            || r.height == 0
            || r.x + r.width > w
            || r.y + r.height > h
        {
            return ToolResult::error(format!(
                "region {}x{} at ({}, {}) does not fit inside the {original} image.",
                r.width, r.height, r.x, r.y
            ));
        }
        let crop = img.crop_imm(r.x, r.y, r.width, r.height);
        let Some(png) = encode(&crop, ImageFormat::Png, 0) else {
            return ToolResult::error("The cropped region could not be encoded.");
        };
        let (payload, mime) = if png.len() <= MAX_IMAGE_PAYLOAD {
            (png, "image/png")
        } else {
            match encode(&crop, ImageFormat::Jpeg, 90).filter(|j| j.len() <= MAX_IMAGE_PAYLOAD) {
                Some(jpeg) => (jpeg, "image/jpeg"),
                None => {
                    return ToolResult::error(
                        "The region is too large to send; choose a smaller region.",
                    );
                }
            }
        };
        return ToolResult::parts(vec![
            ContentPart::text(format!(
                "Image {shown} ({original}), region {}x{} at ({}, {}), {} bytes {mime}.",
                r.width,
                r.height,
                r.x,
                r.y,
                payload.len()
            )),
            media_part(mime, &payload),
        ]);
    }
    if full_resolution {
        if bytes.len() > MAX_IMAGE_PAYLOAD {
            return ToolResult::error(format!(
                "`{shown}` is {} bytes, more than the {} MiB per-image limit; read it without full_resolution or use region.",
                bytes.len(),
                MAX_IMAGE_PAYLOAD / 1024 / 1024
            ));
        }
        return ToolResult::parts(vec![
            ContentPart::text(format!(
                "Image {shown} ({original}, full resolution, {} bytes).",
                bytes.len()
            )),
            media_part(mime_of(format), &bytes),
        ]);
    }
    // The original goes as is when it already fits; otherwise downscale and compress.
    if w.max(h) <= MAX_EDGE_PX
        && bytes.len() <= READ_BYTE_BUDGET
        && mime_of(format) != "application/octet-stream"
    {
        return ToolResult::parts(vec![
            ContentPart::text(format!(
                "Image {shown} ({original}, {} bytes).",
                bytes.len()
            )),
            media_part(mime_of(format), &bytes),
        ]);
    }
    let scaled = if w.max(h) > MAX_EDGE_PX {
        img.resize(
            MAX_EDGE_PX,
            MAX_EDGE_PX,
            image::imageops::FilterType::Triangle,
        )
    } else {
        img
    };
    match fit_budget(&scaled, READ_BYTE_BUDGET) {
        Some((payload, mime, (sw, sh))) => ToolResult::parts(vec![
            ContentPart::text(format!(
                "Image {shown} ({original}), shown at {sw}x{sh} ({} bytes {mime}). Use region to see details at full resolution.",
                payload.len()
            )),
            media_part(mime, &payload),
        ]),
        None => ToolResult::error(format!(
            "`{shown}` could not be compressed below {} KiB; use region to view a part of it.",
            READ_BYTE_BUDGET / 1024
        )),
    }
}
