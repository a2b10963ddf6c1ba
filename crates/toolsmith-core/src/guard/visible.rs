//! Text as a reviewer should see it: every character that renders as nothing, moves the
//! cursor or reorders text shown by name, so a finding's span cannot hide from the person
//! reading it (Trail of Bits' ANSI escapes, Unicode tag characters, bidi overrides).

/// Whether `c` renders as nothing or changes how the text around it is shown: Unicode tag
/// characters, zero-width and joiner characters, bidi controls, variation selectors of the
/// supplement, fillers and interlinear annotation marks.
pub fn is_hidden(c: char) -> bool {
    matches!(c as u32,
        0xE0000..=0xE007F          // tags: ASCII spelled invisibly
        | 0x200B..=0x200F          // zero-width space/joiners, LRM, RLM
        | 0x202A..=0x202E          // bidi embeddings and overrides
        | 0x2060..=0x2064          // word joiner, invisible operators
        | 0x2066..=0x2069          // bidi isolates
        | 0xFEFF                   // zero-width no-break space
        | 0x180E                   // Mongolian vowel separator
        | 0x115F | 0x1160 | 0x3164 | 0xFFA0 // Hangul fillers
        | 0xFFF9..=0xFFFB          // interlinear annotations
        | 0xE0100..=0xE01EF        // variation selectors supplement
        | 0x00AD                   // soft hyphen
    )
}

/// Whether `c` is a control character a terminal acts on (escape sequences, cursor moves,
/// backspace, bell): C0 except tab and line breaks, DEL, and C1.
pub fn is_control(c: char) -> bool {
    matches!(c as u32, 0x00..=0x08 | 0x0B | 0x0C | 0x0E..=0x1F | 0x7F | 0x80..=0x9F)
}

/// `text` with hidden and control characters spelled out: `⟨U+200B⟩`, `⟨ESC⟩`; a run of tag
/// characters as the ASCII it spells, `⟨tags:"ignore the user"⟩`.
pub fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut tags = String::new();
    for c in text.chars() {
        let code = c as u32;
        if (0xE0000..=0xE007F).contains(&code) {
            tags.push(
                char::from_u32(code - 0xE0000)
                    .filter(|t| !t.is_control())
                    .unwrap_or('?'),
            );
            continue;
        }
        flush_tags(&mut out, &mut tags);
        match c {
            '\u{1B}' => out.push_str("⟨ESC⟩"),
            c if is_hidden(c) || is_control(c) => {
                out.push_str(&format!("⟨U+{code:04X}⟩"));
            }
            c => out.push(c),
        }
    }
    flush_tags(&mut out, &mut tags);
    out
}

fn flush_tags(out: &mut String, tags: &mut String) {
    if !tags.is_empty() {
        out.push_str(&format!("⟨tags:{tags:?}⟩"));
        tags.clear();
    }
}

/// Up to `width` characters of `text` before byte `start` and after byte `end`, both
/// [`visible`], with `…` where they were cut.
pub fn context(text: &str, start: usize, end: usize, width: usize) -> (String, String) {
    let before: Vec<char> = text[..start].chars().collect();
    let cut = before.len().saturating_sub(width);
    let mut b: String = before[cut..].iter().collect();
    if cut > 0 {
        b.insert(0, '…');
    }
    let mut a: String = text[end..].chars().take(width).collect();
    if text[end..].chars().count() > width {
        a.push('…');
    }
    (visible(&b), visible(&a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_characters_are_spelled_out() {
        assert_eq!(visible("a\u{200B}b"), "a⟨U+200B⟩b");
        assert_eq!(visible("\u{1B}[2Kx"), "⟨ESC⟩[2Kx");
        let tagged: String = "hi"
            .chars()
            .map(|c| char::from_u32(0xE0000 + c as u32).expect("a tag character"))
            .collect();
        assert_eq!(visible(&format!("ok{tagged}.")), "ok⟨tags:\"hi\"⟩.");
        assert_eq!(visible("plain — ünïcode"), "plain — ünïcode");
    }

    #[test]
    fn context_cuts_on_characters() {
        let text = "ééééé MATCH ééééé";
        let start = text.find("MATCH").expect("as built above");
        let (b, a) = context(text, start, start + 5, 3);
        assert_eq!(b, "…éé ");
        assert_eq!(a, " éé…");
    }
}
