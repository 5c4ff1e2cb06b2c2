//! Diagnostics in the spec's format: `FILE:LINE:COL: error: MESSAGE`, then the
//! source line and a caret under the column (LINE and COL 1-based, COL counted in
//! characters).

use pjc_ir::Span;
use std::fmt::Write;

/// One error about the program text.
#[derive(Clone, Debug, PartialEq)]
pub struct Diag {
    pub span: Span,
    pub msg: String,
}

impl Diag {
    pub fn new(span: Span, msg: impl Into<String>) -> Diag {
        Diag { span, msg: msg.into() }
    }
}

/// 1-based line and character column of a byte offset.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(src.len());
    let before = &src[..floor_char_boundary(src, offset)];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = before[line_start..].chars().count() + 1;
    (line, col)
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Renders diagnostics for `file`, sorted by position, one block each.
pub fn render(file: &str, src: &str, diags: &[Diag]) -> String {
    let mut sorted: Vec<&Diag> = diags.iter().collect();
    sorted.sort_by_key(|d| if d.span.is_none() { (u32::MAX, 0) } else { (d.span.start, d.span.end) });
    // Line starts, so each diagnostic costs a binary search, not a scan of the file.
    let starts: Vec<usize> = std::iter::once(0).chain(src.match_indices('\n').map(|(i, _)| i + 1)).collect();
    let mut out = String::new();
    for d in sorted {
        if d.span.is_none() {
            let _ = writeln!(out, "{file}: error: {}", d.msg);
            continue;
        }
        let start = floor_char_boundary(src, (d.span.start as usize).min(src.len()));
        let line = starts.partition_point(|&s| s <= start);
        let line_start = starts[line - 1];
        let col = src[line_start..start].chars().count() + 1;
        let _ = writeln!(out, "{file}:{line}:{col}: error: {}", d.msg);
        let line_end = src[line_start..].find('\n').map_or(src.len(), |i| line_start + i);
        let text = src[line_start..line_end].trim_end_matches('\r');
        let _ = writeln!(out, "{text}");
        // Keep tabs so the caret lines up under the same character.
        let pad: String = text.chars().take(col - 1).map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
        let _ = writeln!(out, "{pad}^");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_count_characters_not_bytes() {
        let src = "// é\n  %x = é";
        let off = src.rfind('é').unwrap();
        assert_eq!(line_col(src, off), (2, 8));
        let r = render("a.pir", src, &[Diag::new(Span::new(off, off + 2), "bad")]);
        assert_eq!(r, "a.pir:2:8: error: bad\n  %x = é\n       ^\n");
    }
}
