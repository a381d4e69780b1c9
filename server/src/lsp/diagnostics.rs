//! Engine diagnostics as LSP diagnostics.
//!
//! Related information, code descriptions and tags are always sent: the protocol lets clients
//! ignore fields they do not support, and every client that matters supports them.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::LazyLock;

use serde::Deserialize;
use tower_lsp_server::jsonrpc::Id;
use tower_lsp_server::ls_types::notification::{Notification, PublishDiagnostics};
use tower_lsp_server::ls_types::{
    self as lsp, CodeDescription, DiagnosticRelatedInformation, DiagnosticTag, Location, NumberOrString, Range, Uri,
};

use crate::diagnostic::{Diagnostic, Severity};
use crate::fix::{Applicability, Edit, Fix};
use crate::lsp::json_text::JsonText;
use crate::lsp::outbox::Frame;
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
/// diagnostic of every publish. The array goes out as the text of one JSON string. Clients pass
/// `data` back untouched and never look inside, and a client decodes one string much faster than
/// the arrays and strings it holds: on the benchmark script's publish of 397 diagnostics, Python's
/// `json.loads` takes 1.17 ms instead of 1.38 ms. Responses, which go out through
/// tower-lsp-server, gain too: it turns a response into a `serde_json::Value` tree before writing
/// it, and a string is one node where each fix would be a tree of its own. The array itself, as
/// earlier versions pushed it, is read too.
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
                Some(Fix { title: title.into(), applicability, edits })
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

/// A diagnostic as the protocol has it, borrowed from the engine's: what a publish writes out
/// ([`LspDiagnostic::write`]) and [`to_lsp`] makes into the protocol's own type, without copying
/// every string first.
pub struct LspDiagnostic<'a> {
    range: Range,
    severity: Severity,
    code: &'a str,
    rule_page: Option<&'a Uri>,
    /// The engine's message, borrowed; with the facts and assumptions below it when the finding
    /// states them ([`shown_message`]).
    message: std::borrow::Cow<'a, str>,
    related: Vec<(Range, &'a str)>,
    /// The document the related ranges lie in.
    uri: &'a Uri,
    deprecated: bool,
    data: WrittenData<'a>,
}

impl<'a> LspDiagnostic<'a> {
    pub fn of(diagnostic: &'a Diagnostic, mapper: &PositionMapper<'_>, uri: &'a Uri, version: i32) -> Self {
        let rule_page =
            crate::rules::by_code(diagnostic.code).and_then(|rule| RULE_URLS[crate::rules::index_of(rule)].as_ref());
        LspDiagnostic {
            range: mapper.range(diagnostic.range),
            severity: diagnostic.severity,
            code: diagnostic.code,
            rule_page,
            message: shown_message(diagnostic),
            related: diagnostic.related.iter().map(|r| (mapper.range(r.range), &*r.message)).collect(),
            uri,
            deprecated: diagnostic.deprecated,
            data: WrittenData { version, fix: diagnostic.fix.as_ref() },
        }
    }

    /// The diagnostic as JSON, field for field what `serde_json` makes of [`to_lsp`]'s.
    fn write(&self, json: &mut JsonText) {
        json.raw(r#"{"range":"#);
        write_range(json, &self.range);
        json.raw(r#","severity":"#).number(severity_number(self.severity));
        json.raw(r#","code":"#).string(self.code);
        if let Some(page) = self.rule_page {
            json.raw(r#","codeDescription":{"href":"#).string(page.as_str()).raw("}");
        }
        json.raw(r#","source":"#).string(SOURCE);
        json.raw(r#","message":"#).string(&self.message);
        if !self.related.is_empty() {
            json.raw(r#","relatedInformation":["#);
            for (i, (range, message)) in self.related.iter().enumerate() {
                json.raw(if i == 0 { "" } else { "," });
                json.raw(r#"{"location":{"uri":"#).string(self.uri.as_str()).raw(r#","range":"#);
                write_range(json, range);
                json.raw(r#"},"message":"#).string(message).raw("}");
            }
            json.raw("]");
        }
        if self.deprecated {
            json.raw(r#","tags":["#).number(DEPRECATED_TAG).raw("]");
        }
        json.raw(r#","data":"#).quote();
        self.data.write(json, JsonText::string_in_string);
        json.quote().raw("}");
    }
}

/// The protocol's number for the deprecated tag.
const DEPRECATED_TAG: i32 = 2;

fn write_range(json: &mut JsonText, range: &Range) {
    json.raw(r#"{"start":{"line":"#).number(range.start.line);
    json.raw(r#","character":"#).number(range.start.character);
    json.raw(r#"},"end":{"line":"#).number(range.end.line);
    json.raw(r#","character":"#).number(range.end.character).raw("}}");
}

impl WrittenData<'_> {
    /// The array, with its strings written by `string`: [`JsonText::string`] for the array
    /// itself, [`JsonText::string_in_string`] for the text of the string `data` is.
    fn write(&self, json: &mut JsonText, string: for<'j> fn(&'j mut JsonText, &str) -> &'j mut JsonText) {
        json.raw("[").number(self.version).raw(",");
        let Some(fix) = self.fix else {
            json.raw("null]");
            return;
        };
        json.raw("[");
        string(json, &fix.title).raw(",");
        string(json, fix.applicability.as_str()).raw(",[");
        for (i, edit) in fix.edits.iter().enumerate() {
            json.raw(if i == 0 { "[" } else { ",[" });
            json.number(edit.range.start).raw(",").number(edit.range.end).raw(",");
            string(json, &edit.content).raw("]");
        }
        json.raw("]]]");
    }

    /// The array as text, which `data` carries as a string.
    fn text(&self) -> String {
        let mut json = JsonText::after(Vec::new());
        self.write(&mut json, JsonText::string);
        String::from_utf8(json.into_bytes()).expect("JSON text is UTF-8")
    }
}

/// Diagnostics to push for one document, as `textDocument/publishDiagnostics` takes them.
pub struct Publish<'a> {
    pub uri: &'a Uri,
    pub diagnostics: Vec<LspDiagnostic<'a>>,
    pub version: Option<i32>,
}

impl Publish<'_> {
    /// The `textDocument/publishDiagnostics` notification as it goes over the wire.
    pub fn frame(&self) -> Frame {
        let mut json = JsonText::after(Frame::buffer(256 + PUBLISHED_BYTES_PER_DIAGNOSTIC * self.diagnostics.len()));
        json.raw(r#"{"jsonrpc":"2.0","method":"#).string(<PublishDiagnostics as Notification>::METHOD);
        json.raw(r#","params":{"uri":"#).string(self.uri.as_str()).raw(r#","diagnostics":"#);
        write_list(&mut json, &self.diagnostics);
        if let Some(version) = self.version {
            json.raw(r#","version":"#).number(version);
        }
        json.raw("}}");
        Frame::of_buffer(json.into_bytes())
    }
}

/// The response to the `textDocument/diagnostic` request `id`, as it goes over the wire: a full
/// report of `items` under `result_id`, field for field what tower-lsp-server would write of
/// the protocol's report (see `direct_answers` for why it does not).
pub fn full_report_frame(id: &Id, result_id: &str, items: &[LspDiagnostic<'_>]) -> Frame {
    let mut json = JsonText::after(Frame::buffer(128 + PUBLISHED_BYTES_PER_DIAGNOSTIC * items.len()));
    json.raw(r#"{"jsonrpc":"2.0","result":{"kind":"full","resultId":"#).string(result_id);
    json.raw(r#","items":"#);
    write_list(&mut json, items);
    json.raw(r#"},"id":"#);
    match id {
        Id::Number(number) => json.number(*number),
        Id::String(string) => json.string(string),
        Id::Null => json.raw("null"),
    };
    json.raw("}");
    Frame::of_buffer(json.into_bytes())
}

/// `diagnostics` as a JSON array.
fn write_list(json: &mut JsonText, diagnostics: &[LspDiagnostic<'_>]) {
    json.raw("[");
    for (i, diagnostic) in diagnostics.iter().enumerate() {
        json.raw(if i == 0 { "" } else { "," });
        diagnostic.write(json);
    }
    json.raw("]");
}

/// What an editor shows of a finding: its message, then a line for each fact it rests on and
/// each assumption it made, after "(preview)" for a preview finding. Editors show the whole
/// message in the hover and the problems list, and its first line inline, so the facts are in the
/// message itself: related information would need a location, which a fact such as "model size
/// from the family table" does not have.
pub fn shown_message(diagnostic: &Diagnostic) -> std::borrow::Cow<'_, str> {
    if diagnostic.facts.is_empty() && diagnostic.assumptions.is_empty() {
        return std::borrow::Cow::Borrowed(&diagnostic.message);
    }
    let mut message = diagnostic.message.to_string();
    if diagnostic.is_preview() {
        message.push_str(" (preview)");
    }
    for fact in &diagnostic.facts {
        message.push_str("\nrests on: ");
        message.push_str(fact);
    }
    for assumption in &diagnostic.assumptions {
        message.push_str("\nassumes: ");
        message.push_str(assumption);
    }
    std::borrow::Cow::Owned(message)
}

/// The frame that pushes `diagnostics`, found in `version` of the document at `uri`, to the
/// client: their positions as `mapper` counts them.
pub fn publish_frame(uri: &Uri, version: i32, diagnostics: &[Diagnostic], mapper: &PositionMapper<'_>) -> Frame {
    let items = diagnostics.iter().map(|d| LspDiagnostic::of(d, mapper, uri, version)).collect();
    Publish { uri, diagnostics: items, version: Some(version) }.frame()
}

impl LspDiagnostic<'_> {
    /// The protocol's owned diagnostic, for responses that go out through tower-lsp-server.
    pub fn into_lsp(self) -> lsp::Diagnostic {
        let related: Vec<DiagnosticRelatedInformation> = self
            .related
            .into_iter()
            .map(|(range, message)| DiagnosticRelatedInformation {
                location: Location { uri: self.uri.clone(), range },
                message: message.to_owned(),
            })
            .collect();
        lsp::Diagnostic {
            range: self.range,
            severity: Some(severity(self.severity)),
            code: Some(NumberOrString::String(self.code.to_owned())),
            code_description: self.rule_page.map(|href| CodeDescription { href: href.clone() }),
            source: Some(SOURCE.to_owned()),
            message: self.message.into_owned(),
            related_information: (!related.is_empty()).then_some(related),
            tags: self.deprecated.then(|| vec![DiagnosticTag::DEPRECATED]),
            data: Some(serde_json::Value::String(self.data.text())),
        }
    }

    /// Feed `hasher` everything a client shows of the diagnostic: all of it but `data`. The fix
    /// in `data` names the document version its byte offsets refer to, and a code action given
    /// another version's takes the fix from a fresh lint instead, so a client that keeps an older
    /// version's `data` still gets the right fix.
    fn hash_shown(&self, hasher: &mut impl Hasher) {
        let hash_range = |hasher: &mut _, range: &Range| {
            [range.start.line, range.start.character, range.end.line, range.end.character].hash(hasher)
        };
        hash_range(hasher, &self.range);
        (severity_number(self.severity), self.code, &*self.message, self.deprecated).hash(hasher);
        self.related.len().hash(hasher);
        for (range, message) in &self.related {
            hash_range(hasher, range);
            message.hash(hasher);
        }
    }
}

/// A digest of what a client shows of `diagnostics`, all in one document: equal for two lints
/// whose diagnostics look the same to the user, whatever versions of the text they came from.
pub fn shown_digest(diagnostics: &[LspDiagnostic<'_>]) -> u64 {
    // `DefaultHasher::new` hashes alike in every process of one build, so a digest stays
    // comparable across a restart of the server.
    let mut hasher = DefaultHasher::new();
    diagnostics.len().hash(&mut hasher);
    diagnostics.iter().for_each(|diagnostic| diagnostic.hash_shown(&mut hasher));
    hasher.finish()
}

/// The protocol's owned diagnostic, for responses that go out through tower-lsp-server.
pub fn to_lsp(diagnostic: &Diagnostic, mapper: &PositionMapper<'_>, uri: &Uri, version: i32) -> lsp::Diagnostic {
    LspDiagnostic::of(diagnostic, mapper, uri, version).into_lsp()
}

/// The protocol's number for a severity: `DiagnosticSeverity`'s value, which that type keeps to
/// itself.
fn severity_number(severity: Severity) -> i32 {
    match severity {
        Severity::Error => 1,
        Severity::Warning => 2,
        Severity::Info => 3,
        Severity::Hint => 4,
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
            message: "`torch.cuda.amp.autocast` is deprecated".into(),
            severity: Severity::Warning,
            fix: Some(Fix::safe(
                "Use `torch.amp.autocast(\"cuda\")`",
                vec![Edit::replacement(TextRange::new(start, start + 14), "torch.amp")],
            )),
            knowledge: None,
            related: vec![Related { range: TextRange::new(import, import + 12), message: "imported here".into() }],
            deprecated: true,
            facts: Vec::new(),
            assumptions: Vec::new(),
        }
    }

    /// The JSON body of a frame, after checking its header.
    fn body_of(frame: &[u8]) -> serde_json::Value {
        let text = std::str::from_utf8(frame).unwrap();
        let (header, body) = text.split_once("\r\n\r\n").unwrap();
        assert_eq!(header, format!("Content-Length: {}", body.len()));
        serde_json::from_str(body).unwrap()
    }

    /// The publish of `diagnostics` is, field for field, the protocol's notification with the
    /// protocol's diagnostics, which pulled diagnostics and code actions use.
    fn assert_published_as_the_protocol_has_them(text: &str, diagnostics: &[Diagnostic], what: &str) {
        let uri: Uri = "file:///workspace/train.py".parse().unwrap();
        let mapper = PositionMapper::new(text, PositionEncoding::Utf16);
        let published = body_of(publish_frame(&uri, 7, diagnostics, &mapper).as_bytes());
        let owned = tower_lsp_server::ls_types::PublishDiagnosticsParams::new(
            uri.clone(),
            diagnostics.iter().map(|d| to_lsp(d, &mapper, &uri, 7)).collect(),
            Some(7),
        );
        let expected = serde_json::json!({
            "jsonrpc": "2.0",
            "method": "textDocument/publishDiagnostics",
            "params": serde_json::to_value(&owned).unwrap(),
        });
        assert_eq!(published, expected, "{what}");

        // A pulled full report, written directly, is what tower-lsp-server would write of the
        // protocol's report, for either kind of request id.
        let shown: Vec<LspDiagnostic<'_>> =
            diagnostics.iter().map(|d| LspDiagnostic::of(d, &mapper, &uri, 7)).collect();
        for id in [Id::Number(12), Id::String("pull-\"1\"".to_owned())] {
            let written = body_of(full_report_frame(&id, "0123abcd", &shown).as_bytes());
            let report = tower_lsp_server::ls_types::DocumentDiagnosticReportResult::Report(
                tower_lsp_server::ls_types::DocumentDiagnosticReport::Full(
                    tower_lsp_server::ls_types::RelatedFullDocumentDiagnosticReport {
                        related_documents: None,
                        full_document_diagnostic_report: tower_lsp_server::ls_types::FullDocumentDiagnosticReport {
                            result_id: Some("0123abcd".to_owned()),
                            items: diagnostics.iter().map(|d| to_lsp(d, &mapper, &uri, 7)).collect(),
                        },
                    },
                ),
            );
            let response = tower_lsp_server::jsonrpc::Response::from_ok(id, serde_json::to_value(report).unwrap());
            assert_eq!(written, serde_json::to_value(response).unwrap(), "{what}");
        }
    }

    /// For every finding of the examples and the fixtures, and for every severity, and strings
    /// that need escapes.
    #[test]
    fn published_diagnostics_are_the_protocols_diagnostics() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
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
                let diagnostics = crate::lint::lint(&text, &tree, crate::lint::LintContext::default(), &settings);
                assert_published_as_the_protocol_has_them(&text, &diagnostics, &path.display().to_string());
                compared += diagnostics.len();
            }
        }
        assert!(compared > 100, "only {compared} findings compared");
        let text = "# 混合精度\nimport torch\nwith torch.cuda.amp.autocast():\n    pass\n";
        let mut varied = Vec::new();
        for severity in [Severity::Error, Severity::Warning, Severity::Info, Severity::Hint] {
            let mut diagnostic = sample(text);
            diagnostic.severity = severity;
            diagnostic.message = "say \"no\" to C:\\tmp\n\tthen \u{1} 🚀".into();
            varied.push(diagnostic);
        }
        let mut plain = sample(text);
        (plain.fix, plain.related, plain.deprecated) = (None, Vec::new(), false);
        varied.push(plain);
        assert_published_as_the_protocol_has_them(text, &varied, "severities, escapes, no fix");
        let uri: Uri = "file:///workspace/train.py".parse().unwrap();
        let cleared = body_of(Publish { uri: &uri, diagnostics: Vec::new(), version: None }.frame().as_bytes());
        let owned = tower_lsp_server::ls_types::PublishDiagnosticsParams::new(uri.clone(), Vec::new(), None);
        assert_eq!(cleared["params"], serde_json::to_value(&owned).unwrap());
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
            let pushed: serde_json::Value =
                serde_json::from_str(&WrittenData { version: 3, fix: fix.as_ref() }.text()).unwrap();
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
