//! Tokens of PIR text (spec section 2). Comments are not tokens: they are
//! collected on the side with their position so the parser can attach them to
//! statements and the printer can keep them.

use crate::diag::Diag;
use pjc_ir::Span;

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// `%name` (without the `%`).
    Value(String),
    /// `@name` (without the `@`).
    Func(String),
    /// A bare word: keyword, op name, dtype, axis, attribute name, `_`.
    Ident(String),
    /// An integer literal as written (may start with `-`).
    Int(String),
    /// A float literal as written (`1.0`, `-2.5e-3`, `1e-3`; `inf`/`nan` are idents).
    Float(String),
    /// A string literal's contents.
    Str(String),
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Colon,
    Eq,
    Arrow,
    Question,
    /// `-` not followed by a digit (only valid before `inf`).
    Minus,
    /// Text the lexer rejected (its diagnostic is already recorded); the parser
    /// abandons the statement without reporting it again.
    Error,
    Eof,
}

impl Tok {
    /// How the token reads in an error message.
    pub fn describe(&self) -> String {
        match self {
            Tok::Value(n) => format!("'%{n}'"),
            Tok::Func(n) => format!("'@{n}'"),
            Tok::Ident(n) => format!("'{n}'"),
            Tok::Int(n) | Tok::Float(n) => format!("'{n}'"),
            Tok::Str(s) => format!("\"{s}\""),
            Tok::LParen => "'('".into(),
            Tok::RParen => "')'".into(),
            Tok::LBracket => "'['".into(),
            Tok::RBracket => "']'".into(),
            Tok::LBrace => "'{'".into(),
            Tok::RBrace => "'}'".into(),
            Tok::Comma => "','".into(),
            Tok::Colon => "':'".into(),
            Tok::Eq => "'='".into(),
            Tok::Arrow => "'->'".into(),
            Tok::Question => "'?'".into(),
            Tok::Minus => "'-'".into(),
            Tok::Error => "an invalid token".into(),
            Tok::Eof => "end of file".into(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
    /// 0-based line of the token's first character.
    pub line: u32,
    /// First token on its line.
    pub line_start: bool,
}

/// A `//` comment.
#[derive(Clone, Debug)]
pub struct Comment {
    /// Text after `//`, without the trailing newline.
    pub text: String,
    pub span: Span,
    pub line: u32,
    /// Nothing but whitespace before it on its line.
    pub full_line: bool,
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Splits `src` into tokens (ending with `Eof`) and comments; lexical errors are
/// reported and the offending character skipped.
pub fn lex(src: &str) -> (Vec<Token>, Vec<Comment>, Vec<Diag>) {
    let mut toks = Vec::new();
    let mut comments = Vec::new();
    let mut diags = Vec::new();
    let chars: Vec<(usize, char)> = src.char_indices().collect();
    let n = chars.len();
    let at = |i: usize| if i < n { chars[i].1 } else { '\0' };
    let off = |i: usize| if i < n { chars[i].0 } else { src.len() };
    let mut i = 0;
    let mut line = 0u32;
    let mut line_has_token = false;
    while i < n {
        let c = at(i);
        let start = i;
        if c == '\n' {
            line += 1;
            line_has_token = false;
            i += 1;
            continue;
        }
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c == '/' && at(i + 1) == '/' {
            let mut j = i + 2;
            while j < n && at(j) != '\n' {
                j += 1;
            }
            let text: String = src[off(i + 2)..off(j)].trim_end_matches('\r').to_string();
            comments.push(Comment { text, span: Span::new(off(i), off(j)), line, full_line: !line_has_token });
            i = j;
            continue;
        }
        let mut push = |tok: Tok, end: usize, line_has_token: &mut bool| {
            toks.push(Token { tok, span: Span::new(off(start), off(end)), line, line_start: !*line_has_token });
            *line_has_token = true;
        };
        match c {
            '%' | '@' => {
                let mut j = i + 1;
                while j < n && is_name_char(at(j)) {
                    j += 1;
                }
                if j == i + 1 {
                    diags.push(Diag::new(Span::new(off(i), off(i + 1)), format!("expected a name after '{c}'")));
                    push(Tok::Error, i + 1, &mut line_has_token);
                    i += 1;
                    continue;
                }
                let name = src[off(i + 1)..off(j)].to_string();
                push(if c == '%' { Tok::Value(name) } else { Tok::Func(name) }, j, &mut line_has_token);
                i = j;
            }
            '"' => {
                let mut j = i + 1;
                while j < n && at(j) != '"' && at(j) != '\n' {
                    j += 1;
                }
                if at(j) != '"' {
                    diags.push(Diag::new(Span::new(off(i), off(j)), "unterminated string (a string ends with '\"' on the same line)"));
                    push(Tok::Error, j, &mut line_has_token);
                    i = j;
                    continue;
                }
                let s = src[off(i + 1)..off(j)].to_string();
                push(Tok::Str(s), j + 1, &mut line_has_token);
                i = j + 1;
            }
            '-' if at(i + 1) == '>' => {
                push(Tok::Arrow, i + 2, &mut line_has_token);
                i += 2;
            }
            '-' if !at(i + 1).is_ascii_digit() => {
                push(Tok::Minus, i + 1, &mut line_has_token);
                i += 1;
            }
            c if c.is_ascii_digit() || c == '-' => {
                let mut j = i + 1;
                let mut is_float = false;
                while j < n && at(j).is_ascii_digit() {
                    j += 1;
                }
                if at(j) == '.' && at(j + 1).is_ascii_digit() {
                    is_float = true;
                    j += 1;
                    while j < n && at(j).is_ascii_digit() {
                        j += 1;
                    }
                } else if at(j) == '.' {
                    diags.push(Diag::new(Span::new(off(i), off(j + 1)), "a float literal needs digits after '.' (write 1.0)"));
                    is_float = true;
                    j += 1;
                }
                if (at(j) == 'e' || at(j) == 'E')
                    && (at(j + 1).is_ascii_digit() || ((at(j + 1) == '-' || at(j + 1) == '+') && at(j + 2).is_ascii_digit()))
                {
                    is_float = true;
                    j += 2;
                    while j < n && at(j).is_ascii_digit() {
                        j += 1;
                    }
                }
                if j < n && is_ident_char(at(j)) {
                    let mut k = j;
                    while k < n && is_ident_char(at(k)) {
                        k += 1;
                    }
                    diags.push(Diag::new(Span::new(off(i), off(k)), format!("malformed number '{}'", &src[off(i)..off(k)])));
                    push(Tok::Error, k, &mut line_has_token);
                    i = k;
                    continue;
                }
                let text = src[off(i)..off(j)].to_string();
                push(if is_float { Tok::Float(text) } else { Tok::Int(text) }, j, &mut line_has_token);
                i = j;
            }
            c if is_ident_start(c) => {
                let mut j = i + 1;
                while j < n && is_ident_char(at(j)) {
                    j += 1;
                }
                push(Tok::Ident(src[off(i)..off(j)].to_string()), j, &mut line_has_token);
                i = j;
            }
            _ => {
                let tok = match c {
                    '(' => Some(Tok::LParen),
                    ')' => Some(Tok::RParen),
                    '[' => Some(Tok::LBracket),
                    ']' => Some(Tok::RBracket),
                    '{' => Some(Tok::LBrace),
                    '}' => Some(Tok::RBrace),
                    ',' => Some(Tok::Comma),
                    ':' => Some(Tok::Colon),
                    '=' => Some(Tok::Eq),
                    '?' => Some(Tok::Question),
                    _ => None,
                };
                match tok {
                    Some(t) => push(t, i + 1, &mut line_has_token),
                    None => {
                        let msg = if c == '+' && (at(i + 1).is_ascii_digit() || at(i + 1) == 'i') {
                            "a number has no leading '+' (write 1, not +1)".to_string()
                        } else {
                            format!("unexpected character '{}'", c.escape_debug())
                        };
                        diags.push(Diag::new(Span::new(off(i), off(i + 1)), msg));
                        push(Tok::Error, i + 1, &mut line_has_token);
                    }
                }
                i += 1;
            }
        }
        let _ = start;
    }
    toks.push(Token { tok: Tok::Eof, span: Span::new(src.len(), src.len()), line, line_start: true });
    (toks, comments, diags)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Tok> {
        lex(src).0.into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn numbers_and_names() {
        assert_eq!(
            kinds("%0 = constant -2.5e-3 1e3 -3 -inf @f.x"),
            vec![
                Tok::Value("0".into()),
                Tok::Eq,
                Tok::Ident("constant".into()),
                Tok::Float("-2.5e-3".into()),
                Tok::Float("1e3".into()),
                Tok::Int("-3".into()),
                Tok::Minus,
                Tok::Ident("inf".into()),
                Tok::Func("f.x".into()),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn comments_are_collected_with_their_kind() {
        let (_, c, d) = lex("// a\n%x = y // b\n");
        assert!(d.is_empty());
        assert_eq!(c.len(), 2);
        assert!(c[0].full_line && !c[1].full_line);
        assert_eq!(c[1].text, " b");
    }

    #[test]
    fn bad_characters_are_reported() {
        let (_, _, d) = lex("%x = $");
        assert_eq!(d.len(), 1);
        assert!(d[0].msg.contains("unexpected character '$'"));
    }
}
