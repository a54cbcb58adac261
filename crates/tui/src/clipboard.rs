//! Reading the clipboard for Ctrl-V / Alt-V: an image or video becomes a prompt attachment,
//! text pastes as text. [`Clipboard`] hides where it comes from so the UI can be tested with
//! a fake provider; [`SystemClipboard`] is the OS clipboard (through `arboard`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use kimi_protocol::{ContentPart, MediaUrl};

/// Media larger than this is refused at paste time: providers reject such requests anyway,
/// and the journal would carry it on every resend.
pub const MAX_MEDIA_BYTES: usize = 20 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaKind {
    Image,
    Video,
}

impl MediaKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MediaKind::Image => "image",
            MediaKind::Video => "video",
        }
    }
}

/// An image or video taken from the clipboard.
#[derive(Clone, PartialEq, Eq)]
pub struct Media {
    pub kind: MediaKind,
    /// `image/png`, `video/mp4`, …
    pub mime: &'static str,
    /// Short format name shown in the placeholder (`png`, `mp4`).
    pub format: &'static str,
    pub bytes: Vec<u8>,
}

impl std::fmt::Debug for Media {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Media")
            .field("kind", &self.kind)
            .field("mime", &self.mime)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

impl Media {
    /// Recognises PNG, JPEG, GIF, WebP, MP4/MOV and WebM by their first bytes.
    pub fn sniff(bytes: Vec<u8>) -> Option<Media> {
        let (kind, mime, format) = sniff(&bytes)?;
        Some(Media {
            kind,
            mime,
            format,
            bytes,
        })
    }

    /// The content part that carries it to the model (a data URL).
    pub fn to_part(&self) -> ContentPart {
        let url = MediaUrl {
            url: format!(
                "data:{};base64,{}",
                self.mime,
                base64::engine::general_purpose::STANDARD.encode(&self.bytes)
            ),
            id: None,
        };
        match self.kind {
            MediaKind::Image => ContentPart::Image(url),
            MediaKind::Video => ContentPart::Video(url),
        }
    }

    /// `34 KB`, `1.2 MB`.
    pub fn size_label(&self) -> String {
        let n = self.bytes.len();
        if n < 1024 * 1024 {
            format!("{} KB", n.div_ceil(1024))
        } else {
            format!("{:.1} MB", n as f64 / (1024.0 * 1024.0))
        }
    }
}

fn sniff(b: &[u8]) -> Option<(MediaKind, &'static str, &'static str)> {
    use MediaKind::{Image, Video};
    if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some((Image, "image/png", "png"))
    } else if b.starts_with(&[0xff, 0xd8, 0xff]) {
        Some((Image, "image/jpeg", "jpeg"))
    } else if b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a") {
        Some((Image, "image/gif", "gif"))
    } else if b.len() >= 12 && &b[..4] == b"RIFF" && &b[8..12] == b"WEBP" {
        Some((Image, "image/webp", "webp"))
    } else if b.len() >= 12 && &b[4..8] == b"ftyp" {
        if &b[8..12] == b"qt  " {
            Some((Video, "video/quicktime", "mov"))
        } else {
            Some((Video, "video/mp4", "mp4"))
        }
    } else if b.starts_with(&[0x1a, 0x45, 0xdf, 0xa3]) {
        Some((Video, "video/webm", "webm"))
    } else {
        None
    }
}

/// What the clipboard held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClipboardContent {
    Media(Media),
    Text(String),
}

/// A source of clipboard content. `Err` is a sentence saying why nothing could be read.
pub trait Clipboard: Send + Sync {
    fn read(&self) -> Result<ClipboardContent, String>;
}

/// The OS clipboard: an image (encoded as PNG), else a copied image or video file, else text.
#[derive(Debug, Default)]
pub struct SystemClipboard;

impl Clipboard for SystemClipboard {
    fn read(&self) -> Result<ClipboardContent, String> {
        // A new handle per read: on X11 the handle owns a connection, and Ctrl-V is rare.
        let mut board = arboard::Clipboard::new().map_err(|e| e.to_string())?;
        match board.get_image() {
            Ok(image) => return encode_png(&image).map(ClipboardContent::Media),
            Err(arboard::Error::ContentNotAvailable) => {}
            Err(err) => return Err(err.to_string()),
        }
        // A file copied in a file manager arrives as a path list.
        if let Ok(files) = board.get().file_list()
            && let Some(media) = files.iter().find_map(|path| media_file(path).ok())
        {
            return Ok(ClipboardContent::Media(media));
        }
        match board.get_text() {
            Ok(text) => Ok(ClipboardContent::Text(text)),
            Err(arboard::Error::ContentNotAvailable) => {
                Err("the clipboard holds no image, video or text".to_owned())
            }
            Err(err) => Err(err.to_string()),
        }
    }
}

fn encode_png(image: &arboard::ImageData<'_>) -> Result<Media, String> {
    let width = u32::try_from(image.width).map_err(|_| "the image is too wide".to_owned())?;
    let height = u32::try_from(image.height).map_err(|_| "the image is too tall".to_owned())?;
    let rgba = image::RgbaImage::from_raw(width, height, image.bytes.to_vec())
        .ok_or_else(|| "the clipboard image has an unexpected pixel layout".to_owned())?;
    let mut out = std::io::Cursor::new(Vec::new());
    rgba.write_to(&mut out, image::ImageFormat::Png)
        .map_err(|e| format!("cannot encode the clipboard image as PNG: {e}"))?;
    Ok(Media {
        kind: MediaKind::Image,
        mime: "image/png",
        format: "png",
        bytes: out.into_inner(),
    })
}

fn media_file(path: &Path) -> Result<Media, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Media::sniff(bytes).ok_or_else(|| format!("{} is not an image or video", path.display()))
}

/// Test support: serves one file as the clipboard's content (media when its bytes are a
/// known image or video format, else its text). Selected by the binary only through the
/// `KIMI_RS_TEST_CLIPBOARD_FILE` variable, so pty tests can paste without a display.
#[derive(Debug)]
pub struct FileClipboard {
    pub path: PathBuf,
}

impl Clipboard for FileClipboard {
    fn read(&self) -> Result<ClipboardContent, String> {
        let bytes = std::fs::read(&self.path)
            .map_err(|e| format!("cannot read {}: {e}", self.path.display()))?;
        if let Some(media) = Media::sniff(bytes.clone()) {
            return Ok(ClipboardContent::Media(media));
        }
        String::from_utf8(bytes)
            .map(ClipboardContent::Text)
            .map_err(|_| format!("{} is neither media nor text", self.path.display()))
    }
}

/// The clipboard the UI reads (shared, cheap to clone); the default is the OS clipboard.
#[derive(Clone)]
pub struct ClipboardSource(pub Arc<dyn Clipboard>);

impl Default for ClipboardSource {
    fn default() -> Self {
        ClipboardSource(Arc::new(SystemClipboard))
    }
}

impl std::fmt::Debug for ClipboardSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClipboardSource")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_the_supported_formats() {
        let cases: [(&[u8], Option<&str>); 7] = [
            (b"\x89PNG\r\n\x1a\nrest", Some("image/png")),
            (&[0xff, 0xd8, 0xff, 0xe0], Some("image/jpeg")),
            (b"GIF89a...", Some("image/gif")),
            (b"RIFF\0\0\0\0WEBPVP8 ", Some("image/webp")),
            (b"\0\0\0\x18ftypmp42", Some("video/mp4")),
            (&[0x1a, 0x45, 0xdf, 0xa3, 0], Some("video/webm")),
            (b"plain text", None),
        ];
        for (bytes, mime) in cases {
            assert_eq!(Media::sniff(bytes.to_vec()).map(|m| m.mime), mime);
        }
    }

    #[test]
    fn size_label_rounds_up_to_kilobytes() {
        let media = Media::sniff([b"\x89PNG\r\n\x1a\n".as_slice(), &[0; 34 * 1024]].concat());
        assert_eq!(media.map(|m| m.size_label()).as_deref(), Some("35 KB"));
    }
}
