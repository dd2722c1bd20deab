//! The one XML escaper: report.html (well-formed XML as well as HTML), its SVG charts and the
//! JUnit report all write text through it.

/// Escapes text for XML element content or an attribute value. `&`, `<`, `>`, `"` and `'`
/// become references; tab, line feed and carriage return become character references, so an
/// attribute keeps them (a parser turns raw ones in an attribute into spaces); every character
/// XML 1.0 forbids (the other C0 controls, U+FFFE, U+FFFF) becomes U+FFFD, the replacement
/// character. Everything else, non-ASCII included, is written as it is.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use quick_xml::events::Event;
    use quick_xml::{Reader, XmlVersion};

    #[test]
    fn markup_quotes_and_forbidden_characters_are_escaped() {
        assert_eq!(escape("a<b & \"c\" 'd' > e"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39; &gt; e");
        assert_eq!(escape("x\ty\nz\r"), "x&#9;y&#10;z&#13;");
        assert_eq!(escape("\u{0}\u{1}\u{1B}\u{FFFE}\u{FFFF}"), "\u{FFFD}".repeat(5));
        assert_eq!(escape("é ✓ \u{7F} \u{10000}"), "é ✓ \u{7F} \u{10000}", "allowed characters stay");
    }

    #[test]
    fn an_attribute_reads_back_as_written_but_forbidden_characters() {
        let text = "a<b & \"c\" 'd' > e\u{1}\tf\ng\r";
        let xml = format!("<x v=\"{}\">{}</x>", escape(text), escape(text));
        let mut reader = Reader::from_str(&xml);
        let Ok(Event::Start(e)) = reader.read_event() else { panic!("not well-formed: {xml}") };
        let a = e.attributes().next().expect("one attribute").expect("a well-formed attribute");
        let value = a.normalized_value(XmlVersion::Implicit1_0).expect("known references").into_owned();
        assert_eq!(value, "a<b & \"c\" 'd' > e\u{FFFD}\tf\ng\r");
    }
}
