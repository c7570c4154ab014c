// Browser tests of the workbench page and the live view, in Debian's headless chromium.
//
//   node crates/leasehold-workbench/browser/workbench.test.mjs /path/to/leasehold
//   (or LEASEHOLD_BIN=/path/to/leasehold node --test crates/leasehold-workbench/browser/)
//
// Starts `leasehold workbench --bind 127.0.0.1:0` (and `leasehold serve` for the live view),
// drives the page like a reader would, and compares what it renders with the JSON the server
// answers. Screenshots go to $CARGO_TARGET_DIR/workbench-screenshots/ (target/… when unset).
// CHROMIUM overrides the browser path (default /usr/bin/chromium).

import { after, afterEach, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "../../..");
const BIN = process.env.LEASEHOLD_BIN || process.argv[2];
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const SHOTS = path.join(process.env.CARGO_TARGET_DIR || path.join(REPO, "target"), "workbench-screenshots");
const SCENARIOS = ["contention", "expiry", "extension", "group", "fencing", "period"];
// Without the background-networking flags chromium keeps trying to reach the network, which
// this machine's closed network turns into stalls.
const CHROMIUM_ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
];
const VIEWPORT = { width: 1100, height: 800 };
const PATIENCE = 30_000; // generous: the machine is small and shared

if (!BIN) {
  console.error("usage: node workbench.test.mjs /path/to/leasehold (or set LEASEHOLD_BIN)");
  process.exit(2);
}

/** Starts `leasehold ARGS` and resolves with the URL it prints ("listening on http://…"). */
function startServer(args, env = {}) {
  const child = spawn(BIN, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
  let stderr = "";
  child.stderr.on("data", (d) => { stderr += d; });
  const url = new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`no "listening on" line within ${PATIENCE} ms; stderr: ${stderr}`)), PATIENCE);
    child.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/^listening on (http:\/\/\S+)$/m);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    child.on("error", (e) => { clearTimeout(timer); reject(new Error(`cannot start ${BIN}: ${e.message}`)); });
    child.on("exit", (code) => { clearTimeout(timer); reject(new Error(`leasehold ${args[0]} exited ${code}: ${stderr}`)); });
  });
  return { child, url, stderr: () => stderr };
}

/** Sends SIGTERM and resolves with the exit code (graceful shutdown must exit 0). */
function stop(child) {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    child.once("exit", (code, signal) => resolve(code ?? signal));
    child.kill("SIGTERM");
  });
}

async function json(url) {
  const res = await fetch(url);
  const body = await res.json();
  return { status: res.status, body };
}

/** The event table as the page renders it, oldest first, in the API's field order. */
async function renderedEvents(page) {
  const rows = await page.$$eval("#events tr[data-tick]", (trs) => trs.map((tr) => ({
    tick: Number(tr.dataset.tick), candidate: tr.dataset.candidate, operation: tr.dataset.operation,
    token: tr.dataset.token || null, fence: tr.dataset.fence === "" ? null : Number(tr.dataset.fence),
    ttl: tr.dataset.ttl === "" ? null : Number(tr.dataset.ttl), outcome: tr.dataset.outcome,
    cells: tr.cells.length,
  })));
  for (const r of rows) assert.equal(r.cells, 7, "every row shows the seven columns");
  return rows.reverse().map(({ cells, ...r }) => r);
}

function apiEvents(timeline, upTo) {
  return timeline.events.filter((e) => e.tick <= upTo).map((e) => ({
    tick: e.tick, candidate: e.candidate, operation: e.operation, token: e.token ?? null,
    fence: e.fence ?? null, ttl: e.ttl ?? null, outcome: e.outcome,
  }));
}

async function ready(page) {
  await page.waitForFunction(() => document.body.dataset.state === "ready", null, { timeout: PATIENCE });
}
async function tickOf(page) {
  return Number(await page.getAttribute("#tick", "data-tick"));
}
/** The timeline the page is showing, fetched by the test itself with the page's own query. */
async function shownTimeline(page, base) {
  const query = await page.evaluate(() => document.body.dataset.query);
  const { status, body } = await json(`${base}api/simulate?${query}`);
  assert.equal(status, 200, JSON.stringify(body));
  return body;
}
async function stepTo(page, tick) {
  await page.click("#reset");
  for (let i = 0; i < tick; i++) await page.click("#step");
  assert.equal(await tickOf(page), tick);
}

/** A tick worth a picture: where the scenario's point shows. */
function interestingTick(id, tl) {
  const first = (pred) => tl.frames.find(pred)?.tick;
  const eventTick = (pred) => tl.events.find(pred)?.tick;
  const candidates = {
    contention: () => eventTick((e) => e.outcome === "skipped") ?? first((f) => f.nodes.some((n) => n.status === "waiting")),
    expiry: () => first((f) => f.nodes.some((n) => n.status === "stale")
      && f.holders.some((h) => f.nodes.find((n) => n.id === h.owner)?.status === "running")),
    extension: () => tl.events.filter((e) => e.operation === "extend")[1]?.tick,
    group: () => first((f) => f.holders.length === tl.params.slots && f.nodes.some((n) => n.status === "waiting" || n.status === "skipped")),
    fencing: () => eventTick((e) => e.outcome === "rejected_fence"),
    period: () => tl.events.filter((e) => e.outcome === "already_ran")[1]?.tick,
  };
  return candidates[id]?.() ?? Math.floor(tl.max_tick / 2);
}

describe("workbench page", () => {
  let server, base, context, page, profile;
  const pageErrors = [];

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    server = startServer(["workbench", "--bind", "127.0.0.1:0"]);
    base = await server.url;
    profile = mkdtempSync(path.join(tmpdir(), "leasehold-chromium-"));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport: VIEWPORT,
      colorScheme: "light", reducedMotion: "no-preference",
    });
    page = context.pages()[0] ?? await context.newPage();
    page.on("pageerror", (e) => pageErrors.push(e.message));
  });

  after(async () => {
    await context?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    if (server) assert.equal(await stop(server.child), 0, `workbench did not shut down cleanly: ${server.stderr()}`);
  });

  afterEach(() => {
    assert.deepEqual(pageErrors.splice(0), [], "the page's script threw");
  });

  test("the API lists the six scenarios in display order", async () => {
    const { status, body } = await json(`${base}api/scenarios`);
    assert.equal(status, 200);
    assert.deepEqual(body.map((s) => s.id), SCENARIOS);
  });

  for (const id of SCENARIOS) {
    test(`${id}: at the last tick the event table equals the API's timeline`, async () => {
      await page.goto(`${base}?scenario=${id}`);
      await ready(page);
      assert.equal(await page.getAttribute(`button[data-scenario="${id}"]`, "aria-pressed"), "true");
      const tl = await shownTimeline(page, base);
      assert.equal(tl.scenario, id);
      assert.equal(tl.frames.length, tl.max_tick + 1);
      assert.equal(await tickOf(page), 0);
      assert.deepEqual(await renderedEvents(page), apiEvents(tl, 0));

      for (let i = 0; i < tl.max_tick; i++) await page.click("#step");
      assert.equal(await tickOf(page), tl.max_tick);
      assert.ok(await page.isDisabled("#step"), "step stops at the last tick");
      const rendered = await renderedEvents(page);
      assert.ok(rendered.length > 0);
      assert.deepEqual(rendered, apiEvents(tl, tl.max_tick));

      // The node cards and the store record show the last frame.
      const last = tl.frames[tl.max_tick];
      const cards = await page.$$eval(".node", (ns) => ns.map((n) => [n.dataset.node, n.dataset.status]));
      assert.deepEqual(cards, last.nodes.map((n) => [n.id, n.status]));
      const owners = await page.$$eval(".record", (rs) => rs.map((r) => r.dataset.owner));
      assert.equal(owners.length, tl.params.slots);
      for (const h of last.holders) assert.equal(owners[h.slot], h.owner);

      // A picture at the tick where the scenario makes its point.
      const tick = interestingTick(id, tl);
      await stepTo(page, tick);
      assert.deepEqual(await renderedEvents(page), apiEvents(tl, tick));
      await page.screenshot({ path: path.join(SHOTS, `${id}.png`), fullPage: true });
    });
  }

  test("period: the late replicas are refused by the ledger as already ran, not contended, in English and Korean", async () => {
    await page.goto(`${base}?scenario=period`);
    await ready(page);
    assert.ok(await page.isVisible('[data-param="period"]'), "the period slider shows in this scenario");
    assert.ok(await page.isHidden('[data-param="slots"]'));
    const tl = await shownTimeline(page, base);
    assert.equal(tl.params.period, 8);
    const refusals = tl.events.filter((e) => e.outcome === "already_ran");
    assert.ok(refusals.length >= 4, "the late replicas are refused in every period");
    assert.ok(!tl.events.some((e) => e.outcome === "contended" || e.outcome === "skipped"));
    // node-c's refusal in period 0: node-b has already been refused, the lock is free.
    const tick = refusals[1].tick;
    await stepTo(page, tick);
    assert.deepEqual(await renderedEvents(page), apiEvents(tl, tick));

    const rows = await page.$$eval('#events tr[data-outcome="already_ran"]', (trs) => trs.map((tr) => ({
      candidate: tr.dataset.candidate, period: tr.dataset.ledgerPeriod, by: tr.dataset.ledgerBy, at: tr.dataset.ledgerTick,
      text: tr.querySelector("td.outcome").textContent, cls: tr.className, title: tr.querySelector("td.outcome").title,
    })));
    assert.deepEqual(rows.map((r) => [r.candidate, r.period, r.by, r.at]).sort(),
      [["node-b", "0", "node-a", "0"], ["node-c", "0", "node-a", "0"]]);
    for (const r of rows) {
      assert.equal(r.text, "already ran (period 0, by node-a at tick 0)");
      assert.match(r.cls, /\bledger\b/);
      assert.doesNotMatch(r.cls, /\bbad\b/);
      assert.match(r.title, /not contention/);
    }
    assert.equal(await page.$$eval('#events tr[data-outcome="contended"]', (trs) => trs.length), 0);
    assert.match(await page.textContent('#events tr[data-outcome="elected"] td.outcome'), /elected \(period 0\)/);
    // The lock is free; the store's ledger still records period 0.
    assert.equal(await page.getAttribute(".record", "data-owner"), "");
    assert.equal(await page.getAttribute(".record", "data-ledger-period"), "0");
    assert.match(await page.textContent(".record"), /period 0 ran: node-a, tick 0/);
    const cards = await page.$$eval(".node", (ns) => ns.map((n) => [n.dataset.node, n.dataset.status, n.querySelector(".word").textContent]));
    assert.deepEqual(cards, [["node-a", "completed", "completed"], ["node-b", "already_ran", "already ran"], ["node-c", "already_ran", "already ran"]]);
    assert.match(await page.textContent("#action-box"), /node-c: period 0 already ran \(node-a, tick 0\); refused by the period ledger, not by a held lock/);
    assert.match(await page.textContent("#legend"), /= = already ran/);

    await page.click("#lang-ko");
    assert.equal(await page.getAttribute("html", "lang"), "ko");
    assert.equal((await page.textContent('button[data-scenario="period"]')).trim(), "주기당 한 번");
    const ko = await page.$$eval('#events tr[data-outcome="already_ran"] td.outcome', (tds) => tds.map((td) => [td.textContent, td.title]));
    assert.equal(ko.length, 2);
    for (const [text, title] of ko) {
      assert.equal(text, "이미 실행됨 (주기 0, 틱 0에 node-a)");
      assert.match(title, /락 경쟁이 아니/);
      assert.doesNotMatch(text, /경쟁/);
    }
    assert.match(await page.textContent(".record"), /주기 원장/);
    assert.match(await page.textContent('.node[data-node="node-b"] .word'), /이미 실행됨/);
    assert.match(await page.textContent("#action-box"), /주기 원장이 거절/);
    await page.screenshot({ path: path.join(SHOTS, "period-ko.png"), fullPage: true });
    await page.click("#lang-en");

    // A shorter period recomputes the timeline: four runs, node-a's each.
    await page.fill("#in-period", "6");
    await page.waitForFunction(() => document.body.dataset.state === "ready"
      && (document.body.dataset.query || "").includes("period=6"), null, { timeout: PATIENCE });
    const six = await shownTimeline(page, base);
    assert.equal(six.params.period, 6);
    assert.deepEqual(six.events.filter((e) => e.outcome === "elected").map((e) => [e.tick, e.candidate, e.ledger.period]),
      [[0, "node-a", 0], [6, "node-a", 1], [12, "node-a", 2], [18, "node-a", 3]]);
    assert.deepEqual(await renderedEvents(page), apiEvents(six, await tickOf(page)));
  });

  test("step advances one tick and reset returns to tick 0", async () => {
    await page.goto(`${base}?scenario=expiry`);
    await ready(page);
    const tl = await shownTimeline(page, base);
    await page.click("#step");
    assert.equal(await tickOf(page), 1);
    assert.deepEqual(await renderedEvents(page), apiEvents(tl, 1));
    await page.click("#step");
    await page.click("#step");
    assert.equal(await tickOf(page), 3);
    await page.click("#back");
    assert.equal(await tickOf(page), 2);
    await page.click("#reset");
    assert.equal(await tickOf(page), 0);
    assert.deepEqual(await renderedEvents(page), apiEvents(tl, 0));
    assert.match(await page.textContent("#status"), /0/);
  });

  test("changing min-lease recomputes the timeline and changes the table", async () => {
    await page.goto(`${base}?scenario=contention`);
    await ready(page);
    const before = await shownTimeline(page, base);
    const p = before.params;
    // The largest min-lease (up to the lease) that the real elector turns into other events.
    let chosen = null;
    for (let m = p.lease; m >= 1 && chosen === null; m--) {
      const q = new URLSearchParams({ scenario: "contention", min_lease: String(m) });
      const { body } = await json(`${base}api/simulate?${q}`);
      if (JSON.stringify(body.events) !== JSON.stringify(before.events)) chosen = m;
    }
    assert.notEqual(chosen, null, "some min-lease changes the contention timeline");
    for (let i = 0; i < before.max_tick; i++) await page.click("#step");
    const oldRows = await renderedEvents(page);

    await page.fill("#in-min_lease", String(chosen));
    await page.waitForFunction((m) => document.body.dataset.state === "ready"
      && (document.body.dataset.query || "").includes(`min_lease=${m}`), chosen, { timeout: PATIENCE });
    const after = await shownTimeline(page, base);
    assert.equal(after.params.min_lease, chosen);
    const tick = await tickOf(page);
    assert.equal(tick, Math.min(before.max_tick, after.max_tick), "the tick is kept across option changes");
    const newRows = await renderedEvents(page);
    assert.notDeepEqual(newRows, oldRows);
    assert.deepEqual(newRows, apiEvents(after, tick));
    // The picture: a finished holder's record still keeps a contender out.
    const lingering = after.frames.find((f) => f.holders.some((h) => f.nodes.find((n) => n.id === h.owner)?.status === "completed")
      && after.events.some((e) => e.tick === f.tick && (e.operation === "try_acquire" || e.operation === "skip")));
    await stepTo(page, lingering?.tick ?? tick);
    await page.screenshot({ path: path.join(SHOTS, "contention-min-lease.png"), fullPage: true });
  });

  test("a rejected request shows the API's error text", async () => {
    await page.goto(`${base}?scenario=contention`);
    await ready(page);
    const lease = Number(await page.inputValue("#in-lease"));
    const bad = Math.min(lease + 1, Number(await page.getAttribute("#in-min_lease", "max")));
    assert.ok(bad > lease, "the min-lease slider reaches past the lease");
    await page.fill("#in-min_lease", String(bad));
    await page.waitForSelector("#error:not([hidden])", { timeout: PATIENCE });
    const q = new URLSearchParams({ scenario: "contention", min_lease: String(bad) });
    const { status, body } = await json(`${base}api/simulate?${q}&lease=${lease}`);
    assert.equal(status, 400);
    assert.ok((await page.textContent("#error")).includes(body.error), `${await page.textContent("#error")} vs ${body.error}`);
  });

  test("the Fencing scenario links to the manual page, and only the Fencing scenario", async () => {
    await page.goto(`${base}?scenario=fencing`);
    await ready(page);
    assert.equal(await page.isVisible("#fence-doc a"), true);
    const href = await page.getAttribute("#fence-doc a", "href");
    const res = await fetch(new URL(href, base));
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type"), /^text\/markdown; charset=utf-8/);
    assert.match(await res.text(), /^# Fencing your writes/);
    await page.click('button[data-scenario="contention"]');
    await page.waitForFunction(() => document.body.dataset.state === "ready"
      && (document.body.dataset.query || "").startsWith("scenario=contention"), null, { timeout: PATIENCE });
    assert.equal(await page.isVisible("#fence-doc a"), false);
    await page.goto(`${base}?scenario=fencing&lang=ko`);
    await ready(page);
    assert.match(await page.textContent("#fence-doc a"), /펜스/);
  });

  test("the Korean page renders Korean labels and lang=ko", async () => {
    await page.goto(`${base}?scenario=fencing&lang=ko`);
    await ready(page);
    assert.equal(await page.getAttribute("html", "lang"), "ko");
    assert.equal((await page.textContent("#events-table thead th:nth-child(2)")).trim(), "후보");
    assert.equal((await page.textContent('button[data-scenario="fencing"]')).trim(), "펜싱");
    assert.match(await page.textContent("#play"), /재생/);
    assert.match(await page.textContent(".node .word"), /[\uac00-\ud7a3]/, "status words are Korean");
    const tl = await shownTimeline(page, base);
    await stepTo(page, interestingTick("fencing", tl));
    await page.screenshot({ path: path.join(SHOTS, "fencing-ko.png"), fullPage: true });
    // Every machine word of every scenario (status, operation, outcome) is shown in Korean.
    for (const id of SCENARIOS) {
      await page.click(`button[data-scenario="${id}"]`);
      await page.waitForFunction((s) => document.body.dataset.state === "ready"
        && (document.body.dataset.query || "").startsWith(`scenario=${s}`), id, { timeout: PATIENCE });
      const max = (await shownTimeline(page, base)).max_tick;
      await page.fill("#scrub", String(max));
      assert.equal(await tickOf(page), max);
      const words = await page.$$eval("#events td:nth-child(3), #events td.outcome, .node .word",
        (tds) => tds.map((td) => td.textContent));
      assert.ok(words.length > 0);
      for (const w of words) assert.match(w, /[\uac00-\ud7a3]/, `${id}: "${w}" is translated`);
    }
    await page.click("#lang-en");
    assert.equal(await page.getAttribute("html", "lang"), "en");
    assert.equal((await page.textContent("#events-table thead th:nth-child(2)")).trim(), "Candidate");
  });

  test("the dark theme applies and is remembered", async () => {
    await page.goto(`${base}?scenario=expiry`);
    await ready(page);
    await page.click('[data-theme-choice="dark"]');
    const bg = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
    const luminance = (rgb) => {
      const [r, g, b] = rgb.match(/\d+/g).map(Number);
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    assert.equal(await page.getAttribute("html", "data-theme"), "dark");
    assert.ok(luminance(await bg()) < 60, `dark background, got ${await bg()}`);
    await page.reload();
    await ready(page);
    assert.equal(await page.getAttribute("html", "data-theme"), "dark", "remembered across reloads");
    await stepTo(page, interestingTick("expiry", await shownTimeline(page, base)));
    await page.screenshot({ path: path.join(SHOTS, "expiry-dark.png"), fullPage: true });
    await page.click('[data-theme-choice="light"]');
    assert.ok(luminance(await bg()) > 200, `light background, got ${await bg()}`);
    await page.click('[data-theme-choice="auto"]');
    await page.emulateMedia({ colorScheme: "dark" });
    await page.waitForFunction(() => document.documentElement.dataset.theme === "dark");
    await page.emulateMedia({ colorScheme: "light" });
    await page.waitForFunction(() => document.documentElement.dataset.theme === "light");
  });

  test("keyboard alone can step, play and pause", async () => {
    await page.goto(`${base}?scenario=contention`);
    await ready(page);
    // Tab to the step button.
    let found = false;
    for (let i = 0; i < 60 && !found; i++) {
      await page.keyboard.press("Tab");
      found = await page.evaluate(() => document.activeElement?.id === "step");
    }
    assert.ok(found, "the step button is reachable with Tab");
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
    assert.notEqual(outline, "none", "focus is visible");
    await page.keyboard.press("Enter");
    assert.equal(await tickOf(page), 1);
    await page.keyboard.press("Space");
    assert.equal(await tickOf(page), 2);

    // Shift+Tab to play, Space starts and stops playback.
    await page.keyboard.press("Shift+Tab");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "play");
    await page.keyboard.press("Space");
    assert.equal(await page.getAttribute("#play", "aria-pressed"), "true");
    await page.waitForFunction(() => Number(document.getElementById("tick").dataset.tick) >= 3, null, { timeout: PATIENCE });
    await page.keyboard.press("Space");
    assert.equal(await page.getAttribute("#play", "aria-pressed"), "false");
    const paused = await tickOf(page);
    await page.waitForTimeout(1500);
    assert.equal(await tickOf(page), paused, "paused playback stays put");

    // Shortcuts outside controls: → steps, R resets.
    await page.evaluate(() => document.activeElement.blur());
    await page.keyboard.press("ArrowRight");
    assert.equal(await tickOf(page), paused + 1);
    await page.keyboard.press("r");
    assert.equal(await tickOf(page), 0);
    assert.ok((await page.textContent("#status")).length > 0, "the live status line says what happened");
  });

  test("targets are at least 44 px and reduced motion turns animation off", async () => {
    await page.goto(`${base}?scenario=group`);
    await ready(page);
    const small = await page.$$eval("button, input[type=range], label.check", (els) => els
      .filter((e) => e.offsetParent !== null)
      .map((e) => [e.id || e.textContent.trim(), e.getBoundingClientRect().height])
      .filter(([, h]) => h < 44));
    assert.deepEqual(small, []);
    await page.emulateMedia({ reducedMotion: "reduce" });
    const transition = await page.$eval(".ring .fill, .ring .track", (e) => getComputedStyle(e).transitionDuration);
    assert.match(transition, /^0s/);
    await page.emulateMedia({ reducedMotion: "no-preference" });
  });
});

describe("live view (leasehold serve)", () => {
  let dir, store, holder, server, base, context, page, profile;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "leasehold-live-"));
    store = `sqlite://${path.join(dir, "leases.db")}`;
    const env = { XDG_STATE_HOME: dir };
    // A real holder: `leasehold run` keeps the lock while its command sleeps.
    holder = spawn(BIN, ["run", "--store", store, "--lock", "live-demo", "--node-id", "browser-test",
      "--lease", "30s", "--", "sleep", "120"], { stdio: "ignore", env: { ...process.env, ...env } });
    server = startServer(["serve", "--store", store, "--lock", "live-demo", "--lock", "other-job",
      "--bind", "127.0.0.1:0"], env);
    base = await server.url;
    profile = mkdtempSync(path.join(tmpdir(), "leasehold-chromium-"));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport: { width: 1100, height: 620 },
    });
    page = context.pages()[0] ?? await context.newPage();
  });

  after(async () => {
    await context?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    if (holder) await stop(holder);
    if (server) assert.equal(await stop(server.child), 0, `serve did not shut down cleanly: ${server.stderr()}`);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("shows the holder of a held lock and the management JSON, and notices the release", async () => {
    await page.goto(base);
    await page.waitForSelector('tr[data-lock="live-demo"][data-owner="browser-test"]', { timeout: PATIENCE });
    const { body } = await json(`${base}api/live`);
    const live = body.locks.find((l) => l.lock === "live-demo");
    assert.equal(live.holders[0].owner, "browser-test");
    assert.equal(await page.getAttribute('tr[data-lock="live-demo"]', "data-fence"), String(live.holders[0].fence));
    await page.waitForFunction(() => document.getElementById("manage").textContent.includes("browser-test"), null, { timeout: PATIENCE });
    assert.ok(await page.isVisible('[data-lock="other-job"][data-kind="free"]'));
    await page.screenshot({ path: path.join(SHOTS, "live.png"), fullPage: true });

    await stop(holder);
    await page.waitForSelector('[data-lock="live-demo"][data-kind="free"]', { timeout: PATIENCE });
  });
});
