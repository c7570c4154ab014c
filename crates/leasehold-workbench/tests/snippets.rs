//! The Rust the lessons show (`SNIPPETS` in `assets/workbench.html`) is real: this file makes the
//! same calls, written the same way, so a renamed or reshaped API fails to compile here; and a
//! test checks that every line of the page's snippets that calls the library is a line of this
//! file. The `attribute` snippet is left to `#[leader_only]`'s own doc tests (leasehold-macros),
//! which compile the same form.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

use std::sync::Arc;
use std::time::Duration;

use leasehold::{ElectionOptions, Elector, LeaseStore, MemoryStore, Outcome};
use leasehold_workbench::web::WORKBENCH_HTML;

/// This file, whose lines the page's snippets must be found among.
const SOURCE: &str = include_str!("snippets.rs");

#[derive(Debug, PartialEq)]
struct CloseError;

/// The reader's own work in the snippets: closes the invoices under `fence`.
async fn close_invoices(fence: u64) -> Result<u64, CloseError> {
    if fence > 1 {
        Err(CloseError)
    } else {
        Ok(fence)
    }
}

/// What the snippets do with a result, recorded.
#[derive(Debug, Default)]
struct Seen(Vec<String>);

impl Seen {
    fn report(&mut self, total: u64) {
        self.0.push(format!("report {total}"));
    }
    fn alert(&mut self, e: impl std::fmt::Debug) {
        self.0.push(format!("alert {e:?}"));
    }
    fn handle(&mut self, result: Result<u64, CloseError>) {
        self.0.push(format!("handle {result:?}"));
    }
}

// The three functions below keep the page's lines as they are written there (rustfmt would
// break the calls over several lines).

/// The `settings` snippet.
#[rustfmt::skip]
async fn settings(store: Arc<dyn LeaseStore>) -> Result<Elector, Box<dyn std::error::Error>> {
    let options = ElectionOptions::builder()
        .wait(Duration::from_secs(2))
        .lease(Duration::from_secs(10))
        .min_lease(Duration::from_secs(6))
        .build()?;
    let elector = Elector::with_options(store, options);
    elector.run_if_leader("invoice-close", |ctx| close_invoices(ctx.fence())).await?;
    Ok(elector)
}

/// The `direct` snippet (`report` and `alert` write down what they were given).
#[rustfmt::skip]
async fn direct(elector: &Elector, seen: &mut Seen) -> leasehold::Result<()> {
    match elector.run_if_leader("invoice-close", |ctx| close_invoices(ctx.fence())).await? {
        Some(Ok(total)) => seen.report(total),
        Some(Err(e)) => seen.alert(e),
        None => {}
    }
    match elector.run("invoice-close", |ctx| close_invoices(ctx.fence())).await? {
        Outcome::Elected(total) => seen.report(total),
        Outcome::Taken(_) | Outcome::AlreadyRan(_) => {}
        Outcome::ActionFailed(e) => seen.alert(e),
    }
    Ok(())
}

/// The `errors` snippet.
#[rustfmt::skip]
async fn errors(elector: &Elector, seen: &mut Seen) -> Result<(), Box<dyn std::error::Error>> {
    match elector.run_if_leader("invoice-close", |ctx| close_invoices(ctx.fence())).await {
        Ok(Some(result)) => seen.handle(result),
        Ok(None) => {}
        Err(e @ leasehold::Error::Store { .. }) => seen.alert(e),
        Err(e) => return Err(e.into()),
    }
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn the_snippets_calls_answer_as_the_lessons_say() {
    let store: Arc<dyn LeaseStore> = Arc::new(MemoryStore::new());
    // Fence 1: elected, and the work succeeds; the min lease keeps the lock taken for 6 s.
    settings(store.clone()).await.unwrap();
    let options = ElectionOptions::builder()
        .wait(Duration::from_secs(2))
        .build()
        .unwrap();
    let elector = Elector::with_options(store, options);
    let mut seen = Seen::default();
    // Within the min lease both calls wait 2 s and skip: Ok(None), then Outcome::Taken(None).
    direct(&elector, &mut seen).await.unwrap();
    assert!(seen.0.is_empty(), "{:?}", seen.0);
    tokio::time::sleep(Duration::from_secs(10)).await;
    // Then fences 2, 3 and 4: elected each time, and the work fails (above fence 1 here).
    direct(&elector, &mut seen).await.unwrap();
    errors(&elector, &mut seen).await.unwrap();
    assert_eq!(
        seen.0,
        [
            "alert CloseError",
            "alert CloseError",
            "handle Err(CloseError)"
        ],
        "run_if_leader's Some(Err), run's ActionFailed, run_if_leader's Ok(Some(result))"
    );
}

/// The snippets' lines, by snippet name, as the page's script holds them (unescaped).
fn page_snippets() -> Vec<(String, Vec<String>)> {
    let start = WORKBENCH_HTML
        .find("var SNIPPETS = {")
        .expect("the page's SNIPPETS");
    let body = &WORKBENCH_HTML[start..];
    let body = &body[..body.find("\n  };").expect("the end of SNIPPETS")];
    let mut snippets: Vec<(String, Vec<String>)> = Vec::new();
    for line in body.lines().skip(1) {
        let line = line.trim();
        if let Some(name) = line.strip_suffix(": [") {
            snippets.push((name.to_owned(), Vec::new()));
        } else if let Some(text) = line.strip_prefix('"') {
            let text = text
                .trim_end_matches(',')
                .strip_suffix('"')
                .expect("a string");
            let text = text.replace("\\\"", "\"").replace("\\\\", "\\");
            snippets.last_mut().expect("a snippet").1.push(text);
        }
    }
    snippets
}

#[test]
fn every_line_of_the_pages_snippets_that_calls_the_library_is_compiled_here() {
    let snippets = page_snippets();
    let names: Vec<&str> = snippets.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["settings", "direct", "errors", "attribute"]);
    let mut checked = 0;
    for (name, lines) in snippets.iter().filter(|(n, _)| n != "attribute") {
        for line in lines {
            // The code without its comment; the page's `report(x)` is `seen.report(x)` here.
            let code = line.split("//").next().unwrap_or_default().trim();
            if code.is_empty() || code == "}" {
                continue;
            }
            let here = code
                .replace("=> report(", "=> seen.report(")
                .replace("=> alert(", "=> seen.alert(")
                .replace("=> handle(", "=> seen.handle(");
            assert!(
                SOURCE.contains(&here),
                "snippet `{name}`: `{code}` is not a line of tests/snippets.rs"
            );
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked} lines checked");
    // The attribute's snippet names the attribute and the options it documents.
    let (_, attribute) = &snippets[3];
    let text = attribute.join("\n");
    for part in [
        "#[leasehold::leader_only(elector = self.elector",
        "lock = \"invoice-close\"",
        "wait = \"2s\"",
        "lease = \"10s\"",
        "context = ctx",
        "features = [\"macros\"]",
    ] {
        assert!(text.contains(part), "the attribute snippet shows {part}");
    }
}
