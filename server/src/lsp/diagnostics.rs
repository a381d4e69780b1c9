//! Engine diagnostics as LSP diagnostics.
//!
//! Related information, code descriptions and tags are always sent: the protocol lets clients
//! ignore fields they do not support, and every client that matters supports them.

use std::sync::LazyLock;

use serde::{Deserialize, Serialize};
use tower_lsp_server::ls_types::notification::{Notification, PublishDiagnostics};
use tower_lsp_server::ls_types::{
    self as lsp, CodeDescription, DiagnosticRelatedInformation, DiagnosticTag, Location, NumberOrString, Range, Uri,
};

use crate::diagnostic::{Diagnostic, Severity};
use crate::fix::{Applicability, Edit, Fix};
use crate::lsp::outbox::logged_notification_frame;
use crate::lsp::position::PositionMapper;
use crate::text::TextRange;

/// Every diagnostic's `source`.
pub const SOURCE: &str = "culint";

/// Where each rule's page lives: `<RULE_DOCS_BASE_URL><CODE>.md` (generated into `docs/rules/`
/// from the rule docs).
pub const RULE_DOCS_BASE_URL: &str = "https://github.com/culint/culint/blob/main/docs/rules/";

/// What a diagnostic carries in its `data`, so code actions need no server-side cache: the fix,
/// and the document version its byte offsets refer to.
///
/// It is an array, `[version, fix]`, with the fix `null` or
/// `[title, applicability, [[start, end, content], ...]]`: field names would be repeated in every
/// diagnostic of every publish.
///
/// Pushed diagnostics carry the array itself: they are written straight out (see `outbox`), and
/// the array as a string would be built and then escaped once more for every diagnostic of every
/// publish. Pulled diagnostics and code-action responses carry it as one JSON string: they go out
/// through tower-lsp-server, which turns a response into a `serde_json::Value` tree before
/// writing it, and each fix as an array would be a tree of its own, copied node by node, where a
/// string is copied in one piece. Clients pass `data` back untouched, and either form is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiagnosticData {
    pub version: i32,
    pub fix: Option<Fix>,
}

/// A fix as `data` writes it.
type WireFix = (String, Applicability, Vec<(usize, usize, String)>);

/// [`DiagnosticData`] as it is written, borrowed from the engine's diagnostic.
#[derive(Clone, Copy)]
struct WrittenData<'a> {
    version: i32,
    fix: Option<&'a Fix>,
}

impl Serialize for WrittenData<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Edits<'a>(&'a [Edit]);
        impl Serialize for Edits<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_seq(self.0.iter().map(|e| (e.range.start, e.range.end, e.content.as_str())))
            }
        }
        let fix = self.fix.map(|fix| (fix.title.as_str(), fix.applicability, Edits(&fix.edits)));
        (self.version, fix).serialize(serializer)
    }
}

impl DiagnosticData {
    /// What [`WrittenData`] wrote, as the array or as a string that holds it; `None` for
    /// anything else.
    fn read(data: &serde_json::Value) -> Option<Self> {
        let (version, fix): (i32, Option<WireFix>) = match data {
            serde_json::Value::String(text) => serde_json::from_str(text).ok()?,
            array => Deserialize::deserialize(array).ok()?,
        };
        let fix = match fix {
            None => None,
            Some((title, applicability, edits)) => {
                let edits = edits
                    .into_iter()
                    .map(|(start, end, content)| {
                        (start <= end).then(|| Edit::replacement(TextRange::new(start, end), content))
                    })
                    .collect::<Option<Vec<Edit>>>()?;
                Some(Fix { title, applicability, edits })
            }
        };
        Some(Self { version, fix })
    }
}

/// About what a publish takes per diagnostic, as JSON: a little more than the 630 bytes the
/// benchmark script's diagnostics take on average, so its buffer need not grow as it is written.
const PUBLISHED_BYTES_PER_DIAGNOSTIC: usize = 700;

pub fn rule_url(code: &str) -> Option<Uri> {
    format!("{RULE_DOCS_BASE_URL}{code}.md").parse().ok()
}

/// Each rule's page, parsed once: a large file's diagnostics would parse the same few URLs
/// hundreds of times on every keystroke.
static RULE_URLS: LazyLock<Vec<Option<Uri>>> =
    LazyLock::new(|| crate::rules::RULES.iter().map(|rule| rule_url(rule.code)).collect());

/// A diagnostic as the protocol has it, borrowed from the engine's: what a publish writes out,
/// field for field what [`to_lsp`] makes of it, without copying every string first.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LspDiagnostic<'a> {
    range: Range,
    severity: lsp::DiagnosticSeverity,
    code: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    code_description: Option<Href<'a>>,
    source: &'static str,
    message: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    related_information: Vec<RelatedAt<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tags: Option<[DiagnosticTag; 1]>,
    data: WrittenData<'a>,
}

#[derive(Serialize)]
struct Href<'a> {
    href: &'a Uri,
}

#[derive(Serialize)]
struct RelatedAt<'a> {
    location: At<'a>,
    message: &'a str,
}

#[derive(Serialize)]
struct At<'a> {
    uri: &'a Uri,
    range: Range,
}

impl<'a> LspDiagnostic<'a> {
    pub fn of(diagnostic: &'a Diagnostic, mapper: &PositionMapper<'_>, uri: &'a Uri, version: i32) -> Self {
        let rule_page =
            crate::rules::by_code(diagnostic.code).and_then(|rule| RULE_URLS[crate::rules::index_of(rule)].as_ref());
        LspDiagnostic {
            range: mapper.range(diagnostic.range),
            severity: severity(diagnostic.severity),
            code: diagnostic.code,
            code_description: rule_page.map(|href| Href { href }),
            source: SOURCE,
            message: &diagnostic.message,
            related_information: diagnostic
                .related
                .iter()
                .map(|related| RelatedAt {
                    location: At { uri, range: mapper.range(related.range) },
                    message: &related.message,
                })
                .collect(),
            tags: diagnostic.deprecated.then_some([DiagnosticTag::DEPRECATED]),
            data: WrittenData { version, fix: diagnostic.fix.as_ref() },
        }
    }
}

/// Diagnostics to push for one document, as `textDocument/publishDiagnostics` takes them.
#[derive(Serialize)]
pub struct Publish<'a> {
    pub uri: &'a Uri,
    pub diagnostics: Vec<LspDiagnostic<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<i32>,
}

impl Publish<'_> {
    /// The `textDocument/publishDiagnostics` notification as it goes over the wire, or `None`
    /// (with the reason in the server's log) when it cannot be encoded.
    pub fn frame(&self) -> Option<Vec<u8>> {
        let size_hint = 256 + PUBLISHED_BYTES_PER_DIAGNOSTIC * self.diagnostics.len();
        logged_notification_frame(<PublishDiagnostics as Notification>::METHOD, self, size_hint)
    }
}

/// The frame that pushes `diagnostics`, found in `version` of the document at `uri`, to the
/// client: their positions as `mapper` counts them.
pub fn publish_frame(
    uri: &Uri,
    version: i32,
    diagnostics: &[Diagnostic],
    mapper: &PositionMapper<'_>,
) -> Option<Vec<u8>> {
    let items = diagnostics.iter().map(|d| LspDiagnostic::of(d, mapper, uri, version)).collect();
    Publish { uri, diagnostics: items, version: Some(version) }.frame()
}

/// The protocol's owned diagnostic, for responses that go out through tower-lsp-server.
pub fn to_lsp(diagnostic: &Diagnostic, mapper: &PositionMapper<'_>, uri: &Uri, version: i32) -> lsp::Diagnostic {
    let wire = LspDiagnostic::of(diagnostic, mapper, uri, version);
    let related: Vec<DiagnosticRelatedInformation> = wire
        .related_information
        .into_iter()
        .map(|related| DiagnosticRelatedInformation {
            location: Location { uri: related.location.uri.clone(), range: related.location.range },
            message: related.message.to_owned(),
        })
        .collect();
    lsp::Diagnostic {
        range: wire.range,
        severity: Some(wire.severity),
        code: Some(NumberOrString::String(wire.code.to_owned())),
        code_description: wire.code_description.map(|page| CodeDescription { href: page.href.clone() }),
        source: Some(wire.source.to_owned()),
        message: wire.message.to_owned(),
        related_information: (!related.is_empty()).then_some(related),
        tags: wire.tags.map(Vec::from),
        data: serde_json::to_string(&wire.data).ok().map(serde_json::Value::String),
    }
}

fn severity(severity: Severity) -> lsp::DiagnosticSeverity {
    match severity {
        Severity::Error => lsp::DiagnosticSeverity::ERROR,
        Severity::Warning => lsp::DiagnosticSeverity::WARNING,
        Severity::Info => lsp::DiagnosticSeverity::INFORMATION,
        Severity::Hint => lsp::DiagnosticSeverity::HINT,
    }
}

/// The `data` of a diagnostic the client sends back, when it is culint's.
pub fn data_of(diagnostic: &lsp::Diagnostic) -> Option<DiagnosticData> {
    if diagnostic.source.as_deref() != Some(SOURCE) {
        return None;
    }
    DiagnosticData::read(diagnostic.data.as_ref()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Related;
    use crate::lsp::position::PositionEncoding;

    fn sample(text: &str) -> Diagnostic {
        let start = text.find("torch.cuda.amp").unwrap();
        let import = text.find("import torch").unwrap();
        Diagnostic {
            code: "CUL303",
            name: "deprecated-cuda-amp",
            range: TextRange::new(start, start + "torch.cuda.amp.autocast()".len()),
            message: "`torch.cuda.amp.autocast` is deprecated".to_owned(),
            severity: Severity::Warning,
            fix: Some(Fix::safe(
                "Use `torch.amp.autocast(\"cuda\")`",
                vec![Edit::replacement(TextRange::new(start, start + 14), "torch.amp")],
            )),
            knowledge: None,
            related: vec![Related { range: TextRange::new(import, import + 12), message: "imported here".to_owned() }],
            deprecated: true,
        }
    }

    /// What a publish writes is, field for field, the protocol's diagnostic that pulled
    /// diagnostics and code actions use: for every finding of the examples and the fixtures.
    #[test]
    fn published_diagnostics_are_the_protocols_diagnostics() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let uri: Uri = "file:///workspace/train.py".parse().unwrap();
        let mut compared = 0;
        for folder in ["examples", "tests/fixtures"] {
            for entry in std::fs::read_dir(root.join(folder)).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_none_or(|e| e != "py") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let tree = crate::parse::parse(&text, None);
                let settings = crate::lint::LintSettings::default();
                for diagnostic in crate::lint::lint(&text, &tree, crate::lint::LintContext::default(), &settings) {
                    let mapper = PositionMapper::new(&text, PositionEncoding::Utf16);
                    let mut published = serde_json::to_value(LspDiagnostic::of(&diagnostic, &mapper, &uri, 7)).unwrap();
                    // The one difference: a push carries `data` as the array, a response as its text.
                    let data = serde_json::to_string(&published["data"]).unwrap();
                    published["data"] = serde_json::Value::String(data);
                    let owned = serde_json::to_value(to_lsp(&diagnostic, &mapper, &uri, 7)).unwrap();
                    assert_eq!(published, owned, "{}", path.display());
                    compared += 1;
                }
            }
        }
        assert!(compared > 100, "only {compared} findings compared");
        let publish = Publish { uri: &uri, diagnostics: Vec::new(), version: None };
        let owned = tower_lsp_server::ls_types::PublishDiagnosticsParams::new(uri.clone(), Vec::new(), None);
        assert_eq!(serde_json::to_value(&publish).unwrap(), serde_json::to_value(&owned).unwrap());
    }

    #[test]
    fn converts_ranges_tags_related_and_data() {
        let text = "# 混合精度\nimport torch\nwith torch.cuda.amp.autocast():\n    pass\n";
        let uri: Uri = "file:///w/train.py".parse().unwrap();
        let mapper = PositionMapper::new(text, PositionEncoding::Utf16);
        let lsp = to_lsp(&sample(text), &mapper, &uri, 7);
        assert_eq!(lsp.range.start, lsp::Position { line: 2, character: 5 });
        assert_eq!(lsp.range.end, lsp::Position { line: 2, character: 30 });
        assert_eq!(lsp.severity, Some(lsp::DiagnosticSeverity::WARNING));
        assert_eq!(lsp.code, Some(NumberOrString::String("CUL303".to_owned())));
        assert_eq!(lsp.source.as_deref(), Some("culint"));
        assert_eq!(lsp.tags, Some(vec![DiagnosticTag::DEPRECATED]));
        let related = lsp.related_information.as_ref().unwrap();
        assert_eq!(related[0].location.range.start, lsp::Position { line: 1, character: 0 });
        assert_eq!(related[0].location.uri, uri);
        let data = data_of(&lsp).unwrap();
        assert_eq!(data.version, 7);
        assert_eq!(data.fix, sample(text).fix);
    }

    /// `data` written is read back as it was; anything else a client sends is not read, and
    /// the code action falls back to a fresh lint.
    #[test]
    fn data_round_trips_and_malformed_data_is_not_read() {
        let text = "import torch\nwith torch.cuda.amp.autocast():\n    pass\n";
        let moved = Fix::unsafe_edits(
            "Move \"it\"",
            vec![Edit::deletion(TextRange::new(3, 9)), Edit::insertion(20, "\n    torch.cuda.empty_cache()")],
        );
        for fix in [None, sample(text).fix, Some(moved)] {
            let pushed = serde_json::to_value(WrittenData { version: 3, fix: fix.as_ref() }).unwrap();
            let answered = serde_json::Value::String(pushed.to_string());
            for written in [pushed, answered] {
                assert_eq!(
                    DiagnosticData::read(&written),
                    Some(DiagnosticData { version: 3, fix: fix.clone() }),
                    "{written}"
                );
            }
        }
        for malformed in [
            "",
            "null",
            "[1]",
            r#"{"version":1,"fix":null}"#,
            r#"[1,["t","maybe",[]]]"#,
            r#"[1,["t","safe",[[9,3,""]]]]"#,
            r#"[1,["t","safe",[[-1,3,""]]]]"#,
        ] {
            assert_eq!(DiagnosticData::read(&serde_json::Value::String(malformed.to_owned())), None, "{malformed}");
            if let Ok(value) = serde_json::from_str::<serde_json::Value>(malformed) {
                assert_eq!(DiagnosticData::read(&value), None, "{malformed}");
            }
        }
    }

    #[test]
    fn rule_urls_point_at_the_rule_page() {
        assert_eq!(
            rule_url("CUL201").unwrap().as_str(),
            "https://github.com/culint/culint/blob/main/docs/rules/CUL201.md"
        );
    }

    #[test]
    fn foreign_diagnostics_carry_no_culint_data() {
        let text = "import torch\nwith torch.cuda.amp.autocast():\n    pass\n";
        let uri: Uri = "file:///w/train.py".parse().unwrap();
        let mut lsp = to_lsp(&sample(text), &PositionMapper::new(text, PositionEncoding::Utf8), &uri, 1);
        lsp.source = Some("ruff".to_owned());
        assert_eq!(data_of(&lsp), None);
    }
}
