//! Fuzzes the whole front end: lexer, parser, verifier (with type inference),
//! diagnostic renderer and canonical printer.
//!
//! Properties checked (a panic anywhere is a failure too):
//! - `parse`/`verify`/`render` never panic, on any UTF-8 input;
//! - every diagnostic span lies inside the source (or is `Span::NONE`);
//! - a module that verifies prints to text that loads again, whose IR equals the
//!   original (`without_spans`), and which prints identically (the printer's
//!   fixed point).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pjc_front::{load, parse, print_module, render, verify, Diag};

fn check_spans(src: &str, diags: &[Diag]) {
    for d in diags {
        if d.span.is_none() {
            continue;
        }
        let (s, e) = (d.span.start as usize, d.span.end as usize);
        assert!(s <= e && e <= src.len(), "diagnostic span {s}..{e} outside the {}-byte source: {}", src.len(), d.msg);
    }
    // The renderer must cope with every span, including ones at end of file and
    // inside multi-byte characters.
    let out = render("fuzz.pir", src, diags);
    assert!(out.matches(": error: ").count() >= diags.len(), "a diagnostic was not rendered");
}

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else { return };
    let mut m = match parse(src) {
        Ok(m) => m,
        Err(diags) => {
            assert!(!diags.is_empty(), "parse failed without a diagnostic");
            check_spans(src, &diags);
            return;
        }
    };
    if let Err(diags) = verify(&mut m) {
        assert!(!diags.is_empty(), "verify failed without a diagnostic");
        check_spans(src, &diags);
        return;
    }
    // Round trip through the canonical text.
    let text = print_module(&m);
    let m2 = match load(&text) {
        Ok(m2) => m2,
        Err(diags) => panic!(
            "printed module does not load:\n{}\n--- printed text ---\n{text}--- source ---\n{src}",
            render("printed.pir", &text, &diags)
        ),
    };
    let (a, b) = (m.without_spans(), m2.without_spans());
    assert!(a == b, "IR changed across print/load\n--- printed text ---\n{text}\n--- original IR ---\n{a:#?}\n--- reloaded IR ---\n{b:#?}");
    let text2 = print_module(&m2);
    assert_eq!(text, text2, "printing is not a fixed point");
});
