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
import { spawn, spawnSync } from "node:child_process";
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
const SCENARIOS = ["contention", "expiry", "extension", "group", "fencing", "period", "partition"];
// Without the background-networking flags chromium keeps trying to reach the network, which
// this machine's closed network turns into stalls.
const CHROMIUM_ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
];
const VIEWPORT = { width: 1100, height: 800 };
const PATIENCE = 30_000; // generous: the machine is small and shared

// The guided lessons as the page must show them: what each step loads, the tick it points at,
// its title in both languages, and a fact of that frame that the step's text talks about.
const LESSONS = [
  { scenario: "contention", params: { action: 8, lease: 10, wait: 2, min_lease: 0, auto_extend: false }, tick: 3,
    en: { title: "One holder at a time; the others skip", name: "Contention", text: /run_if_leader returns Ok\(None\)/ },
    ko: { title: "한 번에 하나만 보유하고, 나머지는 건너뜁니다", name: "락 경쟁", text: /Ok\(None\)/ },
    fact: async (page) => {
      assert.deepEqual(await statuses(page), ["running", "skipped", "idle"]);
      assert.equal(await page.getAttribute(".record", "data-owner"), "node-a");
    } },
  { scenario: "expiry", params: { action: 12, lease: 6, wait: 2, min_lease: 0, auto_extend: false }, tick: 6,
    en: { title: "A lease ends by itself when nobody renews it", name: "Expiry + takeover", text: /crashed or froze/ },
    ko: { title: "아무도 갱신하지 않으면 리스는 저절로 끝납니다", name: "만료와 인계", text: /죽거나 멈춘/ },
    fact: async (page) => {
      assert.equal(await page.getAttribute(".record", "data-owner"), "node-b");
      assert.equal(await page.$$eval('#events tr[data-tick="6"][data-operation="expire"]', (trs) => trs.map((tr) => tr.dataset.token).join()), "a·1");
      assert.equal(await page.getAttribute('#events tr[data-tick="6"][data-operation="acquire"]', "data-fence"), "2");
    } },
  { scenario: "extension", params: { action: 12, lease: 6, wait: 2, min_lease: 0, auto_extend: true }, tick: 6,
    en: { title: "Renewal keeps a lease alive", name: "Auto extension", text: /watchdog renews the lease/ },
    ko: { title: "갱신이 리스를 유지합니다", name: "자동 연장", text: /워치독/ },
    fact: async (page) => {
      assert.equal(await page.getAttribute(".record", "data-owner"), "node-a");
      assert.match(await page.textContent(".record"), /12/);
      assert.deepEqual(await page.$$eval('#events tr[data-operation="extend"]', (trs) => trs.map((tr) => Number(tr.dataset.tick)).reverse()), [2, 4, 6]);
      assert.deepEqual(await statuses(page), ["running", "skipped", "idle"]);
    } },
  { scenario: "fencing", params: { action: 10, lease: 4, wait: 4, min_lease: 0, auto_extend: false }, tick: 10,
    en: { title: "The fence stops a holder that lost its lease", name: "Fencing", text: /lower fence/ },
    ko: { title: "펜스가 리스를 잃은 보유자를 막습니다", name: "펜싱", text: /낮은 펜스/ },
    fact: async (page) => {
      assert.equal(await page.getAttribute("#resource-box", "data-rejected-slots"), "0");
      assert.equal(await page.getAttribute('#events tr[data-tick="10"][data-operation="write"]', "data-outcome"), "rejected_fence");
      assert.equal(await page.getAttribute('#resource-box [data-slot="0"]', "data-highest"), "3");
    } },
  { scenario: "group", params: { action: 8, lease: 10, wait: 2, min_lease: 0, auto_extend: false, slots: 2 }, tick: 1,
    en: { title: "A group: at most N holders at once", name: "1 → N slots", text: /max_leaders 2/ },
    ko: { title: "그룹: 동시에 최대 N개의 보유자", name: "1 → N 슬롯", text: /max_leaders가 2/ },
    fact: async (page) => {
      assert.deepEqual(await page.$$eval(".record", (rs) => rs.map((r) => r.dataset.owner)), ["node-a", "node-b"]);
      assert.deepEqual(await statuses(page), ["running", "running", "waiting", "idle"]);
    } },
  { scenario: "contention", params: { action: 2, lease: 10, wait: 2, min_lease: 6, auto_extend: false }, tick: 3, code: "settings",
    en: { title: "Wait, lease, min lease, action: what each one decides", name: "Contention", text: /min lease keeps the record until tick 6/ },
    ko: { title: "대기 시간, 리스, 최소 리스, 작업 시간: 각각이 정하는 것", name: "락 경쟁", text: /최소 리스 때문에/ },
    fact: async (page) => {
      // node-a is done, yet its min lease keeps the record, and node-b skipped.
      assert.deepEqual(await statuses(page), ["completed", "skipped", "idle"]);
      assert.equal(await page.getAttribute(".record", "data-owner"), "node-a");
      assert.equal(await page.getAttribute('#events tr[data-tick="2"][data-operation="release"]', "data-outcome"), "lingered");
      assert.equal(await page.getAttribute('#events tr[data-operation="skip"]', "data-candidate"), "node-b");
      assert.match(await page.textContent("#lesson-code-text"), /\.min_lease\(Duration::from_secs\(6\)\)/);
    } },
  { scenario: "contention", params: { action: 8, lease: 10, wait: 2, min_lease: 0, auto_extend: false, fail_action: "c" }, tick: 17, code: "direct",
    en: { title: "Two ways to call: an Option, or an outcome that names each case", name: "Contention", text: /Ok\(None\) when another node kept the lock/ },
    ko: { title: "두 가지 호출 방식: Option, 또는 경우마다 이름이 있는 결과", name: "락 경쟁", text: /Outcome/ },
    fact: async (page) => {
      assert.deepEqual(await statuses(page), ["completed", "skipped", "action_failed"]);
      assert.equal(await page.getAttribute('#events tr[data-operation="fail"]', "data-outcome"), "action_failed");
      assert.equal(await page.getAttribute('#events tr[data-operation="skip"]', "data-candidate"), "node-b");
      const code = await page.textContent("#lesson-code-text");
      for (const name of ["elector.run_if_leader(", "elector.run(", "Outcome::Elected", "Outcome::Taken(_)", "Outcome::ActionFailed"]) {
        assert.ok(code.includes(name), `the code shows ${name}`);
      }
    } },
  { scenario: "contention", params: { action: 4, lease: 10, wait: 4, min_lease: 0, auto_extend: false, fail_action: "a" }, tick: 4, code: "direct",
    en: { title: "A failed action still gives the lock back", name: "Contention", text: /Outcome::ActionFailed/ },
    ko: { title: "작업이 실패해도 락은 반환됩니다", name: "락 경쟁", text: /ActionFailed/ },
    fact: async (page) => {
      assert.deepEqual(await statuses(page), ["action_failed", "running", "idle"]);
      const fail = '#events tr[data-tick="4"][data-operation="fail"]';
      assert.equal(await page.getAttribute(fail, "data-candidate"), "node-a");
      assert.equal(await page.getAttribute(fail, "data-outcome"), "action_failed");
      assert.match(await page.getAttribute(fail, "class"), /\bbad\b/);
      assert.equal(await page.getAttribute('#events tr[data-tick="4"][data-operation="acquire"]', "data-candidate"), "node-b");
      assert.equal(await page.$$eval('#events tr[data-outcome="skipped"]', (trs) => trs.length), 0);
      assert.equal(await page.getAttribute("#action-box", "data-failed"), "node-a:action_failed");
    } },
  { scenario: "contention", params: { action: 8, lease: 10, wait: 2, min_lease: 0, auto_extend: false, outage_from: 1, outage_ticks: 3 }, tick: 3, code: "errors",
    en: { title: "A store error is never reported as contention", name: "Contention", text: /returns Err \(a store error\), not Ok\(None\)/ },
    ko: { title: "저장소 오류는 절대 락 경쟁으로 보고되지 않습니다", name: "락 경쟁", text: /Ok\(None\)이 아니라/ },
    fact: async (page) => {
      assert.deepEqual(await statuses(page), ["running", "store_error", "idle"]);
      const b = await page.$$eval('#events tr[data-candidate="node-b"]', (trs) => trs.map((tr) => [tr.dataset.tick, tr.dataset.operation, tr.dataset.outcome]).reverse());
      assert.deepEqual(b, [["1", "try_acquire", "store_error"], ["3", "fail", "store_error"]]);
      assert.equal(await page.getAttribute("#action-box", "data-failed"), "node-b:store_error");
      assert.match(await page.textContent("#lesson-code-text"), /Error::Store/);
    } },
  { scenario: "contention", params: { action: 8, lease: 10, wait: 2, min_lease: 0, auto_extend: false }, tick: 3, code: "attribute",
    en: { title: "#[leader_only]: the same boundary, written on the function", name: "Contention", text: /expands to that very call/ },
    ko: { title: "#[leader_only]: 같은 경계를 함수에 적습니다", name: "락 경쟁", text: /펼쳐지므로/ },
    fact: async (page) => {
      // Step 1's run, computed with the closure: the attribute expands to the same call.
      assert.deepEqual(await statuses(page), ["running", "skipped", "idle"]);
      assert.match(await page.textContent("#lesson-code-text"), /#\[leasehold::leader_only\(elector = self\.elector, lock = "invoice-close"/);
    } },
];
/** The query string the page sends for a lesson (same parameter order as the page). */
function lessonQuery(l) {
  const q = new URLSearchParams({ scenario: l.scenario });
  for (const k of ["action", "lease", "wait", "min_lease"]) q.set(k, String(l.params[k]));
  q.set("auto_extend", String(l.params.auto_extend));
  if (l.params.slots !== undefined) q.set("slots", String(l.params.slots));
  if (l.params.fail_action) q.set("fail_action", l.params.fail_action);
  if (l.params.outage_ticks) {
    q.set("outage_from", String(l.params.outage_from));
    q.set("outage_ticks", String(l.params.outage_ticks));
  }
  return q.toString();
}
async function statuses(page) {
  return page.$$eval(".node", (ns) => ns.map((n) => n.dataset.status));
}
/** Waits until the page shows a timeline whose query satisfies `pred` (a string: contains it). */
async function shows(page, want) {
  await page.waitForFunction((w) => document.body.dataset.state === "ready"
    && (document.body.dataset.query || "").includes(w), want, { timeout: PATIENCE });
}

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
    slot: tr.dataset.slot === "" ? null : Number(tr.dataset.slot),
    ttl: tr.dataset.ttl === "" ? null : Number(tr.dataset.ttl), outcome: tr.dataset.outcome,
    cells: tr.cells.length,
  })));
  for (const r of rows) assert.equal(r.cells, 7, "every row shows the seven columns");
  return rows.reverse().map(({ cells, ...r }) => r);
}

function apiEvents(timeline, upTo) {
  return timeline.events.filter((e) => e.tick <= upTo).map((e) => ({
    tick: e.tick, candidate: e.candidate, operation: e.operation, token: e.token ?? null,
    fence: e.fence ?? null, slot: e.slot ?? null, ttl: e.ttl ?? null, outcome: e.outcome,
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
/**
 * Until the returned function is called, every simulation request the page sends leaves with
 * the parameters `change(params)` returns set on it: a request the server refuses, though the
 * page's controls offer none (as from an out-of-date page or a hand-edited request).
 */
async function rewriteSimulate(page, change) {
  const handler = (route) => {
    const url = new URL(route.request().url());
    for (const [k, v] of Object.entries(change(url.searchParams))) url.searchParams.set(k, String(v));
    return route.continue({ url: url.toString() });
  };
  await page.route("**/api/simulate?*", handler);
  return () => page.unroute("**/api/simulate?*", handler);
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
    // The crashed node's first lease runs out: its shard is free, the others not yet taken.
    partition: () => eventTick((e) => e.operation === "expire"),
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

  test("the page says what a tick is and which version of leasehold it runs, in English and Korean", async () => {
    // The version the binary reports is the one the server answers and the page shows.
    const cli = spawnSync(BIN, ["--version"], { encoding: "utf8" });
    const version = cli.stdout.trim().replace(/^leasehold /, "");
    assert.match(version, /^\d+\.\d+\.\d+/);
    const { status, body } = await json(`${base}api/version`);
    assert.equal(status, 200);
    assert.deepEqual(body, { name: "leasehold", version });
    await page.goto(`${base}?scenario=contention&lang=en`);
    await ready(page);
    await page.waitForSelector("#version:not([hidden])", { timeout: PATIENCE });
    assert.equal(await page.textContent("#version"), `version ${version}`);
    assert.equal(await page.getAttribute("#version", "data-version"), version);
    assert.ok(await page.isVisible("#tick-note"));
    assert.equal(await page.textContent("#tick-note"),
      "One tick is 1 s of virtual time. The in-memory store answers at once: no store latency is modelled.");
    await page.click("#lang-ko");
    assert.equal(await page.textContent("#version"), `버전 ${version}`);
    assert.equal(await page.textContent("#tick-note"),
      "1틱은 가상 시간 1초입니다. 메모리 저장소가 즉시 응답하므로 저장소 지연은 모델링하지 않습니다.");
    await page.goto(`${base}?scenario=contention&lang=ko`);
    await ready(page);
    await page.waitForSelector("#version:not([hidden])", { timeout: PATIENCE });
    assert.equal(await page.textContent("#version"), `버전 ${version}`, "a Korean page shows it in Korean from the start");
    await page.click("#lang-en");
    // The page works without the version (an older server): nothing is shown for it.
    await page.route("**/api/version", (route) => route.fulfill({ status: 404, body: "not found" }));
    await page.reload();
    await ready(page);
    assert.equal(await page.isHidden("#version"), true);
    await page.unroute("**/api/version");
  });

  test("the API lists the seven scenarios in display order", async () => {
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
      if (id === "partition") {
        // One row per shard instead of one record per slot.
        const shards = await page.$$eval(".shard-row", (rs) => rs.map((r) => [Number(r.dataset.shard), r.dataset.owner]));
        assert.deepEqual(shards, last.shards.map((s) => [s.shard, s.owner ?? ""]));
      } else {
        const owners = await page.$$eval(".record", (rs) => rs.map((r) => r.dataset.owner));
        assert.equal(owners.length, tl.params.slots);
        for (const h of last.holders) assert.equal(owners[h.slot], h.owner);
      }

      // A picture at the tick where the scenario makes its point.
      const tick = interestingTick(id, tl);
      await stepTo(page, tick);
      assert.deepEqual(await renderedEvents(page), apiEvents(tl, tick));
      await page.screenshot({ path: path.join(SHOTS, `${id}.png`), fullPage: true });
    });
  }

  test("partition: shards spread over the joining nodes, move at once on a leave and only after expiry on a crash", async () => {
    await page.goto(`${base}?scenario=partition&lang=en`);
    await ready(page);
    // Only the lease, the shard count and the node count are offered.
    for (const k of ["lease", "shards", "nodes"]) assert.ok(await page.isVisible(`[data-param="${k}"]`), `${k} shows`);
    for (const k of ["action", "wait", "min_lease", "slots", "period", "fail_action", "outage_from", "outage_ticks", "auto_extend"]) {
      assert.ok(await page.isHidden(`[data-param="${k}"]`), `${k} is hidden`);
    }
    const tl = await shownTimeline(page, base);
    assert.equal(tl.scenario, "partition");
    assert.equal(tl.partition.overlaps, 0);
    assert.ok(tl.partition.fences_rise);
    const shards = tl.params.shards;
    // Just before the leave (tick 17) the three members share the shards within one of even.
    await stepTo(page, 17);
    const owners = await page.$$eval(".shard-row", (rs) => rs.map((r) => r.dataset.owner));
    assert.equal(owners.length, shards);
    assert.ok(owners.every((o) => o !== ""), `every shard owned: ${owners}`);
    const counts = ["node-a", "node-b", "node-c"].map((n) => owners.filter((o) => o === n).length);
    assert.ok(Math.max(...counts) - Math.min(...counts) <= 1, `balanced: ${counts}`);
    assert.equal(await page.getAttribute("#action-box", "data-free"), "");
    assert.deepEqual(await page.$$eval("#lanes tbody tr", (rs) => rs.length), shards, "one lane per shard");
    // After the crash (tick 24) node-c's shards stay with it until its leases expire.
    const crashed = tl.frames[24].nodes.find((n) => n.id === "node-c");
    assert.equal(crashed.status, "crashed");
    assert.ok(crashed.shards.length > 0);
    await page.fill("#scrub", "24");
    assert.equal(await page.getAttribute('.node[data-node="node-c"]', "data-status"), "crashed");
    assert.match(await page.textContent("#action-box"), /node-c crashed: its shards \(/);
    const tick = interestingTick("partition", tl);
    await page.fill("#scrub", String(tick));
    assert.ok((await page.$$eval('#events tr[data-operation="expire"]', (trs) => trs.length)) > 0);
    assert.match(await page.textContent('#events tr[data-operation="expire"] td:nth-child(5)'), /· shard \d+/);
    await page.screenshot({ path: path.join(SHOTS, "partition.png"), fullPage: true });
    // Twelve shards, four nodes: the timeline is recomputed, one row per shard.
    await page.fill("#in-shards", "12");
    await page.waitForFunction(() => document.body.dataset.state === "ready"
      && (document.body.dataset.query || "").includes("shards=12"), null, { timeout: PATIENCE });
    assert.equal((await page.$$(".shard-row")).length, 12);
    await page.fill("#in-nodes", "4");
    await page.waitForFunction(() => document.body.dataset.state === "ready"
      && (document.body.dataset.query || "").includes("nodes=4"), null, { timeout: PATIENCE });
    const four = await shownTimeline(page, base);
    assert.deepEqual(four.candidates, ["node-a", "node-b", "node-c", "node-d"]);
    assert.equal(four.partition.overlaps, 0);
    // In Korean.
    await page.click("#lang-ko");
    assert.equal((await page.textContent('button[data-scenario="partition"]')).trim(), "샤드: 합류, 떠남, 중단");
    await page.click("#lang-en");
  });

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

  for (const lang of ["en", "ko"]) {
    test(`guided lessons (${lang}): every step loads its scenario and tick and shows its own text`, async () => {
      await page.goto(`${base}?lang=${lang}`);
      await ready(page);
      assert.equal(await page.isVisible("#lesson"), false, "no step is open until one is chosen");
      const steps = await page.$$eval("#steps button", (bs) => bs.map((b) => [b.dataset.lesson, b.textContent]));
      assert.deepEqual(steps.map(([n]) => n), LESSONS.map((_, i) => String(i + 1)));
      assert.equal(steps[9][1], lang === "en" ? "10 Attribute" : "10 속성");
      await page.click('#steps button[data-lesson="1"]');
      for (let i = 0; i < LESSONS.length; i++) {
        const l = LESSONS[i], words = l[lang];
        await page.waitForFunction(([n, q]) => document.body.dataset.state === "ready"
          && document.body.dataset.lesson === n && document.body.dataset.query === q,
          [String(i + 1), lessonQuery(l)], { timeout: PATIENCE });
        // The scenario and options loaded, at the step's tick.
        assert.equal(await page.getAttribute(`button[data-scenario="${l.scenario}"]`, "aria-pressed"), "true");
        assert.equal(await page.getAttribute(`#steps button[data-lesson="${i + 1}"]`, "aria-pressed"), "true");
        assert.equal(await tickOf(page), l.tick);
        const tl = await shownTimeline(page, base);
        for (const [k, v] of Object.entries(l.params)) assert.equal(tl.params[k], v, `${l.scenario}: ${k}`);
        assert.deepEqual(await renderedEvents(page), apiEvents(tl, l.tick));
        await l.fact(page);
        // Its text, in the page's language.
        assert.equal(await page.textContent("#lesson-title"), words.title);
        assert.match(await page.textContent("#lesson-text"), words.text);
        const loads = await page.textContent("#lesson-loads");
        assert.ok(loads.startsWith(words.name), `${loads} names ${words.name}`);
        assert.match(loads, lang === "en" ? /Lease 10 ticks|Lease 6 ticks|Lease 4 ticks/ : /리스 \d+틱/);
        assert.match(await page.textContent("#lesson-look-label"), lang === "en" ? new RegExp(`^Look at tick ${l.tick}$`) : new RegExp(`^틱 ${l.tick}에서 볼 것$`));
        assert.ok((await page.textContent("#lesson-look")).length > 20);
        assert.match(await page.textContent("#lesson-eyebrow"), lang === "en" ? new RegExp(`Step ${i + 1} of 10`) : new RegExp(`10단계 중 ${i + 1}단계`));
        // The code block shows for the steps that have code, in Rust whatever the language.
        assert.equal(await page.isVisible("#lesson-code"), !!l.code, `step ${i + 1}: code block`);
        assert.equal(await page.getAttribute("#lesson-code", "data-snippet"), l.code ?? "");
        if (l.code) assert.equal(await page.textContent("#lesson-code figcaption"), lang === "en" ? "The code (Rust)" : "코드 (Rust)");
        assert.equal(await page.isVisible("#lesson-changed"), false);
        const status = await page.textContent("#status");
        assert.ok(status.includes(words.title), `the status line names the step: ${status}`);
        if (lang === "ko") for (const id of ["#lesson-title", "#lesson-text", "#lesson-look"]) assert.match(await page.textContent(id), /[\uac00-\ud7a3]/);
        assert.equal(await page.isDisabled("#lesson-prev"), i === 0);
        assert.equal(await page.isDisabled("#lesson-next"), i === LESSONS.length - 1);
        if (lang === "en" && i === 3) await page.screenshot({ path: path.join(SHOTS, "lesson-fencing.png"), fullPage: true });
        if (lang === "ko" && i === 0) await page.screenshot({ path: path.join(SHOTS, "lesson-ko.png"), fullPage: true });
        if (i >= 5) await page.screenshot({ path: path.join(SHOTS, `lesson-${i + 1}-${lang}.png`), fullPage: true });
        if (i < LESSONS.length - 1) await page.click("#lesson-next");
      }
      // Back one step.
      await page.click("#lesson-prev");
      await page.waitForFunction(() => document.body.dataset.lesson === "9" && document.body.dataset.state === "ready", null, { timeout: PATIENCE });
      assert.equal(await tickOf(page), LESSONS[8].tick);
    });
  }

  test("lesson 6: the min lease keeps node-b skipping; without it node-b is elected when node-a releases", async () => {
    await page.goto(`${base}?lesson=6&lang=en`);
    await shows(page, lessonQuery(LESSONS[5]));
    assert.equal(await tickOf(page), 3);
    assert.match(await page.textContent("#action-box"), /node-a has finished, yet the store keeps its record until tick 6 \(minimum lease\)/);
    assert.match(await page.textContent("#lesson-loads"), /Min lease 6 ticks/);
    const record = await page.textContent(".record");
    assert.match(record, /tick 6/);
    await page.fill("#in-min_lease", "0");
    await shows(page, "min_lease=0");
    assert.equal(await tickOf(page), 3);
    assert.equal(await page.getAttribute('#events tr[data-candidate="node-b"][data-operation="acquire"]', "data-tick"), "2");
    assert.deepEqual(await statuses(page), ["completed", "running", "idle"]);
    assert.equal(await page.isVisible("#lesson-changed"), true, "no longer the step's timeline");
  });

  for (const lang of ["en", "ko"]) {
    test(`failures (${lang}): a failed action and a store error show as errors, never as skips`, async () => {
      const words = {
        en: { action: "action failed", store: "store error", fail: "fail", skip: "skipped",
          actionNote: /node-a: its action returned an error, so run reported Outcome::ActionFailed/,
          storeNote: /node-b: the store failed until its wait ran out, so its call returned Err \(a store error\), not Ok\(None\): a store error is never reported as contention/,
          down: /The store cannot be reached in this tick \(store outage, ticks 1–3\)/, loads: /store down in ticks 1–3/, failLoads: /Failing action node-a/ },
        ko: { action: "작업 실패", store: "저장소 오류", fail: "실패", skip: "건너뜀",
          actionNote: /node-a: 작업이 오류를 돌려주어 run이 Outcome::ActionFailed를 보고했고/,
          storeNote: /node-b: 대기 시간이 끝날 때까지 저장소가 실패하여, 호출은 Ok\(None\)이 아니라 Err\(저장소 오류\)를 돌려주었습니다\. 저장소 오류는 절대 락 경쟁으로 보고되지 않습니다/,
          down: /이 틱에는 저장소에 연결할 수 없습니다\(저장소 장애, 틱 1~3\)/, loads: /저장소 장애 틱 1~3/, failLoads: /실패하는 작업 node-a/ },
      }[lang];
      // Step 8: node-a's action fails at tick 4.
      await page.goto(`${base}?lesson=8&lang=${lang}`);
      await shows(page, lessonQuery(LESSONS[7]));
      const fail = '#events tr[data-candidate="node-a"][data-operation="fail"]';
      assert.equal(await page.textContent(`${fail} td.outcome`), words.action);
      assert.equal(await page.textContent(`${fail} td:nth-child(3)`), words.fail);
      assert.match(await page.getAttribute(fail, "class"), /\bbad\b/);
      assert.equal(await page.textContent('.node[data-node="node-a"] .word'), words.action);
      assert.match(await page.textContent('#action-box .failnote[data-node="node-a"]'), words.actionNote);
      assert.match(await page.textContent("#lesson-loads"), words.failLoads);
      assert.equal(await page.inputValue("#in-fail_action"), "a");
      assert.match(await page.textContent("#legend"), new RegExp(`F = ${words.action}`));
      // Step 9: the store is down in ticks 1 to 3; node-b's call ends in a store error.
      await page.click("#lesson-next");
      await shows(page, lessonQuery(LESSONS[8]));
      assert.equal(await tickOf(page), 3);
      const b = '#events tr[data-candidate="node-b"]';
      assert.deepEqual(await page.$$eval(`${b} td.outcome`, (tds) => tds.map((td) => td.textContent)), [words.store, words.store]);
      assert.deepEqual(await page.$$eval(b, (trs) => trs.map((tr) => tr.className.includes("bad"))), [true, true]);
      assert.equal(await page.$$eval(`${b}[data-outcome="skipped"], ${b}[data-outcome="contended"]`, (trs) => trs.length), 0);
      assert.ok(!(await page.textContent(`${b}[data-operation="fail"]`)).includes(words.skip));
      assert.equal(await page.textContent('.node[data-node="node-b"] .word'), words.store);
      assert.match(await page.textContent('#action-box .failnote[data-node="node-b"]'), words.storeNote);
      assert.match(await page.textContent("#action-box"), words.down);
      assert.match(await page.textContent("#lesson-loads"), words.loads);
      assert.deepEqual([await page.inputValue("#in-outage_from"), await page.inputValue("#in-outage_ticks")], ["1", "3"]);
      await page.screenshot({ path: path.join(SHOTS, `store-error-${lang}.png`), fullPage: true });
      // After the outage the store note is gone from the action box, and the error stays.
      await page.click("#step");
      assert.doesNotMatch(await page.textContent("#action-box"), words.down);
      assert.equal(await page.getAttribute("#action-box", "data-failed"), "node-b:store_error");
    });
  }

  test("the failure options: choosing a failing node and an outage recomputes, within the run's ticks", async () => {
    await page.goto(`${base}?scenario=contention`);
    await ready(page);
    const choices = await page.$$eval("#in-fail_action option", (os) => os.map((o) => [o.value, o.textContent]));
    assert.deepEqual(choices, [["", "none"], ["a", "node-a"], ["b", "node-b"], ["c", "node-c"]]);
    await page.selectOption("#in-fail_action", "c");
    await shows(page, "fail_action=c");
    const tl = await shownTimeline(page, base);
    assert.equal(tl.params.fail_action, "c");
    assert.ok(tl.events.some((e) => e.candidate === "node-c" && e.outcome === "action_failed"));
    await page.selectOption("#in-fail_action", "");
    await page.waitForFunction(() => document.body.dataset.state === "ready" && !document.body.dataset.query.includes("fail_action"), null, { timeout: PATIENCE });
    // The outage's length slider ends where the run does: 22 + 1 - 20 = 3 ticks from tick 20.
    await page.fill("#in-outage_from", "20");
    await shows(page, "outage_from=20&outage_ticks=0");
    assert.equal(await page.getAttribute("#in-outage_ticks", "max"), "3");
    await page.fill("#in-outage_ticks", "3");
    await shows(page, "outage_ticks=3");
    assert.equal(await page.isHidden("#error"), true);
    await page.fill("#in-outage_ticks", "0");
    await page.fill("#in-outage_from", "0");
    await page.waitForFunction(() => document.body.dataset.state === "ready" && !document.body.dataset.query.includes("outage"), null, { timeout: PATIENCE });
    // The group offers its fourth node.
    await page.click('button[data-scenario="group"]');
    await shows(page, "scenario=group");
    assert.equal(await page.$$eval("#in-fail_action option", (os) => os.length), 5);
  });

  test("guided lessons: a deep link opens a step, a changed option is noticed, and Show loads the step again", async () => {
    await page.goto(`${base}?lesson=3`);
    await shows(page, lessonQuery(LESSONS[2]));
    assert.equal(await page.getAttribute("#lesson", "data-lesson"), "3");
    assert.equal(await tickOf(page), 6);
    assert.match(page.url(), /lesson=3/);
    // Stepping does not leave the step; "Show tick 6" comes back to its tick.
    await page.click("#step");
    assert.equal(await tickOf(page), 7);
    assert.equal(await page.isVisible("#lesson-changed"), false);
    await page.click("#lesson-show");
    assert.equal(await tickOf(page), 6);
    // Another lease: the shown timeline is no longer the step's, and the card says so.
    await page.fill("#in-lease", "9");
    await shows(page, "lease=9");
    assert.equal(await page.isVisible("#lesson-changed"), true);
    assert.equal(await page.getAttribute("#lesson", "data-matches"), "false");
    await page.click("#lesson-show");
    await page.waitForFunction((q) => document.body.dataset.query === q && document.body.dataset.state === "ready", lessonQuery(LESSONS[2]), { timeout: PATIENCE });
    assert.equal(await tickOf(page), 6);
    assert.equal(await page.isVisible("#lesson-changed"), false);
    assert.equal(await page.inputValue("#in-lease"), "6");
  });

  test("fencing: a stale holder stops being stale when its action ends (ticks 10, 14 and 22)", async () => {
    await page.goto(`${base}?scenario=fencing`);
    await ready(page);
    const tl = await shownTimeline(page, base);
    const box = async () => ({
      stale: await page.getAttribute("#action-box", "data-stale"),
      ended: await page.getAttribute("#action-box", "data-ended"),
      text: await page.textContent("#action-box"),
    });
    await stepTo(page, 10);
    assert.deepEqual(await statuses(page), tl.frames[10].nodes.map((n) => n.status));
    assert.deepEqual(await statuses(page), ["finished_stale", "stale", "running"]);
    assert.equal((await box()).stale, "node-b");

    await stepTo(page, 14);
    assert.deepEqual(await statuses(page), ["finished_stale", "finished_stale", "stale"]);
    let b = await box();
    assert.equal(b.stale, "node-c", "only node-c's action still runs at tick 14");
    assert.equal(b.ended, "node-a,node-b");
    assert.match(b.text, /^node-c is stale/);
    assert.match(b.text, /Ended without a lease, no longer running: node-a, node-b/);

    await stepTo(page, 22);
    b = await box();
    assert.equal(b.stale, "");
    assert.equal(b.ended, "node-a,node-b,node-c");
    assert.doesNotMatch(b.text, /still running/);
    assert.match(b.text, /^No leader/);
    assert.equal(await page.textContent('.node[data-node="node-a"] .word'), "ended without lease");
    assert.match(await page.textContent("#legend"), /x = ended without lease/);
    await page.click("#lang-ko");
    assert.equal(await page.textContent('.node[data-node="node-a"] .word'), "리스 없이 종료");
    assert.doesNotMatch(await page.textContent("#action-box"), /실행 중입니다/);
    await page.click("#lang-en");
  });

  test("a refusal is worded in the page's language, with the server's English text kept beneath", async () => {
    await page.goto(`${base}?scenario=contention&lang=ko`);
    await ready(page);
    const error = () => page.$eval("#error", (e) => ({
      hidden: e.hidden, code: e.dataset.code, translated: e.dataset.translated,
      text: e.childNodes[0]?.textContent ?? "", english: e.querySelector('.detail [lang="en"]')?.textContent ?? null,
    }));
    // Every query below gets a refusal of another code; the page sends its own query, which the
    // test rewrites on the way out (the page's controls offer none of these).
    const refusals = [
      ["scenario=contention&lease=10&min_lease=11", "min_lease_above_lease", /^서버가 옵션을 거부했습니다: 최소 리스\(min_lease\)는 0부터 리스 길이\(10틱\)까지만 될 수 있습니다\(받은 값: 11틱\)\.$/],
      ["scenario=contention&wait=21", "out_of_range", /^서버가 옵션을 거부했습니다: 대기 시간\(wait\) 값은 0~20틱 사이여야 합니다\(받은 값: 21틱\)\.$/],
      ["scenario=group&slots=4", "out_of_range", /슬롯\(slots\) 값은 1~3개 사이여야 합니다\(받은 값: 4개\)/],
      ["scenario=expiry&slots=2", "slots_outside_group", /만료와 인계\(expiry\) 시나리오에서는 슬롯\(slots\)이 1이어야 합니다/],
      ["scenario=fencing&period=8", "period_outside_period_scenario", /펜싱\(fencing\) 시나리오에는 쓸 수 없습니다\(받은 값: 8틱\)/],
      ["scenario=nope", "unknown_scenario", /알 수 없는 시나리오 “nope”입니다. 쓸 수 있는 시나리오: contention, expiry, extension, group, fencing, period, partition\./],
      ["action=8", "missing_scenario", /시나리오\(scenario\) 매개변수가 없습니다/],
      ["scenario=contention&colour=red", "unknown_parameter", /알 수 없는 매개변수 “colour”입니다/],
      ["scenario=contention&wait=1&wait=2", "duplicate_parameter", /매개변수 “wait”가 두 번 주어졌습니다/],
      ["scenario=contention&lease=ten", "not_a_number", /매개변수 “lease”에는 정수.*받은 값: “ten”/],
      ["scenario=contention&auto_extend=maybe", "not_a_flag", /매개변수 “auto_extend”에는 true 또는 false를/],
      ["scenario=contention&outage_from=21&outage_ticks=3", "outage_beyond_run", /저장소 장애 구간은 실행 범위\(틱 0~22\) 안에 있어야 합니다\(받은 값: 시작 틱 21, 길이 3틱\)/],
      ["scenario=group&shards=8", "does_not_apply", /샤드 수\(shards\)는 1 → N 슬롯\(group\) 시나리오에 쓸 수 없습니다/],
      ["scenario=contention&fail_action=node-d", "unknown_candidate", /실패하는 작업\(fail_action\)은 락 경쟁\(contention\) 시나리오의 후보\(node-a, node-b, node-c\) 중 하나여야 합니다\(받은 값: “node-d”\)/],
    ];
    const seen = new Set();
    for (const [i, [query, code, korean]] of refusals.entries()) {
      const { status, body } = await json(`${base}api/simulate?${query}`);
      assert.equal(status, 400, query);
      assert.equal(body.code, code, query);
      const handler = (route) => route.continue({ url: `${base}api/simulate?${query}` });
      await page.route("**/api/simulate?*", handler);
      await page.fill("#in-wait", String(i % 2 ? 3 : 4));
      await page.waitForFunction((c) => !document.getElementById("error").hidden && document.getElementById("error").dataset.code === c
        && document.body.dataset.state === "error", code, { timeout: PATIENCE });
      await page.unroute("**/api/simulate?*", handler);
      const shown = await error();
      assert.match(shown.text, korean, query);
      assert.equal(shown.translated, "true", query);
      assert.equal(shown.english, body.error, `${query}: the server's English text is kept`);
      assert.match(await page.textContent("#error .detail"), /^서버의 원래 메시지\(영어\):/);
      assert.doesNotMatch(shown.text, /must|between|got/, `${query}: no English in the Korean sentence`);
      seen.add(code);
      if (i === 0) await page.screenshot({ path: path.join(SHOTS, "refusal-ko.png"), fullPage: true });
      // In English the page shows the server's own text, and nothing beneath it.
      if (i < 2) {
        await page.click("#lang-en");
        const en = await error();
        assert.equal(en.text, `The server rejected the options: ${body.error}`);
        assert.equal(en.english, null);
        assert.equal(en.translated, "false");
        await page.click("#lang-ko");
        assert.match((await error()).text, korean, "switching back words it in Korean again");
      }
    }
    assert.equal(seen.size, 13);
    // A code the page has no sentence for: the server's text, as it is.
    const handler = (route) => route.fulfill({ status: 400, contentType: "application/json",
      body: JSON.stringify({ error: "`x` is new", code: "some_new_refusal", details: {} }) });
    await page.route("**/api/simulate?*", handler);
    await page.fill("#in-wait", "5");
    await page.waitForFunction(() => document.getElementById("error").dataset.code === "some_new_refusal", null, { timeout: PATIENCE });
    await page.unroute("**/api/simulate?*", handler);
    assert.deepEqual(await error(), { hidden: false, code: "some_new_refusal", translated: "false", text: "서버가 옵션을 거부했습니다: `x` is new", english: null });
    await page.fill("#in-wait", "2");
    await shows(page, "wait=2");
    assert.equal(await page.isHidden("#error"), true);
    await page.click("#lang-en");
  });

  test("after a refused change the status line agrees with the error box", async () => {
    await page.goto(`${base}?scenario=contention`);
    await ready(page);
    await page.fill("#in-lease", "4");
    await shows(page, "lease=4");
    assert.match(await page.textContent("#status"), /^Recomputed/);
    const tick = await tickOf(page);
    const restore = await rewriteSimulate(page, () => ({ min_lease: 6 }));
    await page.fill("#in-min_lease", "2");
    await page.waitForSelector("#error:not([hidden])", { timeout: PATIENCE });
    await restore();
    assert.match(await page.textContent("#error"), /min_lease/);
    const status = await page.textContent("#status");
    assert.doesNotMatch(status, /Recomputed/);
    assert.match(status, new RegExp(`^Not recomputed: the server refused these options.*tick ${tick}`));
    assert.match(await page.evaluate(() => document.body.dataset.query), /lease=4&/, "the last good timeline stays");
    await page.click("#lang-ko");
    assert.match(await page.textContent("#status"), /^다시 계산하지 않았습니다. 서버가 이 옵션을 거부했습니다/);
    assert.match(await page.textContent("#error"), /^서버가 옵션을 거부했습니다: 최소 리스\(min_lease\)는 0부터 리스 길이\(4틱\)까지만 될 수 있습니다\(받은 값: 6틱\)\./);
    await page.click("#lang-en");
    assert.match(await page.textContent("#error"), /^The server rejected the options: `min_lease` must be between 0 and the lease \(4 ticks\), got 6$/);
    // A good value again: the error goes and the status says what happened.
    await page.fill("#in-min_lease", "3");
    await shows(page, "min_lease=3");
    assert.equal(await page.isHidden("#error"), true);
    assert.match(await page.textContent("#status"), /^Recomputed/);
  });

  test("group: fences are compared within a slot only, on the page too", async () => {
    await page.goto(`${base}?scenario=group`);
    await ready(page);
    await page.fill("#in-lease", "4");
    await shows(page, "lease=4");
    await page.fill("#in-wait", "6");
    await shows(page, "lease=4&wait=6");
    const tl = await shownTimeline(page, base);
    await stepTo(page, 8);
    assert.deepEqual(await renderedEvents(page), apiEvents(tl, 8));
    // node-b's fence-1 write in slot 1 is accepted although slot 0 has reached fence 2; node-a's
    // fence-1 write in slot 0 is rejected.
    const write = (node) => page.$eval(`#events tr[data-tick="8"][data-candidate="${node}"][data-operation="write"]`,
      (tr) => [tr.dataset.slot, tr.dataset.fence, tr.dataset.outcome, tr.cells[4].textContent]);
    assert.deepEqual(await write("node-b"), ["1", "1", "accepted", "1 · slot 1"]);
    assert.deepEqual(await write("node-a"), ["0", "1", "rejected_fence", "1 · slot 0"]);
    const domains = await page.$$eval("#resource-box dd[data-slot]", (dds) => dds.map((d) => [d.dataset.slot, d.dataset.highest, d.dataset.writer]));
    assert.deepEqual(domains, tl.frames[8].resource.slots.map((d) => [String(d.slot), String(d.highest_fence), d.last_writer]));
    assert.deepEqual(domains, [["0", "2", "node-c"], ["1", "1", "node-b"]]);
    assert.equal(await page.getAttribute("#resource-box", "data-rejected-slots"), "0");
    const flags = await page.$$eval("#resource-box .flag", (ps) => ps.map((p) => p.textContent));
    assert.deepEqual(flags, ["✗ Slot 0: a write with a lower fence than this slot's highest was rejected at this tick."]);
    assert.match(await page.textContent("#resource-box"), /Each slot has its own fences/);
    await page.screenshot({ path: path.join(SHOTS, "group-slots.png"), fullPage: true });
  });

  test("Korean text breaks between words, not inside them", async () => {
    await page.goto(`${base}?lang=ko&lesson=4`);
    await shows(page, lessonQuery(LESSONS[3]));
    const styles = () => page.$$eval(".intro p, #lesson-text, #lesson-look, #status, #action-box p, .node .word, #events td.outcome, h1",
      (els) => els.map((e) => [e.id || e.className || e.tagName, getComputedStyle(e).wordBreak, getComputedStyle(e).overflowWrap]));
    const ko = await styles();
    assert.ok(ko.length >= 8);
    for (const [what, wordBreak, overflowWrap] of ko) {
      assert.equal(wordBreak, "keep-all", `${what}: word-break`);
      assert.equal(overflowWrap, "anywhere", `${what}: overflow-wrap`);
    }
    // A Korean line never ends inside a word: every line break of the lesson text falls at a space.
    const broken = await page.$eval("#lesson-text", (p) => {
      const text = p.firstChild; const range = document.createRange(); const bad = [];
      let lastTop = null;
      for (let i = 0; i < text.length; i++) {
        range.setStart(text, i); range.setEnd(text, i + 1);
        const r = range.getClientRects()[0];
        if (!r) continue;
        if (lastTop !== null && r.top > lastTop + 2 && i > 0 && !/\s/.test(text.data[i - 1]) && /[\uac00-\ud7a3]/.test(text.data[i - 1]) && /[\uac00-\ud7a3]/.test(text.data[i])) bad.push(text.data.slice(Math.max(0, i - 4), i + 4));
        lastTop = r.top;
      }
      return bad;
    });
    assert.deepEqual(broken, [], "line breaks inside Korean words");
    await page.click("#lang-en");
    for (const [what, wordBreak] of await styles()) assert.equal(wordBreak, "normal", `${what}: English keeps the normal rule`);
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

  test("auto extension: the scenario's description tells what its events show, in English and Korean", async () => {
    await page.goto(`${base}?scenario=extension`);
    await ready(page);
    const tl = await shownTimeline(page, base);
    const at = (who, outcome) => tl.events.find((e) => e.candidate === who && e.outcome === outcome)?.tick;
    const release = at("node-a", "released");
    // node-b's wait ends before node-a's release: it skips. node-c is still waiting at the
    // release and is elected in that tick: not every contender skips.
    assert.ok(at("node-b", "skipped") < release, "node-b skips before the release");
    assert.equal(at("node-b", "elected"), undefined);
    assert.ok(at("node-c", "contended") < release, "node-c waits");
    assert.equal(at("node-c", "elected"), release);
    assert.equal(at("node-c", "skipped"), undefined);
    assert.equal(release, 12);
    const status = await page.textContent("#status");
    assert.match(status, /^Auto extension: the watchdog renews the lease while the long action runs: a contender whose wait ends before the release skips, and one still waiting when the holder releases takes over\.$/);
    assert.doesNotMatch(status, /contenders skip/);
    await page.click("#lang-ko");
    const ko = await page.textContent("#status");
    assert.match(ko, /^자동 연장: /);
    assert.match(ko, /해제 전에 대기 시간이 끝난 경쟁자는 건너뛰고/);
    assert.match(ko, /아직 기다리던 경쟁자가 이어받습니다/);
    assert.doesNotMatch(ko, /경쟁자는 건너뜁니다\.$/);
    await page.click("#lang-en");
  });

  test("the min-lease slider offers exactly the min leases the server accepts, and follows a shorter lease", async () => {
    await page.goto(`${base}?scenario=contention`);
    await ready(page);
    const minLease = () => page.$eval("#in-min_lease", (i) => ({ min: Number(i.min), max: Number(i.max), value: Number(i.value) }));
    assert.deepEqual(await minLease(), { min: 0, max: 10, value: 0 });
    // For every lease the lease slider offers, the min-lease slider ends at the lease: the
    // server accepts that min lease and refuses one tick more.
    const lease = await page.$eval("#in-lease", (i) => ({ min: Number(i.min), max: Number(i.max) }));
    for (let l = lease.min; l <= lease.max; l++) {
      await page.fill("#in-lease", String(l));
      assert.deepEqual(await minLease(), { min: 0, max: l, value: 0 }, `lease ${l}`);
      const q = (m) => `${base}api/simulate?scenario=contention&lease=${l}&min_lease=${m}`;
      assert.equal((await json(q(l))).status, 200, `lease ${l}, min lease ${l}`);
      assert.equal((await json(q(l + 1))).status, 400, `lease ${l}, min lease ${l + 1}`);
    }
    await shows(page, `&lease=${lease.max}&`);

    // A shorter lease takes the min lease down with it, and the server accepts what is sent.
    await page.fill("#in-lease", "10");
    await shows(page, "&lease=10&");
    await page.fill("#in-min_lease", "8");
    await shows(page, "lease=10&wait=2&min_lease=8");
    await page.fill("#in-lease", "5");
    assert.deepEqual(await minLease(), { min: 0, max: 5, value: 5 });
    assert.equal(await page.textContent("#out-min_lease"), "5 ticks");
    await shows(page, "lease=5&wait=2&min_lease=5");
    assert.equal(await page.isHidden("#error"), true);
    assert.equal((await shownTimeline(page, base)).params.min_lease, 5);
    // A longer lease leaves the min lease alone; the slider cannot be pushed past the lease.
    await page.fill("#in-lease", "9");
    await shows(page, "lease=9&wait=2&min_lease=5");
    assert.deepEqual(await minLease(), { min: 0, max: 9, value: 5 });
    await page.fill("#in-min_lease", "30");
    await shows(page, "lease=9&wait=2&min_lease=9");
    await page.focus("#in-min_lease");
    await page.keyboard.press("ArrowRight");
    assert.equal((await minLease()).value, 9, "the arrow keys stop at the lease");
    assert.equal(await page.isHidden("#error"), true);

    // Options the server sends (a scenario's preset, a lesson's) bound the slider too.
    await page.click('button[data-scenario="fencing"]');
    await shows(page, "scenario=fencing");
    assert.deepEqual(await minLease(), { min: 0, max: 4, value: 0 });
    await page.goto(`${base}?lesson=3`);
    await shows(page, lessonQuery(LESSONS[2]));
    assert.deepEqual(await minLease(), { min: 0, max: 6, value: 0 });
  });

  test("a rejected request shows the API's error text", async () => {
    await page.goto(`${base}?scenario=contention`);
    await ready(page);
    const lease = Number(await page.inputValue("#in-lease"));
    const restore = await rewriteSimulate(page, (q) => ({ min_lease: Number(q.get("lease")) + 1 }));
    await page.fill("#in-wait", "3");
    await page.waitForSelector("#error:not([hidden])", { timeout: PATIENCE });
    await restore();
    const q = new URLSearchParams({ scenario: "contention", lease: String(lease), wait: "3", min_lease: String(lease + 1) });
    const { status, body } = await json(`${base}api/simulate?${q}`);
    assert.equal(status, 400);
    assert.ok((await page.textContent("#error")).includes(body.error), `${await page.textContent("#error")} vs ${body.error}`);
  });

  test("the Fencing scenario links to the manual page, rendered, and only the Fencing scenario", async () => {
    await page.goto(`${base}?scenario=fencing&lang=en`);
    await ready(page);
    assert.equal(await page.isVisible("#fence-doc a"), true);
    assert.equal(await page.getAttribute("#fence-doc a", "href"), "docs/fencing?lang=en");
    const res = await fetch(new URL(await page.getAttribute("#fence-doc a", "href"), base));
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type"), /^text\/html; charset=utf-8/);
    assert.doesNotMatch(await res.text(), /```|^# Fencing|^##+ /m, "no raw Markdown");

    // Following the link shows the manual as a page: headings, the sinks table, code blocks.
    await page.click("#fence-doc a");
    await page.waitForSelector("article h1", { timeout: PATIENCE });
    assert.equal(await page.textContent("article h1"), "Fencing your writes");
    assert.equal(await page.getAttribute("html", "lang"), "en");
    assert.ok((await page.$$eval("article table tr", (trs) => trs.length)) >= 8, "the sinks table is a table");
    assert.ok((await page.$$eval("article h2", (hs) => hs.length)) >= 3);
    const code = await page.$$eval("article pre code", (cs) => cs.map((c) => c.textContent));
    assert.ok(code.length >= 5);
    assert.ok(code.every((c) => !/^\s*# (async fn|#\[tokio|Ok\(\(\)\))/m.test(c)), "rustdoc's hidden lines are not shown");
    const text = await page.textContent("article");
    assert.doesNotMatch(text, /```|\]\(|\*\*/, "no Markdown syntax left in the text");
    await page.screenshot({ path: path.join(SHOTS, "fencing-manual.png") });
    // Its way back leads to the Fencing scenario, in the same language.
    await page.click("#back");
    await shows(page, "scenario=fencing");
    assert.equal(await page.getAttribute("html", "lang"), "en");

    await page.click('button[data-scenario="contention"]');
    await page.waitForFunction(() => document.body.dataset.state === "ready"
      && (document.body.dataset.query || "").startsWith("scenario=contention"), null, { timeout: PATIENCE });
    assert.equal(await page.isVisible("#fence-doc a"), false);

    // On the Korean page the link says, in Korean, that the manual is English; the page it
    // opens says so too, and leads back to the Korean page.
    await page.goto(`${base}?scenario=fencing&lang=ko`);
    await ready(page);
    assert.match(await page.textContent("#fence-doc a"), /^쓰기에 펜스 적용하기\(영문 설명서\)/);
    assert.equal(await page.getAttribute("#fence-doc a", "href"), "docs/fencing?lang=ko");
    await page.click("#fence-doc a");
    await page.waitForSelector("article h1", { timeout: PATIENCE });
    assert.equal(await page.getAttribute("html", "lang"), "ko");
    assert.equal(await page.getAttribute("article", "lang"), "en");
    assert.match(await page.textContent("nav"), /워크벤치로 돌아가기.*영어로만 제공됩니다/);
    await page.screenshot({ path: path.join(SHOTS, "fencing-manual-ko.png") });
    await page.click("#back");
    await shows(page, "scenario=fencing");
    assert.equal(await page.getAttribute("html", "lang"), "ko");
    // Switching the language moves the link with it.
    await page.click("#lang-en");
    assert.equal(await page.getAttribute("#fence-doc a", "href"), "docs/fencing?lang=en");
    assert.match(await page.textContent("#fence-doc a"), /^Fencing your writes:/);
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

// Issue 40 item 2: the workbench at phone width. Its own browser context, sized as a phone.
const PHONE = { width: 390, height: 844 };

/** Where `sel` lies in the viewport, and in the box of its nearest `within` ancestor. */
async function placeOf(page, sel, within) {
  return page.$eval(sel, (e, w) => {
    const r = e.getBoundingClientRect(), box = e.closest(w).getBoundingClientRect();
    return { left: r.left, right: r.right, top: r.top, bottom: r.bottom,
      box: { left: box.left, right: box.right }, docWidth: document.documentElement.scrollWidth };
  }, within);
}
/** The part of `sel` lies wholly inside the viewport's width and inside its scrolling box. */
function assertSeen(place, what) {
  assert.ok(place.docWidth <= PHONE.width, `the page itself does not scroll sideways (${place.docWidth} px)`);
  assert.ok(place.left >= 0 && place.right <= PHONE.width + 0.5, `${what} lies within the viewport's width: ${place.left}..${place.right}`);
  assert.ok(place.left >= place.box.left - 0.5 && place.right <= place.box.right + 0.5, `${what} is seen in its own box: ${place.left}..${place.right} in ${place.box.left}..${place.box.right}`);
  assert.ok(place.box.left >= 0 && place.box.right <= PHONE.width + 0.5, `the box of ${what} lies within the viewport`);
}

describe(`workbench page at phone width (${PHONE.width}×${PHONE.height})`, () => {
  let server, base, context, page, profile;
  const pageErrors = [];

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    server = startServer(["workbench", "--bind", "127.0.0.1:0"]);
    base = await server.url;
    profile = mkdtempSync(path.join(tmpdir(), "leasehold-chromium-"));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport: PHONE,
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

  test("the events table shows every column, Outcome included, within the viewport", async () => {
    for (const lang of ["en", "ko"]) {
      // The longest outcomes (the period ledger's) wrap within their cells: the table fits its box.
      await page.goto(`${base}?scenario=period&lang=${lang}`);
      await ready(page);
      await page.fill("#scrub", await page.textContent("#max-tick"));
      const fit = await page.$eval(".events-wrap", (w) => [w.scrollWidth, w.clientWidth]);
      assert.ok(fit[0] <= fit[1], `${lang}: period's event table fits its box (${fit[0]} of ${fit[1]} px)`);
      await page.goto(`${base}?scenario=fencing&lang=${lang}`);
      await ready(page);
      const max = Number(await page.textContent("#max-tick"));
      await page.fill("#scrub", String(max));
      assert.equal(await tickOf(page), max);
      const fits = await page.$eval(".events-wrap", (w) => [w.scrollWidth, w.clientWidth]);
      assert.ok(fits[0] <= fits[1], `${lang}: the event table fits its box, no sideways scrolling (${fits[0]} of ${fits[1]} px)`);
      const headers = await page.$$eval("#events-table thead th", (ths) => ths.length);
      assert.equal(headers, 7);
      for (const sel of ["#events-table thead th:last-child", '#events tr[data-outcome="rejected_fence"] td:last-child']) {
        await page.locator(sel).first().scrollIntoViewIfNeeded();
        assertSeen(await placeOf(page, sel, ".events-wrap"), `${lang}: ${sel}`);
      }
      const th = await page.$eval("#events-table thead th:last-child", (e) => {
        const r = e.getBoundingClientRect();
        return e.contains(document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2));
      });
      assert.ok(th, `${lang}: nothing covers the Outcome header`);
      assert.equal(await page.textContent("#events-table thead th:last-child"), lang === "en" ? "Outcome" : "결과");
      await page.screenshot({ path: path.join(SHOTS, `phone-events-${lang}.png`) });
    }
  });

  test("the lanes reach the last tick of the run, and follow the current tick", async () => {
    for (const lang of ["en", "ko"]) {
      await page.goto(`${base}?scenario=fencing&lang=${lang}`);
      await ready(page);
      const max = Number(await page.textContent("#max-tick"));
      assert.ok(max > 15, `the fencing run is longer than a phone's width of lanes (${max} ticks)`);
      const last = `#lanes thead th[data-tick="${max}"]`;
      assert.equal(await page.textContent(last), String(max), "the run's last tick is numbered");
      await page.locator(last).scrollIntoViewIfNeeded();
      assertSeen(await placeOf(page, last, "#lanes"), `${lang}: the lanes' tick ${max}`);
      // At the last tick the current column is in view without scrolling the lanes by hand.
      await page.locator("#lanes").evaluate((e) => { e.scrollLeft = 0; });
      await page.fill("#scrub", String(max));
      assert.equal(await tickOf(page), max);
      await page.locator("#lanes").scrollIntoViewIfNeeded();
      const cells = await page.$$eval("#lanes td.cur", (tds) => tds.length);
      assert.equal(cells, await page.$$eval(".node", (ns) => ns.length));
      assertSeen(await placeOf(page, "#lanes td.cur", "#lanes"), `${lang}: the current tick's cell`);
      // The node names stay in view while the ticks scroll.
      const name = await placeOf(page, "#lanes tbody th", "#lanes");
      assert.ok(name.left >= name.box.left - 0.5, `${lang}: the node names stay in the lanes' box`);
      await page.screenshot({ path: path.join(SHOTS, `phone-lanes-${lang}.png`) });
    }
  });

  test("the header takes at most 80 px of the viewport while reading", async () => {
    for (const lang of ["en", "ko"]) {
      await page.goto(`${base}?scenario=contention&lang=${lang}`);
      await ready(page);
      for (const target of ["#frame", "#events-table"]) {
        await page.$eval(target, (e) => window.scrollTo(0, e.getBoundingClientRect().top + window.scrollY - 10));
        const covered = await page.$eval("header.bar", (h) => {
          const r = h.getBoundingClientRect();
          return Math.max(0, Math.min(r.bottom, innerHeight) - Math.max(r.top, 0));
        });
        assert.ok(covered <= 80, `${lang}: the header covers ${covered} px of ${PHONE.height} at ${target}`);
      }
      // Its controls stay usable: in the viewport's width and at least 44 px tall.
      const buttons = await page.$$eval("header.bar button", (bs) => bs.map((b) => { const r = b.getBoundingClientRect(); return [r.left, r.right, r.height]; }));
      assert.equal(buttons.length, 5);
      for (const [l, r, h] of buttons) assert.ok(l >= 0 && r <= PHONE.width && h >= 44, `${lang}: header button ${l}..${r}, ${h} px`);
      await page.click("#lang-" + (lang === "en" ? "ko" : "en"));
      await page.click("#lang-" + lang);
    }
  });

  test("choosing a lesson step brings its frame into view", async () => {
    const inView = () => page.waitForFunction(() => {
      const r = document.getElementById("frame").getBoundingClientRect();
      return document.body.dataset.state === "ready" && r.top >= -2 && r.top < innerHeight / 2;
    }, null, { timeout: PATIENCE });
    for (const lang of ["en", "ko"]) {
      await page.goto(`${base}?lang=${lang}`);
      await ready(page);
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.click('#steps button[data-lesson="4"]');
      await page.waitForFunction(() => document.body.dataset.lesson === "4", null, { timeout: PATIENCE });
      await inView();
      assert.equal(await tickOf(page), LESSONS[3].tick);
      // The fenced resource of that frame, which the step talks about, is on screen too.
      assert.equal(await page.getAttribute("#resource-box", "data-rejected-slots"), "0");
      // Next and Previous in the lesson card do the same.
      await page.click("#lesson-next");
      await page.waitForFunction(() => document.body.dataset.lesson === "5", null, { timeout: PATIENCE });
      await inView();
      await page.click("#lesson-prev");
      await page.waitForFunction(() => document.body.dataset.lesson === "4", null, { timeout: PATIENCE });
      await inView();
      await page.screenshot({ path: path.join(SHOTS, `phone-lesson-${lang}.png`) });
    }
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

  test("shows a table of holders in English and Korean, the raw JSON behind a toggle, and notices the release", async () => {
    await page.goto(base);
    await page.waitForSelector('tr[data-lock="live-demo"][data-owner="browser-test"]', { timeout: PATIENCE });
    const { body } = await json(`${base}api/live`);
    const live = body.locks.find((l) => l.lock === "live-demo");
    assert.equal(live.holders[0].owner, "browser-test");
    assert.equal(await page.getAttribute('tr[data-lock="live-demo"]', "data-fence"), String(live.holders[0].fence));
    // A readable table: lock, slot, owner, fence, expires in.
    assert.deepEqual(await page.$$eval("#holders thead th", (ths) => ths.map((th) => th.textContent)),
      ["Lock", "Slot", "Owner", "Fence", "Expires in"]);
    const row = await page.$eval('tr[data-lock="live-demo"][data-kind="held"]', (tr) => [...tr.cells].map((td) => td.textContent));
    assert.match(row[0], /^live-demo/);
    assert.deepEqual(row.slice(1, 4), ["0", "browser-test", String(live.holders[0].fence)]);
    assert.match(row[4], /^\d+(\.\d)? s$/, "time left in seconds");
    assert.ok(await page.isVisible('[data-lock="other-job"][data-kind="free"]'));
    assert.match(await page.textContent('[data-lock="other-job"][data-kind="free"]'), /free/);

    // The raw JSON is there, behind a toggle, with the management report at the axum crate's path.
    assert.equal(await page.isVisible("#manage"), false);
    assert.equal(await page.getAttribute("#manage-link", "href"), "management/leader-election");
    await page.click("#raw summary");
    await page.waitForFunction(() => document.getElementById("manage").textContent.includes("browser-test"), null, { timeout: PATIENCE });
    assert.ok(await page.isVisible("#manage"));
    assert.match(await page.textContent("#live-json"), /"owner": "browser-test"/);
    await page.screenshot({ path: path.join(SHOTS, "live.png"), fullPage: true });
    const moved = await fetch(`${base}manage/leader-election`, { redirect: "manual" });
    assert.equal(moved.status, 308);
    assert.equal(new URL(moved.headers.get("location"), `${base}manage/leader-election`).pathname, "/management/leader-election");
    const followed = await fetch(`${base}manage/leader-election`);
    assert.equal(followed.status, 200);
    assert.match(await followed.text(), /"leaderId":"browser-test"/);
    await page.click("#raw summary");

    // The same page in Korean, with Korean line breaking.
    await page.click("#lang-ko");
    assert.equal(await page.getAttribute("html", "lang"), "ko");
    assert.deepEqual(await page.$$eval("#holders thead th", (ths) => ths.map((th) => th.textContent)),
      ["락", "슬롯", "소유자", "펜스", "만료까지"]);
    await page.waitForFunction(() => /초$/.test(document.querySelector('tr[data-lock="live-demo"][data-kind="held"] td:last-child')?.textContent || ""), null, { timeout: PATIENCE });
    assert.match(await page.textContent('[data-lock="other-job"][data-kind="free"]'), /비어 있음/);
    assert.match(await page.textContent("h1"), /[\uac00-\ud7a3]/);
    assert.match(await page.textContent("#raw summary"), /원본 JSON/);
    const style = await page.$eval(".sub", (e) => [getComputedStyle(e).wordBreak, getComputedStyle(e).overflowWrap]);
    assert.deepEqual(style, ["keep-all", "anywhere"]);
    await page.screenshot({ path: path.join(SHOTS, "live-ko.png"), fullPage: true });
    await page.reload();
    await page.waitForSelector('tr[data-lock="live-demo"][data-owner="browser-test"]', { timeout: PATIENCE });
    assert.equal(await page.getAttribute("html", "lang"), "ko", "the language is remembered");
    await page.click("#lang-en");
    assert.equal(await page.textContent("#holders thead th"), "Lock");

    await stop(holder);
    await page.waitForSelector('[data-lock="live-demo"][data-kind="free"]', { timeout: PATIENCE });
  });
});
