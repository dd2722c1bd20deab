//! A JUnit XML report: one test suite, one test case per check. CI systems (GitHub Actions
//! reporters, GitLab, Jenkins) read this format; every text goes through the report room's XML
//! escaper, so any metric or policy name gives a well-formed document.

use crate::experiment::report::xml::escape;

/// The outcome of one test case.
#[derive(Debug, Clone, PartialEq)]
pub enum CaseResult {
    Passed,
    /// `message` goes in the `message` attribute, `detail` in the element's text.
    Failed {
        kind: String,
        message: String,
        detail: String,
    },
    Skipped {
        message: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub classname: String,
    pub name: String,
    pub result: CaseResult,
}

/// The whole document: `<testsuites>` around one `<testsuite>` named `suite`, with
/// `properties` as `<property>` elements and `system_out` (the text report) at its end.
pub fn document(suite: &str, properties: &[(&str, String)], cases: &[Case], system_out: &str) -> String {
    let failures = cases.iter().filter(|c| matches!(c.result, CaseResult::Failed { .. })).count();
    let skipped = cases.iter().filter(|c| matches!(c.result, CaseResult::Skipped { .. })).count();
    let counts = format!(r#"tests="{}" failures="{failures}" errors="0" skipped="{skipped}""#, cases.len());
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x.push_str(&format!("<testsuites name=\"{}\" {counts}>\n", escape(suite)));
    x.push_str(&format!("  <testsuite name=\"{}\" {counts} time=\"0\">\n", escape(suite)));
    if !properties.is_empty() {
        x.push_str("    <properties>\n");
        for (name, value) in properties {
            x.push_str(&format!("      <property name=\"{}\" value=\"{}\"/>\n", escape(name), escape(value)));
        }
        x.push_str("    </properties>\n");
    }
    for case in cases {
        let open = format!(
            "    <testcase classname=\"{}\" name=\"{}\" time=\"0\"",
            escape(&case.classname),
            escape(&case.name)
        );
        match &case.result {
            CaseResult::Passed => x.push_str(&format!("{open}/>\n")),
            CaseResult::Failed { kind, message, detail } => x.push_str(&format!(
                "{open}>\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>\n",
                escape(message),
                escape(kind),
                escape(detail)
            )),
            CaseResult::Skipped { message } => {
                x.push_str(&format!("{open}>\n      <skipped message=\"{}\"/>\n    </testcase>\n", escape(message)))
            }
        }
    }
    x.push_str(&format!("    <system-out>{}</system-out>\n", escape(system_out)));
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use quick_xml::events::Event;
    use quick_xml::{Reader, XmlVersion};

    /// Every attribute of `xml` as (element, attribute, value) and every element's text, with
    /// references resolved; panics when the document is not well-formed.
    fn parse(xml: &str) -> (Vec<(String, String, String)>, Vec<String>) {
        let mut reader = Reader::from_str(xml);
        reader.config_mut().check_end_names = true;
        let (mut attributes, mut texts, mut text) = (Vec::new(), Vec::new(), String::new());
        loop {
            let event = reader.read_event().unwrap_or_else(|e| panic!("not well-formed: {e}\n{xml}"));
            if !matches!(event, Event::Text(_) | Event::GeneralRef(_)) && !text.is_empty() {
                texts.push(std::mem::take(&mut text));
            }
            match event {
                Event::Eof => break,
                Event::Start(e) | Event::Empty(e) => {
                    let name = e.name().as_ref().to_string();
                    for a in e.attributes() {
                        let a = a.unwrap_or_else(|e| panic!("bad attribute: {e}\n{xml}"));
                        let key = a.key.as_ref().to_string();
                        let value = a.normalized_value(XmlVersion::Implicit1_0).expect("a known entity").into_owned();
                        attributes.push((name.clone(), key, value));
                    }
                }
                Event::Text(t) => text.push_str(&t.xml10_content()),
                Event::GeneralRef(r) => match r.resolve_char_ref().expect("a valid character reference") {
                    Some(c) => text.push(c),
                    None => text.push_str(quick_xml::escape::resolve_predefined_entity(&r).expect("a known entity")),
                },
                _ => {}
            }
        }
        (attributes, texts)
    }

    #[test]
    fn any_name_gives_a_well_formed_document() {
        let evil = "a<b & \"c\" 'd' > e\u{1}\tf\ng";
        let cases = vec![
            Case { classname: "gate.threshold".into(), name: format!("{evil} < 0.05"), result: CaseResult::Passed },
            Case {
                classname: "gate.regression".into(),
                name: "cost <= 10%".into(),
                result: CaseResult::Failed { kind: "regression".into(), message: evil.into(), detail: evil.into() },
            },
            Case {
                classname: "gate.regression".into(),
                name: "x".into(),
                result: CaseResult::Skipped { message: "no".into() },
            },
        ];
        let xml = document("gate <s>", &[("seed", "7".into())], &cases, "table\n  <x> & y\n");
        assert!(!xml.chars().any(|c| (c as u32) < 0x20 && c != '\n'), "no raw control character: {xml:?}");
        let (attributes, texts) = parse(&xml);
        let value = |element: &str, key: &str| -> Vec<String> {
            attributes.iter().filter(|(e, k, _)| e == element && k == key).map(|(_, _, v)| v.clone()).collect()
        };
        let kept = "a<b & \"c\" 'd' > e\u{FFFD}\tf\ng";
        assert_eq!(value("testcase", "name")[0], format!("{kept} < 0.05"));
        assert_eq!(value("failure", "message"), vec![kept.to_string()]);
        assert_eq!(value("testsuite", "name"), vec!["gate <s>".to_string()]);
        assert_eq!(value("testsuite", "failures"), vec!["1".to_string()]);
        assert_eq!(value("testsuite", "skipped"), vec!["1".to_string()]);
        assert_eq!(value("testsuite", "tests"), vec!["3".to_string()]);
        assert_eq!(value("property", "value"), vec!["7".to_string()]);
        assert!(texts.iter().any(|t| t == kept), "{texts:?}");
        assert!(texts.iter().any(|t| t == "table\n  <x> & y\n"), "{texts:?}");
    }
}
