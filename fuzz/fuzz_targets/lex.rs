//! Fuzzes the lexer alone: it must not panic, every token and comment span must
//! lie inside the source on character boundaries, in order, and end with `Eof`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pjc_front::lexer::{lex, Tok};

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else { return };
    let (toks, comments, diags) = lex(src);
    assert_eq!(toks.last().map(|t| &t.tok), Some(&Tok::Eof));
    let mut prev = 0usize;
    for t in &toks {
        let (s, e) = (t.span.start as usize, t.span.end as usize);
        assert!(prev <= s && s <= e && e <= src.len(), "token span {s}..{e} out of order or range");
        assert!(src.is_char_boundary(s) && src.is_char_boundary(e));
        prev = e;
    }
    for c in &comments {
        let (s, e) = (c.span.start as usize, c.span.end as usize);
        assert!(s <= e && e <= src.len() && src.is_char_boundary(s) && src.is_char_boundary(e));
        assert_eq!(&src[s + 2..e].trim_end_matches('\r'), &c.text);
    }
    for d in &diags {
        assert!(d.span.start <= d.span.end && d.span.end as usize <= src.len());
    }
    let _ = pjc_front::render("fuzz.pir", src, &diags);
});
