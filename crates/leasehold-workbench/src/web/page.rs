//! The two self-contained HTML pages, compiled into the binary, and the manual page the
//! workbench renders for its Fencing scenario.

use std::sync::LazyLock;

use axum::http::{HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};
use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd, html};

/// The workbench page (`/` of `leasehold workbench`): inline CSS and JavaScript, no external
/// assets, so it works offline.
///
/// ```
/// let page = leasehold_workbench::web::WORKBENCH_HTML;
/// assert!(page.contains("api/simulate") && !page.contains("src=\"http"));
/// ```
pub const WORKBENCH_HTML: &str = include_str!("../../assets/workbench.html");

/// The live view (`/` of `leasehold serve`), self-contained like [`WORKBENCH_HTML`].
///
/// ```
/// assert!(leasehold_workbench::web::LIVE_HTML.contains("api/live"));
/// ```
pub const LIVE_HTML: &str = include_str!("../../assets/live.html");

/// The version of leasehold this server is built from (the crates share one version), which
/// `/api/version` answers and the workbench page and its manual page show.
///
/// ```
/// assert_eq!(leasehold_workbench::web::VERSION, env!("CARGO_PKG_VERSION"));
/// ```
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The manual page "Fencing your writes" (`docs/fencing.md`), the Markdown source of the page
/// the Fencing scenario links to (`/docs/fencing`, rendered as HTML by the server).
///
/// ```
/// assert!(leasehold_workbench::web::FENCING_MD.starts_with("# Fencing your writes"));
/// ```
pub const FENCING_MD: &str = include_str!("../../docs/fencing.md");

/// [`FENCING_MD`] rendered as HTML, once.
static FENCING_ARTICLE: LazyLock<String> = LazyLock::new(|| render_manual(FENCING_MD));

/// The words around the manual, in the workbench's languages: the manual itself is English.
struct ManualWords {
    lang: &'static str,
    back: &'static str,
    note: &'static str,
}

const MANUAL_EN: ManualWords = ManualWords {
    lang: "en",
    back: "← Back to the workbench",
    note: "A page of the manual of leasehold {version} (docs/fencing.md).",
};

const MANUAL_KO: ManualWords = ManualWords {
    lang: "ko",
    back: "← 워크벤치로 돌아가기",
    note: "leasehold {version} 설명서의 한 페이지(docs/fencing.md)입니다. 설명서는 영어로만 제공됩니다.",
};

/// The manual page "Fencing your writes" as a self-contained HTML page: the rendered manual,
/// with a way back to the workbench's Fencing scenario in the page's language (`ko` or English).
pub(crate) fn fencing_page(lang: Option<&str>) -> String {
    let words = if lang == Some("ko") {
        &MANUAL_KO
    } else {
        &MANUAL_EN
    };
    format!(
        r#"<!doctype html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Fencing your writes · leasehold</title>
<link rel="icon" href="data:,">
<style>{MANUAL_CSS}</style>
</head>
<body>
<nav class="bar"><a id="back" href="../?scenario=fencing&amp;lang={lang}">{back}</a><span class="note">{note}</span></nav>
<main><article lang="en">
{article}</article></main>
</body>
</html>
"#,
        lang = words.lang,
        back = words.back,
        note = words.note.replace("{version}", VERSION),
        article = FENCING_ARTICLE.as_str(),
    )
}

const MANUAL_CSS: &str = "
:root { color-scheme: light dark; --bg: #f6f7f9; --panel: #ffffff; --ink: #1b1f24; --muted: #57606a;
  --line: #d0d7de; --accent: #0b5cad; --code: #eef1f4; --focus: #c2410c;
  --font: system-ui, -apple-system, \"Segoe UI\", \"Noto Sans\", \"Noto Sans KR\", \"Apple SD Gothic Neo\", \"Malgun Gothic\", sans-serif;
  --mono: ui-monospace, \"SFMono-Regular\", \"DejaVu Sans Mono\", Menlo, Consolas, monospace; }
@media (prefers-color-scheme: dark) { :root { --bg: #0f1419; --panel: #171d24; --ink: #e6edf3; --muted: #9aa7b4;
  --line: #30363d; --accent: #5aa7f0; --code: #1f262e; --focus: #ffb454; } }
* { box-sizing: border-box; }
html { background: var(--bg); color: var(--ink); font: 16px/1.5 var(--font); }
body { margin: 0; }
a { color: var(--accent); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
:lang(ko) { word-break: keep-all; overflow-wrap: anywhere; }
nav.bar { position: sticky; top: 0; display: flex; flex-wrap: wrap; gap: 4px 16px; align-items: center;
  padding: 8px 20px; background: var(--panel); border-bottom: 1px solid var(--line); }
nav.bar a { display: inline-flex; align-items: center; min-height: 44px; font-weight: 600; }
nav.bar .note { color: var(--muted); font-size: .9rem; }
main { max-width: 900px; margin: 0 auto; padding: 16px 20px 40px; }
article { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 4px 24px 16px; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 1.6em; } h3 { font-size: 1.05rem; margin-top: 1.4em; }
code { font-family: var(--mono); font-size: .9em; background: var(--code); border-radius: 4px; padding: 0 3px; }
pre { background: var(--code); border-radius: 8px; padding: 10px 12px; overflow-x: auto; line-height: 1.4; }
pre code { padding: 0; background: none; }
blockquote { margin: 0; padding: 2px 14px; border-left: 4px solid var(--accent); color: var(--muted); }
table { border-collapse: collapse; display: block; overflow-x: auto; font-size: .92rem; }
th, td { border: 1px solid var(--line); padding: 5px 9px; text-align: left; vertical-align: top; }
";

/// Markdown as HTML for the workbench: tables; Rust blocks without the lines rustdoc hides
/// (`# ` lines, which only make them compile); HTML in the Markdown shown as text; links to other
/// pages of the manual, which the workbench does not serve, turned into the file's path.
fn render_manual(markdown: &str) -> String {
    let parser = Parser::new_ext(markdown, Options::ENABLE_TABLES);
    let mut events: Vec<Event<'_>> = Vec::new();
    let mut rust_block: Option<String> = None;
    // A link to another page: where its text starts in `events`, and the page's path.
    let mut other_page: Option<(usize, String)> = None;
    for event in parser {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                let lang = info.split([',', ' ']).next().unwrap_or_default().to_owned();
                if lang == "rust" {
                    rust_block = Some(String::new());
                }
                events.push(Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(
                    lang.into(),
                ))));
            }
            Event::Text(text) if rust_block.is_some() => {
                if let Some(code) = rust_block.as_mut() {
                    code.push_str(&text);
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some(code) = rust_block.take() {
                    events.push(Event::Text(shown_rust(&code).into()));
                }
                events.push(Event::End(TagEnd::CodeBlock));
            }
            Event::Start(Tag::Link { dest_url, .. }) if is_other_page(&dest_url) => {
                let file = dest_url.split('#').next().unwrap_or_default();
                other_page = Some((events.len(), format!("docs/{file}")));
            }
            Event::End(TagEnd::Link) if other_page.is_some() => {
                if let Some((start, path)) = other_page.take() {
                    let text = events[start..].to_vec();
                    let names_the_file = matches!(text.as_slice(),
                        [Event::Text(t)] if path.ends_with(&format!("/{t}")));
                    events.truncate(start);
                    if !names_the_file {
                        events.extend(text);
                        events.push(Event::Text(" (".into()));
                    }
                    events.push(Event::Code(path.into()));
                    if !names_the_file {
                        events.push(Event::Text(")".into()));
                    }
                }
            }
            Event::Html(raw) | Event::InlineHtml(raw) => events.push(Event::Text(raw)),
            other => events.push(other),
        }
    }
    let mut out = String::with_capacity(markdown.len() * 3 / 2);
    html::push_html(&mut out, events.into_iter());
    out
}

/// A link to a page that is neither on the web nor on this page.
fn is_other_page(dest: &str) -> bool {
    !(dest.starts_with('#') || dest.contains("://") || dest.starts_with("mailto:"))
}

/// A Rust block as rustdoc shows it: `# ` lines (and a lone `#`) hidden, `##` shown as `#`.
fn shown_rust(code: &str) -> String {
    let mut shown = String::with_capacity(code.len());
    for line in code.lines() {
        let trimmed = line.trim_start();
        if trimmed == "#" || trimmed.starts_with("# ") {
            continue;
        }
        match trimmed.strip_prefix("##") {
            Some(rest) => {
                shown.push_str(&line[..line.len() - trimmed.len()]);
                shown.push('#');
                shown.push_str(rest);
            }
            None => shown.push_str(line),
        }
        shown.push('\n');
    }
    shown
}

/// Only inline code and this origin: the pages load nothing from anywhere else.
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                   connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; \
                   frame-ancestors 'none'";

/// `html` as a response with a strict content security policy and no caching (the page is
/// embedded in the binary, so a new build must never be hidden by a cached copy).
pub(crate) fn respond<T>(html: T) -> Response
where
    Html<T>: IntoResponse,
{
    let mut res = Html(html).into_response();
    let headers = res.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    res
}
