//! Decoding text files the way Read shows them: UTF-8 (BOM stripped) or UTF-16 LE/BE (with or
//! without BOM), refusing binary content and other encodings.

/// Largest UTF-16 file that is transcoded (it is held in memory twice while decoding).
pub const MAX_UTF16_BYTES: u64 = 10 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf8Bom,
    Utf16Le { bom: bool },
    Utf16Be { bom: bool },
}

impl Encoding {
    pub fn label(self) -> &'static str {
        match self {
            Encoding::Utf8 => "UTF-8",
            Encoding::Utf8Bom => "UTF-8 with BOM",
            Encoding::Utf16Le { bom: true } => "UTF-16LE with BOM",
            Encoding::Utf16Le { bom: false } => "UTF-16LE",
            Encoding::Utf16Be { bom: true } => "UTF-16BE with BOM",
            Encoding::Utf16Be { bom: false } => "UTF-16BE",
        }
    }
}

/// Why a file cannot be shown as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotText {
    Binary,
    UnknownEncoding,
}

/// Guess the encoding from the first bytes of a file.
pub fn sniff(sample: &[u8]) -> Result<Encoding, NotText> {
    if sample.starts_with(&[0xEF, 0xBB, 0xBF]) {
        return Ok(Encoding::Utf8Bom);
    }
    if sample.starts_with(&[0xFF, 0xFE]) {
        return Ok(Encoding::Utf16Le { bom: true });
    }
    if sample.starts_with(&[0xFE, 0xFF]) {
        return Ok(Encoding::Utf16Be { bom: true });
    }
    if sample.contains(&0) {
        // BOM-less UTF-16 of mostly-ASCII text has a zero in every other byte.
        let pairs = sample.len() / 2;
        if pairs >= 1 {
            let even_zero = sample.iter().step_by(2).filter(|b| **b == 0).count();
            let odd_zero = sample
                .iter()
                .skip(1)
                .step_by(2)
                .filter(|b| **b == 0)
                .count();
            if odd_zero * 10 >= pairs * 4 && even_zero * 10 < pairs {
                return Ok(Encoding::Utf16Le { bom: false });
            }
            if even_zero * 10 >= pairs * 4 && odd_zero * 10 < pairs {
                return Ok(Encoding::Utf16Be { bom: false });
            }
        }
        return Err(NotText::Binary);
    }
    // A multi-byte sequence cut by the end of the sample is still fine.
    match std::str::from_utf8(sample) {
        Ok(_) => Ok(Encoding::Utf8),
        Err(e) if e.error_len().is_none() => Ok(Encoding::Utf8),
        Err(_) => Err(NotText::UnknownEncoding),
    }
}

/// Decode a whole UTF-16 file (BOM skipped); `None` if it is not valid UTF-16 or holds NULs.
pub fn decode_utf16(bytes: &[u8], encoding: Encoding) -> Option<String> {
    let (body, little) = match encoding {
        Encoding::Utf16Le { bom } => (if bom { &bytes[2..] } else { bytes }, true),
        Encoding::Utf16Be { bom } => (if bom { &bytes[2..] } else { bytes }, false),
        Encoding::Utf8 | Encoding::Utf8Bom => return None,
    };
    if body.len() % 2 != 0 {
        return None;
    }
    let units = body.chunks_exact(2).map(|c| {
        if little {
            u16::from_le_bytes([c[0], c[1]])
        } else {
            u16::from_be_bytes([c[0], c[1]])
        }
    });
    let text: String = char::decode_utf16(units).collect::<Result<_, _>>().ok()?;
    (!text.contains('\0')).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16le(s: &str) -> Vec<u8> {
        s.encode_utf16().flat_map(u16::to_le_bytes).collect()
    }

    #[test]
    fn sniffs_encodings() {
        assert_eq!(sniff(b"hello"), Ok(Encoding::Utf8));
        assert_eq!(sniff(b"\xEF\xBB\xBFhi"), Ok(Encoding::Utf8Bom));
        assert_eq!(
            sniff(&utf16le("hello world")),
            Ok(Encoding::Utf16Le { bom: false })
        );
        assert_eq!(
            sniff(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\x01\x02"),
            Err(NotText::Binary)
        );
        assert_eq!(sniff(b"caf\xe9 au lait"), Err(NotText::UnknownEncoding));
    }

    #[test]
    fn decodes_utf16() {
        let bytes = utf16le("a\u{4e2d}b");
        assert_eq!(
            decode_utf16(&bytes, Encoding::Utf16Le { bom: false }).as_deref(),
            Some("a\u{4e2d}b")
        );
    }
}
